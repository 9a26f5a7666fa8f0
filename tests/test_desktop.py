"""The desktop app with real widgets (offscreen), a real profile and the scripted model."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from PySide6.QtCore import QMimeData, QObject, QPointF, Qt, QUrl, Signal
from PySide6.QtGui import QDropEvent
from PySide6.QtWidgets import QLabel, QToolButton

from desktop import ui
from desktop.chat import CallRow
from desktop.main_window import MainWindow
from engine import Mnemo
from engine.agent import Agent
from engine.errors import MnemoError
from engine.llm import ScriptedModel, ScriptedStep
from engine.memory.archival import Source
from tests.agent_helpers import call, say, search

TIMEOUT_MS = 15_000
REAL_MODEL_TIMEOUT_MS = 300_000  # up to three steps of the real model on a busy 2-core machine


class GuiRelay(QObject):
    """Re-emits a worker-thread signal on the GUI thread: pytest-qt's waitSignal must not be
    connected to a signal emitted by another thread (its slot would run on that thread)."""

    fired = Signal(object)

    def __init__(self, signal) -> None:
        super().__init__()
        signal.connect(self._relay)

    def _relay(self, *args) -> None:
        self.fired.emit(args[0] if len(args) == 1 else args)


def on_gui_thread(window: MainWindow, signal):
    relay = GuiRelay(signal)
    window.test_relays = [*getattr(window, "test_relays", []), relay]  # keep it alive
    return relay.fired


def open_window(qtbot, mnemo: Mnemo, model: ScriptedModel) -> MainWindow:
    window = MainWindow(mnemo, loader=lambda _settings: model)
    qtbot.addWidget(window)
    qtbot.waitUntil(lambda: window.model_ready, timeout=TIMEOUT_MS)
    return window


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel()


@pytest.fixture
def window(qtbot, mnemo, model) -> Iterator[MainWindow]:
    window = open_window(qtbot, mnemo, model)
    yield window
    window.shutdown()


def send(qtbot, window: MainWindow, text: str, timeout_ms: int = TIMEOUT_MS) -> None:
    window.chat.input.setPlainText(text)
    with qtbot.waitSignal(on_gui_thread(window, window.bridge.turn_finished), timeout=timeout_ms):
        qtbot.mouseClick(window.chat.send_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not window.chat.busy, timeout=timeout_ms)


def is_kind(kind: str):
    """For ``waitSignal(window.tasks.changed, check_params_cb=...)``: this kind of change."""
    return lambda changed: changed == kind


def wait_for_tasks(qtbot, window: MainWindow) -> None:
    qtbot.waitUntil(lambda: window.tasks.pending == 0, timeout=TIMEOUT_MS)


def test_emitting_signals_keeps_reference_counts():
    """PySide6 6.12.0 dropped a reference to True on every emit (Python 3.11): a streamed
    conversation then aborted the app with "deallocating True or False"."""
    from desktop.bridge import EngineBridge

    bridge = EngineBridge()
    received: list[str] = []
    bridge.text_streamed.connect(received.append)
    before = sys.getrefcount(True), sys.getrefcount(False)
    for _ in range(2000):
        bridge.text_streamed.emit("piece ")
    assert len(received) == 2000
    assert (sys.getrefcount(True), sys.getrefcount(False)) == before


# -- chat ------------------------------------------------------------------------------------------


def test_garbage_is_collected_on_the_gui_thread_only(qtbot, window):
    """A collection on a worker thread destroys the Qt objects it frees there; one CI run died of
    it. While the window lives, only the GUI thread collects."""
    collected_on: list[str] = []

    def record(phase: str, _info: dict) -> None:
        if phase == "start":
            collected_on.append(threading.current_thread().name)

    def make_cycles() -> None:
        for _ in range(50_000):
            cycle: list = []
            cycle.append(cycle)

    gc.callbacks.append(record)
    try:
        assert not gc.isenabled()
        worker = threading.Thread(target=make_cycles, name="cycle-maker")
        worker.start()
        worker.join()
        qtbot.waitUntil(lambda: bool(collected_on), timeout=TIMEOUT_MS)
    finally:
        gc.callbacks.remove(record)
    assert set(collected_on) == {threading.main_thread().name}


def test_a_reply_streams_into_the_chat(qtbot, window, model):
    model.enqueue(
        [
            call("archival_memory_search", query="keys", request_heartbeat=True),
            say("Your **keys** are under the blue pot, next to the door."),
        ]
    )
    pieces: list[str] = []
    window.bridge.text_streamed.connect(pieces.append)
    send(qtbot, window, "Where are my keys?")

    bubbles = window.chat.bubbles()
    assert [b.role for b in bubbles] == ["user", "assistant"]
    assert bubbles[0].text == "Where are my keys?"
    assert bubbles[1].text == "Your **keys** are under the blue pot, next to the door."
    assert len(pieces) > 3  # it arrived in pieces, not at the end
    assert "keys" in bubbles[1].body.text()
    rows = [w for w in window.chat.findChildren(CallRow)]
    assert len(rows) == 1 and "searched archival memory" in rows[0].toggle.text()
    assert "0 of 0" in rows[0].toggle.text()
    rows[0].toggle.click()  # one sentence of what it found; the arguments under Details
    assert rows[0].details.isHidden() and not rows[0].details_toggle.isHidden()
    rows[0].details_toggle.click()
    assert not rows[0].details.isHidden()
    assert '"query": "keys"' in rows[0].details.text()
    assert window.context.stats is not None and window.context.stats.total > 0


def test_the_model_keeps_its_state_as_the_window_closes(qtbot, mnemo, model):
    """The next start's first reply begins where this window's model stands."""
    window = open_window(qtbot, mnemo, model)
    model.enqueue([say("Hello.")])
    send(qtbot, window, "Hi")
    assert model.states_kept == 0
    window.shutdown()
    assert model.states_kept == 1


def test_stop_cancels_a_reply(qtbot, window, model):
    model.enqueue([ScriptedStep(say("This is never shown."), delay_s=30)])
    window.chat.input.setPlainText("Tell me a long story")
    qtbot.mouseClick(window.chat.send_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.chat.busy, timeout=TIMEOUT_MS)
    assert window.chat.send_button.text() == "Stop"
    with qtbot.waitSignal(
        on_gui_thread(window, window.bridge.turn_finished), timeout=5000
    ) as finished:
        qtbot.mouseClick(window.chat.send_button, Qt.MouseButton.LeftButton)
    assert finished.args[0].reason == "cancelled"
    qtbot.waitUntil(lambda: not window.chat.busy, timeout=TIMEOUT_MS)
    assert [b.role for b in window.chat.bubbles()] == ["user"]
    assert window.chat.send_button.text() == "Send"


def test_the_window_folds_what_a_one_shot_turn_left_before_the_next_message(qtbot, mnemo):
    """`mnemo chat -m` leaves a full window unfolded (its process ends with the reply); the
    window folds it as soon as its model is loaded, before the person's next message."""
    import hashlib

    model = ScriptedModel(context_length=1500, max_step_tokens=40, parameter_count=135_000_000)
    long = "I keep notes about the garden, the roses and the tomatoes " * 3
    for number in range(24):  # one-shot turns, each as `mnemo chat -m` runs it
        model.enqueue([f"Noted {hashlib.sha256(bytes([number])).hexdigest()}."])
        agent = Agent(mnemo, model, fold_ahead=False)
        agent.send(f"{long} ({number})")
        if agent.context_stats().fraction >= 0.7:
            break
    assert not model.summary_requests
    window = open_window(qtbot, mnemo, model)
    try:
        qtbot.waitUntil(lambda: bool(model.summary_requests), timeout=TIMEOUT_MS)
        folded = lambda: Agent(mnemo, model).context_stats().fraction < 0.7  # noqa: E731
        qtbot.waitUntil(folded, timeout=TIMEOUT_MS)
        assert window.chat.send_button.isEnabled()
    finally:
        window.shutdown()


def test_restart_restores_the_conversation(qtbot, mnemo, window, model):
    model.enqueue(
        [
            call("conversation_search", query="Lisbon", request_heartbeat=True),
            say("You went to Lisbon."),
        ]
    )
    send(qtbot, window, "When was I in Lisbon?")
    window.show_page("Context")
    window.close()

    reopened = open_window(qtbot, mnemo, ScriptedModel())
    reopened.restore_layout()
    try:
        assert reopened.nav.currentItem().text() == "Context"  # the page it was left on
        texts = [(b.role, b.text) for b in reopened.chat.bubbles()]
        assert texts == [
            ("user", "When was I in Lisbon?"),
            ("assistant", "You went to Lisbon."),
        ]
        (row,) = reopened.chat.findChildren(CallRow)
        assert "Lisbon" in row.toggle.text() and row.summary != "…"
    finally:
        reopened.shutdown()


def test_a_turn_a_crash_cut_short_is_finished_on_start(qtbot, mnemo):
    mnemo.recall.add("user", "Are you still there?")  # the app died before replying
    model = ScriptedModel()
    model.enqueue([say("Yes, I'm here.")])
    window = open_window(qtbot, mnemo, model)
    try:
        qtbot.waitUntil(lambda: len(window.chat.bubbles()) == 2, timeout=TIMEOUT_MS)
        assert window.chat.bubbles()[-1].text == "Yes, I'm here."
        notices = [w.text() for w in window.chat.findChildren(QLabel, "notice")]
        assert "Continuing the turn that was interrupted." in notices
    finally:
        window.shutdown()


def test_a_model_that_cannot_load_is_explained(qtbot, mnemo):
    def broken(_settings):
        raise FileNotFoundError("no such model")

    from engine.errors import ModelError

    def missing(_settings):
        raise ModelError("The model file /tmp/none.gguf does not exist; choose another.")

    window = MainWindow(mnemo, loader=missing)
    qtbot.addWidget(window)
    try:
        qtbot.waitUntil(lambda: window.banner_row.isVisibleTo(window), timeout=TIMEOUT_MS)
        assert "does not exist" in window.banner.text()
        assert "does not exist" in window.settings.model_status.text()
        assert not window.chat.ready  # a message sent now waits for a model (test below)
    finally:
        window.shutdown()
    window = MainWindow(mnemo, loader=broken)
    qtbot.addWidget(window)
    try:
        qtbot.waitUntil(lambda: window.banner_row.isVisibleTo(window), timeout=TIMEOUT_MS)
        assert "Something went wrong" in window.banner.text()
        assert "no such model" in window.banner.text()
    finally:
        window.shutdown()


# -- proposals and core memory ---------------------------------------------------------------------


def propose(qtbot, window: MainWindow, model: ScriptedModel, content: str) -> None:
    model.enqueue(
        [
            call("core_memory_append", label="human", content=content, request_heartbeat=True),
            say("Noted."),
        ]
    )
    send(qtbot, window, f"Remember: {content}")
    qtbot.waitUntil(lambda: window.proposals.count >= 1, timeout=TIMEOUT_MS)


def test_where_a_proposal_and_a_note_came_from_is_said_in_the_persons_words(qtbot, mnemo, window):
    """The card said "(message 71)" and the browser's Source column "message 71"."""
    said = mnemo.recall.add("user", "My sister Ines moved to Antwerp last week.")
    with mnemo.recall.transaction() as transaction:
        mnemo.proposals.create_in(
            transaction.session,
            conversation_id="default",
            label="human",
            action="append",
            new_content="Sister Ines lives in Antwerp.",
            cause_ref=str(said),
        )
    mnemo.archival.insert(
        'The user said: "My sister Ines moved to Antwerp last week."', source=said
    )
    lease = Source(path=str(Path("/home/ines/papers/lease.md")), section="Rent", chunk=0)
    mnemo.archival.insert("The monthly rent is 1,200 euros.", source=lease)
    window.proposals.refresh()
    (proposal,) = mnemo.proposals.pending()
    texts = [w.text() for w in window.proposals.card(proposal.id).findChildren(QLabel)]
    (source,) = [text for text in texts if text.startswith("Proposed during")]
    assert source.endswith(", after you said: “My sister Ines moved to Antwerp last week.”")
    assert f"message {said}" not in " ".join(texts)
    browser = window.browser.archival
    window.show_page("Browse memory")
    browser.refresh()
    qtbot.waitUntil(lambda: len(browser.passages) == 2, timeout=TIMEOUT_MS)
    rows = {
        browser.table.item(row, 0).text(): browser.table.item(row, 1).text() for row in range(2)
    }
    # The note of the person's words reads as said to them, not "The user said: …"; a file's
    # passage names its file and section as a reply cites it, not its path and "chunk 0".
    assert rows == {
        "You said: “My sister Ines moved to Antwerp last week.”": (
            "you said: “My sister Ines moved to Antwerp last week.”"
        ),
        "The monthly rent is 1,200 euros.": "lease.md › Rent",
    }


def test_a_proposal_from_another_program_over_mcp_shows_in_the_open_window(qtbot, mnemo, window):
    from tests.test_mcp import run_client

    async def propose_over_mcp(client):
        return await client.call_tool(
            "propose_core_edit", {"label": "human", "content": "Plays the cello on Sundays."}
        )

    result = run_client(mnemo.profile.root, propose_over_mcp, name="LM Studio")
    assert not result.is_error
    qtbot.waitUntil(lambda: window.proposals.count == 1, timeout=TIMEOUT_MS)
    (proposal,) = mnemo.proposals.pending()
    card = window.proposals.card(proposal.id)
    texts = [widget.text() for widget in card.findChildren(QLabel)]
    claimed = 'an MCP program calling itself "LM Studio"'
    assert 'An MCP program calling itself "LM Studio" wants to add to “human”' in texts
    assert any(text.startswith(f"Sent by {claimed}, ") for text in texts)


def while_the_window_runs(qtbot, work):
    """``work()``'s result, run on a thread while the window's events go on (a client that
    waits for the window must not block the window's own thread)."""
    done: dict = {}

    def run() -> None:
        try:
            result = work()
            done["result"] = list(result) if isinstance(result, openai.Stream) else result
        except Exception as error:
            done["error"] = error

    thread = threading.Thread(target=run)
    thread.start()
    qtbot.waitUntil(lambda: not thread.is_alive(), timeout=60_000)
    if "error" in done:
        raise done["error"]
    return done["result"]


def test_a_message_sent_through_serve_local_is_answered_in_the_open_window(qtbot, embedder):
    """An `openai` client chats through `mnemo serve --local` while the window holds the
    assistant: the window answers, the turn shows in its conversation, and the client gets the
    same reply, streamed; a request's earlier messages are stored once."""
    from engine.assistants import Assistants
    from engine.profile import WINDOW
    from tests.mnemo_server import serve_local

    root = Assistants(Path(os.environ["MNEMO_DATA"])).create("home")
    model = ScriptedModel()
    with Mnemo.open(root, embedder=embedder) as mnemo, mnemo.profile.hold_assistant(WINDOW):
        window = open_window(qtbot, mnemo, model)
        try:
            with serve_local() as local:
                model.enqueue(
                    [
                        call("conversation_search", query="Lyon", request_heartbeat=True),
                        say("You live in Lyon, by the river."),
                    ]
                )
                chunks = list(
                    while_the_window_runs(
                        qtbot,
                        lambda: local.chat.completions.create(
                            model="mnemo:home",
                            messages=[
                                {"role": "user", "content": "I live in Lyon."},
                                {"role": "assistant", "content": "Noted."},
                                {"role": "user", "content": "Where do I live?"},
                            ],
                            stream=True,
                        ),
                    )
                )
                streamed = "".join(c.choices[0].delta.content or "" for c in chunks)
                assert streamed == "You live in Lyon, by the river."
                extension = chunks[-1].model_extra["mnemo"]
                assert extension["history_stored"] == 2
                assert [c["name"] for c in extension["calls"]] == ["conversation_search"]
                qtbot.waitUntil(lambda: not window.chat.busy, timeout=TIMEOUT_MS)
                wait_for_tasks(qtbot, window)
                assert bubble_texts(window)[-2:] == [
                    "Where do I live?",
                    "You live in Lyon, by the river.",
                ]
                notices = [w.text() for w in window.chat.findChildren(QLabel)]
                assert any(
                    n.startswith("OpenAI/Python sent this through mnemo serve") for n in notices
                )
                said = [(m.role, m.text) for m in mnemo.recall.recent(10, window.conversation_id)]
                assert said.count(("user", "I live in Lyon.")) == 1
                assert said.count(("user", "Where do I live?")) == 1

                with pytest.raises(openai.ConflictError) as elsewhere:
                    while_the_window_runs(
                        qtbot,
                        lambda: local.chat.completions.create(
                            model="mnemo:home",
                            messages=[{"role": "user", "content": "Hi"}],
                            user="open-webui-chat-7",
                        ),
                    )
                assert "shows another conversation" in elsewhere.value.body["message"]

                mnemo.settings.set("agent.step_limit", 2)  # a turn that ends without a reply
                model.enqueue([search("keys"), search("spare keys")])
                with pytest.raises(openai.APIStatusError) as failed:
                    while_the_window_runs(
                        qtbot,
                        lambda: local.chat.completions.create(
                            model="mnemo:home", messages=[{"role": "user", "content": "Keys?"}]
                        ),
                    )
                assert "Stopped after 2 steps without a reply" in failed.value.body["message"]
        finally:
            window.shutdown()


def test_settings_give_the_mcp_lines_to_paste_and_how_notes_from_programs_are_kept(
    qtbot, mnemo, window
):
    from PySide6.QtGui import QGuiApplication

    page = window.settings
    config = json.loads(page.mcp_config.toPlainText())
    entry = config["mcpServers"]["mnemo"]
    assert entry["args"][-3:] == ["--profile", str(mnemo.profile.root), "mcp"]
    assert Path(entry["command"]).exists()
    page._copy_mcp_config()
    assert json.loads(QGuiApplication.clipboard().text()) == config
    page.client_notes.setCurrentIndex(page.client_notes.findData("apply"))
    assert mnemo.settings.get("mcp.notes") == "apply"


def test_approve_edit_and_reject_proposals(qtbot, mnemo, window, model):
    before = mnemo.core.get("human")
    propose(qtbot, window, model, "Name: Sam.")
    assert window.pending_button.text() == "1 change to approve"
    assert window.proposals.isVisibleTo(window)
    (proposal,) = mnemo.proposals.pending()
    card = window.proposals.card(proposal.id)
    # The added line, highlighted, in place of "Nothing is known about the user yet." (struck
    # whole: the two share no word)
    assert '#bbf7d0">Name: Sam.' in card.diff.text()
    assert 'line-through">Nothing is known about the user yet.' in card.diff.text()
    with qtbot.waitSignal(
        window.tasks.changed, check_params_cb=is_kind("proposals"), timeout=TIMEOUT_MS
    ):
        qtbot.mouseClick(card.approve_button, Qt.MouseButton.LeftButton)
    assert mnemo.core.get("human").endswith("Name: Sam.")
    assert "Name: Sam." in window.core.cards["human"].editor.toPlainText()
    assert window.pending_button.text() == "No changes waiting"

    propose(qtbot, window, model, "Likes tea.")
    (proposal,) = mnemo.proposals.pending()
    card = window.proposals.card(proposal.id)
    qtbot.mouseClick(card.edit_button, Qt.MouseButton.LeftButton)
    assert card.editor.toPlainText() == "Likes tea."
    card.editor.setPlainText("Likes green tea.")
    with qtbot.waitSignal(
        window.tasks.changed, check_params_cb=is_kind("proposals"), timeout=TIMEOUT_MS
    ):
        qtbot.mouseClick(card.approve_button, Qt.MouseButton.LeftButton)
    assert mnemo.core.get("human").endswith("Likes green tea.")
    assert window.core.cards["human"].editor.toPlainText().endswith("Likes green tea.")

    propose(qtbot, window, model, "Hates tea.")
    (proposal,) = mnemo.proposals.pending()
    value = mnemo.core.get("human")
    with qtbot.waitSignal(
        window.tasks.changed, check_params_cb=is_kind("proposals"), timeout=TIMEOUT_MS
    ):
        qtbot.mouseClick(
            window.proposals.card(proposal.id).reject_button, Qt.MouseButton.LeftButton
        )
    assert mnemo.core.get("human") == value
    assert mnemo.proposals.get(proposal.id).status == "rejected"
    assert not mnemo.proposals.pending()
    assert not window.proposals.isVisibleTo(window)
    assert before != value


def test_edit_a_card_then_undo(qtbot, mnemo, window):
    card = window.core.cards["human"]
    original = card.editor.toPlainText()
    qtbot.mouseClick(card.edit_button, Qt.MouseButton.LeftButton)
    assert not card.editor.isReadOnly()
    card.editor.setPlainText("Name: Ada.\nLikes chess.")
    assert card.usage.text() == f"23 / {card.block.char_limit} characters"
    with qtbot.waitSignal(
        window.tasks.changed, check_params_cb=is_kind("core"), timeout=TIMEOUT_MS
    ):
        qtbot.mouseClick(card.save_button, Qt.MouseButton.LeftButton)
    assert mnemo.core.get("human") == "Name: Ada.\nLikes chess."
    card = window.core.cards["human"]
    assert card.editor.isReadOnly()

    with qtbot.waitSignal(
        window.tasks.changed, check_params_cb=is_kind("core"), timeout=TIMEOUT_MS
    ):
        qtbot.mouseClick(card.undo_button, Qt.MouseButton.LeftButton)
    assert mnemo.core.get("human") == original
    assert window.core.cards["human"].editor.toPlainText() == original
    assert [v.author for v in mnemo.core.history("human")][-2:] == ["user", "user"]


def test_a_card_refuses_text_over_its_limit(qtbot, mnemo, window):
    card = window.core.cards["persona"]
    qtbot.mouseClick(card.edit_button, Qt.MouseButton.LeftButton)
    card.editor.setPlainText("x" * (card.block.char_limit + 1))
    qtbot.mouseClick(card.save_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: card.error.isVisibleTo(window.core), timeout=TIMEOUT_MS)
    assert "limit" in card.error.text() or "characters" in card.error.text()
    assert not card.editor.isReadOnly()  # the user's text is still there to shorten
    assert mnemo.core.get("persona") != "x" * (card.block.char_limit + 1)


def test_add_and_remove_a_block(qtbot, mnemo, window, monkeypatch):
    window.tasks.submit(lambda: mnemo.core.add_block("projects", "Mnemo"), lambda _b: None)
    wait_for_tasks(qtbot, window)
    window.core.refresh()
    card = window.core.cards["projects"]
    monkeypatch.setattr(ui, "confirm", lambda *_args: True)
    with qtbot.waitSignal(
        window.tasks.changed, check_params_cb=is_kind("core"), timeout=TIMEOUT_MS
    ):
        qtbot.mouseClick(card.remove_button, Qt.MouseButton.LeftButton)
    assert "projects" not in window.core.cards
    assert "projects" not in [block.label for block in mnemo.core.blocks()]


# -- people & things ---------------------------------------------------------------------------


def test_a_move_replaces_the_old_home_and_people_and_things_shows_it_with_its_history(
    qtbot, mnemo, monkeypatch
):
    model = ScriptedModel(parameter_count=135_000_000)  # the assisted mode: facts from messages
    window = open_window(qtbot, mnemo, model)
    page = window.knowledge
    model.enqueue(["Nice!"])
    with qtbot.waitSignal(window.tasks.changed, check_params_cb=is_kind("knowledge")):
        send(qtbot, window, "I live in Porto.")
    assert page.entities.item(0).text() == "You · 1 fact"

    model.enqueue(["Lyon is lovely."])
    with qtbot.waitSignal(window.tasks.changed, check_params_cb=is_kind("knowledge")):
        send(qtbot, window, "I moved to Lyon last month.")
    # Said as a change, the move replaces Porto at once (no fact waits for approval); the human
    # block is offered the new line, in the panel.
    assert not [p for p in mnemo.proposals.pending() if p.kind == "fact"]
    lines = {p.id: p.new_content for p in mnemo.proposals.pending()}
    assert "You moved to Lyon." in lines.values() or "You live in Lyon." in lines.values()
    qtbot.waitUntil(lambda: window.proposals.count == len(lines), timeout=TIMEOUT_MS)

    window.show_page("People & things")
    assert page.heading.text() == "You"
    assert [page.facts.item(0, column).text() for column in range(2)] == ["lives in", "Lyon"]
    assert page.facts.item(0, 3).text() == "you said: “I moved to Lyon last month.”"
    assert "<s>You live in Porto</s> <i>(superseded)</i>" in page.history.text()

    page.facts.selectRow(0)
    monkeypatch.setattr(
        "desktop.knowledge_page.QInputDialog.getText", lambda *_a, **_k: ("Lyon 7e", True)
    )
    with qtbot.waitSignal(window.tasks.changed, check_params_cb=is_kind("knowledge")):
        qtbot.mouseClick(page.edit_button, Qt.MouseButton.LeftButton)
    assert page.facts.item(0, 1).text() == "Lyon 7e"
    assert [f.object for f in mnemo.knowledge.facts("user")] == ["Lyon 7e"]

    def fill(dialog):
        dialog.subject.setText("Ana Sousa")
        dialog.relation.setCurrentText("works_at")
        dialog.value.setText("Lisbon City Council")
        return True

    monkeypatch.setattr("desktop.knowledge_page.AddFactDialog.exec", fill)
    with qtbot.waitSignal(window.tasks.changed, check_params_cb=is_kind("knowledge")):
        page._add()
    mnemo.knowledge.add("Ana Souza", "birthday", "12 May")
    page.refresh()
    names = [page.entities.item(row).text() for row in range(page.entities.count())]
    assert names[0] == "You · 1 fact" and "Ana Sousa · 1 fact" in names

    page.entities.setCurrentRow(names.index("Ana Sousa · 1 fact"))
    monkeypatch.setattr(
        "desktop.knowledge_page.QInputDialog.getItem", lambda *args: (args[3][0], True)
    )
    monkeypatch.setattr(ui, "confirm", lambda *_args: True)
    with qtbot.waitSignal(window.tasks.changed, check_params_cb=is_kind("knowledge")):
        qtbot.mouseClick(page.merge_button, Qt.MouseButton.LeftButton)  # the closest name first
    assert sorted(f.predicate for f in mnemo.knowledge.facts("Ana Souza")) == [
        "birthday",
        "works_at",
    ]

    page.facts.selectRow(0)
    retracted = page._shown[0]
    with qtbot.waitSignal(window.tasks.changed, check_params_cb=is_kind("knowledge")):
        qtbot.mouseClick(page.retract_button, Qt.MouseButton.LeftButton)
    assert mnemo.knowledge.fact(retracted.id).status == "retracted"
    assert "(retracted)" in page.history.text()
    window.shutdown()


def test_people_and_things_says_a_former_place_and_someone_elses_fact_in_words(
    qtbot, mnemo, window
):
    """After Ines moved, the list still said "Ghent · 0 facts" among the rest; Ines's page
    showed a row "User sister | Ines"."""
    mnemo.knowledge.add("user", "sister", "Ines")
    mnemo.knowledge.add("Ines", "lives_in", "Ghent")
    mnemo.knowledge.add("Ines", "lives_in", "Antwerp", supersede=True)
    page = window.knowledge
    window.show_page("People & things")
    page.refresh()
    names = [page.entities.item(row).text() for row in range(page.entities.count())]
    assert names[-1] == "Ghent · no current facts" and "Ines · 2 facts" in names, names
    page.entities.setCurrentRow(names.index("Ines · 2 facts"))
    rows = [
        [page.facts.item(row, column).text() for column in range(2)]
        for row in range(page.facts.rowCount())
    ]
    assert ["Your sister is", "Ines"] in rows and ["lives in", "Antwerp"] in rows


def test_facts_from_a_file_wait_in_the_proposal_panel(qtbot, mnemo, window, tmp_path):
    letter = tmp_path / "letter.txt"
    letter.write_text("Ana lives in Porto. Rui works at Acme Labs.", encoding="utf-8")
    with qtbot.waitSignal(window.tasks.changed, check_params_cb=is_kind("proposals")):
        window.knowledge.extract_from(letter)
    qtbot.waitUntil(lambda: window.proposals.count == 2, timeout=TIMEOUT_MS)
    assert window.knowledge.notice.text().startswith("2 facts from letter.txt wait for you")
    (first, _second) = mnemo.proposals.pending()
    card = window.proposals.card(first.id)
    caution = card.findChild(QLabel, "caution").text()
    assert caution.startswith("Caution: taken from the document letter.txt; text from")


# -- snapshots ---------------------------------------------------------------------------------


def test_a_snapshot_taken_in_settings_is_restored_while_the_window_closes(
    qtbot, mnemo, monkeypatch
):
    window = open_window(qtbot, mnemo, ScriptedModel())
    mnemo.core.set("human", "Name: Ada.")
    view = window.snapshots
    monkeypatch.setattr(
        "desktop.snapshots_view.QInputDialog.getText", lambda *_a, **_k: ("before a test", True)
    )
    qtbot.mouseClick(view.create_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: view.list.count() == 1, timeout=TIMEOUT_MS)
    assert "yours" in view.list.item(0).text() and "before a test" in view.list.item(0).text()

    mnemo.core.set("human", "Nothing.")
    monkeypatch.setattr(ui, "confirm", lambda *_args: True)
    view.list.setCurrentRow(0)
    qtbot.mouseClick(view.restore_button, Qt.MouseButton.LeftButton)
    assert not window.isVisible() and window.next_profile == mnemo.profile.root  # app.run reopens
    assert mnemo.core.get("human") == "Name: Ada."
    assert [s.automatic for s in mnemo.snapshots.all()] == [True, False]  # the undo, then yours


def test_deleting_more_than_twenty_passages_takes_a_snapshot_first(
    qtbot, mnemo, window, monkeypatch
):
    mnemo.archival.insert_many([f"Receipt {i} for the garden." for i in range(25)])
    browser = window.browser.archival
    browser.refresh()
    qtbot.waitUntil(lambda: len(browser.passages) == 25, timeout=TIMEOUT_MS)
    monkeypatch.setattr(ui, "confirm", lambda *_args: True)
    browser.table.selectAll()
    with qtbot.waitSignal(window.tasks.changed, check_params_cb=is_kind("passages")):
        browser.delete_selected()
    assert mnemo.archival.count() == 0
    (snapshot,) = mnemo.snapshots.all()
    assert snapshot.note == "before deleting 25 passages"
    mnemo.snapshots.restore(snapshot.id)
    assert mnemo.archival.count() == 25


def test_export_then_import_into_a_fresh_profile_and_the_chat_goes_on(qtbot, tmp_path, embedder):
    from engine.exchange.archive import export_archive

    with Mnemo.open(tmp_path / "old", embedder=embedder) as old:
        old.recall.add("user", "I painted the shed green.")
        old.recall.add("assistant", "Green suits a shed.")
        export_archive(old, tmp_path / "memory.mnemo")
    with Mnemo.open(tmp_path / "new", embedder=embedder) as new:
        model = ScriptedModel()
        window = open_window(qtbot, new, model)
        with qtbot.waitSignal(window.exchange.finished, timeout=TIMEOUT_MS) as finished:
            window.exchange.import_from(tmp_path / "memory.mnemo")
        assert finished.args[0].startswith("Imported memory.mnemo: messages: 2 added")
        qtbot.waitUntil(
            lambda: bubble_texts(window) == ["I painted the shed green.", "Green suits a shed."],
            timeout=TIMEOUT_MS,
        )
        model.enqueue([say("It is green.")])
        send(qtbot, window, "What colour is the shed?")
        assert bubble_texts(window)[-1] == "It is green."
        assert "I painted the shed green." in str(model.prompts[-1].messages)

        with qtbot.waitSignal(window.exchange.finished, timeout=TIMEOUT_MS) as finished:
            window.exchange.export_to(tmp_path / "again.mnemo")
        assert finished.args[0].startswith("Exported 4 messages and 0 passages")
        window.shutdown()


def test_an_imported_archives_settings_wait_to_be_ticked_in_the_window(qtbot, tmp_path, embedder):
    from engine.exchange.archive import export_archive

    with Mnemo.open(tmp_path / "other", embedder=embedder) as other:
        other.recall.add("user", "I painted the shed green.")
        other.settings.set("memory.core_write_policy", "auto")
        other.settings.set("model.base_url", "http://attacker.invalid/v1")
        export_archive(other, tmp_path / "gift.mnemo")
    with Mnemo.open(tmp_path / "new", embedder=embedder) as new:
        window = open_window(qtbot, new, ScriptedModel())
        with qtbot.waitSignal(window.exchange.finished, timeout=TIMEOUT_MS) as finished:
            window.exchange.import_from(tmp_path / "gift.mnemo")
        assert "messages: 1 added" in finished.args[0]
        assert new.settings.core_write_policy == "ask"  # nothing applied by the import
        dialog = window.exchange.offered_dialog
        assert dialog.isVisible()
        boxes = {offer.command[1]: box for box, offer in dialog.boxes}
        assert set(boxes) == {"memory.core_write_policy", "model.base_url"}
        assert not any(box.isChecked() for box in boxes.values())
        boxes["memory.core_write_policy"].setChecked(True)
        with qtbot.waitSignal(window.exchange.finished, timeout=TIMEOUT_MS) as finished:
            dialog.apply_button.click()
        assert finished.args[0] == "Applied 1 of the imported file's settings."
        assert new.settings.core_write_policy == "auto"
        assert new.settings.get("model.base_url") == ""
        window.shutdown()


def test_a_chatgpt_export_imports_from_the_window_and_shows_its_title(
    qtbot, mnemo, window, tmp_path
):
    from test_chat_exports import chatgpt_export

    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(chatgpt_export()), encoding="utf-8")
    with qtbot.waitSignal(window.exchange.finished, timeout=TIMEOUT_MS) as finished:
        window.exchange.import_from(path)
    assert "messages: 4 added" in finished.args[0] and "From ChatGPT" in finished.args[0]
    browser = window.browser.conversations
    browser.search_for("tea ceremony")
    wait_for_tasks(qtbot, window)
    assert browser.table.item(0, 3).text() == "ChatGPT: Kyoto trip"


def test_a_long_import_shows_its_bar_the_chat_goes_on_and_stop_takes_it_out(
    qtbot, mnemo, model, window, tmp_path, monkeypatch
):
    """The import has a thread of its own: while it runs, the bar says how far it is and about
    how much is left, a message is answered, and Stop takes out only what the import brought."""
    from test_import_whole import chatgpt_export

    from engine.exchange import chat_exports, unfinished

    monkeypatch.setattr(chat_exports, "BATCH", 4)
    held, release = threading.Event(), threading.Event()
    read = chat_exports.read_conversation

    def slowly(item):  # the import waits after ten conversations, as a long one would
        if item["conversation_id"] == "c10":
            held.set()
            release.wait(30)
        return read(item)

    monkeypatch.setattr(chat_exports, "read_conversation", slowly)
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(chatgpt_export(30, 4)), encoding="utf-8")
    window.exchange.import_from(path)
    bar = window.exchange.bar
    qtbot.waitUntil(held.is_set, timeout=TIMEOUT_MS)
    qtbot.waitUntil(lambda: "of about" in bar.text.text(), timeout=TIMEOUT_MS)
    assert bar.isVisibleTo(window) and bar.stop_button.isVisibleTo(window)
    assert bar.text.text().startswith("Importing conversations.json: ")
    assert not window.exchange.import_action.isEnabled()  # one import at a time

    model.enqueue([say("Still here.")])
    send(qtbot, window, "Are you there?")
    assert bubble_texts(window)[-1] == "Still here."

    qtbot.mouseClick(bar.stop_button, Qt.MouseButton.LeftButton)
    with qtbot.waitSignal(window.exchange.finished, timeout=TIMEOUT_MS) as finished:
        release.set()
    assert "was stopped" in finished.args[0] and "taken out again" in finished.args[0]
    assert not bar.isVisibleTo(window)
    assert mnemo.conversations.all() and not [
        c for c in mnemo.conversations.all() if c.origin == "ChatGPT"
    ]
    assert [m.text for m in mnemo.recall.recent(10)][-2:] == ["Are you there?", "Still here."]
    assert unfinished.read(mnemo) is None


def test_closing_the_window_mid_import_pauses_it_without_a_warning(
    qtbot, mnemo, model, window, tmp_path, monkeypatch
):
    """Closing paused the import, and its "was paused" came back as a failure: a modal
    warning over a closing window (the Xvfb drive hung on it)."""
    from test_import_whole import chatgpt_export

    from engine.exchange import chat_exports, unfinished

    monkeypatch.setattr(chat_exports, "BATCH", 4)
    held, release = threading.Event(), threading.Event()
    read = chat_exports.read_conversation

    def slowly(item):
        if item["conversation_id"] == "c3":
            held.set()
            release.wait(30)
        return read(item)

    monkeypatch.setattr(chat_exports, "read_conversation", slowly)
    warned: list[str] = []
    monkeypatch.setattr(
        "desktop.exchange_actions.QMessageBox.warning", lambda _p, _t, text: warned.append(text)
    )
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(chatgpt_export(8, 4)), encoding="utf-8")
    window.exchange.import_from(path)
    qtbot.waitUntil(held.is_set, timeout=TIMEOUT_MS)
    release.set()
    window.shutdown()
    qtbot.wait(300)  # the worker's last signal, delivered after the close
    assert warned == []
    journal = unfinished.read(mnemo)
    # It says how many are in, also those whose vectors the close interrupted.
    assert journal is not None and journal.stored == mnemo.recall.count() > 0


def test_an_import_stopped_by_closing_is_offered_at_the_next_start(
    qtbot, mnemo, model, tmp_path, monkeypatch
):
    from test_import_whole import chatgpt_export

    from engine.exchange import chat_exports, import_file

    monkeypatch.setattr(chat_exports, "BATCH", 4)
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(chatgpt_export(6, 4)), encoding="utf-8")
    pause = threading.Event()
    with pytest.raises(MnemoError, match="paused"):
        import_file(mnemo, path, progress=lambda *_a: pause.set(), pause=pause)
    window = open_window(qtbot, mnemo, model)
    bar = window.exchange.bar
    assert bar.isVisibleTo(window) and "stopped halfway" in bar.text.text()
    assert bar.finish_button.isVisibleTo(window) and not bar.stop_button.isVisibleTo(window)
    with qtbot.waitSignal(window.exchange.finished, timeout=TIMEOUT_MS) as finished:
        qtbot.mouseClick(bar.finish_button, Qt.MouseButton.LeftButton)
    assert "messages: 20 added, 4 already there" in finished.args[0]
    assert ".;" not in finished.args[0]
    # The report stays in the bar, whole (the status line cut it), until it is closed.
    assert bar.isVisibleTo(window) and bar.text.text() == finished.args[0]
    assert bar.close_button.isVisibleTo(window) and not bar.finish_button.isVisibleTo(window)
    qtbot.mouseClick(bar.close_button, Qt.MouseButton.LeftButton)
    assert mnemo.recall.count() == 24 and not bar.isVisibleTo(window)
    window.shutdown()


def test_a_damaged_keyword_index_shows_a_banner_and_the_repair_clears_it(qtbot, mnemo):
    from sqlalchemy import text

    message = mnemo.recall.add("user", "The plumber is Ana Ruiz.")
    with mnemo.database.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO message_fts (message_fts, rowid, search_text) "
                "SELECT 'delete', id, search_text FROM message WHERE id = :id"
            ),
            {"id": message},
        )
    window = open_window(qtbot, mnemo, ScriptedModel())
    qtbot.waitUntil(lambda: window.banner_row.isVisibleTo(window), timeout=TIMEOUT_MS)
    assert "keyword index of past conversations disagrees" in window.banner.text()
    assert window.repair_button.isVisibleTo(window)
    with qtbot.waitSignal(window.tasks.changed, check_params_cb=is_kind("messages")):
        qtbot.mouseClick(window.repair_button, Qt.MouseButton.LeftButton)
    assert not window.banner_row.isVisibleTo(window)
    assert window.statusBar().currentMessage().startswith("Repaired: Rebuilt the keyword index")
    assert mnemo.recall.search("plumber", mode="keyword")[0].id == message
    window.shutdown()


def test_a_passage_set_to_expire_leaves_search_and_comes_back_from_expired(qtbot, mnemo, window):
    from datetime import datetime, timedelta

    from desktop.browser import PassageDialog

    spot = mnemo.archival.insert("The car is parked on level 3, spot B12.")
    browser = window.browser.archival
    dialog = PassageDialog(window, mnemo.archival.get(spot), "entered directly")
    qtbot.addWidget(dialog)
    dialog.expires.setChecked(True)
    soon = datetime.now().replace(second=0, microsecond=0) + timedelta(minutes=1)
    dialog.expires_at.setDateTime(
        dialog.expires_at.dateTime().fromSecsSinceEpoch(int(soon.timestamp()))
    )
    text_, tags, expires = dialog.values()
    assert expires == soon
    with qtbot.waitSignal(window.tasks.changed, check_params_cb=is_kind("passages")):
        browser.save(spot, text_, tags, datetime.now() - timedelta(seconds=1))  # a minute later
    browser.query.setText("where is the car parked")
    browser.refresh()
    wait_for_tasks(qtbot, window)
    assert spot not in [p.id for p in browser.passages]

    browser.show_expired.setChecked(True)
    wait_for_tasks(qtbot, window)
    assert [p.id for p in browser.passages] == [spot] and browser.restore_button.isVisibleTo(
        browser
    )
    assert browser.table.item(0, 4).text()  # when it expired
    browser.table.selectRow(0)
    with qtbot.waitSignal(window.tasks.changed, check_params_cb=is_kind("passages")):
        browser.restore_selected()
    assert mnemo.archival.get(spot).expires_at is None
    assert mnemo.archival.search("where is the car parked")[0].id == spot


def test_find_duplicates_lists_the_groups_and_merges_them(qtbot, mnemo, window, monkeypatch):
    from desktop.browser import DuplicatesDialog

    for text_ in ("Dentist on Friday at 10.", "dentist on friday at 10", "Milk, eggs and bread."):
        mnemo.archival.insert(text_)
    seen = []

    def accept(dialog):
        seen.append([dialog.list.item(i).text() for i in range(dialog.list.count())])
        return True

    monkeypatch.setattr(DuplicatesDialog, "exec", accept)
    browser = window.browser.archival
    with qtbot.waitSignal(window.tasks.changed, check_params_cb=is_kind("passages")):
        qtbot.mouseClick(browser.duplicates_button, Qt.MouseButton.LeftButton)
    assert seen == [["2×  Dentist on Friday at 10."]]
    assert mnemo.archival.count() == 2


def test_the_switcher_lists_the_assistants_and_switching_closes_for_the_other(
    qtbot, tmp_path, embedder, monkeypatch
):
    from engine.assistants import Assistants

    monkeypatch.delenv("MNEMO_HOME")
    assistants = Assistants(tmp_path / "mnemo-data")
    work, home = assistants.create("work"), assistants.create("home")
    assistants.use("work")
    with Mnemo.open(work, embedder=embedder) as mnemo:
        window = open_window(qtbot, mnemo, ScriptedModel())
        switcher = window.switcher
        items = [switcher.itemText(i) for i in range(switcher.count())]
        assert items == ["home", "work", "New assistant…"] and switcher.currentText() == "work"
        menu = window.assistant_menu
        monkeypatch.setattr(
            "desktop.assistant_switcher.QInputDialog.getText", lambda *_a, **_k: ("work 2", True)
        )
        menu.duplicate(memory=False)
        assert [a.name for a in assistants.all()] == ["home", "work", "work 2"]
        monkeypatch.setattr(
            "desktop.assistant_switcher.QInputDialog.getItem", lambda *_a: ("work 2", True)
        )
        monkeypatch.setattr(
            "desktop.assistant_switcher.QInputDialog.getText", lambda *_a, **_k: ("archive", True)
        )
        menu.rename()
        monkeypatch.setattr(
            "desktop.assistant_switcher.QInputDialog.getItem", lambda *_a: ("archive", True)
        )
        monkeypatch.setattr(ui, "confirm", lambda *_args: True)
        menu.delete()
        assert [a.name for a in assistants.all()] == ["home", "work"]
        items = [switcher.itemText(i) for i in range(switcher.count())]
        switcher.activated.emit(items.index("home"))
        assert not window.isVisible() and window.next_profile == home  # app.run opens it
        assert assistants.current() == "home"


# -- the memory browser ----------------------------------------------------------------------------


def test_search_edit_and_delete_passages(qtbot, mnemo, window, monkeypatch):
    mnemo.archival.insert("The spare key is under the blue pot.", tags=["home"])
    mnemo.archival.insert("Passport renewal is due in March.", tags=["admin"])
    mnemo.archival.insert("The wifi password is on the fridge.", tags=["home"])
    browser = window.browser.archival
    window.show_page("Browse memory")
    wait_for_tasks(qtbot, window)
    assert len(browser.passages) == 3

    browser.query.setText("spare key")
    browser.refresh()
    wait_for_tasks(qtbot, window)
    assert browser.passages[0].text == "The spare key is under the blue pot."

    browser.query.clear()
    browser.tag.setText("home")
    browser.refresh()
    wait_for_tasks(qtbot, window)
    assert sorted(p.text for p in browser.passages) == [
        "The spare key is under the blue pot.",
        "The wifi password is on the fridge.",
    ]

    browser.save(browser.passages[0].id, "The spare key is under the red pot.", ["home"])
    wait_for_tasks(qtbot, window)
    assert "The spare key is under the red pot." in [p.text for p in mnemo.archival.recent()]

    browser.tag.clear()
    browser.refresh()
    wait_for_tasks(qtbot, window)
    browser.table.selectRow(0)
    deleted = browser.passages[0].id
    browser.delete_selected()  # one passage: deleted without a question
    wait_for_tasks(qtbot, window)
    assert mnemo.archival.count() == 2
    assert deleted not in [p.id for p in mnemo.archival.recent()]

    asked: list[str] = []
    monkeypatch.setattr(ui, "confirm", lambda _parent, _title, text: asked.append(text) or False)
    browser.table.selectAll()
    browser.delete_selected()
    assert asked == ["Delete 2 passages from archival memory? This cannot be undone."]
    assert mnemo.archival.count() == 2  # the user said no
    monkeypatch.setattr(ui, "confirm", lambda *_args: True)
    browser.delete_selected()
    wait_for_tasks(qtbot, window)
    assert mnemo.archival.count() == 0
    assert browser.table.rowCount() == 0
    assert browser.status.text().startswith("Deleted 2 passages.")


def test_browsing_archival_memory_in_pages(qtbot, mnemo, window):
    from desktop.browser import BROWSE_LIMIT

    mnemo.archival.insert_many([f"Note number {n} about the garden." for n in range(205)])
    browser = window.browser.archival
    window.show_page("Browse memory")
    wait_for_tasks(qtbot, window)
    assert browser.table.rowCount() == BROWSE_LIMIT
    assert browser.next_button.isEnabled() and not browser.previous_button.isEnabled()
    qtbot.mouseClick(browser.next_button, Qt.MouseButton.LeftButton)
    wait_for_tasks(qtbot, window)
    assert browser.table.rowCount() == 205 - BROWSE_LIMIT
    assert not browser.next_button.isEnabled() and browser.previous_button.isEnabled()
    assert "201–205" in browser.status.text()


def test_search_and_delete_conversations(qtbot, mnemo, window, monkeypatch):
    mnemo.recall.add("user", "We talked about the Lisbon trip.", created_at="2024-05-02T10:00:00")
    mnemo.recall.add("user", "Dentist appointment on Friday.", created_at="2024-06-10T09:00:00")
    window.chat.search.setText("Lisbon")
    window.chat.search.returnPressed.emit()
    wait_for_tasks(qtbot, window)
    conversations = window.browser.conversations
    assert window.browser.currentWidget() is conversations
    assert conversations.hits[0].text == "We talked about the Lisbon trip."

    conversations.query.clear()
    conversations.use_dates.setChecked(True)
    conversations.start.setDate(conversations.start.date().fromString("2024-06-01", "yyyy-MM-dd"))
    conversations.end.setDate(conversations.end.date().fromString("2024-06-30", "yyyy-MM-dd"))
    conversations.refresh()
    wait_for_tasks(qtbot, window)
    assert [hit.text for hit in conversations.hits] == ["Dentist appointment on Friday."]

    asked: list[str] = []
    monkeypatch.setattr(ui, "confirm", lambda _parent, _title, text: asked.append(text) or True)
    conversations.table.selectRow(0)
    conversations.delete_selected()
    wait_for_tasks(qtbot, window)
    assert asked and "cannot be undone" in asked[0]
    assert conversations.hits == []
    assert conversations.status.text().startswith("Deleted 1 message.")
    assert not mnemo.recall.search("dentist appointment").hits


def test_a_message_deleted_in_the_browser_leaves_the_chat(qtbot, window, model, monkeypatch):
    model.enqueue([say("Noted: the spare key is under the blue pot.")])
    send(qtbot, window, "My spare key is under the blue pot.")
    model.enqueue([say("Good morning!")])
    send(qtbot, window, "Good morning")
    shown = [bubble.text for bubble in window.chat.bubbles()]
    assert "My spare key is under the blue pot." in shown

    conversations = window.browser.conversations
    conversations.search_for("spare key blue pot")
    wait_for_tasks(qtbot, window)
    row = next(n for n, hit in enumerate(conversations.hits) if hit.text.startswith("My spare key"))
    monkeypatch.setattr(ui, "confirm", lambda *_args: True)
    conversations.table.selectRow(row)
    conversations.delete_selected()
    wait_for_tasks(qtbot, window)
    qtbot.waitUntil(lambda: "My spare key is under the blue pot." not in bubble_texts(window))
    assert "Good morning" in bubble_texts(window)
    assert "Noted: the spare key is under the blue pot." in bubble_texts(window)


def bubble_texts(window: MainWindow) -> list[str]:
    return [bubble.text for bubble in window.chat.bubbles()]


# -- documents -------------------------------------------------------------------------------------


def drop(window: MainWindow, paths: list[Path]) -> None:
    data = QMimeData()
    data.setUrls([QUrl.fromLocalFile(str(path)) for path in paths])
    event = QDropEvent(
        QPointF(50, 50),
        Qt.DropAction.CopyAction,
        data,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    window.dropEvent(event)


def test_a_dropped_file_is_ingested(qtbot, mnemo, window, tmp_path):
    notes = tmp_path / "notes.md"
    notes.write_text("# Garden\n\nThe tomatoes need water every second day.\n", "utf-8")
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.4 this is not really a pdf")
    with qtbot.waitSignal(
        on_gui_thread(window, window.ingest_worker.finished), timeout=60_000
    ) as finished:
        drop(window, [notes, broken])
    assert finished.args[0].files_done == 2
    wait_for_tasks(qtbot, window)
    documents = window.documents
    qtbot.waitUntil(lambda: documents.status_of(str(notes)) == "done", timeout=TIMEOUT_MS)
    assert documents.status_of(str(broken)) == "error"
    row = [d.path for d in documents.documents].index(str(broken))
    assert "PDF" in documents.table.item(row, 3).text()
    assert "2 of 2 files" in documents.progress_text.text()
    assert mnemo.archival.search("tomatoes water").hits[0].source.path == str(notes)


def test_watching_a_folder_from_the_window(qtbot, mnemo, window, tmp_path):
    folder = tmp_path / "watched"
    folder.mkdir()
    (folder / "first.txt").write_text("The boiler is serviced every October.", "utf-8")
    with qtbot.waitSignal(on_gui_thread(window, window.ingest_worker.finished), timeout=60_000):
        window.documents.watched.add_requested.emit(str(folder))
    qtbot.waitUntil(lambda: window.documents.watched.list.count() == 1, timeout=TIMEOUT_MS)
    assert str(folder) in window.documents.watched.list.item(0).text()
    assert str(folder) in window.settings_watched.list.item(0).text()
    assert mnemo.archival.search("boiler").hits

    (folder / "second.txt").write_text("The bins go out on Tuesday evenings.", "utf-8")
    second = str(folder / "second.txt")
    with qtbot.waitSignal(
        on_gui_thread(window, window.ingest_worker.file_done),
        timeout=30_000,
        check_params_cb=lambda result: result.path == second,
    ) as seen:
        pass
    assert seen.args[0].outcome == "done"
    assert mnemo.archival.search("bins Tuesday").hits


# -- settings --------------------------------------------------------------------------------------


def test_settings_round_trip(qtbot, mnemo, window, memory_keyring):
    page = window.settings
    page.backend.setCurrentIndex(page.backend.findData("openai"))
    page.model_name.setText("gpt-4o-mini")
    page.base_url.setText("http://127.0.0.1:9/v1")
    page.context.setValue(16384)
    page.key.setText("sk-test-123")
    page.policy.setCurrentIndex(page.policy.findData("auto"))
    page.step_limit.setValue(7)
    page.reranker.setText("/nowhere/reranker.gguf")  # missing: logged, and search goes on
    with qtbot.waitSignal(on_gui_thread(window, window.chat_worker.loaded), timeout=TIMEOUT_MS):
        qtbot.mouseClick(page.apply_button, Qt.MouseButton.LeftButton)

    assert memory_keyring.store == {("mnemo", "openai"): "sk-test-123"}
    assert page.key.text() == ""  # never shown again
    assert "saved in the keyring" in page.key_status.text()
    settings = mnemo.settings
    assert settings.get("model.backend") == "openai"
    assert settings.get("model.name") == "gpt-4o-mini"
    assert settings.get("model.base_url") == "http://127.0.0.1:9/v1"
    assert settings.get("model.context_length") == 16384
    assert settings.core_write_policy == "auto"
    assert settings.step_limit == 7
    assert settings.get("models.reranker") == "/nowhere/reranker.gguf"

    from desktop.documents import WatchedFoldersList
    from desktop.settings_page import SettingsPage
    from desktop.snapshots_view import SnapshotsView

    again = SettingsPage(mnemo, WatchedFoldersList(mnemo), SnapshotsView(mnemo, window.tasks))
    qtbot.addWidget(again)
    assert again.backend.currentData() == "openai"
    assert (again.model_name.text(), again.base_url.text()) == (
        "gpt-4o-mini",
        "http://127.0.0.1:9/v1",
    )
    assert again.context.value() == 16384
    assert again.policy.currentData() == "auto" and again.step_limit.value() == 7
    assert again.reranker.text() == "/nowhere/reranker.gguf"
    assert again.api.isVisibleTo(again) and not again.local.isVisibleTo(again)
    assert "saved in the keyring" in again.key_status.text()
    assert str(mnemo.profile.root) in [w.text() for w in again.findChildren(type(again.key_status))]

    again.context.setValue(0)  # "Automatic": the server of one's own is asked for its size
    assert again.context.text() == "Automatic"
    again.apply()
    assert not settings.is_set("model.context_length")


def test_a_missing_api_key_is_explained(qtbot, mnemo, memory_keyring, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    mnemo.settings.set("model.backend", "anthropic")
    mnemo.settings.set("model.name", "claude-sonnet-4-5")
    window = MainWindow(mnemo)  # the real loader
    qtbot.addWidget(window)
    try:
        qtbot.waitUntil(lambda: window.banner_row.isVisibleTo(window), timeout=TIMEOUT_MS)
        assert "There is no API key for anthropic. Enter it in Settings" in window.banner.text()
    finally:
        window.shutdown()


# -- starting --------------------------------------------------------------------------------------


def test_mnemo_alone_opens_the_window_and_commands_stay_the_cli():
    from desktop.launcher import wants_window

    assert wants_window([]) and wants_window(["--profile", "/tmp/p"])
    assert wants_window(["--profile=/tmp/p"])
    assert wants_window(["--server", "http://h:8765", "--assistant", "home"])
    assert not wants_window(["chat"]) and not wants_window(["--profile", "/tmp/p", "status"])
    assert not wants_window(["--server", "http://h:8765", "serve"])


def test_without_a_display_mnemo_says_what_to_do(tmp_path):
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")
    }
    env["MNEMO_HOME"] = str(tmp_path / "home")
    result = subprocess.run(
        [sys.executable, "-m", "desktop.launcher"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert result.returncode == 1
    assert "needs a desktop session" in result.stderr and "mnemo chat" in result.stderr
    status = subprocess.run(
        [sys.executable, "-m", "desktop.launcher", "status"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert status.returncode == 0, status.stderr
    assert "Core memory: 2 blocks" in status.stdout


COLLECTING_AFTER_THE_START = """
import gc, sys
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
from desktop import launcher

if sys.argv[1:]:  # a command
    code = launcher.main(sys.argv[1:])
    print("collecting", gc.isenabled(), flush=True)
    sys.exit(code)
app = QApplication([])

def check():
    shown = [w for w in app.topLevelWidgets() if type(w).__name__ == "MainWindow" and w.isVisible()]
    if not shown:
        QTimer.singleShot(50, check)
        return
    print("collecting", gc.isenabled(), flush=True)
    app.quit()

QTimer.singleShot(50, check)
sys.exit(launcher.main([]))
"""


@pytest.mark.parametrize("command", [[], ["status"]], ids=["window", "command"])
def test_the_garbage_collector_runs_again_once_mnemo_has_started(tmp_path, command):
    """The launcher pauses it while the engine imports (desktop.launcher): the window and a
    command each start it again, or a long chat would never free a cycle."""
    env = {**os.environ, "MNEMO_HOME": str(tmp_path / "home"), "QT_QPA_PLATFORM": "offscreen"}
    result = subprocess.run(
        [sys.executable, "-c", COLLECTING_AFTER_THE_START, *command],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "collecting True" in result.stdout


def test_the_lighter_pyside_import_check_answers_as_pyside_does(monkeypatch):
    """desktop.app swaps PySide's per-import source check for a cheaper one; every module loaded
    here (ours naming PySide6 or not, the standard library, compiled extensions) gets the
    answer PySide's own gives."""
    import shibokensupport.feature as feature  # loaded by PySide6

    from desktop.app import lighten_pyside_import_check

    pyside_check = feature._mod_uses_pyside
    monkeypatch.setattr(feature, "_mod_uses_pyside", pyside_check)  # put back afterwards
    lighten_pyside_import_check()
    assert feature._mod_uses_pyside is not pyside_check
    modules = [module for module in list(sys.modules.values()) if module is not None]
    answers = {module.__name__: pyside_check(module) for module in modules}
    assert answers["desktop.main_window"] and not answers["engine.mnemo"]
    assert not answers["numpy._core._multiarray_umath"] and not answers["json"]
    assert {module.__name__: feature._mod_uses_pyside(module) for module in modules} == answers


# -- real models -----------------------------------------------------------------------------------


def test_chatting_with_the_bundled_local_model(qtbot, mnemo):
    mnemo.settings.set("agent.step_limit", 3)
    window = MainWindow(mnemo)  # the real loader: llama.cpp with the bundled model
    qtbot.addWidget(window)
    try:
        qtbot.waitUntil(lambda: window.model_ready, timeout=120_000)
        assert "SmolLM2" in window.model_label.text()
        send(qtbot, window, "Hello! Please say hi back.", REAL_MODEL_TIMEOUT_MS)
        reply = window.chat.bubbles()[-1]
        assert reply.role == "assistant" and reply.text.strip()
        assert mnemo.recall.recent(1)[0].text == reply.text
    finally:
        window.shutdown()


def test_settings_switch_to_an_openai_compatible_server(qtbot, mnemo, llama_server):
    mnemo.settings.set("agent.step_limit", 3)
    window = MainWindow(mnemo)  # the real loader
    qtbot.addWidget(window)
    try:
        qtbot.waitUntil(lambda: window.model_ready, timeout=120_000)
        assert window.mode_label.text() == "assisted memory"  # the bundled 135M model
        assert "135M" in window.mode_label.toolTip()
        page = window.settings
        page.backend.setCurrentIndex(page.backend.findData("openai"))
        page.model_name.setText("smollm2")
        page.base_url.setText(llama_server)  # a local server needs no key
        page.context.setValue(8192)
        with qtbot.waitSignal(
            on_gui_thread(window, window.chat_worker.loaded), timeout=60_000
        ) as loaded:
            qtbot.mouseClick(page.apply_button, Qt.MouseButton.LeftButton)
        assert loaded.args == [("openai:smollm2", 8192, None)]
        assert window.mode_label.text() == "self-managed memory"  # an API model's own
        assert "self-managed" in page.mode_status.text()
        assert "8,192-token context" in window.model_label.text()
        assert window.model_label.text().startswith("openai:smollm2")
        pieces: list[str] = []
        window.bridge.text_streamed.connect(pieces.append)
        send(qtbot, window, "Hello!", REAL_MODEL_TIMEOUT_MS)
        reply = window.chat.bubbles()[-1]
        assert reply.role == "assistant" and reply.text.strip()
        assert pieces  # streamed from the server
    finally:
        window.shutdown()


def test_assisted_recall_shows_as_one_row_that_survives_a_restart(qtbot, mnemo):
    mnemo.archival.insert("The boiler service code is 7731.")
    model = ScriptedModel(parameter_count=135_000_000)  # a small local model: assisted
    window = open_window(qtbot, mnemo, model)
    try:
        assert window.mode_label.text() == "assisted memory"
        model.enqueue(["It is 7731."])
        send(qtbot, window, "What is the boiler service code?")
        (row,) = window.chat.findChildren(CallRow)
        assert row.toggle.text() == "recalled 1 passage → given to the model with your message"
        row.toggle.click()
        assert "7731" in row.outcome.text() and not row.outcome.isHidden()
        assert row.details.isHidden()  # ids and scores only when asked for
        assert window.context.stats.recalled > 0  # the context viewer counts the section
    finally:
        window.shutdown()
    reopened = open_window(qtbot, mnemo, ScriptedModel(parameter_count=135_000_000))
    try:
        (row,) = reopened.chat.findChildren(CallRow)
        assert row.toggle.text() == "recalled 1 passage → given to the model with your message"
    finally:
        reopened.shutdown()


def test_an_opened_recall_line_shows_what_memory_found_not_the_models_instruction(qtbot, mnemo):
    """Opening the line showed "Answer with what memory says above.", which is the model's."""
    mnemo.knowledge.add("user", "lives_in", "Antwerp")
    model = ScriptedModel(parameter_count=135_000_000)
    window = open_window(qtbot, mnemo, model)
    try:
        model.enqueue(["You live in Antwerp."])
        send(qtbot, window, "Where do I live?")
        (row,) = window.chat.findChildren(CallRow)
        stored = [m.text for m in mnemo.recall.recent(10) if m.name == "recall"]
        assert stored and "Answer with what memory says above." in stored[-1]  # the model's
        row.toggle.click()
        assert "You live in Antwerp" in row.outcome.text()
        assert "Answer with" not in row.outcome.text()
    finally:
        window.shutdown()
    reopened = open_window(qtbot, mnemo, ScriptedModel(parameter_count=135_000_000))
    try:
        (row,) = reopened.chat.findChildren(CallRow)
        assert "You live in Antwerp" in row.outcome.text()
        assert "Answer with" not in row.outcome.text()
    finally:
        reopened.shutdown()


def test_a_reply_shows_the_documents_it_used_as_links(qtbot, mnemo, boiler_manual):
    manual = boiler_manual
    model = ScriptedModel(parameter_count=135_000_000)
    window = open_window(qtbot, mnemo, model)
    try:
        model.enqueue(["The code is 7731; the plumber is Ana Ruiz."])
        send(qtbot, window, "What is the boiler service code?")
        (line,) = window.chat.findChildren(QLabel, "sources")
        assert "boiler-manual.pdf › page 4" in line.text()
        assert QUrl.fromLocalFile(str(manual)).toString() in line.text()
        assert line.openExternalLinks()
    finally:
        window.shutdown()
    reopened = open_window(qtbot, mnemo, ScriptedModel(parameter_count=135_000_000))
    try:
        (line,) = reopened.chat.findChildren(QLabel, "sources")
        assert "boiler-manual.pdf › page 4" in line.text()
    finally:
        reopened.shutdown()


def test_every_engine_event_reaches_the_window():
    """A new event type needs a row in the bridge's table, or the window never hears of it."""
    from typing import get_args

    from desktop.bridge import SIGNALS, EngineBridge
    from engine.events import Event, TextStreamed

    assert set(get_args(Event)) == {*SIGNALS, TextStreamed}
    assert all(hasattr(EngineBridge, signal) for signal in SIGNALS.values())


def test_the_app_shows_a_window_before_the_profile_has_opened(tmp_path):
    """`mnemo` as a person starts it: the first window is painted before the engine and the
    model are ready, and the full window then takes over and becomes ready."""
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "MNEMO_HOME": str(tmp_path / "profile"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "MNEMO_STARTUP_TRACE": "1",
    }
    mnemo = Path(sys.executable).parent / "mnemo"
    process = subprocess.Popen([str(mnemo)], env=env, stderr=subprocess.PIPE, text=True)
    moments: list[str] = []
    try:
        assert process.stderr is not None
        for line in process.stderr:
            if line.startswith("mnemo-startup "):
                moments.append(line.split()[1])
                if moments[-1] == "ready":
                    break
    finally:
        process.terminate()
        process.wait(timeout=60)
    assert moments == ["shown", "opened", "ready"]  # painted before the profile had opened


def test_the_first_window_opens_on_the_last_page_and_says_what_each_page_waits_for(qtbot):
    """While the profile opens, the person can already move between pages; each says quietly
    what it will show, and the full window then opens on the page they chose."""
    from desktop.opening import OpeningWindow

    ui.app_settings().setValue("window/page", "Documents")
    opening = OpeningWindow()
    qtbot.addWidget(opening)
    assert opening.page == "Documents"
    assert opening.message.text() == (
        "Opening your memory… your documents and watched folders will show here."
    )
    for row, page in enumerate(ui.PAGES):
        opening.nav.setCurrentRow(row)
        assert opening.page == page
        assert opening.message.text().startswith("Opening your memory… ")
    opening.nav.setCurrentRow(ui.PAGES.index("Core memory"))
    assert "your core memory" in opening.message.text()


def test_a_message_written_while_memory_opens_is_answered_once_the_model_is_ready(qtbot, mnemo):
    """The first window's chat takes a message at once. What was sent there goes on in the full
    window and is answered as soon as the model has loaded; what was still being typed stays in
    the input, the cursor where it was."""
    from desktop.opening import OpeningWindow

    ui.app_settings().setValue("window/page", "Chat")
    opening = OpeningWindow()
    qtbot.addWidget(opening)
    assert opening.composer.isVisibleTo(opening)
    qtbot.keyClicks(opening.input, "What is a good name for a <b>cat</b>?")
    qtbot.keyClick(opening.input, Qt.Key.Key_Return)
    assert opening.sent == "What is a good name for a <b>cat</b>?"
    assert "You: What is a good name for a <b>cat</b>?" in opening.message.text()
    qtbot.keyClicks(opening.input, "And a dog")
    qtbot.keyClick(opening.input, Qt.Key.Key_Return)  # one message waits at a time
    assert opening.sent == "What is a good name for a <b>cat</b>?"
    qtbot.keyClick(opening.input, Qt.Key.Key_Left)
    assert opening.draft == ("And a dog", 8)

    model = ScriptedModel()
    model.enqueue([say("Mara is a good name for a cat.")])
    may_load = threading.Event()

    def slow_loader(_settings):
        may_load.wait(TIMEOUT_MS / 1000)
        return model

    window = MainWindow(mnemo, loader=slow_loader)
    qtbot.addWidget(window)
    try:
        window.chat.carry_over(opening.sent, *opening.draft)
        assert [(b.role, b.text) for b in window.chat.bubbles()] == [
            ("user", "What is a good name for a <b>cat</b>?")
        ]
        assert window.chat.waiting.text() == "Sent as soon as the model is ready…"
        assert not window.chat.send_button.isEnabled()  # the one waiting message
        assert window.chat.input.toPlainText() == "And a dog"
        assert window.chat.input.textCursor().position() == 8
        assert not model.prompts  # nothing reached a model before one was loaded
        with qtbot.waitSignal(
            on_gui_thread(window, window.bridge.turn_finished), timeout=TIMEOUT_MS
        ):
            may_load.set()
        qtbot.waitUntil(lambda: not window.chat.busy, timeout=TIMEOUT_MS)
        assert [(b.role, b.text) for b in window.chat.bubbles()] == [
            ("user", "What is a good name for a <b>cat</b>?"),
            ("assistant", "Mara is a good name for a cat."),
        ]
        assert window.chat.send_button.isEnabled()
        assert window.chat.input.toPlainText() == "And a dog"  # still the person's to send
        stored = mnemo.recall.recent(10, window.conversation_id)
        assert [hit.text for hit in stored if hit.role == "user"] == [
            "What is a good name for a <b>cat</b>?"
        ]
    finally:
        may_load.set()
        window.shutdown()


def test_a_message_sent_while_no_model_can_load_waits_for_one(qtbot, mnemo):
    """When the model cannot load, a message sent stays shown and waiting (not lost, not
    refused), and goes to the model chosen next."""
    model = ScriptedModel()
    model.enqueue([say("Now I can answer.")])
    loads: list[str] = []

    def loader(_settings):
        loads.append("load")
        if len(loads) == 1:
            raise MnemoError("That model file is damaged.")
        return model

    window = MainWindow(mnemo, loader=loader)
    qtbot.addWidget(window)
    try:
        qtbot.waitUntil(lambda: "could not be loaded" in window.banner.text(), timeout=TIMEOUT_MS)
        window.chat.input.setPlainText("Are you there?")
        qtbot.mouseClick(window.chat.send_button, Qt.MouseButton.LeftButton)
        assert window.chat.queued == "Are you there?"
        assert [b.text for b in window.chat.bubbles()] == ["Are you there?"]
        with qtbot.waitSignal(
            on_gui_thread(window, window.bridge.turn_finished), timeout=TIMEOUT_MS
        ):
            window.load_requested.emit()
        qtbot.waitUntil(lambda: not window.chat.busy, timeout=TIMEOUT_MS)
        assert [b.text for b in window.chat.bubbles()] == ["Are you there?", "Now I can answer."]
        assert window.chat.queued is None
    finally:
        window.shutdown()


def test_the_model_loads_ahead_while_the_window_is_built(mnemo):
    """The first load takes the model started at once on another thread (or its error); a
    later load, or one for settings changed meanwhile, loads anew."""
    from engine.llm import LoadingAhead

    threads: list[str] = []
    closed: list[ScriptedModel] = []

    class Closing(ScriptedModel):
        def close(self) -> None:
            closed.append(self)

    def loader(settings):
        threads.append(threading.current_thread().name)
        if settings.get("model.context_length") == 999:
            raise MnemoError("That model file is damaged.")
        return Closing()

    load = LoadingAhead(mnemo.settings, loader)
    first = load(mnemo.settings)
    assert threads == ["mnemo-model-ahead"]  # loaded on its own thread, before it was asked
    second = load(mnemo.settings)
    assert second is not first and threads[-1] == threading.current_thread().name

    load = LoadingAhead(mnemo.settings, loader)
    mnemo.settings.set("model.context_length", 2048)  # changed before the window asked
    changed = load(mnemo.settings)
    assert len(closed) == 1 and closed[0] is not changed  # the stale one is closed

    mnemo.settings.set("model.context_length", 999)
    load = LoadingAhead(mnemo.settings, loader)
    with pytest.raises(MnemoError, match="damaged"):
        load(mnemo.settings)


# -- about ---------------------------------------------------------------------------------------


def test_about_names_the_version_model_profile_and_every_licence(qtbot, window, mnemo):
    from engine import __version__

    window.about_action.trigger()
    about = window.findChild(QObject, "about")
    assert about is not None and about.isVisible()
    assert f"Mnemo {__version__}" in [label.text() for label in about.findChildren(QLabel)]
    assert window.model_label.text() in about.model_line.text()
    assert str(mnemo.profile.root) in about.profile_line.text()
    notices = about.notices.toPlainText()
    for component in ("llama_cpp_python", "lancedb", "onnxruntime", "PySide6", "llama.cpp", "Qt 6"):
        assert f"\n- {component}" in notices, component
    assert "Permission is hereby granted" in notices  # the MIT texts themselves, not just names
    assert not ui.app_icon().isNull()  # the file is there and Qt reads it


def test_a_frozen_build_reads_the_notices_collected_when_it_was_built(tmp_path, monkeypatch):
    from engine import notices

    collected = tmp_path / notices.NOTICES_FILE
    collected.write_text("Collected at build time.\n", encoding="utf-8")
    monkeypatch.setattr(notices, "resource_path", lambda _relative: collected)
    assert notices.notices_text() == "Collected at build time.\n"


# -- forgetting --------------------------------------------------------------------------------


def test_forget_everything_about_a_person_shows_a_preview_and_forgets_on_forget(
    qtbot, mnemo, window, tmp_path
):
    mnemo.recall.add("user", "My ex Jordan lives in Bristol.")
    mnemo.archival.insert("Jordan's number is 0117 496 0321.")
    mnemo.knowledge.add("user", "partner", "Jordan")
    mnemo.knowledge.add("Jordan", "lives_in", "Bristol")
    page = window.knowledge
    window.show_page("People & things")
    page.refresh()
    rows = [
        page.entities.item(row).data(Qt.ItemDataRole.UserRole)
        for row in range(page.entities.count())
    ]
    page.entities.setCurrentRow(rows.index("Jordan"))
    assert page.forget_entity_button.isEnabled()
    qtbot.mouseClick(page.forget_entity_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.property("forget_dialog") is not None, timeout=TIMEOUT_MS)
    dialog = window.property("forget_dialog")
    groups = {
        dialog.places.topLevelItem(i).text(0) for i in range(dialog.places.topLevelItemCount())
    }
    assert {"1 message", "1 archival passage", "1 person or thing"} <= groups
    assert mnemo.knowledge.resolve("Jordan") is not None  # nothing forgotten yet
    dialog.grab().save(str(tmp_path / "forget-preview.png"))
    with qtbot.waitSignal(window.tasks.changed, check_params_cb=is_kind("knowledge")):
        qtbot.mouseClick(dialog.forget_button, Qt.MouseButton.LeftButton)
        assert "Forgetting everything about Jordan…" in page.notice.text()  # while it runs
    assert mnemo.knowledge.resolve("Jordan") is None
    assert "Jordan" not in mnemo.recall.recent(1)[0].text
    assert "Forgotten: everything about Jordan" in page.notice.text()


def test_cancel_in_the_forget_preview_forgets_nothing(qtbot, mnemo, window):
    mnemo.archival.insert("My bank PIN is zebra-7741-quartz.")
    browser = window.browser.archival
    window.show_page("Browse memory")
    browser.refresh()
    qtbot.waitUntil(lambda: len(browser.passages) == 1, timeout=TIMEOUT_MS)
    browser.table.selectRow(0)
    qtbot.mouseClick(browser.forget_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.property("forget_dialog") is not None, timeout=TIMEOUT_MS)
    dialog = window.property("forget_dialog")
    # The person chose a sentence: the preview shows it, not "passage b63e27f2…".
    heading = dialog.findChildren(QLabel)[0].text()
    assert "To forget the passage “My bank PIN is zebra-7741-quartz.”" in heading
    line = dialog.places.topLevelItem(0).child(0).text(0)
    assert line == "“My bank PIN is zebra-7741-quartz.”, all of it"
    assert browser.passages[0].id[:8] not in heading + line
    dialog.reject()
    assert mnemo.archival.count() == 1


def test_forgetting_a_message_from_the_browser_shows_the_message_and_its_conversation(
    qtbot, mnemo, window
):
    """The dialog said "message 19, all of it"; and the browser's Conversation column was empty
    for Mnemo's own conversations (once filled, it said "Mnemo:")."""
    mnemo.recall.add("user", "Where does my sister live?", conversation_id="default")
    mnemo.recall.add("assistant", "In Antwerp, you told me.", conversation_id="default")
    browser = window.browser.conversations
    window.show_page("Browse memory")
    window.browser.setCurrentWidget(browser)
    browser.refresh()
    qtbot.waitUntil(lambda: len(browser.hits) == 2, timeout=TIMEOUT_MS)
    listed = {info.id: info.label for info in mnemo.conversations.all()}
    assert listed["default"] == "Where does my sister live?"
    column = {browser.table.item(row, 3).text() for row in range(2)}
    assert column == {"Where does my sister live?"}  # as the conversation list calls it
    row = next(i for i, hit in enumerate(browser.hits) if hit.role == "assistant")
    browser.table.selectRow(row)
    qtbot.mouseClick(browser.forget_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.property("forget_dialog") is not None, timeout=TIMEOUT_MS)
    dialog = window.property("forget_dialog")
    heading = dialog.findChildren(QLabel)[0].text()
    assert "To forget the message “In Antwerp, you told me.”" in heading
    assert dialog.places.topLevelItem(0).child(0).text(0) == "“In Antwerp, you told me.”, all of it"
    dialog.reject()


def test_words_selected_in_a_chat_message_can_be_forgotten(qtbot, mnemo, window, monkeypatch):
    mnemo.recall.add("user", "My bank PIN is zebra-7741-quartz.")
    bubble = window.chat.add_message("user", "My bank PIN is zebra-7741-quartz.")
    asked: list[str] = []

    def get_text(_parent, _title, _label, text=""):
        asked.append(text)  # the box opens with the words chosen in the message
        return text, True

    monkeypatch.setattr("desktop.forget_dialog.QInputDialog.getText", get_text)
    bubble.forget_requested.emit("zebra-7741-quartz")  # the bubble's menu: Forget the words…
    qtbot.waitUntil(lambda: window.property("forget_dialog") is not None, timeout=TIMEOUT_MS)
    assert asked == ["zebra-7741-quartz"]
    dialog = window.property("forget_dialog")
    with qtbot.waitSignal(window.tasks.changed, check_params_cb=is_kind("messages")):
        qtbot.mouseClick(dialog.forget_button, Qt.MouseButton.LeftButton)
    assert "zebra" not in mnemo.recall.recent(1)[0].text


def test_forget_my_passport_number_in_the_window_chat_never_reaches_the_model(
    qtbot, mnemo, window, model
):
    mnemo.recall.add("user", "My passport number is QX-55123-LM, please remember it.")
    window.chat.input.setPlainText("forget my passport number")
    qtbot.mouseClick(window.chat.send_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.property("forget_dialog") is not None, timeout=TIMEOUT_MS)
    assert model.prompts == []  # the model never saw the request
    assert not [b for b in window.chat.bubbles() if b.text == "forget my passport number"]
    dialog = window.property("forget_dialog")
    with qtbot.waitSignal(window.tasks.changed, check_params_cb=is_kind("messages")):
        qtbot.mouseClick(dialog.forget_button, Qt.MouseButton.LeftButton)
    assert all("QX-55123" not in hit.text for hit in mnemo.recall.recent(10))
    assert not window.chat.busy


def test_a_history_diff_never_runs_words_together(qapp):
    """ "Nothing is known about the user yet." -> "My name is Sam." read "NothingMy name is
    knownSam.": with less than half the words in common the old is struck whole, the new
    below; word by word, a removed and an added word keep a space between them."""
    from PySide6.QtGui import QTextDocument

    def plain(old: str, new: str) -> str:
        document = QTextDocument()
        document.setHtml(ui.diff_html(old, new))
        return document.toPlainText()

    assert plain("Nothing is known about the user yet.", "My name is Sam.") == (
        "Nothing is known about the user yet.\nMy name is Sam."
    )
    assert plain("Ines lives in Ghent with Tom.", "Ines lives in Antwerp with Tom.") == (
        "Ines lives in Ghent Antwerp with Tom."
    )


def test_the_context_meter_says_its_share_beside_its_fill_not_on_it(qtbot, mnemo, window):
    """The meter's fill covered its label ("c|ontext 57%")."""
    from engine.context.window import ContextStats

    window.resize(1180, 760)
    window.show()
    qtbot.waitExposed(window)
    window._show_stats(ContextStats(4096, 1000, 100, 100, 100, 0, 270, 570, 4, 0))
    meter = window.context_meter
    meter.layout().activate()  # laid out now (events would bring the worker's own figures)
    assert meter.text.text() == "context 57%"
    assert not meter.bar.isTextVisible()
    text, bar = meter.text.geometry(), meter.bar.geometry()
    assert not text.intersects(bar) and text.right() < bar.left()
    assert meter.text.width() >= meter.text.sizeHint().width()  # not cut either


def test_a_profile_opened_by_its_path_is_named_by_its_persona(qtbot, mnemo, window):
    """The switcher showed the folder's name ("profile") for a profile outside the data
    folder ($MNEMO_HOME, --profile): the assistant's own name is its persona's."""
    from desktop.assistant_switcher import persona_name

    assert mnemo.profile.root.name == "profile"
    assert window.switcher.currentText() == "Mnemo"
    assert str(mnemo.profile.root) in window.switcher.toolTip()
    assert persona_name("My name is Ada. I keep things short.", mnemo.profile.root) == "Ada"
    assert persona_name("I am Ólafur, your assistant.", mnemo.profile.root) == "Ólafur"
    assert persona_name("A helpful assistant.", mnemo.profile.root) == "profile"


def test_a_waiting_proposal_leaves_the_chat_its_width_at_the_default_size(qtbot, mnemo):
    """At 1180×760 a waiting proposal narrowed the chat until a horizontal scrollbar showed
    and text was cut ("…it waits for you on the")."""
    model = ScriptedModel(parameter_count=135_000_000)
    model.enqueue(["Noted, Antwerp."])
    window = open_window(qtbot, mnemo, model)
    try:
        window.resize(1180, 760)
        window.show()
        qtbot.waitExposed(window)
        send(qtbot, window, "My sister Ines lives in Antwerp and works as a nurse there.")
        qtbot.waitUntil(lambda: window.proposals.count >= 1, timeout=TIMEOUT_MS)
        qtbot.waitUntil(lambda: window.proposals.isVisible(), timeout=TIMEOUT_MS)
        qtbot.wait(100)
        chat = window.chat
        assert not chat.scroll_area.horizontalScrollBar().isVisible()
        viewport = chat.scroll_area.viewport().width()
        inside = chat.scroll_area.widget()
        for widget in [*inside.findChildren(QLabel), *inside.findChildren(QToolButton)]:
            if widget.isVisible() and widget.text():
                assert widget.geometry().right() <= viewport, widget.text()
                wraps = isinstance(widget, QLabel) and widget.wordWrap()
                assert wraps or widget.sizeHint().width() <= widget.width(), widget.text()
        assert chat.width() >= 420 and window.proposals.width() >= 300
    finally:
        window.shutdown()


def test_a_reply_opens_no_link_and_shows_where_one_points(qtbot):
    from desktop.chat import MessageBubble

    bubble = MessageBubble("assistant", "Log in at [your bank](http://evil.example/login).")
    qtbot.addWidget(bubble)
    assert not bubble.body.openExternalLinks()
    assert not bubble.body.textInteractionFlags() & Qt.TextInteractionFlag.LinksAccessibleByMouse
    assert "http://evil.example/login" in bubble.body.text()
    assert "](" not in bubble.body.text()
