"""The re-ranker's plumbing through llama.cpp's rank pooling, with a tiny GGUF built here (a
real re-ranker cannot be downloaded in tests): scores come back, one per text, and they are
the model's, not the order's."""

from __future__ import annotations

import pytest
from tiny_gguf import bert_reranker

from engine.errors import ModelError
from engine.llm.rerank import Reranker

QUERY = "who services the boiler ?"
TEXTS = ["the boiler is serviced in october by dana .", "my cat likes tea .", "dana likes tea ."]


@pytest.fixture(scope="module")
def reranker(tmp_path_factory):
    loaded = Reranker(bert_reranker(tmp_path_factory.mktemp("rerank") / "tiny.gguf"))
    yield loaded
    loaded.close()


def test_each_text_gets_its_own_score_from_the_model(reranker):
    scores = reranker.scores(QUERY, TEXTS)
    assert len(scores) == 3 and len(set(scores)) == 3  # the texts differ, and so do they
    assert reranker.scores(QUERY, TEXTS[::-1]) == scores[::-1]  # a text's score, not its place
    assert reranker.scores(QUERY, [TEXTS[1]]) == [scores[1]]
    assert reranker.scores("my cat ?", TEXTS) != scores  # the query counts too


def test_a_long_text_is_cut_to_fit_and_a_wrong_file_is_refused(reranker, tmp_path):
    (score,) = reranker.scores(QUERY, ["the boiler " * 2000])
    assert isinstance(score, float)
    with pytest.raises(ModelError, match="There is no re-ranker file"):
        Reranker(tmp_path / "missing.gguf")
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(ModelError, match="could not load broken.gguf"):
        Reranker(broken)
