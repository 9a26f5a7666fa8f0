"""Forget in the window: the preview of everything a forget removes, and the forget itself.

Every "Forget…" (File, a message, a passage, a fact, a person, a core block's selected words)
comes through ``ask_to_forget``: the plan is made on the tasks thread, shown here grouped by
kind, and only Forget in this dialog forgets (``engine.forget``).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QInputDialog,
    QLabel,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from desktop.assistant_memory import AssistantMemory, on_this_computer
from desktop.threads import CORE, KNOWLEDGE, MESSAGES, PASSAGES, PROPOSALS, Tasks
from engine import forget

SHOWN_PER_KIND = 50
CHANGES = (MESSAGES, PASSAGES, CORE, PROPOSALS, KNOWLEDGE)


class ForgetDialog(QDialog):
    """Where the text is held, grouped by kind, a line each with the text around it."""

    def __init__(self, parent: QWidget, plan: forget.ForgetPlan) -> None:
        super().__init__(parent)
        self.setWindowTitle("Forget")
        self.resize(720, 460)
        layout = QVBoxLayout(self)
        counts = ", ".join(
            f"{count} {kind}{'s' * (count != 1)}" for kind, count in plan.by_kind().items()
        )
        heading = QLabel(f"<b>To forget {plan.what}</b>: {counts}.")
        heading.setWordWrap(True)
        layout.addWidget(heading)
        self.places = QTreeWidget()
        self.places.setHeaderHidden(True)
        groups = plan.lines_by_kind()
        for kind, lines in groups.items():
            group = QTreeWidgetItem([f"{len(lines)} {kind}{'s' * (len(lines) != 1)}"])
            for line in lines[:SHOWN_PER_KIND]:
                group.addChild(QTreeWidgetItem([line]))
            if len(lines) > SHOWN_PER_KIND:
                group.addChild(QTreeWidgetItem([f"… and {len(lines) - SHOWN_PER_KIND} more"]))
            self.places.addTopLevelItem(group)
            group.setExpanded(True)
        layout.addWidget(self.places, 1)
        warning = QLabel(
            "Forgetting cannot be undone: no snapshot or undo will bring it back, and it will "
            "not be kept again from a file, an import or a restored snapshot. Exports you made "
            "before still hold it."
        )
        warning.setWordWrap(True)
        warning.setObjectName("notice_error")
        layout.addWidget(warning)
        buttons = QDialogButtonBox()
        self.forget_button = buttons.addButton("Forget", QDialogButtonBox.ButtonRole.AcceptRole)
        buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)


def ask_to_forget(
    parent: QWidget,
    mnemo: AssistantMemory,
    tasks: Tasks,
    make_plan: Callable[[], forget.ForgetPlan],
    said: Callable[[str], None],
) -> None:
    """Make the plan (tasks thread), show it, and forget if the person presses Forget; ``said``
    gets the outcome as a sentence (or why nothing happened)."""

    def shown(plan: forget.ForgetPlan) -> None:
        if plan.empty:
            said(f"Mnemo holds nothing of {plan.what}; there is nothing to forget.")
            return
        dialog = ForgetDialog(parent, plan)
        parent.window().setProperty("forget_dialog", dialog)  # for tests and the Xvfb drive
        dialog.accepted.connect(lambda: _forget(plan))
        dialog.rejected.connect(lambda: said("Nothing was forgotten."))
        dialog.open()

    def _forget(plan: forget.ForgetPlan) -> None:
        def done(result: forget.ForgetResult) -> None:
            counts = ", ".join(
                f"{count} {kind}{'s' * (count != 1)}" for kind, count in result.forgotten.items()
            )
            snapshots = (
                f" It was taken out of the snapshots that held it: "
                f"{', '.join(result.snapshots_rewritten)}."
                if result.snapshots_rewritten
                else ""
            )
            said(f"Forgotten: {plan.what} ({counts or 'the item'}).{snapshots}")

        # A forget rewrites the stores' files, seconds on a large profile (forget_cost.py).
        said(f"Forgetting {plan.what}… Mnemo rewrites its files so that no copy stays behind.")
        tasks.submit(
            lambda: forget.forget(on_this_computer(mnemo, "Forgetting"), plan),
            done,
            said,
            changes=CHANGES,
        )

    tasks.submit(make_plan, shown, said)


def ask_for_text(parent: QWidget, mnemo: AssistantMemory, tasks: Tasks, said: Callable[[str], None],
                 typed: str = "") -> None:  # fmt: skip
    """File → Forget…: the words to forget, as the person remembers them."""
    text, chosen = QInputDialog.getText(
        parent,
        "Forget",
        "What should Mnemo forget? Type the words as you remember them; every place that holds "
        "them is shown before anything is forgotten.",
        text=typed,
    )
    if chosen and text.strip():
        ask_to_forget(
            parent,
            mnemo,
            tasks,
            lambda: forget.plan_text(on_this_computer(mnemo, "Forgetting"), text),
            said,
        )
