"""Garbage collection paused while a process starts. Importing the engine, LanceDB and Qt makes
about 200,000 objects that live as long as the process; the collector walked them again and
again as they were made, 0.1 s of every start on this 2-core machine (felt_speed.py). Once the
process has started they are frozen (never walked again) and collection resumes."""

from __future__ import annotations

import gc


def pause_collection() -> None:
    gc.disable()


def resume_collection() -> None:
    """Once the start is over (the profile is open, the window ready): idempotent."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()
