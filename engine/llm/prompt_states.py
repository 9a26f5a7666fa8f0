"""The local model's evaluated prompt, kept on disk between processes.

A new process (`mnemo chat -m`, the window's first reply) evaluated Mnemo's whole prompt before
its first token: the system prompt (instructions and core memory, ~220 tokens with the bundled
model, about 0.9 s of the 2 cores, the same every time) and the conversation so far (seconds,
once it is long). llama.cpp can write its state after some tokens to a file and read it back
(its "session" files, what `llama-cli --prompt-cache` uses). So:

- a process's first step starts from the kept state that shares the longest beginning with its
  prompt (the state is cut back to that beginning), and evaluates only the rest;
- when no kept state covers the whole system prompt, the system prompt is evaluated as a batch of
  its own and kept, so a reply is the same whether it was read or evaluated;
- a process done with the model keeps where it stands (`mnemo chat -m` after its reply, the chat
  and the window as they close), and the next start in that conversation begins there.

Within a process, a step on a prompt that shares only its beginning with what the model stands in
(a draft written again without the conversation, a summary) would throw the conversation's
evaluated tokens away, and the next turn evaluated them all again (seconds). So the state it
stood in is set aside in memory first (its keys and values only), and read back when a later
step shares more with it than with where the model stands.

Each state is kept beside the tokens it holds, named by a digest of everything it depends on:
the model file, the context settings, the llama.cpp build, and the tokens. The most recently used
few are kept, in the user's cache folder; forgetting removes them all (they hold core memory and
conversations as tokens).
"""

from __future__ import annotations

import array
import contextlib
import ctypes
import hashlib
import logging
import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import llama_cpp

from engine.profile import last_forget, prompt_states_folder

log = logging.getLogger("mnemo.llm")

KEPT = 4  # states kept (a few assistants and conversations)...
KEPT_BYTES = 512 * 2**20  # ...and no more than this in all (a large model's state is large)
MIN_SHARED = 32  # fewer tokens in common are evaluated rather than read
ASIDE = 2  # states set aside in memory: a conversation's, and a draft's or a summary's
STATE, TOKENS = ".state", ".tokens"


@dataclass
class _Aside:
    """A state set aside in memory: the tokens it holds and llama.cpp's copy of their keys and
    values (sequence 0)."""

    tokens: list[int]
    data: ctypes.Array[ctypes.c_uint8]
    size: int
    read_at: float  # when the oldest memory it holds was read


class PromptStates:
    """Read and keep the states of one loaded model (``llama``: a ``llama_cpp.Llama``)."""

    def __init__(self, llama: Any, model_path: Path, settings: dict[str, object]) -> None:
        self._llama = llama
        try:
            stat = model_path.stat()
        except OSError:
            stat = None
        identity = repr(
            (
                str(model_path.resolve()),
                stat and (stat.st_size, stat.st_mtime_ns),
                sorted(settings.items()),
                llama_cpp.__version__,
            )
        )
        self._model = hashlib.sha256(identity.encode()).hexdigest()[:16]
        # When the oldest memory the context holds was read (a prompt's ``read_at``): a forget
        # since then may have taken out what it holds.
        self._context_read_at = 0.0
        self._asides: list[_Aside] = []  # the newest last

    def before_step(self, tokens: list[int], system: list[int], read_at: float) -> None:
        """Before each step on ``tokens``, made of memory read at ``read_at``. A context that
        holds memory read before the last forget is dropped first, with what was set aside (a
        chat that read its prompt just before a forget, and stepped after it, kept a state of
        the forgotten text). In a fresh context, stand as far into them as a kept state goes,
        and at least at the end of ``system`` (the system prompt's tokens: evaluated and kept
        when no state covers them). The step then evaluates the rest."""
        if self._llama.n_tokens and last_forget() >= self._context_read_at:
            self._drop_context()
        if self._llama.n_tokens:
            self._context_read_at = min(self._context_read_at, read_at)
            self._swap_aside(tokens)
            return
        self._context_read_at = read_at
        standing = self._read_longest(tokens)
        if len(system) >= MIN_SHARED and standing < len(system):
            self._llama.eval(system[standing:])
            self._keep(system)

    def keep(self) -> None:
        """Keep the state the model stands in now, for the next process to start from; not
        when something was forgotten since its last step (the context may still hold it)."""
        count = self._llama.n_tokens
        if count >= MIN_SHARED:
            self._keep(self._llama.input_ids[:count].tolist())

    def _drop_context(self) -> None:
        """Forget what the model has evaluated, in its context and set aside."""
        self._asides = []
        self._llama.reset()
        self._llama._ctx.kv_cache_seq_rm(-1, 0, -1)

    # -- set aside in memory --------------------------------------------------------------------

    def _swap_aside(self, tokens: list[int]) -> None:
        """Before a step that would throw away ``MIN_SHARED`` or more evaluated tokens, set
        them aside; when a state set aside shares more with ``tokens``, stand in it instead."""
        if self._asides and last_forget() >= min(a.read_at for a in self._asides):
            self._asides = []  # they may hold what the person asked to forget
        count = self._llama.n_tokens
        standing = _shared(self._llama.input_ids[:count].tolist(), tokens[:-1])
        ranked = [(_shared(a.tokens, tokens[:-1]), a) for a in self._asides]
        most, best = max(ranked, key=lambda pair: pair[0], default=(0, None))
        if best is not None and most >= standing + MIN_SHARED:
            self._asides.remove(best)
            self._set_aside(count - standing)
            if not self._put_back(best, tokens):
                self._asides = []
        else:
            self._set_aside(count - standing)

    def _set_aside(self, thrown_away: int) -> None:
        if thrown_away >= MIN_SHARED and (aside := self._take()) is not None:
            self._asides = [*self._asides, aside][-ASIDE:]

    def _take(self) -> _Aside | None:
        ctx = self._llama.ctx
        size = llama_cpp.llama_state_seq_get_size(ctx, 0)
        if not size or size > KEPT_BYTES // 2:
            return None
        data = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_seq_get_data(ctx, data, size, 0)
        if not written:
            return None
        count = self._llama.n_tokens
        tokens = self._llama.input_ids[:count].tolist()
        return _Aside(tokens, data, written, self._context_read_at)

    def _put_back(self, aside: _Aside, tokens: list[int]) -> bool:
        """Stand in ``aside``, cut back to what it shares with ``tokens``."""
        self._llama._ctx.kv_cache_seq_rm(-1, 0, -1)
        if llama_cpp.llama_state_seq_set_data(self._llama.ctx, aside.data, aside.size, 0) == 0:
            log.warning("a prompt state set aside could not be read back; it is evaluated")
            self._llama.reset()
            self._llama._ctx.kv_cache_seq_rm(-1, 0, -1)
            return False
        self._stand_at(tokens, _shared(aside.tokens, tokens[:-1]))
        self._context_read_at = min(self._context_read_at, aside.read_at)
        return True

    def _stand_at(self, tokens: list[int], shared: int) -> None:
        """Keep the state's first ``shared`` tokens, those ``tokens`` begins with."""
        self._llama._ctx.kv_cache_seq_rm(-1, shared, -1)  # the part not shared goes
        self._llama.input_ids[:shared] = tokens[:shared]
        self._llama.n_tokens = shared
        self._llama._requires_eval = True  # the step evaluates after it, which samples

    # -- reading -------------------------------------------------------------------------------

    def _read_longest(self, tokens: list[int]) -> int:
        """Read the kept state sharing the longest beginning with ``tokens`` (never all of
        them: the step evaluates at least the last) and cut it back to that; how many tokens
        the model then stands at."""
        candidates = []
        for listed in prompt_states_folder().glob(f"{self._model}-*{TOKENS}"):
            try:
                kept = array.array("i", listed.read_bytes()).tolist()
            except (OSError, ValueError):
                continue
            shared = _shared(kept, tokens[:-1])
            if shared >= MIN_SHARED:
                candidates.append((shared, -len(kept), listed.with_suffix(STATE), kept))
        # the longest beginning in common, then the smallest file; a damaged one, the next
        ranked = sorted(candidates, key=lambda candidate: candidate[:2], reverse=True)
        loaded = next((c for c in ranked if self._load(c[2], c[3])), None)
        if loaded is None:
            return 0
        shared, path = loaded[0], loaded[2]
        self._stand_at(tokens, shared)
        with contextlib.suppress(OSError):  # recently used: kept longest
            os.utime(path)
        return shared

    def _load(self, path: Path, kept: list[int]) -> bool:
        found = (llama_cpp.llama_token * len(kept))()
        count = ctypes.c_size_t(0)
        loaded = path.is_file() and llama_cpp.llama_state_load_file(
            self._llama.ctx, os.fsencode(path), found, len(kept), ctypes.byref(count)
        )
        if loaded and found[: count.value] == kept:
            return True
        log.warning("the kept prompt state %s could not be used; it is made again", path.name)
        self._llama.reset()
        self._llama._ctx.kv_cache_seq_rm(-1, 0, -1)  # whatever was read goes
        _remove(path)
        return False

    # -- keeping -------------------------------------------------------------------------------

    def _keep(self, tokens: list[int]) -> None:
        """Write the state for ``tokens``, unless something was forgotten since the memory it
        holds was read (before or while it is written: the state would hold it)."""
        if last_forget() >= self._context_read_at:
            return
        digest = hashlib.sha256(array.array("i", tokens).tobytes()).hexdigest()[:24]
        path = prompt_states_folder() / f"{self._model}-{digest}{STATE}"
        if path.with_suffix(TOKENS).is_file():  # kept already: now recently used
            with contextlib.suppress(OSError):
                os.utime(path)
            return
        if llama_cpp.llama_state_get_size(self._llama.ctx) > KEPT_BYTES // 2:
            return  # a large model's long window: reading it would not repay writing it
        # Each file is written under a name no reader looks for, then renamed; the tokens come
        # last, so a state is listed only once it is whole.
        partials = [path.with_name(f".{uuid.uuid4().hex}.partial") for _ in range(2)]
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            held = (llama_cpp.llama_token * len(tokens))(*tokens)
            if not llama_cpp.llama_state_save_file(
                self._llama.ctx, os.fsencode(partials[0]), held, len(tokens)
            ):
                raise OSError("llama.cpp could not write it")
            partials[0].replace(path)
            partials[1].write_bytes(array.array("i", tokens).tobytes())
            partials[1].replace(path.with_suffix(TOKENS))
            if last_forget() >= self._context_read_at:  # a forget ran while it was written
                _remove(path)
                return
        except OSError as error:
            for partial in partials:
                partial.unlink(missing_ok=True)
            log.warning("could not keep the prompt state in %s: %s", path.parent, error)
            return
        _prune(path.parent)


def _shared(kept: list[int], tokens: list[int]) -> int:
    shared = 0
    for ours, theirs in zip(kept, tokens, strict=False):
        if ours != theirs:
            break
        shared += 1
    return shared


def _remove(state: Path) -> None:
    state.with_suffix(TOKENS).unlink(missing_ok=True)  # unlisted first
    state.unlink(missing_ok=True)


def _prune(folder: Path) -> None:
    """Keep the most recently used states, at most ``KEPT`` and ``KEPT_BYTES`` (the newest
    always)."""
    states = []
    for path in folder.glob(f"*{STATE}"):
        with contextlib.suppress(OSError):  # another process removed it meanwhile
            stat = path.stat()
            states.append((stat.st_mtime, stat.st_size, path))
    total = 0
    for rank, (_, size, path) in enumerate(sorted(states, key=lambda state: -state[0])):
        total += size
        if rank and (rank >= KEPT or total > KEPT_BYTES):
            _remove(path)
