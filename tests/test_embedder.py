import numpy as np

from engine.embed import Embedder


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

    monkeypatch.setattr(minilm.platformdirs, "user_cache_dir", lambda *a, **k: str(tmp_path))
    first = minilm.MiniLMEmbedder()
    pieces, vectors = first.piece_vectors(["Weddings in June"])[0]
    assert pieces == ["weddings", "in", "june"]
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-2)
    first._pieces_filler.join()
    assert first._pieces_known.all()
    (table,) = tmp_path.glob("*-pieces-*.npy")
    second = minilm.MiniLMEmbedder()
    second._start_filling_pieces()
    second._pieces_filler.join()
    assert second._pieces_known.all()
    assert np.array_equal(second.piece_vectors(["Weddings in June"])[0][1], vectors)
    assert table.stat().st_size > 20_000_000
