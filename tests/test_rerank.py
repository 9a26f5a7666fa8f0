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


def test_the_re_ranker_orders_the_head_of_conversation_and_archival_search(
    mnemo, reranker, tmp_path
):
    """Attached from the settings, it reorders the best hits of a hybrid search by its own
    scores; with no time to spare it leaves them as fused; cleared, it is gone."""
    from engine.llm.rerank import attach

    texts = [*TEXTS, "the boiler is old .", "dana is my cat .", "who likes the boiler ?"]
    for text in texts:
        mnemo.recall.add("user", text)
        mnemo.archival.insert(text)
    mnemo.wait_for_background_work()
    fused_messages = [hit.text for hit in mnemo.recall.search(QUERY, limit=6)]
    fused_passages = [hit.text for hit in mnemo.archival.search(QUERY, limit=6)]

    mnemo.settings.set("models.reranker", str(reranker.path))
    attached = attach(mnemo)
    assert attached is not None
    for found in (mnemo.recall.search(QUERY, limit=6), mnemo.archival.search(QUERY, limit=6)):
        shown = [hit.text for hit in found]
        scores = reranker.scores(QUERY, shown)
        assert scores == sorted(scores, reverse=True)  # in the re-ranker's order
    assert [hit.text for hit in mnemo.recall.search(QUERY, limit=6)] != fused_messages
    attached.close()

    attach(mnemo, budget_s=0.0)  # no time for it: the fused order stands
    assert [hit.text for hit in mnemo.recall.search(QUERY, limit=6)] == fused_messages
    assert [hit.text for hit in mnemo.archival.search(QUERY, limit=6)] == fused_passages
    mnemo.settings.set("models.reranker", "")
    assert attach(mnemo) is None
    assert [hit.text for hit in mnemo.recall.search(QUERY, limit=6)] == fused_messages


def test_a_chat_takes_the_re_ranker_the_settings_name_and_drops_it_once_cleared(mnemo, reranker):
    from engine.agent import Agent
    from engine.llm import ScriptedModel

    for text in TEXTS:
        mnemo.recall.add("user", text)
    mnemo.wait_for_background_work()
    mnemo.settings.set("models.reranker", str(reranker.path))
    Agent(mnemo, ScriptedModel())
    assert mnemo.archival.cross_encoder is not None
    mnemo.settings.set("models.reranker", "")
    Agent(mnemo, ScriptedModel())
    assert mnemo.archival.cross_encoder is None
    mnemo.settings.set("models.reranker", "/nowhere/reranker.gguf")
    Agent(mnemo, ScriptedModel())  # logged; the chat starts all the same
    assert mnemo.archival.cross_encoder is None
