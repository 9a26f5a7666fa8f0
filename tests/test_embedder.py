import time

import numpy as np
import pytest
from tiny_gguf import bert_embedder, bert_reranker

from engine.embed import Embedder, default_embedder, embedder_for
from engine.embed.gguf import GgufEmbedder
from engine.errors import ModelError
from engine.mnemo import Mnemo


def test_vectors_have_the_declared_shape_and_unit_length(embedder):
    assert isinstance(embedder, Embedder)
    vectors = embedder.embed(["hello world", "a longer sentence about gardening in spring"])
    assert vectors.shape == (2, embedder.dim) == (2, 384)
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_paraphrases_are_closer_than_unrelated_text(embedder):
    a, b, c = embedder.embed(
        [
            "My dog loves playing fetch in the park.",
            "The puppy enjoys chasing a ball outside.",
            "Quarterly tax returns are due in April.",
        ]
    )
    assert a @ b > 0.4
    assert a @ b > a @ c + 0.3


def test_batching_and_length_sorting_do_not_change_results(embedder):
    texts = [f"sentence number {i} " + "word " * (i % 17) for i in range(150)]
    together = embedder.embed(texts)
    alone = np.stack([embedder.embed([text])[0] for text in texts[:10]])
    assert np.allclose(together[:10], alone, atol=1e-4)


def test_empty_input_gives_an_empty_matrix(embedder):
    assert embedder.embed([]).shape == (0, embedder.dim)


def test_very_long_text_is_truncated_not_rejected(embedder):
    assert embedder.embed(["word " * 5000]).shape == (1, embedder.dim)


def test_word_piece_vectors_are_computed_once_per_computer_and_read_back(tmp_path, monkeypatch):
    """The first embedder fills the whole table on a thread and keeps it in the cache folder;
    the next one reads it, and both give the same vectors as computing a piece on its own."""
    from engine.embed import minilm

    monkeypatch.setattr(minilm, "cache_folder", lambda: tmp_path)
    first = minilm.MiniLMEmbedder()
    pieces, vectors = first.piece_vectors(["Weddings in June"])[0]
    assert pieces == ["weddings", "in", "june"]
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-2)
    first._pieces_filler.join()
    assert first._pieces_known.all()
    parts = list(tmp_path.glob("*-pieces-*/*.npy"))
    second = minilm.MiniLMEmbedder()
    second._start_filling_pieces()
    second._pieces_filler.join()
    assert second._pieces_known.all()
    assert np.array_equal(second.piece_vectors(["Weddings in June"])[0][1], vectors)
    assert len(parts) == -(-len(first._pieces) // minilm.PIECES_PART)
    assert sum(part.stat().st_size for part in parts) > 20_000_000

    # The table kept whole in one file (before it was kept in parts) is read, then kept in parts.
    (whole,) = [folder.with_name(folder.name + ".npy") for folder in tmp_path.glob("*-pieces-*")]
    np.save(whole, second._pieces)
    for part in parts:
        part.unlink()
    third = minilm.MiniLMEmbedder()
    third._last_hidden = None  # nothing is computed: calling it would fail
    third._start_filling_pieces()
    third._pieces_filler.join()
    assert not whole.exists() and len(list(tmp_path.glob("*-pieces-*/*.npy"))) == len(parts)


def test_the_word_piece_table_waits_for_turns_and_keeps_each_part_it_makes(tmp_path, monkeypatch):
    """A turn has the cores to itself; a process that ends before the table is finished (a
    one-shot `mnemo chat -m`) leaves the parts it made, and the next process goes on from them."""
    from engine.embed import minilm
    from engine.foreground import turn_running

    monkeypatch.setattr(minilm, "cache_folder", lambda: tmp_path)
    first = minilm.MiniLMEmbedder()
    with turn_running():
        first.piece_vectors(["Weddings in June"])  # a search in the turn starts the filler
        time.sleep(1.5)
        assert first._pieces_known.sum() == 3  # only the pieces the search needed
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob("*-pieces-*/*.npy")) and time.monotonic() < deadline:
        time.sleep(0.05)
    first._stop_threads()  # as at the process's end
    kept = sorted(tmp_path.glob("*-pieces-*/*.npy"))
    assert 1 <= len(kept) < 30
    assert not first._pieces_known.all()
    second = minilm.MiniLMEmbedder()
    second._start_filling_pieces()
    second._pieces_filler.join()
    assert second._pieces_known.all()
    first_part = np.arange(minilm.PIECES_PART)
    assert np.array_equal(second._pieces[first_part], first._pieces[first_part])


def test_the_word_pieces_a_search_met_are_kept_for_the_next_process(tmp_path, monkeypatch):
    """A one-shot turn ends before the table is filled: the pieces its search computed are
    kept, and the next process computes none of them again; many such files become one."""
    from engine.embed import minilm
    from engine.foreground import turn_running

    monkeypatch.setattr(minilm, "cache_folder", lambda: tmp_path)
    first = minilm.MiniLMEmbedder()
    with turn_running():
        _, vectors = first.piece_vectors(["Weddings in June"])[0]
        first._stop_threads()  # the process ends within its turn

    def nothing_computed(*args):
        raise AssertionError("a kept piece was computed again")

    second = minilm.MiniLMEmbedder()
    second._last_hidden = nothing_computed
    with turn_running():
        _, again = second.piece_vectors(["Weddings in June"])[0]
        second._stop_threads()
    assert np.array_equal(again, vectors)

    third = minilm.MiniLMEmbedder()
    for word in range(minilm.MET_FILES_KEPT):
        third._compute_pieces(np.array([2000 + word]))
        third._keep_met(np.array([2000 + word]))
    fourth = minilm.MiniLMEmbedder()
    with turn_running():
        fourth._start_filling_pieces()
        fourth._stop_threads()
    assert len(list(tmp_path.glob("*-pieces-*/met-*.npz"))) == 1
    assert fourth._pieces_known[2000 : 2000 + minilm.MET_FILES_KEPT].all()


# -- an embedding GGUF in MiniLM's place (a tiny one built here: tests cannot download) --------


@pytest.fixture(scope="module")
def tiny_embedder_file(tmp_path_factory):
    return bert_embedder(tmp_path_factory.mktemp("embedder") / "tiny-embed.gguf")


def test_a_gguf_embedder_gives_unit_vectors_of_its_width_text_by_text(tiny_embedder_file):
    embedder = GgufEmbedder(tiny_embedder_file)
    assert isinstance(embedder, Embedder)
    assert (embedder.name, embedder.dim) == ("gguf:tiny-embed", 24)
    assert embedder.query_prefix == embedder.document_prefix == ""  # a BERT reads them alike
    texts = ["the boiler is serviced in october", "my cat likes tea", "dana likes tea ."]
    vectors = embedder.embed(texts)
    assert vectors.shape == (3, 24) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert len({round(float(vectors[0] @ row), 4) for row in vectors}) == 3  # texts differ
    # Batched as llama-cpp-python packs them, each text's vector is its own.
    many = embedder.embed([*texts, *(["tea ."] * 200)])
    assert np.allclose(many[:3], vectors, atol=1e-4)
    assert np.allclose(embedder.embed([texts[1]])[0], vectors[1], atol=1e-4)
    assert embedder.embed(["the boiler " * 5000]).shape == (1, 24)  # cut, not refused
    assert embedder.embed([]).shape == (0, 24)
    assert embedder_for(str(tiny_embedder_file)) is embedder_for(str(tiny_embedder_file))


def test_a_file_that_is_no_embedder_is_refused_in_words(tmp_path):
    with pytest.raises(ModelError, match="There is no embedding model file"):
        GgufEmbedder(tmp_path / "missing.gguf")
    with pytest.raises(ModelError, match="is not an embedding model"):
        GgufEmbedder(bert_reranker(tmp_path / "reranker.gguf"))
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(ModelError, match="could not load broken.gguf as an embedding model"):
        embedder_for(str(broken), strict=True)
    assert embedder_for(str(broken)) is default_embedder()  # an assistant still opens


def test_queries_and_stored_texts_get_the_model_s_own_leading_words(profile_dir, embedder):
    """EmbeddingGemma reads "task: search result | query: " before a query and "title: none |
    text: " before a stored text: the searches put them there."""
    from engine.embed.gguf import PREFIXES

    assert PREFIXES["gemma-embedding"][0].startswith("task: search result | query:")
    seen: list[str] = []

    class Prefixed:
        name, dim = "prefixed-test", 384
        query_prefix, document_prefix = "query: ", "text: "

        def embed(self, texts):
            seen.extend(texts)
            return embedder.embed(texts)

    with Mnemo.open(profile_dir, embedder=Prefixed()) as m:
        m.recall.add("user", "My boiler is serviced in October.")
        m.archival.insert("Dana services boilers.")
        m.wait_for_background_work()
        assert m.archival.search("When is the boiler serviced?", mode="semantic")
    assert "text: My boiler is serviced in October." in seen
    assert "text: Dana services boilers." in seen
    assert "query: When is the boiler serviced?" in seen
    assert not any(text.startswith(("My boiler", "Dana", "When")) for text in seen)


def test_reembed_with_another_embedder_switches_memory_and_can_be_undone(
    profile_dir, embedder, tiny_embedder_file
):
    """The person chose an embedding GGUF: a snapshot first, the setting, every vector made
    again; the next start uses it; restoring the snapshot brings MiniLM's vectors back."""
    with Mnemo.open(profile_dir, embedder=embedder) as m:
        m.archival.insert_many([{"text": "The boiler is serviced in October by Dana."}])
        m.recall.add("user", "I like jazz")
        m.wait_for_background_work()
        assert m.reembed(embedder_path=str(tiny_embedder_file)) == 2
        assert m.settings.get("models.embedder") == str(tiny_embedder_file)
        assert m.embedder.name == "gguf:tiny-embed" and m.embedder_mismatch is None
        (snapshot,) = m.snapshots.all()
        assert snapshot.note == "before re-embedding"
        assert m.archival.search("boiler")[0].text.startswith("The boiler")
        m.archival.insert("A new note about tea.")  # stored with the new embedder
        assert m.reembed(embedder_path=str(tiny_embedder_file)) == 0  # nothing left to do
    with Mnemo.open(profile_dir) as m:  # the setting chooses it from now on
        assert m.embedder.name == "gguf:tiny-embed" and m.embedder_mismatch is None
        assert m.passage_vectors.stored_embedder == ("gguf:tiny-embed", 24)
        m.snapshots.restore(snapshot.id)
    with Mnemo.open(profile_dir) as m:  # undone: MiniLM and its vectors
        assert m.embedder is default_embedder() and m.embedder_mismatch is None
        assert m.settings.get("models.embedder") == ""


def test_a_chosen_embedder_that_is_gone_leaves_the_assistant_usable(
    profile_dir, embedder, tmp_path, monkeypatch
):
    moved = bert_embedder(tmp_path / "moved.gguf")
    with Mnemo.open(profile_dir, embedder=embedder) as m:
        m.archival.insert("The boiler is serviced in October by Dana.")
        m.reembed(embedder_path=str(moved))
    moved.unlink()
    monkeypatch.setattr("engine.embed.chosen._loaded", {})  # the next start of Mnemo
    with Mnemo.open(profile_dir) as m:
        assert m.embedder is default_embedder()
        assert "gguf:moved" in m.embedder_mismatch and "mnemo reembed" in m.embedder_mismatch
        assert m.archival.search("boiler")[0].text.startswith("The boiler")  # words still work
