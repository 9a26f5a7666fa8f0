"""Several assistants: each one a profile folder of its own in the data folder (its own SQLite,
archival tables, settings, model choice and watched folders), so that nothing ever crosses from
one to another. ``mnemo assistants …`` and the window's switcher manage them.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from engine.errors import InputError, NotFoundError
from engine.profile import (
    CURRENT_FILE,
    DATABASE_LOCATION,
    DEFAULT_PROFILE_NAME,
    Profile,
    current_assistant,
)

# A name is a folder name on every system: letters, digits, spaces, dots, dashes, underscores.
_NAME = re.compile(r"[\w][\w .-]{0,59}")
TRASH = ".trash"  # deleted assistants wait here (a folder move, nothing is erased)


@dataclass(frozen=True)
class Assistant:
    name: str
    path: Path
    current: bool


class Assistants:
    def __init__(self, folder: Path, only: str | None = None) -> None:
        """``only``: the one profile in ``folder`` that is served (a profile chosen with
        ``--profile`` or ``$MNEMO_HOME``), not its neighbours."""
        self.folder = folder
        self.only = only

    def all(self) -> list[Assistant]:
        """Every assistant, by name (the default one exists once it has been opened)."""
        current = self.current()
        found = sorted(
            path.name
            for path in (self.folder.iterdir() if self.folder.is_dir() else [])
            if path.is_dir() and not path.name.startswith(".") and self.holds(path.name)
        )
        return [Assistant(name, self.folder / name, name == current) for name in found]

    def holds(self, name: str) -> bool:
        return self.only in (None, name) and is_profile(self.folder / name)

    def current(self) -> str:
        if self.only:
            return self.only
        return current_assistant() if self.folder.is_dir() else DEFAULT_PROFILE_NAME

    def path(self, name: str) -> Path:
        if not self.holds(check_name(name)):
            raise NotFoundError(f"There is no assistant called {name!r}; `mnemo assistants list`.")
        return self.folder / name

    def create(
        self,
        name: str,
        persona: str | None = None,
        archival_url: str | None = None,
        database_url: str | None = None,
    ) -> Path:
        """A new, empty assistant (with ``persona`` as its persona block, if given; its archival
        memory in ``archival_url``'s storage and its other tables on ``database_url``'s
        PostgreSQL server, if given)."""
        from engine.mnemo import Mnemo  # the stores load only when an assistant is made

        if self.only:
            raise InputError(
                f"Only the assistant {self.only!r} is served here; make others in Mnemo."
            )
        path = self.folder / check_name(name)
        if path.exists():
            raise InputError(f"An assistant called {name!r} exists already; choose another name.")
        with Mnemo.open(path, archival_url=archival_url, database_url=database_url) as mnemo:
            if persona:
                mnemo.core.set("persona", persona)
        return path

    def use(self, name: str) -> Path:
        """Make ``name`` the assistant that opens by default."""
        path = self.path(name)
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / CURRENT_FILE).write_text(name, "utf-8")
        return path

    def rename(self, old: str, new: str) -> Path:
        source, target = self.path(old), self.folder / check_name(new)
        if target.exists():
            raise InputError(f"An assistant called {new!r} exists already; choose another name.")
        with Profile(source).hold_assistant("mnemo assistants rename"):  # not while one is open
            pass
        source.rename(target)
        if self.current() == old:
            (self.folder / CURRENT_FILE).write_text(new, "utf-8")
        return target

    def delete(self, name: str) -> Path:
        """Move an assistant to the data folder's trash (recoverable by hand); not the one in
        use: switch first."""
        path = self.path(name)
        if name == self.current():
            raise InputError(
                f"{name!r} is the assistant in use; switch to another one first "
                "(`mnemo assistants use NAME`)."
            )
        with Profile(path).hold_assistant("mnemo assistants delete"):
            pass
        trash = self.folder / TRASH / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"
        trash.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(path), trash)
        return trash

    def duplicate(self, name: str, new: str, *, memory: bool = True) -> Path:
        """A copy of an assistant: its whole memory (through an export and an import, which
        reads one consistent state), or only its persona."""
        from engine.exchange.archive import export_archive, import_archive
        from engine.mnemo import Mnemo

        source = self.path(name)
        with Mnemo.open(source) as original:
            persona = original.core.get("persona")
            if not memory:
                return self.create(new, persona)
            target = self.folder / check_name(new)
            if target.exists():
                raise InputError(
                    f"An assistant called {new!r} exists already; choose another name."
                )
            with tempfile.TemporaryDirectory() as folder:
                archive = Path(folder) / "copy.mnemo"
                export_archive(original, archive)
                with Mnemo.open(target, embedder=original.embedder) as copy:
                    import_archive(copy, archive)
        return target


def check_name(name: str) -> str:
    """An assistant's name, refused in words when it could leave the data folder."""
    clean = name.strip()
    if not _NAME.fullmatch(clean) or clean in (".", ".."):
        raise InputError(
            f"{name!r} cannot name an assistant: use letters, digits, spaces, dots and dashes "
            "(no slashes), up to 60 characters."
        )
    return clean


def is_profile(path: Path) -> bool:
    """Whether ``path`` is an assistant's profile folder (it has its database, or says which
    PostgreSQL server holds it)."""
    return (path / "mnemo.sqlite").is_file() or (path / DATABASE_LOCATION).is_file()
