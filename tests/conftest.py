"""Shared fixtures: a fresh profile per test, real SQLite, real LanceDB, the real embedder."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from engine import Mnemo  # noqa: E402
from engine.embed import default_embedder  # noqa: E402


@pytest.fixture(scope="session")
def embedder():
    return default_embedder()


@pytest.fixture
def profile_dir(tmp_path: Path) -> Path:
    return tmp_path / "profile"


@pytest.fixture
def mnemo(profile_dir: Path, embedder) -> Iterator[Mnemo]:
    m = Mnemo.open(profile_dir, embedder=embedder)
    yield m
    m.close()


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test may touch the real user's profile."""
    monkeypatch.setenv("MNEMO_HOME", str(tmp_path / "mnemo-home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # the app's window settings
