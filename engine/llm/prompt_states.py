"""The local model's state after the system prompt, kept on disk between processes.

A new process (`mnemo chat -m`, the window's first reply) evaluated Mnemo's whole system prompt
(instructions and core memory, ~220 tokens with the bundled model) before its first token: about
0.9 s of the 2 cores, the same every time. llama.cpp can write its state after those tokens to a
file and read it back (its "session" files, what `llama-cli --prompt-cache` uses), so the next
process evaluates only what follows the system prompt.

Each file is named by a digest of everything its state depends on: the model file, the context
and attention settings, the llama.cpp build, and the tokens themselves. A state is only ever
read for exactly the tokens it was made from, so a changed core memory simply misses. The most
recently used few are kept in the user's cache folder; forgetting removes them all (they hold
core memory's text as tokens).

The system prompt is always evaluated as a batch of its own at a process's first step, whether
its state is then read or made: a reply is the same either way.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import logging
import os
import uuid
from pathlib import Path
from typing import Any

import llama_cpp

from engine.profile import prompt_states_folder

log = logging.getLogger("mnemo.llm")

KEPT = 4  # states kept (a few assistants, or a core memory just edited)...
KEPT_BYTES = 512 * 2**20  # ...and no more than this in all (a large model's state is large)
SUFFIX = ".state"


class PromptStates:
    """Read and keep the states of one loaded model (``llama``: a ``llama_cpp.Llama``)."""

    def __init__(self, llama: Any, model_path: Path, settings: dict[str, object]) -> None:
        self._llama = llama
        try:
            stat = model_path.stat()
        except OSError:
            stat = None
        self._identity = repr(
            (
                str(model_path.resolve()),
                stat and (stat.st_size, stat.st_mtime_ns),
                sorted(settings.items()),
                llama_cpp.__version__,
            )
        ).encode()

    def start(self, prefix: list[int]) -> None:
        """Put the model at the end of ``prefix`` (a fresh context only): read from its kept
        state, or evaluated and then kept."""
        if self._llama.n_tokens or not prefix:
            return
        path = self._path(prefix)
        if self._read(path, prefix):
            return
        self._llama.eval(prefix)
        self._keep(path, prefix)

    def _path(self, tokens: list[int]) -> Path:
        digest = hashlib.sha256(self._identity)
        digest.update(b"".join(token.to_bytes(4, "little", signed=True) for token in tokens))
        return prompt_states_folder() / f"{digest.hexdigest()[:40]}{SUFFIX}"

    def _read(self, path: Path, tokens: list[int]) -> bool:
        if not path.is_file():
            return False
        found = (llama_cpp.llama_token * len(tokens))()
        count = ctypes.c_size_t(0)
        read = llama_cpp.llama_state_load_file(
            self._llama.ctx, os.fsencode(path), found, len(tokens), ctypes.byref(count)
        )
        if not read or found[: count.value] != tokens:  # damaged, or not what it is named for
            log.warning("the kept prompt state %s could not be used; it is made again", path.name)
            self._llama.reset()
            self._llama._ctx.kv_cache_seq_rm(-1, 0, -1)  # whatever was read goes
            path.unlink(missing_ok=True)
            return False
        self._llama.input_ids[: len(tokens)] = tokens
        self._llama.n_tokens = len(tokens)
        self._llama._requires_eval = True  # the next step evaluates after it, which samples
        with contextlib.suppress(OSError):  # recently used: kept longest
            os.utime(path)
        return True

    def _keep(self, path: Path, tokens: list[int]) -> None:
        partial = path.with_name(f".{uuid.uuid4().hex}.partial")  # not a state until whole
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            array = (llama_cpp.llama_token * len(tokens))(*tokens)
            if not llama_cpp.llama_state_save_file(
                self._llama.ctx, os.fsencode(partial), array, len(tokens)
            ):
                raise OSError("llama.cpp could not write it")
            partial.replace(path)
        except OSError as error:
            partial.unlink(missing_ok=True)
            log.warning("could not keep the prompt state in %s: %s", path.parent, error)
            return
        _prune(path.parent)


def _prune(folder: Path) -> None:
    """Keep the most recently used states, at most ``KEPT`` and ``KEPT_BYTES`` (the newest
    always)."""
    states = []
    for path in folder.glob(f"*{SUFFIX}"):
        with contextlib.suppress(OSError):  # another process removed it meanwhile
            stat = path.stat()
            states.append((stat.st_mtime, stat.st_size, path))
    total = 0
    for rank, (_, size, path) in enumerate(sorted(states, key=lambda state: -state[0])):
        total += size
        if rank and (rank >= KEPT or total > KEPT_BYTES):
            path.unlink(missing_ok=True)
