"""The window connected to `mnemo serve` as a client: the server's assistants live in a real
PostgreSQL (pgvector) and a real S3-compatible server; a scripted model plays the agent there.
The window is the same; only its memory and its model are on the server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from desktop import remote
from desktop.main_window import MainWindow
from desktop.remote import open_remote
from desktop.server_choice import ServerChoice
from engine.llm import ScriptedModel
from tests.agent_helpers import call, say
from tests.mnemo_server import Server, on_postgres_and_s3
from tests.test_desktop import TIMEOUT_MS, send


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel()


@pytest.fixture
def server(tmp_path, model, postgres_server, s3_profile) -> Iterator[Server]:
    running = on_postgres_and_s3(tmp_path / "server", model, postgres_server, s3_profile)
    yield running
    running.stop()


def open_client(qtbot, server: Server, user: str) -> MainWindow:
    mnemo = open_remote(ServerChoice(server.url, "home"), server.tokens[user])
    window = MainWindow(mnemo)
    qtbot.addWidget(window)
    qtbot.waitUntil(lambda: window.model_ready, timeout=TIMEOUT_MS)
    return window


def test_the_window_chats_approves_ingests_and_finds_through_the_server(
    qtbot, server, model, tmp_path, monkeypatch
):
    window = open_client(qtbot, server, "alice")
    try:
        assert window.remote and "on http://127.0.0.1" in window.windowTitle()
        assert window.nav.item(6).isHidden()  # Models: the server's model answers
        assert window.model_label.text() == f"Connected: home on {server.url}"
        assert not window.settings_watched.add_button.isEnabled()
        model.enqueue(
            [
                call("core_memory_append", label="human", content="Name: Ada.",
                     request_heartbeat=True),
                say("Hi Ada, noted."),
            ]
        )  # fmt: skip
        send(qtbot, window, "I am Ada.")
        assert window.chat.bubbles()[-1].text == "Hi Ada, noted."
        qtbot.waitUntil(lambda: window.proposals.count == 1, timeout=TIMEOUT_MS)
        (proposal,) = window.mnemo.proposals.pending()
        card = window.proposals.card(proposal.id)
        qtbot.mouseClick(card.approve_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: window.proposals.count == 0, timeout=TIMEOUT_MS)
        qtbot.waitUntil(
            lambda: "Name: Ada." in window.core.cards["human"].editor.toPlainText(),
            timeout=TIMEOUT_MS,
        )

        manual = tmp_path / "boiler.md"
        manual.write_text("# Boiler\n\nThe boiler is serviced every October by Dana.\n")
        window.ingest([str(manual)])  # what a drop does
        qtbot.waitUntil(lambda: not window.ingest_meter.isVisible(), timeout=TIMEOUT_MS)
        qtbot.waitUntil(lambda: len(window.documents.documents) == 1, timeout=TIMEOUT_MS)
        assert window.documents.documents[0].status == "done"
        found = window.mnemo.archival.search("who services the boiler")
        assert "Dana" in found.hits[0].text
        assert not list((tmp_path / "server").glob("**/mnemo.sqlite"))  # all on the servers

        # Export reads the assistant's own files, which are on the server: a sentence says so.
        assert not window.exchange.export_action.isEnabled()
        monkeypatch.setattr(QMessageBox, "warning", lambda *_args: None)
        with qtbot.waitSignal(window.exchange.finished, timeout=TIMEOUT_MS) as said:
            window.exchange.export_to(tmp_path / "home.mnemo")
        assert said.args == [
            "Export works on assistants kept on this computer; this one is on a Mnemo server."
        ]
    finally:
        window.shutdown()

    other = open_client(qtbot, server, "bob")
    try:
        assert other.mnemo.archival.search("who services the boiler").total == 0
        assert other.chat.bubbles() == [] and other.proposals.count == 0
        assert "Ada" not in other.mnemo.core.get("human")
    finally:
        other.shutdown()


def test_a_lost_connection_gives_the_message_back_and_the_window_retries(
    qtbot, server, model, tmp_path, monkeypatch
):
    monkeypatch.setattr(remote, "RETRY_EVERY_MS", 200)
    window = open_client(qtbot, server, "alice")
    try:
        server.stop()
        window.chat.input.setPlainText("Are you still there?")
        qtbot.mouseClick(window.chat.send_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: window.banner_row.isVisibleTo(window), timeout=TIMEOUT_MS)
        assert window.banner.text().startswith("Lost the connection. Cannot reach the Mnemo server")
        assert window.model_label.text() == "Reconnecting…"
        assert window.chat.input.toPlainText() == "Are you still there?"  # never lost
        assert not window.chat.ready

        again = Server(
            tmp_path / "server",
            lambda: model,
            port=server.port,
            tokens=server.tokens,
        )
        try:
            qtbot.waitUntil(lambda: not window.banner_row.isVisibleTo(window), timeout=TIMEOUT_MS)
            assert window.chat.ready
            model.enqueue([say("Yes, I am here.")])
            send(qtbot, window, window.chat.input.toPlainText())
            assert window.chat.bubbles()[-1].text == "Yes, I am here."
        finally:
            again.stop()
    finally:
        window.shutdown()


def test_connecting_keeps_the_token_in_the_keyring_and_says_what_is_wrong(
    qtbot, server, memory_keyring
):
    from desktop.remote import ConnectDialog
    from engine.server.client import saved_token

    dialog = ConnectDialog()
    qtbot.addWidget(dialog)
    dialog.url.setText(server.url)
    dialog.token.setText("mnemo_not-a-token")
    dialog._connect()
    assert "valid token" in dialog.problem.text() and dialog.choice is None
    dialog.token.setText(server.tokens["alice"])
    dialog.assistant.setText("work")
    dialog._connect()
    assert "no assistant called 'work'" in dialog.problem.text()
    dialog.assistant.setText("home")
    dialog._connect()
    assert dialog.choice == ServerChoice(server.url, "home")
    assert saved_token(server.url) == server.tokens["alice"]
    kept = memory_keyring.get_password("mnemo", f"server:{server.url}")
    assert kept == server.tokens["alice"]  # in the keyring, never in a file
    assert ServerChoice.read(dialog.choice.remembered()) == dialog.choice
