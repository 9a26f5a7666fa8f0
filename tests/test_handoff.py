"""The hand-off of a chat-completions turn to Mnemo's window (engine.server.handoff): the
server's side and the window's, each in a thread of this test, on real files."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from engine.errors import MnemoError
from engine.server import handoff


def window_answers(root: Path, told: list[dict], found: list[handoff.HandedTurn]) -> None:
    """What the window does: take the turn, stream two pieces, then say it is done."""
    for _ in range(300):
        handed = handoff.claim(root)
        if handed is not None:
            found.append(handed)
            for event in told:
                handed.tell(event)
            return
        time.sleep(0.01)


def test_the_window_takes_the_turn_and_the_server_hears_each_piece_then_the_end(
    tmp_path: Path,
) -> None:
    history = [("user", "I live in Lyon."), ("assistant", "Noted.")]
    turn_id = handoff.ask(tmp_path, "Where do I live?", history, None, "OpenAI/Python")
    told = [{"text": "In "}, {"text": "Lyon."}, {"done": {"calls": []}, "reply": "In Lyon."}]
    found: list[handoff.HandedTurn] = []
    window = threading.Thread(target=window_answers, args=(tmp_path, told, found))
    window.start()
    heard = list(handoff.follow(tmp_path, turn_id, threading.Event()))
    window.join()
    assert heard == told
    (handed,) = found
    assert (handed.text, handed.history, handed.program) == (
        "Where do I live?",
        history,
        "OpenAI/Python",
    )
    assert list((tmp_path / handoff.FOLDER).iterdir()) == []  # the server cleans up after it


def test_a_turn_the_window_does_not_take_is_taken_back_and_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(handoff, "CLAIM_S", 0.2)
    turn_id = handoff.ask(tmp_path, "Hello", [], None, "curl/8")
    with pytest.raises(handoff.WindowBusyError, match="did not take the message"):
        list(handoff.follow(tmp_path, turn_id, threading.Event()))
    assert handoff.claim(tmp_path) is None  # a window that looks later finds nothing to answer


def test_a_client_that_goes_away_stops_the_windows_turn(tmp_path: Path) -> None:
    turn_id = handoff.ask(tmp_path, "Write me a long story", [], None, "OpenAI/Python")
    handed = handoff.claim(tmp_path)
    assert handed is not None and not handed.cancelled
    handed.tell({"text": "Once"})
    cancel = threading.Event()
    following = handoff.follow(tmp_path, turn_id, cancel)
    assert next(following) == {"text": "Once"}
    cancel.set()
    assert list(following) == []
    assert handed.cancelled  # the window's watch stops its turn on this
    handed.close()
    assert list((tmp_path / handoff.FOLDER).iterdir()) == []


def test_a_request_the_window_cannot_read_is_answered_with_an_error(tmp_path: Path) -> None:
    turn_id = handoff.ask(tmp_path, "Hi", [], None, "x")
    (tmp_path / handoff.FOLDER / f"{turn_id}.ask").write_text("{not json", "utf-8")
    assert handoff.claim(tmp_path) is None
    with pytest.raises(StopIteration):
        heard = handoff.follow(tmp_path, turn_id, threading.Event())
        refused = next(heard)
        assert refused["refused"] and "could not read" in refused["error"]
        next(heard)


def test_a_window_that_never_finishes_is_given_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(handoff, "QUIET_S", 0.2)
    turn_id = handoff.ask(tmp_path, "Hi", [], None, "x")
    assert handoff.claim(tmp_path) is not None
    with pytest.raises(MnemoError, match="stopped answering"):
        list(handoff.follow(tmp_path, turn_id, threading.Event()))
