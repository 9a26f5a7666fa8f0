"""The context viewer: how full the model's window is, section by section, and the pressure."""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPaintEvent
from PySide6.QtWidgets import QFormLayout, QSizePolicy, QVBoxLayout, QWidget

from desktop.ui import label
from engine.context.window import PRESSURE_FRACTION, ContextStats

SECTIONS = (
    ("instructions", "System instructions", "#6366f1"),
    ("functions", "Functions", "#0ea5e9"),
    ("core", "Core memory", "#10b981"),
    ("summary", "Summary of older messages", "#f59e0b"),
    ("messages", "Messages", "#ec4899"),
    ("recalled", "Recalled for this message", "#8b5cf6"),
)
PRESSURE_WORDS = {
    "ok": "Plenty of room.",
    "warning": "Memory pressure: the assistant has been told to save what matters; older "
    "messages will soon be summarised.",
    "full": "Full: the oldest messages are being moved into the summary.",
}


class UsageBar(QWidget):
    """One bar: each section's share of the usable tokens, the pressure line marked."""

    def __init__(self) -> None:
        super().__init__()
        self.stats: ContextStats | None = None
        self.setMinimumHeight(28)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def paintEvent(self, _event: QPaintEvent) -> None:  # noqa: N802 (Qt's name)
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        area = QRectF(self.rect()).adjusted(1, 1, -1, -1)
        painter.setPen(QColor("#d4d4d8"))
        painter.setBrush(QColor("#f4f4f5"))
        painter.drawRoundedRect(area, 4, 4)
        if self.stats is None:
            return
        limit = max(self.stats.limit, self.stats.total, 1)
        parts = [getattr(self.stats, key) for key, _, _ in SECTIONS]
        scale = self.stats.total / max(sum(parts), 1)  # sections are counted apart; the total
        x = area.left()  # is exact, so the parts are scaled to it
        painter.setPen(Qt.PenStyle.NoPen)
        for (_, _, color), tokens in zip(SECTIONS, parts, strict=True):
            width = area.width() * tokens * scale / limit
            painter.setBrush(QColor(color))
            painter.drawRect(QRectF(x, area.top(), width, area.height()))
            x += width
        painter.setPen(QColor("#b91c1c"))
        warn_x = area.left() + area.width() * PRESSURE_FRACTION * self.stats.limit / limit
        painter.drawLine(int(warn_x), int(area.top()), int(warn_x), int(area.bottom()))


class ContextView(QWidget):
    def __init__(self) -> None:
        super().__init__()
        layout = QVBoxLayout(self)
        self.headline = label("No model is loaded yet.", "title")
        layout.addWidget(self.headline)
        self.bar = UsageBar()
        layout.addWidget(self.bar)
        self.pressure = label("")
        layout.addWidget(self.pressure)
        form = QFormLayout()
        self.values: dict[str, object] = {}
        for key, name, color in SECTIONS:
            value = label("–", wrap=False)
            swatch = label(f"<span style='color:{color}'>■</span> {name}", wrap=False)
            swatch.setTextFormat(Qt.TextFormat.RichText)
            form.addRow(swatch, value)
            self.values[key] = value
        self.detail = label("", "muted")
        layout.addLayout(form)
        layout.addWidget(self.detail)
        layout.addStretch(1)
        self.stats: ContextStats | None = None

    def show_stats(self, stats: ContextStats) -> None:
        self.stats = stats
        self.bar.stats = stats
        self.bar.update()
        self.headline.setText(
            f"{stats.total:,} of {stats.limit:,} usable tokens ({round(100 * stats.fraction)}%)"
        )
        self.pressure.setText(PRESSURE_WORDS[stats.pressure])
        self.pressure.setObjectName("caution" if stats.pressure != "ok" else "muted")
        self.pressure.setStyleSheet("")
        for key, _, _ in SECTIONS:
            self.values[key].setText(f"{getattr(stats, key):,}")  # type: ignore[attr-defined]
        self.detail.setText(
            f"The model's window is {stats.context_length:,} tokens; "
            f"{stats.context_length - stats.limit:,} are kept free for its next output. "
            f"{stats.message_count} messages are in view and {stats.evicted_count} older ones "
            "are summarised (all of them stay searchable). The red line marks where memory "
            "pressure starts."
        )
