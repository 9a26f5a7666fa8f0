"""Render resources/icons/mnemo.svg into the icons the app and the installers use:
mnemo.png (256 px: the window, Linux menus), mnemo.ico (Windows) and mnemo.icns (macOS).

    uv run python packaging/make_icons.py     (Qt renders the SVG; Pillow writes .ico and .icns)
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PIL import Image  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import QGuiApplication, QImage, QPainter  # noqa: E402
from PySide6.QtSvg import QSvgRenderer  # noqa: E402

ICONS = Path(__file__).resolve().parent.parent / "resources" / "icons"


def render(size: int) -> Path:
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    QSvgRenderer(str(ICONS / "mnemo.svg")).render(painter)
    painter.end()
    path = ICONS / ("mnemo.png" if size == 256 else f"mnemo-{size}.png")
    image.save(str(path))
    return path


def main() -> None:
    app = QGuiApplication([])
    big = render(1024)
    render(256)
    with Image.open(big) as image:
        image.save(ICONS / "mnemo.ico", sizes=[(s, s) for s in (16, 24, 32, 48, 64, 128, 256)])
        image.save(ICONS / "mnemo.icns")
    big.unlink()
    del app


if __name__ == "__main__":
    main()
