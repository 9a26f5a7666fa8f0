"""The window as a place to chat: new conversations, reopening old ones, quitting, what the
person sees while they wait, and sending the next message as soon as a reply shows."""

from __future__ import annotations

import warnings

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from test_desktop import TIMEOUT_MS, open_window, send

from engine.llm import ScriptedModel, ScriptedStep

SMALL = 135_000_000  # the bundled model's size: the assisted mode


def user_texts(window) -> list[str]:
    return [bubble.text for bubble in window.chat.bubbles() if bubble.role == "user"]


def test_a_new_conversation_is_empty_keeps_the_memory_and_the_old_one_reopens(qtbot, mnemo):
    model = ScriptedModel(parameter_count=SMALL)
    model.enqueue(["Noted: peanuts.", "You are allergic to peanuts.", "Welcome back."])
    window = open_window(qtbot, mnemo, model)
    try:
        send(qtbot, window, "I'm allergic to peanuts.")
        assert window.new_action.shortcut() == QKeySequence(QKeySequence.StandardKey.New)
        window.new_action.trigger()
        qtbot.waitUntil(lambda: window.conversation_id != "default", timeout=TIMEOUT_MS)
        qtbot.waitUntil(lambda: not window.chat.bubbles(), timeout=TIMEOUT_MS)
        qtbot.waitUntil(
            lambda: window.conversation_list.titles()[:1] == ["New conversation"],
            timeout=TIMEOUT_MS,
        )
        send(qtbot, window, "What am I allergic to?")
        assert user_texts(window) == ["What am I allergic to?"]
        asked = model.prompts[-1]
        assert "peanuts" in asked.messages[-1].content  # recalled from the other conversation
        qtbot.waitUntil(
            lambda: (
                window.conversation_list.titles()
                == ["What am I allergic to?", "I'm allergic to peanuts."]
            ),
            timeout=TIMEOUT_MS,
        )
        old = window.conversation_list.list.item(1)
        window.conversation_list.list.itemClicked.emit(old)
        qtbot.waitUntil(lambda: window.conversation_id == "default", timeout=TIMEOUT_MS)
        qtbot.waitUntil(
            lambda: user_texts(window) == ["I'm allergic to peanuts."], timeout=TIMEOUT_MS
        )
        send(qtbot, window, "Hello again")
        assert [h.text for h in mnemo.recall.recent(20) if h.role == "user"][-1] == "Hello again"
        window.new_action.trigger()
        qtbot.waitUntil(lambda: window.conversation_id != "default", timeout=TIMEOUT_MS)
        left_in = window.conversation_id
    finally:
        window.shutdown()
    # Restarting continues where the person left off: the new, empty conversation.
    reopened = open_window(qtbot, mnemo, ScriptedModel(parameter_count=SMALL))
    try:
        assert reopened.conversation_id == left_in and not reopened.chat.bubbles()
        assert reopened.chat_worker.agent.conversation_id == left_in
    finally:
        reopened.shutdown()


def test_file_quit_closes_the_window(qtbot, mnemo):
    window = open_window(qtbot, mnemo, ScriptedModel())
    try:
        menu = window.exchange.menu
        assert "Quit" in [action.text() for action in menu.actions()]
        assert window.quit_action.shortcut().toString() == "Ctrl+Q"
        window.show()
        window.quit_action.trigger()
        qtbot.waitUntil(lambda: not window.isVisible(), timeout=TIMEOUT_MS)
    finally:
        window.shutdown()


def test_the_person_sees_what_they_wait_for(qtbot, mnemo):
    model = ScriptedModel(parameter_count=SMALL)
    model.enqueue([ScriptedStep("Here is a soup recipe.", delay_s=1.0)])
    window = open_window(qtbot, mnemo, model)
    try:
        window.chat.input.setPlainText("Suggest a soup")
        qtbot.mouseClick(window.chat.send_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(
            lambda: window.chat.waiting.text() in ("Searching memory…", "Thinking…"),
            timeout=TIMEOUT_MS,
        )
        assert not window.chat.waiting.isHidden()
        assert window.chat.send_button.text() == "Stop"
        qtbot.waitUntil(lambda: not window.chat.busy, timeout=TIMEOUT_MS)
        assert window.chat.waiting.isHidden()
    finally:
        window.shutdown()


def test_the_next_message_can_be_sent_as_soon_as_the_reply_shows(qtbot, mnemo):
    window = open_window(qtbot, mnemo, ScriptedModel(parameter_count=SMALL))
    try:
        chat = window.chat
        sent: list[str] = []
        chat.send_requested.connect(sent.append)
        chat.set_busy(True)  # a turn runs…
        chat.input.setPlainText("typed while the reply was written")
        qtbot.keyClick(chat.input, Qt.Key.Key_Return)
        assert sent == [] and chat.send_button.text() == "Stop"  # Enter waits for the reply
        chat.stream("Hello")
        chat.reply_done("Hello there.")  # …its reply shows; the turn's tail still runs
        assert chat.busy and chat.send_button.text() == "Send" and chat.send_button.isEnabled()
        qtbot.keyClick(chat.input, Qt.Key.Key_Return)
        assert sent == ["typed while the reply was written"]
        chat.set_busy(False)
    finally:
        window.shutdown()


def test_the_mouse_wheel_changes_no_setting_that_lacks_focus(qtbot, mnemo):
    from PySide6.QtCore import QPoint, QPointF
    from PySide6.QtGui import QWheelEvent
    from PySide6.QtWidgets import QApplication

    window = open_window(qtbot, mnemo, ScriptedModel())
    try:
        window.show_page("Settings")
        window.show()
        window.activateWindow()
        spin = window.settings.step_limit
        before = spin.value()

        def wheel() -> None:
            event = QWheelEvent(
                QPointF(5, 5),
                QPointF(5, 5),
                QPoint(0, 0),
                QPoint(0, -120),
                Qt.MouseButton.NoButton,
                Qt.KeyboardModifier.NoModifier,
                Qt.ScrollPhase.NoScrollPhase,
                False,
            )
            QApplication.sendEvent(spin, event)

        window.nav.setFocus()
        wheel()
        assert spin.value() == before and not spin.hasFocus()
        spin.setFocus()
        qtbot.waitUntil(spin.hasFocus, timeout=TIMEOUT_MS)
        wheel()  # once the person chose it, the wheel is theirs to use
        assert spin.value() == before - 1
    finally:
        window.shutdown()


def test_the_chat_lines_about_a_proposal_follow_the_decision(qtbot, mnemo):
    mnemo.knowledge.add("user", "lives_in", "Porto")
    model = ScriptedModel(parameter_count=SMALL)
    model.enqueue(["Lyon, lovely."])
    window = open_window(qtbot, mnemo, model)
    try:
        send(qtbot, window, "I moved to Lyon last month.")
        (proposal,) = mnemo.proposals.pending()
        notices = [w.text() for w in window.chat.findChildren(type(window.chat.waiting))]
        assert any("waits for you on the right" in text for text in notices)
        qtbot.waitUntil(lambda: window.proposals.count == 1, timeout=TIMEOUT_MS)
        window.proposals.card(proposal.id).decided.emit(proposal.id, "reject", None)
        qtbot.waitUntil(
            lambda: any(
                "You rejected the change" in w.text()
                for w in window.chat.findChildren(type(window.chat.waiting))
            ),
            timeout=TIMEOUT_MS,
        )
        texts = [w.text() for w in window.chat.findChildren(type(window.chat.waiting))]
        assert not any("waits for you on the right" in text for text in texts)
        row = window.chat._calls[-1]
        assert "you rejected it" in row.toggle.text()
    finally:
        window.shutdown()
    reopened = open_window(qtbot, mnemo, ScriptedModel(parameter_count=SMALL))
    try:  # after a restart the lines say the same: it said "→ kept" instead
        from desktop.chat import CallRow

        rows = [row.toggle.text() for row in reopened.chat.findChildren(CallRow)]
        assert rows and not any("wait" in text for text in rows)
        assert "you rejected it" in rows[-1]
        texts = [w.text() for w in reopened.chat.findChildren(type(reopened.chat.waiting))]
        assert any("You rejected the change" in text for text in texts)
    finally:
        reopened.shutdown()


def test_a_waiting_change_a_later_message_replaced_says_it_was_withdrawn(qtbot, mnemo):
    model = ScriptedModel(parameter_count=SMALL)
    model.enqueue(["Porto, lovely.", "Lyon, lovely too."])
    window = open_window(qtbot, mnemo, model)
    try:
        send(qtbot, window, "I live in Porto.")
        send(qtbot, window, "I moved to Lyon last month.")
        qtbot.waitUntil(
            lambda: any(
                "was withdrawn: a later message replaced it" in w.text()
                for w in window.chat.findChildren(type(window.chat.waiting))
            ),
            timeout=TIMEOUT_MS,
        )
        qtbot.waitUntil(lambda: window.proposals.count == 1, timeout=TIMEOUT_MS)
    finally:
        window.shutdown()


def test_history_shows_what_each_version_changed_word_by_word(qtbot, mnemo):
    from desktop.core_cards import HistoryDialog

    mnemo.core.set("human", "Name: Sam. Lives in Porto. Likes tea.")
    mnemo.core.set("human", "Name: Sam. Lives in Lyon. Likes tea.")
    dialog = HistoryDialog(None, "human", mnemo.core.history("human"))
    qtbot.addWidget(dialog)
    shown = dialog.diff.toHtml()
    assert "line-through" in shown and "Porto" in shown and "Lyon" in shown


def test_the_models_page_offers_each_role_mnemo_uses_with_its_own_button(qtbot, mnemo):
    window = open_window(qtbot, mnemo, ScriptedModel())
    try:
        buttons = {card.entry.kind: card.use_button.text() for card in window.models.cards.values()}
        assert buttons == {
            "chat": "Use this model",
            "reranker": "Use this re-ranker",
            "embedding": "Use this embedder",
        }
    finally:
        window.shutdown()


def test_a_short_conversation_with_the_bundled_model_in_the_window(qtbot, mnemo):
    """The conversation benchmark's twin, in the real window with the real model: a statement,
    small talk, a new conversation and a question about what was said."""
    from test_desktop import REAL_MODEL_TIMEOUT_MS

    from engine.llm.local import LlamaModel

    model = LlamaModel(context_length=2048, seed=7)
    window = open_window(qtbot, mnemo, model)
    try:
        for text in ("Hi there!", "I'm allergic to peanuts.", "Any idea for a quick lunch?"):
            send(qtbot, window, text, REAL_MODEL_TIMEOUT_MS)
        replies = [b.text for b in window.chat.bubbles() if b.role == "assistant"]
        assert len(replies) == 3 and len(set(replies)) == 3  # no reply repeats another
        assert [f.sentence() for f in mnemo.knowledge.facts("user")] == [
            "User is allergic to peanuts"
        ]
        window.new_action.trigger()
        qtbot.waitUntil(lambda: not window.chat.bubbles(), timeout=TIMEOUT_MS)
        send(qtbot, window, "What am I allergic to?", REAL_MODEL_TIMEOUT_MS)
        (reply,) = [b.text for b in window.chat.bubbles() if b.role == "assistant"]
        assert "peanut" in reply.lower(), reply
    finally:
        window.shutdown()


def test_ctrl_n_starts_a_conversation_even_when_no_window_is_active(qtbot, mnemo):
    """After a file dialog closed (no window manager to give the window back its activation),
    Ctrl+N did nothing and the next message went into the old conversation. The shortcut is
    the application's, and the switch is ordered before any message typed after it."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication, QWidget

    model = ScriptedModel(parameter_count=SMALL)
    model.enqueue(["Noted.", "Hello!"])
    window = open_window(qtbot, mnemo, model)
    try:
        window.show()
        send(qtbot, window, "My cat is called Miso.")
        other = QWidget()  # a dialog took the activation, and no window manager gave it back
        other.show()
        other.close()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            QApplication.setActiveWindow(None)  # type: ignore[call-overload]
        assert QApplication.activeWindow() is None
        old = window.conversation_id
        qtbot.keyClick(window.chat.input, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
        send(qtbot, window, "A new start.")  # typed at once
        said = {h.text: h.conversation_id for h in mnemo.recall.search_by_date(None, None, 20)}
        assert said["My cat is called Miso."] == old
        assert said["A new start."] != old
    finally:
        window.shutdown()


def test_new_conversations_left_empty_do_not_fill_the_list(qtbot, mnemo):
    """New, then back to an old conversation, then New again, left one more empty "New
    conversation" in the list each time."""
    model = ScriptedModel(parameter_count=SMALL)
    model.enqueue(["Noted."])
    window = open_window(qtbot, mnemo, model)
    try:
        send(qtbot, window, "My cat is called Miso.")
        for _ in range(3):
            window.new_action.trigger()
            qtbot.waitUntil(lambda: window.conversation_id != "default", timeout=TIMEOUT_MS)
            window.open_conversation("default")
            qtbot.waitUntil(lambda: window.conversation_id == "default", timeout=TIMEOUT_MS)
        window.new_action.trigger()
        qtbot.waitUntil(lambda: window.conversation_id != "default", timeout=TIMEOUT_MS)
        qtbot.waitUntil(
            lambda: (
                window.conversation_list.titles() == ["New conversation", "My cat is called Miso."]
            ),
            timeout=TIMEOUT_MS,
        )
        window.open_conversation("default")
        qtbot.waitUntil(
            lambda: window.conversation_list.titles() == ["My cat is called Miso."],
            timeout=TIMEOUT_MS,
        )
    finally:
        window.shutdown()
