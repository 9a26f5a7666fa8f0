"""Tombstones: what the person asked Mnemo to forget, kept as keyed hashes, never as text.

A forget removes a text from every store (``engine.memory.redaction``); its tombstone keeps it from
coming back. Each is one of:
- ``words``: a run of words anywhere (a PIN, a name): the hash of the words, normalised;
- ``whole``: a whole message or passage: the hash of all its words;
- ``fact``: one fact: the hash of its subject, relation and object.

The stores check what they are given against them (``redact``, ``forgets_fact``): a forgotten
run of words arriving again, from a re-ingested file, an older export or a chat export, is
replaced by ``[forgotten]`` before it is stored, and a forgotten fact is not stored. The hashes
are keyed with a secret made for this profile (``forgotten.key``): a short forgotten text, a
PIN, cannot be found by hashing every PIN.

Both files live in the profile folder, outside the database: a snapshot restored or an archive
imported does not bring a forgotten text back by bringing back an older list, and neither is
ever exported.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import threading
import time
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple

KEY_FILE = "forgotten.key"
LIST_FILE = "forgotten.json"
REDACTED = "[forgotten]"
Kind = Literal["words", "whole", "fact"]


@dataclass(frozen=True)
class Tombstone:
    id: int
    kind: Kind
    length: int  # words in the forgotten run (``words``), else 0
    digest: str
    what: str  # what was forgotten, in words that hold none of it ("3 words", "message 12")
    created_at: float
    status: Literal["forgetting", "done", "lifted"] = "forgetting"
    key_check: str = ""  # ``Tombstones.key_check`` when it was made: a changed key shows


@functools.cache
def _invisible() -> tuple[str, dict[int, None]]:
    """Every character Unicode says a renderer may leave unseen (Default_Ignorable_Code_Point:
    the soft hyphen, zero-width and direction marks, variation selectors, the tag characters, the
    Hangul fillers…), which can be written inside a word without changing how it looks: as a
    character class of ranges, and as a table that removes them."""
    import regex

    everything = "".join(map(chr, range(0x110000)))
    spans = [m.span() for m in regex.finditer(r"\p{Default_Ignorable_Code_Point}+", everything)]
    ranges = "".join(f"\\U{start:08x}-\\U{end - 1:08x}" for start, end in spans)
    gone = dict.fromkeys(code for start, end in spans for code in range(start, end))
    return ranges, gone


_ALNUM = re.compile(r"[^\W_]+")
_ASCII_WORD = re.compile(r"[A-Za-z0-9]+")


class Word(NamedTuple):
    text: str  # normalised (``normal``)
    start: int  # where it stands in the text as written
    end: int


def normal(text: str) -> str:
    """One form for the same word however it is written: NFKC (full-width letters and digits,
    ligatures), case folded, without any invisible character (``_invisible``)."""
    bare = text.translate(_invisible()[1])
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", bare).casefold())


@functools.cache
def _written_word() -> re.Pattern[str]:
    """A word as written: letters and digits (not the underscore), with the combining marks
    of a decomposed letter ("Zoe" + U+0308) and invisible characters inside it."""
    marks = [c for c in range(0x110000) if unicodedata.category(chr(c))[0] == "M"]
    ranges, start = [], marks[0]
    for previous, current in zip(marks, [*marks[1:], -1], strict=True):
        if current != previous + 1:
            ranges.append(f"\\U{start:08x}-\\U{previous:08x}")
            start = current
    return re.compile(f"(?:[^\\W_]|[{''.join(ranges)}{_invisible()[0]}])+")


def words(text: str) -> list[Word]:
    """The words a tombstone is made of and checked against, normalised: "zebra-7741_quartz",
    "Zebra 7741 quartz" and "ＺＥＢＲＡ 7741 quartz" are the same three words. Any run of
    punctuation, spaces or underscores is one separator."""
    if text.isascii():  # the common case, at the speed of one expression
        return [Word(m.group().lower(), m.start(), m.end()) for m in _ASCII_WORD.finditer(text)]
    found = []
    for match in _written_word().finditer(text):
        written = match.group()
        if written.isascii():
            found.append(Word(written.lower(), match.start(), match.end()))
            continue
        for piece in _ALNUM.findall(normal(written)):  # "½" is "1", "2"
            found.append(Word(piece, match.start(), match.end()))
    return found


def runs_in(
    found: list[Word], runs: dict[int, set[Any]], key: Callable[[list[str]], Any]
) -> list[tuple[int, int]]:
    """Where in the text ``found`` was read from a run of words stands whose ``key`` is among
    ``runs`` (keys by the run's length in words): a tombstone's hash, or the words themselves."""
    tokens = [word.text for word in found]
    return [
        (found[start].start, found[start + length - 1].end)
        for length, keys in runs.items()
        for start in range(len(tokens) - length + 1)
        if key(tokens[start : start + length]) in keys
    ]


def _check_of(key: bytes) -> str:
    return hashlib.blake2b(b"", key=key, digest_size=8).hexdigest()


def replace_spans(text: str, spans: list[tuple[int, int]], marker: str) -> str:
    """``text`` with each span replaced by ``marker`` (overlapping spans by one)."""
    if not spans:
        return text
    pieces, at = [], 0
    for start, end in sorted(spans):
        if start < at:
            at = max(at, end)
            continue
        pieces += [text[at:start], marker]
        at = end
    return "".join(pieces) + text[at:]


class Tombstones:
    """The profile's tombstones (``forgotten.json``) and the key of their hashes."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._lock = threading.Lock()
        self._key: bytes | None = None
        self._read_at: float | None = None
        self._items: list[Tombstone] = []
        self.kept_out = 0  # texts ``redact`` changed: an import says how many it kept out

    # -- the list ------------------------------------------------------------------------------

    def all(self) -> list[Tombstone]:
        """Every tombstone, the oldest first (re-read when another process changed the file)."""
        path = self._root / LIST_FILE
        try:
            changed = path.stat().st_mtime_ns
        except FileNotFoundError:
            return []
        with self._lock:
            if changed != self._read_at:
                raw = json.loads(path.read_text(encoding="utf-8"))
                self._items = [Tombstone(**item) for item in raw]
                self._read_at = changed
            return list(self._items)

    def active(self) -> list[Tombstone]:
        """Those that keep their text out (a lifted one no longer does)."""
        return [stone for stone in self.all() if stone.status != "lifted"]

    def add(self, kind: Kind, parts: Sequence[str], what: str) -> Tombstone:
        """Record a forget before it starts (``forgetting``), so that one interrupted finishes on
        the next start."""
        items = self.all()
        stone = Tombstone(
            id=max((item.id for item in items), default=0) + 1,
            kind=kind,
            length=len(parts) if kind == "words" else 0,
            digest=self.digest(parts),
            what=what,
            created_at=time.time(),
            key_check=self.key_check(),
        )
        self._write([*items, stone])
        return stone

    def set_status(self, stone_id: int, status: Literal["done", "lifted"]) -> Tombstone:
        items = self.all()
        found = [item for item in items if item.id == stone_id]
        if not found:
            from engine.errors import NotFoundError

            raise NotFoundError(f"There is no tombstone {stone_id}; `mnemo forget --list`.")
        changed = Tombstone(**{**asdict(found[0]), "status": status})
        self._write([changed if item.id == stone_id else item for item in items])
        return changed

    def _write(self, items: list[Tombstone]) -> None:
        path = self._root / LIST_FILE
        partial = path.with_name(path.name + ".partial")
        partial.write_text(json.dumps([asdict(item) for item in items], indent=1), "utf-8")
        os.replace(partial, path)

    # -- hashing -------------------------------------------------------------------------------

    def digest(self, parts: Sequence[str]) -> str:
        joined = "\x1f".join(normal(part) for part in parts)
        return hashlib.blake2b(joined.encode(), key=self._secret(), digest_size=16).hexdigest()

    def keyed(self, text: str) -> str:
        """A keyed hash of ``text`` as written (the name a program gives a conversation): the
        same for the same text, and no guess of the text finds it without this profile's key
        (an unkeyed hash of a 4-digit code was found from 10,000 guesses)."""
        return hashlib.blake2b(text.encode(), key=self._secret(), digest_size=8).hexdigest()

    def key_check(self) -> str:
        """A keyed hash of nothing: the same while the key is, so a lost or replaced key is
        seen (its tombstones no longer recognise what they forget)."""
        return _check_of(self._secret())

    def key_problem(self) -> str | None:
        """Why the tombstones cannot be trusted to hold, in a sentence, or None."""
        stones = self.active()
        if not stones:
            return None
        path = self._root / KEY_FILE
        if not path.exists():
            problem = f"{KEY_FILE} is missing"
        elif any(stone.key_check not in ("", _check_of(path.read_bytes())) for stone in stones):
            problem = f"{KEY_FILE} was replaced"
        else:
            return None
        return (
            f"{problem}, so {len(stones)} tombstones no longer recognise what you asked Mnemo "
            "to forget: it could be stored again from a file or an import. Put the profile's "
            f"{KEY_FILE} back from a backup, or forget those texts again."
        )

    def _secret(self) -> bytes:
        if self._key is None:
            path = self._root / KEY_FILE
            if not path.exists():
                descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(descriptor, "wb") as file:
                    file.write(os.urandom(32))
            self._key = path.read_bytes()
        return self._key

    # -- checking what arrives -----------------------------------------------------------------

    def spans(self, text: str, stones: Sequence[Tombstone] | None = None) -> list[tuple[int, int]]:
        """Where ``text`` holds a forgotten run of words, or all of it for a forgotten whole."""
        chosen = [s for s in (self.active() if stones is None else stones) if s.kind != "fact"]
        if not chosen or not text:
            return []
        found = words(text)
        if not found:
            return []
        tokens = [word.text for word in found]
        wholes = {stone.digest for stone in chosen if stone.kind == "whole"}
        if wholes and self.digest(tokens) in wholes:
            return [(0, len(text))]
        runs: dict[int, set[str]] = {}
        for stone in chosen:
            if stone.kind == "words":
                runs.setdefault(stone.length, set()).add(stone.digest)
        return runs_in(found, runs, self.digest)

    def redact(
        self,
        text: str,
        stones: Sequence[Tombstone] | None = None,
        marker: str = REDACTED,
    ) -> str:
        """``text`` with every forgotten run of words replaced by ``marker``."""
        spans = self.spans(text, stones)
        if spans:
            self.kept_out += 1
        return replace_spans(text, spans, marker)

    def forgets_fact(self, subject: str, predicate: str, obj: str) -> bool:
        """Whether this fact, or a forgotten run of words in its subject or object, was
        forgotten."""
        stones = self.active()
        if not stones:
            return False
        facts = {stone.digest for stone in stones if stone.kind == "fact"}
        if facts and self.fact_digest(subject, predicate, obj) in facts:
            return True
        return bool(self.spans(subject, stones) or self.spans(obj, stones))

    def fact_digest(self, subject: str, predicate: str, obj: str) -> str:
        return self.digest(
            [" ".join(word.text for word in words(part)) for part in (subject, predicate, obj)]
        )
