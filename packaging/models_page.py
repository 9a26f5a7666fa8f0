"""The Models page as a user meets it, with screenshots, against a server on 127.0.0.1.

    xvfb-run -a -s "-screen 0 1280x800x24" uv run python packaging/models_page.py OUT_DIR

1. The real catalogue, judged for this computer, while the model it suggests first downloads
   (the local server stands in for Hugging Face through HF_ENDPOINT and sends the bundled model's
   bytes slowly, so the download is caught in flight): ``models-downloading.png``, then paused:
   ``models-paused.png``. It is cancelled afterwards (those bytes would fail the pinned SHA-256).
2. The whole way from the first window to chatting with a downloaded model: an entry served by
   the local server is downloaded, checked, used with the suggested settings, and answers a
   message: ``models-in-use.png`` and ``models-chat.png``. ``models-offer.png`` is the chat
   before, with its one line offering a better model.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import tempfile
from pathlib import Path

from PySide6.QtWidgets import QApplication
from screenshots import settle, wait

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from fake_servers import ModelFileServer  # noqa: E402

from desktop import models_page  # noqa: E402
from desktop.main_window import MainWindow  # noqa: E402
from engine import Mnemo, hardware  # noqa: E402
from engine.llm.catalog import best_chat_entry, load_catalog  # noqa: E402
from engine.llm.gguf_file import bundled_model_path  # noqa: E402


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "shots")
    out.mkdir(parents=True, exist_ok=True)
    body = bundled_model_path().read_bytes()
    catalog = load_catalog()
    best = best_chat_entry(catalog, hardware.detect(Path(tempfile.gettempdir())))
    assert best is not None
    app = QApplication([])
    with (
        tempfile.TemporaryDirectory() as folder,
        ModelFileServer(body, best.file_name, chunk_delay_s=0.02, state_hash=False) as hub,
        ModelFileServer(body, "SmolLM2-demo-Q4_1.gguf") as local,
    ):
        os.environ["HF_ENDPOINT"] = hub.url
        demo = dataclasses.replace(
            catalog[0],
            id="demo",
            name="Demo model (served on 127.0.0.1)",
            description="The bundled model's file, served locally to show a whole download.",
            size_bytes=len(body),
            url=local.resolve_url(),
            sha256=local.sha256,
        )
        models_page.load_catalog = lambda: [*catalog, demo]  # type: ignore[assignment]
        window = MainWindow(Mnemo.open(folder))
        window.resize(1240, 900)
        window.show()
        wait(lambda: window.model_ready, 180)
        settle()
        window.grab().save(str(out / "models-offer.png"))  # the line above the chat's input
        window.chat.model_offer.linkActivated.emit("models")
        page = window.models
        wait(lambda: page.hardware is not None, 60)
        card = page.cards[best.file_name]
        card.download_button.click()
        wait(lambda: card.progress.value() > 300, 120)
        window.grab().save(str(out / "models-downloading.png"))
        card.pause_button.click()
        wait(lambda: page.message.text().startswith("Paused"), 60)
        settle()
        window.grab().save(str(out / "models-paused.png"))
        card.cancel_button.click()
        settle()

        demo_card = page.cards[demo.file_name]
        demo_card.download_button.click()
        wait(lambda: not demo_card.use_button.isHidden(), 120)
        demo_card.use_button.click()
        print(page.message.text())
        wait(lambda: window.model_ready and demo.file_name in window.model_label.text(), 180)
        settle()
        window.grab().save(str(out / "models-in-use.png"))
        window.show_page("Chat")
        window.chat.input.setPlainText("Hello! I'm Ada and I live in Lisbon.")
        window.chat.send_button.click()
        settle(1.0)
        wait(lambda: not window.chat.busy, 300)
        settle()
        window.grab().save(str(out / "models-chat.png"))
        for bubble in window.chat.bubbles():
            print(f"{bubble.role}: {bubble.text}")
        print(f"status: {window.model_label.text()} · {window.mode_label.text()}")
        window.shutdown()
    app.quit()


if __name__ == "__main__":
    main()
