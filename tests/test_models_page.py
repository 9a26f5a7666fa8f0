"""The Models page with real widgets: download from a real server on 127.0.0.1, pause, resume,
cancel, use the model, and chat with it."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterator

import pytest
from fake_servers import ModelFileServer
from PySide6.QtCore import Qt

from desktop import ui
from desktop.main_window import MainWindow
from engine.llm import ScriptedModel
from engine.llm.catalog import load_catalog
from engine.llm.gguf_file import bundled_model_path

TIMEOUT_MS = 60_000
REAL_MODEL_TIMEOUT_MS = 300_000


@pytest.fixture(scope="module")
def model_bytes() -> bytes:
    return bundled_model_path().read_bytes()


@pytest.fixture
def server(model_bytes) -> Iterator[ModelFileServer]:
    # Slow enough (about 5 s) that the test can press Pause while the bytes are in flight.
    with ModelFileServer(model_bytes, "Tiny-Q4_1.gguf", chunk_delay_s=0.003) as server:
        yield server


@pytest.fixture
def window(qtbot, mnemo, server, monkeypatch) -> Iterator[MainWindow]:
    """The real window and the real catalogue, with one more entry served by ``server``."""
    tiny = dataclasses.replace(
        load_catalog()[0],
        id="tiny",
        name="Tiny test model",
        parameters=134_515_008,
        size_bytes=len(server.body),
        url=server.resolve_url(),
        sha256=server.sha256,
    )
    monkeypatch.setattr("desktop.models_page.load_catalog", lambda: [tiny, *load_catalog()])
    window = MainWindow(mnemo)
    qtbot.addWidget(window)
    qtbot.waitUntil(lambda: window.model_ready, timeout=REAL_MODEL_TIMEOUT_MS)
    yield window
    window.shutdown()


def test_download_pause_resume_use_and_chat(qtbot, mnemo, window, server):
    chat = window.chat
    assert not chat.model_offer.isHidden()  # the bundled model is in use: the offer shows
    chat.model_offer.linkActivated.emit("models")
    assert window.pages.currentWidget() is window.models

    page = window.models
    qtbot.waitUntil(lambda: page.hardware is not None, timeout=TIMEOUT_MS)
    card = page.cards["Tiny-Q4_1.gguf"]
    assert card.verdict.text().startswith("Recommended")
    assert card.reason.text().startswith("On this computer: about")
    eight_b = next(entry for entry in load_catalog() if entry.id == "qwen3-8b")
    real = page.cards[eight_b.file_name]  # slow on a 2-core CPU
    assert real.verdict.text() in ("Will run slowly", "Too large", "Recommended")

    qtbot.mouseClick(card.download_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: 100 < card.progress.value() < 700, timeout=TIMEOUT_MS)
    assert " of 98.4 MB" in card.progress_text.text() and "/s" in card.progress_text.text()
    assert not card.pause_button.isHidden() and card.download_button.isHidden()
    qtbot.mouseClick(card.pause_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: page.message.text().startswith("Paused"), timeout=TIMEOUT_MS)
    assert card.download_button.text() == "Resume" and card.progress_text.text().startswith(
        "Paused ("
    )
    part = page.folder / "Tiny-Q4_1.gguf.part"
    kept = part.stat().st_size
    assert 0 < kept < len(server.body)

    server.chunk_delay_s = 0
    qtbot.mouseClick(card.download_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not card.use_button.isHidden(), timeout=TIMEOUT_MS)
    assert server.requests[-1]["Range"] == f"bytes={kept}-"
    path = page.folder / "Tiny-Q4_1.gguf"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == server.sha256
    assert not part.exists()

    qtbot.mouseClick(card.use_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(
        lambda: page.message.text().startswith("Loading Tiny-Q4_1.gguf with a 8,192-token"),
        timeout=TIMEOUT_MS,
    )
    qtbot.waitUntil(
        lambda: window.model_ready and "Tiny-Q4_1.gguf" in window.model_label.text(),
        timeout=REAL_MODEL_TIMEOUT_MS,
    )
    assert mnemo.settings.get("model.path") == str(path)
    assert window.settings.path.text() == str(path)
    assert chat.model_offer.isHidden()  # no longer the bundled model
    assert card.use_button.text() == "In use" and not card.remove_button.isEnabled()

    window.show_page("Chat")
    chat.input.setPlainText("Hello! I am Ines.")
    qtbot.mouseClick(chat.send_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: chat.busy, timeout=TIMEOUT_MS)
    qtbot.waitUntil(lambda: not chat.busy, timeout=REAL_MODEL_TIMEOUT_MS)
    replies = [bubble for bubble in chat.bubbles() if bubble.role == "assistant"]
    assert replies and replies[-1].text.strip()


def test_cancel_discards_and_a_paused_download_survives_a_restart(
    qtbot, mnemo, window, server, monkeypatch
):
    page = window.models
    card = page.cards["Tiny-Q4_1.gguf"]
    part = page.folder / "Tiny-Q4_1.gguf.part"
    card.download_button.click()
    qtbot.waitUntil(lambda: card.progress.value() > 50, timeout=TIMEOUT_MS)
    card.cancel_button.click()
    qtbot.waitUntil(lambda: page.message.text().startswith("Cancelled"), timeout=TIMEOUT_MS)
    assert not part.exists() and card.download_button.text() == "Download"

    card.download_button.click()
    qtbot.waitUntil(lambda: card.progress.value() > 50, timeout=TIMEOUT_MS)
    window.shutdown()  # quitting pauses the download; the part stays
    assert part.exists()

    reopened = MainWindow(mnemo, loader=lambda _settings: ScriptedModel())
    qtbot.addWidget(reopened)
    reopened.show_page("Models")
    again = reopened.models.cards["Tiny-Q4_1.gguf"]
    assert again.download_button.text() == "Resume"
    assert again.progress_text.text().startswith("Paused (")
    monkeypatch.setattr(ui, "confirm", lambda *_args: True)
    again.cancel_button.click()  # cancelling a download paused in an earlier session
    assert not part.exists() and again.download_button.text() == "Download"
    reopened.shutdown()


def test_a_re_ranker_and_an_embedder_download_and_go_to_work_from_their_cards(
    qtbot, mnemo, monkeypatch, tmp_path
):
    """The page lists each role; "Use" puts the re-ranker on the searches and, once the person
    agrees, re-embeds memory with the embedder."""
    from tiny_gguf import bert_embedder, bert_reranker

    mnemo.archival.insert("The boiler is serviced in October by Dana.")
    files = [bert_reranker(tmp_path / "tiny-rerank.gguf"), bert_embedder(tmp_path / "tiny-e.gguf")]
    with (
        ModelFileServer(files[0].read_bytes(), files[0].name) as rerank_server,
        ModelFileServer(files[1].read_bytes(), files[1].name) as embed_server,
    ):
        real = load_catalog()
        served = [
            dataclasses.replace(
                next(entry for entry in real if entry.kind == kind),
                id=f"tiny-{kind}",
                size_bytes=len(server.body),
                url=server.resolve_url(),
                sha256=server.sha256,
            )
            for kind, server in (("reranker", rerank_server), ("embedding", embed_server))
        ]
        monkeypatch.setattr("desktop.models_page.load_catalog", lambda: [*real, *served])
        window = MainWindow(mnemo, loader=lambda _settings: ScriptedModel())
        qtbot.addWidget(window)
        window.show_page("Models")
        page = window.models
        roles = [card.use_button.text() for card in page.cards.values()]
        assert roles.count("Use this re-ranker") == roles.count("Use this embedder") == 2
        rerank_card, embed_card = page.cards["tiny-rerank.gguf"], page.cards["tiny-e.gguf"]
        assert rerank_card.about.text().startswith("Re-ranker · ")
        assert embed_card.about.text().startswith("Embedder · ")
        for card in (rerank_card, embed_card):
            qtbot.mouseClick(card.download_button, Qt.MouseButton.LeftButton)
            qtbot.waitUntil(lambda card=card: not card.use_button.isHidden(), timeout=TIMEOUT_MS)
    assert hashlib.sha256((page.folder / "tiny-e.gguf").read_bytes()).hexdigest() == (
        embed_server.sha256
    )

    qtbot.mouseClick(rerank_card.use_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "ordered again by tiny-rerank.gguf" in page.message.text())
    assert mnemo.settings.get("models.reranker") == str(page.folder / "tiny-rerank.gguf")
    assert rerank_card.use_button.text() == "In use"

    monkeypatch.setattr(ui, "confirm", lambda *_args: False)  # the person says no: no change
    qtbot.mouseClick(embed_card.use_button, Qt.MouseButton.LeftButton)
    assert mnemo.settings.get("models.embedder") == "" and not mnemo.snapshots.all()
    monkeypatch.setattr(ui, "confirm", lambda *_args: True)
    qtbot.mouseClick(embed_card.use_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(
        lambda: page.message.text().startswith("Re-embedded 1 items"), timeout=TIMEOUT_MS
    )
    assert mnemo.embedder.name == "gguf:tiny-e" and mnemo.embedder_mismatch is None
    assert embed_card.use_button.text() == "In use"
    assert [snapshot.note for snapshot in mnemo.snapshots.all()] == ["before re-embedding"]
    assert mnemo.archival.search("boiler")[0].text.startswith("The boiler")
    window.shutdown()


def test_the_models_and_settings_pages_speak_without_jargon(qtbot, window):
    """The Models page said "Q4_K_M", "768 dimensions" and "llama.cpp's own conversion
    (ggml-org)"; Settings explained the mode as "a 135M local model of an older architecture is
    below 6B". The file's details stay in a tooltip for those who ask."""
    from PySide6.QtWidgets import QLabel

    window.show_page("Models")
    shown = " ".join(w.text() for w in window.models.findChildren(QLabel) if w.isVisibleTo(window))
    window.show_page("Settings")
    qtbot.waitUntil(lambda: window.settings.mode_status.text() != "", timeout=TIMEOUT_MS)
    shown += " " + window.settings.mode_status.text()
    for jargon in ("Q4_K_M", "Q8_0", "dimensions", "ggml", "conversion", "architecture", "GGUF"):
        assert jargon not in shown, jargon
    assert "Qwen3 8B" in shown and "small (135M parameters" in shown
    (card,) = [c for c in window.models.cards.values() if c.entry.name == "Qwen3 8B"]
    assert "Q4_K_M quantization" in card.about.toolTip()
