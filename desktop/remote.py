"""The window as a client of `mnemo serve`: connecting, and the workers that talk to the server.

The window itself does not change: it gets a ``RemoteMnemo`` (``engine.server.client``) where it
would get a ``Mnemo``, and these workers in place of the local ones. The chat worker sends a
turn and hands the server's events to the same bridge; the ingest worker uploads the dropped
files. A lost connection is said once, with the message the person typed given back to them;
the window then retries until the server answers again (``ConnectionWatch``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal, Slot
from PySide6.QtWidgets import (
    QDialog,
    QFormLayout,
    QLabel,
    QLineEdit,
    QWidget,
)

from desktop.bridge import EngineBridge
from desktop.server_choice import ServerChoice
from desktop.threads import Tasks, describe_failure
from desktop.ui import ok_cancel
from desktop.workers import ChatWorker, IngestWorker, load_configured_model
from engine.errors import MnemoError
from engine.ingest.ingestor import (
    DEFAULT_EXCLUDES,
    FileResult,
    IngestProgress,
    leaves_folder,
    walk,
)
from engine.keys import KeyringUnavailableError
from engine.server.client import (
    Connection,
    RemoteMnemo,
    ServerUnreachableError,
    save_token,
    saved_token,
)

log = logging.getLogger("mnemo.desktop")

TOKEN_VARIABLE = "MNEMO_SERVER_TOKEN"  # a token for this run, when there is no keyring
RETRY_EVERY_MS = 5000
LOCAL_ONLY = (
    "{what} belong to assistants kept on this computer; this one is on the Mnemo server at "
    "{url}, whose own backups and folders cover it."
)


def open_remote(
    choice: ServerChoice, token: str | None = None, *, while_away: bool = False
) -> RemoteMnemo:
    """Connect to the assistant on the server, checked; raises in words when it cannot (but
    with ``while_away``, a server that does not answer yet is left for the window to retry)."""
    token = token or os.environ.get(TOKEN_VARIABLE) or saved_token(choice.url)
    if not token:
        raise MnemoError(
            f"There is no token for the Mnemo server at {choice.url}; connect again from the "
            "assistant menu (Connect to a Mnemo server…) and paste yours."
        )
    connection = Connection(choice.url, token, choice.assistant)
    try:
        connection.check()
    except ServerUnreachableError:
        if not while_away:
            connection.close()
            raise
    except BaseException:
        connection.close()
        raise
    return RemoteMnemo(connection, choice.local_folder)


class ConnectDialog(QDialog):
    """ "Connect to a Mnemo server": its address, your token and the assistant's name. The
    token goes to the keyring (for this run only when the computer has none)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Connect to a Mnemo server")
        self.url = QLineEdit("http://127.0.0.1:8765")
        self.token = QLineEdit()
        self.token.setEchoMode(QLineEdit.EchoMode.Password)
        self.token.setPlaceholderText("mnemo_… (from `mnemo server-users add`)")
        self.assistant = QLineEdit("home")
        self.problem = QLabel("")
        self.problem.setObjectName("error")
        self.problem.setWordWrap(True)
        form = QFormLayout(self)
        form.addRow(
            QLabel(
                "Your memory will live on the server, shared by every computer you connect; "
                "its model answers."
            )
        )
        form.addRow("Server address", self.url)
        form.addRow("Your token", self.token)
        form.addRow("Assistant", self.assistant)
        form.addRow(self.problem)
        form.addRow(ok_cancel(self, "Connect", self._connect))
        self.choice: ServerChoice | None = None

    def _connect(self) -> None:
        choice = ServerChoice(self.url.text().strip().rstrip("/"), self.assistant.text().strip())
        token = self.token.text().strip()
        try:
            if not choice.url or not choice.assistant or not token:
                raise MnemoError("Fill in the server's address, your token and the assistant.")
            open_remote(choice, token).close()  # it answers, knows you and the assistant
            try:
                save_token(choice.url, token)
            except KeyringUnavailableError:
                log.warning("no keyring: the server's token is kept for this run only")
        except MnemoError as error:
            self.problem.setText(str(error))
            return
        self.choice = choice
        self.accept()


class RemoteChatWorker(ChatWorker):
    """A chat turn on the server: its model answers, the events reach the same bridge.

    Signals (besides ChatWorker's):
        connection_lost(str, str): the message that could not be sent, and why.
    """

    connection_lost = Signal(str, str)

    def __init__(self, mnemo: RemoteMnemo, bridge: EngineBridge) -> None:
        # The loader is never called: ``load_model`` below checks the connection instead.
        super().__init__(mnemo, bridge, load_configured_model)  # type: ignore[arg-type]
        self._remote = mnemo

    @Slot()
    def load_model(self) -> None:
        connection = self._remote.connection
        self.loading.emit(f"the connection to {connection.url}")
        try:
            connection.check()
        except ServerUnreachableError as error:  # the window retries until it answers
            self.connection_lost.emit("", str(error))
            return
        except Exception as error:
            self.load_failed.emit(describe_failure(error))
            return
        self.loaded.emit(f"{connection.assistant} on {connection.url}", 0, None)

    @Slot(str)
    def send(self, text: str) -> None:
        self.busy.emit(True)
        try:
            self._remote.connection.turn(text, self._bridge, self.cancel)
        except ServerUnreachableError as error:
            self.connection_lost.emit(text, str(error))
        except Exception as error:
            self.failed.emit(describe_failure(error))
        finally:
            self.busy.emit(False)

    @Slot()
    def refresh_stats(self) -> None:
        """The context window is the server's; the window shows none of its numbers."""


class RemoteIngestWorker(IngestWorker):
    """Dropped and added files are uploaded; the server reads and indexes them."""

    def __init__(self, mnemo: RemoteMnemo) -> None:
        super().__init__(mnemo)  # type: ignore[arg-type]
        self._remote = mnemo

    @Slot(list)
    def ingest(self, paths: Sequence[str]) -> None:
        self.cancel.clear()
        files: list[Path] = []
        outside: dict[Path, Path] = {}  # links under a folder to files outside it: not sent
        for given in paths:
            path = Path(given).expanduser().absolute()
            found = list(walk(path, (), DEFAULT_EXCLUDES)) if path.is_dir() else [path]
            outside |= {file: path for file in found if path.is_dir() and leaves_folder(file, path)}
            files += found
        state = IngestProgress(files_total=len(files))
        self.started.emit(len(files))
        for path in files:
            if self.cancel.is_set():
                break
            state.current = str(path)
            self.progress.emit(state.files_done, state.files_total, str(path))
            try:
                if path in outside:
                    reason = (
                        f"it is a link to a file outside {outside[path]}, and Mnemo reads only "
                        "what is inside the folders it is given"
                    )
                    result = FileResult(str(path), "skipped", 0, reason)
                else:
                    answer = self._remote.connection.upload(path)
                    result = FileResult(
                        str(path),
                        answer["outcome"],
                        int(answer.get("chunks", 0)),
                        answer.get("error"),
                    )
            except (MnemoError, OSError) as error:
                result = FileResult(str(path), "error", 0, describe_failure(error))
            state.results.append(result)
            state.files_done += 1
            self.file_done.emit(result)
            self.progress.emit(state.files_done, state.files_total, "")
        self.finished.emit(state)

    @Slot()
    def watch(self) -> None:
        """Folders are watched for assistants on this computer only."""

    @Slot(str)
    def add_watched(self, path: str) -> None:
        self.failed.emit(
            LOCAL_ONLY.format(what="Watched folders", url=self._remote.connection.url)
            + " Drop the files instead: they are sent to the server."
        )

    @Slot(str, bool)
    def remove_watched(self, path: str, keep_passages: bool) -> None:
        self.add_watched(path)


class ConnectionWatch(QObject):
    """After the connection was lost: ask the server every few seconds until it answers.

    Signals:
        back(): the server answers again.
    """

    back = Signal()

    def __init__(self, mnemo: RemoteMnemo, tasks: Tasks, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._mnemo = mnemo
        self._tasks = tasks
        self._timer = QTimer(self)
        self._timer.setInterval(RETRY_EVERY_MS)
        self._timer.timeout.connect(self._try)
        self._trying = False

    def start(self) -> None:
        if not self._timer.isActive():
            self._timer.start()

    def _try(self) -> None:
        if self._trying:
            return
        self._trying = True
        self._tasks.submit(self._mnemo.connection.check, self._answered, self._still_away)

    def _still_away(self, _why: str) -> None:
        self._trying = False

    def _answered(self, _result: object) -> None:
        self._trying = False
        if self._timer.isActive():
            self._timer.stop()
            self.back.emit()
