"""Moments of a start and a turn, for the speed benchmarks (``tests/benchmarks/startup.py`` and
``felt_speed.py``): with ``MNEMO_STARTUP_TRACE`` set, ``mark`` writes "mnemo-startup NAME TIME"
(wall-clock seconds) to standard error; otherwise it does nothing."""

from __future__ import annotations

import os
import time

STARTUP_TRACE = "MNEMO_STARTUP_TRACE"

# A copy of standard error's descriptor: llama-cpp-python points the process's standard error at
# /dev/null while it loads a model (perhaps on another thread), and a moment written meanwhile
# would be lost.
_TRACE_FD = os.dup(2) if os.environ.get(STARTUP_TRACE) else None


def mark(moment: str) -> None:
    if _TRACE_FD is not None:
        os.write(_TRACE_FD, f"mnemo-startup {moment} {time.time():.4f}\n".encode())
