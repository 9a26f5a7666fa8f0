"""A re-ranker: a GGUF cross-encoder (a query and a text in, one relevance score out) run
through llama.cpp's rank pooling.

llama-cpp-python has no high-level call for rank pooling (its ``embed`` reads a whole embedding
where rank pooling gives one number), so this uses its low-level API, as llama.cpp's own server
does for ``/v1/rerank``: each pair is one sequence, laid out as the model's ``rerank`` template
says (Qwen3-Reranker), or ``BOS query EOS SEP text EOS`` without one (BERT-style re-rankers).
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import llama_cpp

from engine.cross_encoder import BUDGET_S, CrossEncoder
from engine.errors import ModelError
from engine.hardware import keep_llama_off_amx

if TYPE_CHECKING:
    from engine.mnemo import Mnemo
    from engine.settings import Settings

log = logging.getLogger("mnemo.rerank")
PAIR_TOKENS = 512  # a query and one text; longer texts are cut to fit


class Reranker:
    """Scores texts against a query; higher is more relevant. One scoring at a time."""

    def __init__(self, path: str | os.PathLike[str], *, threads: int | None = None) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise ModelError(f"There is no re-ranker file {self.path}.")
        llama_cpp.llama_backend_init()
        logging.getLogger("llama-cpp-python").setLevel(logging.ERROR)  # as Llama(verbose=False)
        keep_llama_off_amx()
        model_params = llama_cpp.llama_model_default_params()
        self._model = llama_cpp.llama_model_load_from_file(str(self.path).encode(), model_params)
        if not self._model:
            raise ModelError(
                f"llama.cpp could not load {self.path.name} as a re-ranker; the file may be "
                "damaged, or not a re-ranker."
            )
        params = llama_cpp.llama_context_default_params()
        params.n_ctx = params.n_batch = params.n_ubatch = PAIR_TOKENS
        params.n_seq_max = 1
        params.embeddings = True
        params.pooling_type = llama_cpp.LLAMA_POOLING_TYPE_RANK
        params.n_threads = params.n_threads_batch = threads or os.cpu_count() or 1
        self._context = llama_cpp.llama_init_from_model(self._model, params)
        if not self._context:
            llama_cpp.llama_model_free(self._model)
            raise ModelError(f"llama.cpp could not start {self.path.name} as a re-ranker.")
        if llama_cpp.llama_pooling_type(self._context) != llama_cpp.LLAMA_POOLING_TYPE_RANK:
            self.close()
            raise ModelError(f"{self.path.name} is not a re-ranker (it has no rank pooling).")
        self._vocab = llama_cpp.llama_model_get_vocab(self._model)
        template = llama_cpp.llama_model_chat_template(self._model, b"rerank")
        self._template = template.decode("utf-8") if template else None
        self._lock = threading.Lock()

    def scores(self, query: str, texts: Sequence[str]) -> list[float]:
        """Each text's relevance to ``query``, in the texts' order."""
        with self._lock:
            return [self._score(self._pair(query, text)) for text in texts]

    def close(self) -> None:
        if getattr(self, "_context", None):
            llama_cpp.llama_free(self._context)
            self._context = None
        if getattr(self, "_model", None):
            llama_cpp.llama_model_free(self._model)
            self._model = None

    # -- one pair ------------------------------------------------------------------------------

    def _tokens(self, text: str, *, special: bool) -> list[int]:
        data = text.encode("utf-8")
        room = len(data) + 8
        buffer = (llama_cpp.llama_token * room)()
        count = llama_cpp.llama_tokenize(self._vocab, data, len(data), buffer, room, special, True)
        return list(buffer[: max(count, 0)])

    def _pair(self, query: str, text: str) -> list[int]:
        if self._template is not None:
            prompt = self._template.replace("{query}", query).replace("{document}", text)
            return self._tokens(prompt, special=True)[:PAIR_TOKENS]
        asked = self._tokens(query, special=False)[: PAIR_TOKENS // 4]
        said = self._tokens(text, special=False)[: PAIR_TOKENS - PAIR_TOKENS // 4 - 4]
        bos = llama_cpp.llama_vocab_bos(self._vocab)
        eos = llama_cpp.llama_vocab_eos(self._vocab)
        sep = llama_cpp.llama_vocab_sep(self._vocab)
        return [token for token in (bos, *asked, eos, sep, *said, eos) if token >= 0]  # -1: none

    def _score(self, tokens: list[int]) -> float:
        batch = llama_cpp.llama_batch_init(len(tokens), 0, 1)
        try:
            for position, token in enumerate(tokens):
                batch.token[position] = token
                batch.pos[position] = position
                batch.n_seq_id[position] = 1
                batch.seq_id[position][0] = 0
                batch.logits[position] = True
            batch.n_tokens = len(tokens)
            llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(self._context), True)
            if llama_cpp.llama_decode(self._context, batch) != 0:
                raise ModelError(f"{self.path.name} could not score a text.")
            scored = llama_cpp.llama_get_embeddings_seq(self._context, 0)
            if not scored:
                raise ModelError(f"{self.path.name} gave no score.")
            return float(ctypes.cast(scored, ctypes.POINTER(ctypes.c_float))[0])
        finally:
            llama_cpp.llama_batch_free(batch)


def choose_reranker(settings: Settings, path: Path) -> None:
    """Make the re-ranker at ``path`` the one the searches use from the next chat on, once it
    has loaded and scored a pair here (a file that cannot is refused in words)."""
    reranker = Reranker(path)
    try:
        reranker.scores("a question", ["a passage"])
    finally:
        reranker.close()
    settings.set("models.reranker", str(path))


def attach(mnemo: Mnemo, path: str | None = None, budget_s: float = BUDGET_S) -> Reranker | None:
    """Put the re-ranker at ``path`` (default: the ``models.reranker`` setting) on the
    assistant's conversation and archival searches; None, and none on them, when none is set.
    Its cost per text is measured first, so that no search waits for it past ``budget_s``."""
    chosen = path if path is not None else str(mnemo.settings.get("models.reranker") or "")
    if not chosen:
        mnemo.use_cross_encoder(None)
        return None
    reranker = Reranker(Path(chosen).expanduser())
    encoder = CrossEncoder(reranker.scores, budget_s=budget_s)
    encoder.measure()
    mnemo.use_cross_encoder(encoder)
    return reranker


_ATTACHED: weakref.WeakKeyDictionary[Mnemo, tuple[str, Reranker | None]] = (
    weakref.WeakKeyDictionary()
)


def attach_configured(mnemo: Mnemo) -> None:
    """The re-ranker the settings name, on the assistant's searches, loaded once per path; one
    that cannot be loaded is logged and the searches go on without it."""
    chosen = str(mnemo.settings.get("models.reranker") or "")
    loaded = _ATTACHED.get(mnemo)
    if loaded is not None and loaded[0] == chosen:
        return
    if loaded is not None and loaded[1] is not None:
        loaded[1].close()
    try:
        _ATTACHED[mnemo] = (chosen, attach(mnemo, chosen))
    except ModelError as error:
        log.warning("the re-ranker is not used: %s", error)
        _ATTACHED[mnemo] = (chosen, attach(mnemo, ""))
