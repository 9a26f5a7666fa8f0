"""Where a profile's files live: a profile is the folder that holds one assistant's memory (the
person says "assistant", the code "profile" where it means the folder).

One profile is one directory: ``mnemo.sqlite`` (recall, core memory, settings) and
``archival.lance/`` (archival passages and message vectors); or, for an assistant kept on a
server, ``database.json`` naming its PostgreSQL schema (and its archival memory may be in
object storage, ``storage.archival_url``). The location is, in order of
precedence: an explicit path, ``$MNEMO_HOME``, or the platform's user data directory.
"""

from __future__ import annotations

import hashlib
import json
import logging
import logging.handlers
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import platformdirs
from filelock import FileLock, Timeout

from engine.errors import ProfileError, RedactingFilter

DEFAULT_PROFILE_NAME = "default"
TURN_POLL_S = 0.05  # how often work that waits for a turn looks again
TURN_WAIT_S = 120.0  # and for how long at most
BULK_NICENESS = 10  # how far a bulk command (import, ingest, reembed) stands back for the CPU
WINDOW = "the Mnemo window"  # how a holder of the assistant names itself
CHAT = "mnemo chat"


class ProfileBusyError(ProfileError):
    """Another Mnemo (a window or `mnemo chat`) holds this profile's assistant."""

    def __init__(self, message: str, holder: dict[str, object]) -> None:
        super().__init__(message)
        self.holder = holder


# In a profile kept on a PostgreSQL server instead of in mnemo.sqlite: which server and schema.
DATABASE_LOCATION = "database.json"
CURRENT_FILE = "current"  # in the data folder: the name of the assistant in use


def data_folder() -> Path:
    """Where the assistants live, one profile folder each: ``$MNEMO_DATA`` when set, else
    ``<user data dir>/mnemo/profiles``."""
    data = os.environ.get("MNEMO_DATA")
    if data:
        return Path(data).expanduser()
    return Path(platformdirs.user_data_dir("mnemo", appauthor=False)) / "profiles"


def cache_folder() -> Path:
    """Where what Mnemo can always make again is kept between processes (word-piece vectors,
    the model's state after the system prompt): the user's cache folder."""
    return Path(platformdirs.user_cache_dir("mnemo", appauthor=False))


def prompt_states_folder() -> Path:
    """The local model's kept prompt states (``engine.llm.prompt_states``)."""
    return cache_folder() / "prompt-states"


FORGOTTEN = "forgotten"  # in the states' folder: touched by each forget


def forget_prompt_states() -> None:
    """Remove every kept prompt state, and any being written: they hold core memory and
    conversations as tokens. A model that evaluated its prompt before now keeps nothing more
    (``last_forget``): its context may hold what was forgotten until its next step."""
    folder = prompt_states_folder()
    for path in folder.glob("*"):
        path.unlink(missing_ok=True)
    with suppress(OSError):  # no cache folder can be made: nothing is kept in one either
        folder.mkdir(parents=True, exist_ok=True)
        (folder / FORGOTTEN).touch()


def last_forget() -> float:
    """When something was last forgotten (any process, any assistant), as a time stamp."""
    try:
        return (prompt_states_folder() / FORGOTTEN).stat().st_mtime
    except OSError:
        return 0.0


def current_assistant() -> str:
    """The assistant in use (``mnemo assistants use``), ``default`` until one is chosen."""
    try:
        name = (data_folder() / CURRENT_FILE).read_text("utf-8").strip()
    except OSError:
        return DEFAULT_PROFILE_NAME
    return name or DEFAULT_PROFILE_NAME


def default_profile_dir() -> Path:
    """``$MNEMO_HOME`` when set, else the assistant in use in the data folder."""
    home = os.environ.get("MNEMO_HOME")
    if home:
        return Path(home).expanduser()
    return data_folder() / current_assistant()


@dataclass(frozen=True)
class Profile:
    """The paths of one assistant's profile."""

    root: Path

    @classmethod
    def resolve(cls, path: str | os.PathLike[str] | None = None) -> Profile:
        """Pick the profile directory and create it if it does not exist yet."""
        if path is not None and not str(path).strip():  # Path("") is the current folder
            raise ProfileError(
                "The profile path is empty; give a folder, or leave --profile out to use the "
                "default profile."
            )
        root = Path(path).expanduser() if path is not None else default_profile_dir()
        if root.exists() and not root.is_dir():
            raise ProfileError(
                f"The profile path {root} is a file, not a folder; choose a folder for the profile."
            )
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise ProfileError(
                f"Cannot create the profile folder {root} ({error.strerror}); "
                "choose a folder you can write to, or set MNEMO_HOME."
            ) from error
        return cls(root.resolve())

    @property
    def database_path(self) -> Path:
        return self.root / "mnemo.sqlite"

    @property
    def archival_path(self) -> Path:
        return self.root / "archival.lance"

    @property
    def log_path(self) -> Path:
        return self.root / "logs" / "mnemo.log"

    @property
    def models_path(self) -> Path:
        """Where `mnemo models` looks for GGUF files besides the configured one."""
        return self.root / "models"

    @property
    def instance_name(self) -> str:
        """A name for this profile's running window (its local socket), the same in every
        process."""
        return "mnemo-" + hashlib.sha256(str(self.root).encode()).hexdigest()[:16]

    @contextmanager
    def hold_assistant(self, program: str) -> Iterator[None]:
        """Be the only program that talks with this profile's assistant while the block runs.

        Two at once (a window and `mnemo chat`, or two of either) would each take the other's
        running turn for an interrupted one and answer the same message twice. The lock is the
        operating system's, so a killed holder frees it at once.
        """
        lock = FileLock(self.root / "assistant.lock", thread_local=False)
        holder_path = self.root / "assistant.holder.json"
        try:
            lock.acquire(timeout=0)
        except Timeout:
            raise self._busy(holder_path) from None
        except OSError:  # a read-only profile: nothing can be written, so no turn can clash
            yield
            return
        try:
            with suppress(OSError):
                holder = {"pid": os.getpid(), "program": program, "since": time.time()}
                holder_path.write_text(json.dumps(holder), "utf-8")
            yield
        finally:
            holder_path.unlink(missing_ok=True)
            lock.release()

    def _turn_lock(self) -> FileLock:
        return FileLock(self.root / "locks" / "turn.lock", thread_local=False)

    @contextmanager
    def in_turn(self) -> Iterator[None]:
        """While a turn the person waits for runs on this profile, in this process: work that
        can wait, in any process (an import's embedding, a forget's next step), waits for it
        (``turn_elsewhere``). The lock is the operating system's: a killed turn frees it."""
        lock = self._turn_lock()
        try:
            lock.acquire(timeout=0)
        except (Timeout, OSError):  # another turn holds it (it says the same), or read-only
            yield
            return
        try:
            yield
        finally:
            lock.release()

    def turn_elsewhere(self) -> bool:
        """Whether a turn the person waits for is running on this profile (``in_turn``)."""
        lock = self._turn_lock()
        try:
            lock.acquire(timeout=0)
        except Timeout:
            return True
        except OSError:
            return False
        lock.release()
        return False

    def wait_for_turns(self, stop: Callable[[], bool] = lambda: False) -> None:
        """Return once no turn the person waits for runs on this profile (at most
        ``TURN_WAIT_S``: work that waits is not starved by a turn that hangs), or ``stop``."""
        deadline = time.monotonic() + TURN_WAIT_S
        while self.turn_elsewhere() and not stop() and time.monotonic() < deadline:
            time.sleep(TURN_POLL_S)

    @staticmethod
    def _busy(holder_path: Path) -> ProfileBusyError:
        try:
            holder = json.loads(holder_path.read_text("utf-8"))
        except (OSError, ValueError):
            holder = {}
        program = holder.get("program") or "another Mnemo"
        since = holder.get("since")
        when = time.strftime(", since %H:%M", time.localtime(since)) if since else ""
        return ProfileBusyError(
            f"This profile's assistant is already open in {program} (process "
            f"{holder.get('pid', '?')}{when}). Continue there, or close it first: two at once "
            "would answer the same message twice.",
            holder,
        )


def log_to_profile(profile: Profile) -> None:
    """Log to ``<profile>/logs/mnemo.log`` (rotated), so problems can be looked at later."""
    path = profile.log_path
    root = logging.getLogger()
    for handler in [h for h in root.handlers if getattr(h, "mnemo_profile_log", False)]:
        root.removeHandler(handler)  # another profile's log, in this process
        handler.close()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.handlers.RotatingFileHandler(
            path, maxBytes=2_000_000, backupCount=3, encoding="utf-8"
        )
    except OSError:
        return  # a read-only profile still works, without a log
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RedactingFilter())  # no API key reaches the log, whatever logged it
    handler.mnemo_profile_log = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(min(root.level or logging.INFO, logging.INFO))


def behind_turns() -> None:
    """Lower this process's CPU priority for the bulk work it is about to do (`mnemo import`,
    `ingest`, `reembed`): its embedding otherwise takes half of two cores from a turn the
    person waits for in the window (a turn's own work took 2.0× as long; behind it, 1.3–1.4×,
    tests/benchmarks/writers.py). Alone on the machine it runs as fast. Called before the
    process starts a thread: on Linux each thread has its own priority, inherited when it
    starts. Where the system has no nice (Windows), nothing changes."""
    with suppress(AttributeError, OSError):
        os.nice(BULK_NICENESS)
