"""Forgetting: the one exception to "nothing is deleted".

Edits and undo keep every version; a forget removes a text from everywhere Mnemo holds it:
- recall messages (the text is replaced by "[forgotten on DATE]"), the keyword index and the
  neighbour text other messages are indexed with, and their vectors (made again);
- archival passages (a passage left with nothing but the marker goes), and every older Lance
  version, data file and keyword index that held them;
- knowledge: facts, their history, and the people and things it names, with their other names;
- core blocks and every earlier version, the conversations' summaries and titles, proposals,
  recall notes and search results stored as messages, and the log files;
- snapshots that hold it: listed in the preview, then deleted.
SQLite's freed pages are overwritten (``secure_delete``), its keyword index merged, the WAL
truncated and the file vacuumed.

A forget first leaves a tombstone (``engine.memory.tombstones``) marked "forgetting"; the
removal then finds the text by the tombstone's hash as well as by its words, so a forget cut
short by a crash finishes at the next open (``finish_forgets``) without the text ever being
written down. The same sweep runs after an import and a snapshot's restore, so that neither
brings a forgotten text back.

The person asks, sees a preview (``plan_*``), and confirms (``forget``): the model never
forgets on its own.
"""

from __future__ import annotations

import logging
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, text

from engine.db import on_postgres
from engine.errors import InputError, NotFoundError
from engine.memory import trace
from engine.memory.knowledge import LITERAL_VALUED
from engine.memory.recall import keyword_text
from engine.memory.search import _STOPWORDS
from engine.memory.tombstones import Kind, Tombstone, replace_spans, runs_in, words
from engine.memory.vectors import clear_query_vectors, quote_sql
from engine.profile import forget_prompt_states

if TYPE_CHECKING:
    from engine.mnemo import Mnemo

log = logging.getLogger("mnemo.forget")

# A text this short, or made of such common words, would wipe half the memory.
MIN_CHARS = 3
TOO_MANY = 500  # places; more asks for a narrower text
EXCERPT_CHARS = 60
QUOTED_CHARS = 40  # of an item named in a sentence ("To forget the message “…”")
# The tables and columns that hold what the person said or was told, with the words a preview
# uses for each. Entities, other names and facts are removed whole when their text is forgotten.
COLUMNS: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    ("message", "id", ("text",), "message"),
    ("agent_state", "conversation_id", ("summary",), "conversation summary"),
    ("conversation", "id", ("title",), "conversation title"),
    ("core_block", "label", ("value", "description"), "core memory block"),
    ("core_block_version", "id", ("old_value", "new_value"), "core memory version"),
    (
        "proposal",
        "id",
        ("label", "old_content", "new_content", "applied_content", "payload", "cause_ref"),
        "proposal",
    ),
    ("entity", "id", ("name", "note"), "person or thing"),
    ("entity_alias", "key", ("alias",), "other name"),
    ("relation", "id", ("value", "source_ref"), "fact"),
    ("document", "path", ("path", "error"), "document"),
)
REMOVED_WHOLE = {"entity": "name", "entity_alias": "alias", "relation": "value", "document": "path"}
# A passage's text, tags and where it came from (a document's path and section heading).
PASSAGE_COLUMNS = ("text", "tags", "source_path", "source_section")
PASSAGE = "archival passage"
# The profile's folders of files a person's text arrives in: a chat handed to the window
# (``engine.server.handoff``) and the documents sent to `mnemo serve` (deleted whole).
FILE_FOLDERS = {"handoff": "hand-off file", "uploads": "uploaded document"}
LOG = "log file"
SNAPSHOT = "snapshot"
Redact = Callable[[str], str]


@dataclass(frozen=True)
class Place:
    kind: str  # "message", "archival passage", ... (COLUMNS)
    ref: str  # which one: "message 12", "core memory block human"
    excerpt: str  # the text around it, for the preview only


@dataclass
class ForgetPlan:
    """What a forget will remove, for the person to confirm (nothing is changed yet)."""

    what: str  # what is forgotten, in words for the report ("the text 'zebra…'", "message 12")
    stones: list[tuple[Kind, list[str], str]]  # the tombstones it leaves: kind, words, label
    places: list[Place] = field(default_factory=list)
    snapshots: list[str] = field(default_factory=list)  # ids of the snapshots that hold it
    items: list[tuple[str, str]] = field(default_factory=list)  # whole items: (kind, id)
    # What the person sees of each whole item, by (kind, id): its words, never only its id.
    shown: dict[tuple[str, str], str] = field(default_factory=dict)
    matcher: Phrases | None = None  # the words, found in text however written
    like: str | None = None  # a LIKE pattern every place holds (fewer rows to read)

    def by_kind(self) -> dict[str, int]:
        counts = Counter(place.kind for place in self.places)
        counts.update(kind for kind, _ref in self.items)
        if self.snapshots:
            counts[SNAPSHOT] = len(self.snapshots)
        return dict(counts)

    @property
    def empty(self) -> bool:
        return not (self.places or self.items or self.snapshots)

    def lines_by_kind(self) -> dict[str, list[str]]:
        """The preview: for each kind, a line per place with the text around it."""
        kinds: dict[str, list[str]] = {}
        for place in self.places:
            line = f"{place.ref}: {place.excerpt}" if place.excerpt else place.ref
            kinds.setdefault(place.kind, []).append(line)
        for kind, item_id in self.items:
            words = self.shown.get((kind, item_id))
            line = f"“{words}”, all of it" if words else f"{kind} {item_id}, all of it"
            kinds.setdefault(kind, []).append(line)
        for snapshot_id in self.snapshots:
            kinds.setdefault(SNAPSHOT, []).append(f"snapshot {snapshot_id}, deleted whole")
        return kinds


@dataclass
class ForgetResult:
    forgotten: dict[str, int]  # places by kind
    snapshots_deleted: list[str]
    notes: list[str]


# -- planning ------------------------------------------------------------------------------------


def plan_text(mnemo: Mnemo, typed: str) -> ForgetPlan:
    """Where ``typed`` is held, as a run of words (any case, any punctuation between them)."""
    found = [word.text for word in words(typed)]
    if not found:
        raise InputError("Give the text to forget: it has no letters or digits.")
    if sum(len(word) for word in found) < MIN_CHARS or all(word in _STOPWORDS for word in found):
        raise InputError(
            f"{typed!r} is too common to forget everywhere; give the words around it, such "
            "as the sentence it was in."
        )
    short = typed if len(typed) <= 40 else typed[:37] + "…"
    plan = ForgetPlan(f"the text {short!r}", [("words", found, f"{len(found)} words")])
    found_words, plan.like = Phrases([found]), _prefilter(found)
    plan.matcher = found_words
    marker = forgotten_marker()
    _survey(mnemo, plan, outside_markers(lambda value: found_words.sub(marker, value)), plan.like)
    if len(plan.places) > TOO_MANY:
        raise InputError(
            f"{typed!r} is in {len(plan.places):,} places, too many to be one thing to forget; "
            "give more of the words around it."
        )
    return plan


def plan_entity(mnemo: Mnemo, name: str) -> ForgetPlan:
    """Everything about a person or thing: the entity, its facts, and its every name wherever
    it is written."""
    entity = mnemo.knowledge.resolve(name)
    if entity is None:
        raise NotFoundError(f"Knowledge memory knows no one and nothing called {name!r}.")
    names = sorted({entity.name, *entity.aliases}, key=len, reverse=True)
    tokens = [[word.text for word in words(each)] for each in names]
    plan = ForgetPlan(
        f"everything about {entity.name}",
        [("words", each, f"a name of {len(each)} words") for each in tokens if each],
    )
    any_name = Phrases([each for each in tokens if each])
    plan.matcher = any_name
    marker = forgotten_marker()
    _survey(mnemo, plan, outside_markers(lambda value: any_name.sub(marker, value)), None)
    return plan


# "forget my passport number", "please forget about Jordan", "delete my PIN from your memory"
_REQUEST = re.compile(
    r"^\W*(?:(?:please|can you|could you|would you)\W+)?(?:forget|erase|delete|remove)\W+"
    r"(?:(?:everything|all)\W+(?:about|on)\W+|about\W+|that\W+|the\W+|my\W+)*(?P<what>.+?)"
    r"(?:\W+(?:from|in)\W+(?:your|my)\W+memory)?\W*$",
    re.IGNORECASE,
)
# The answer to a request to forget that came where no preview can be shown (a program's chat).
ELSEWHERE = (
    "Forgetting is done by you, with a preview of everything that goes: to forget {what!r}, "
    'ask in Mnemo\'s window or run `mnemo forget "{what}"`. Nothing of this message was '
    "kept."
)
_SENTENCE_END = re.compile(r"(?<=[.!?\n])\s+")
# A code or number: what a sentence about a passport, a PIN or an account holds.
_CODE = re.compile(r"\b(?=[\w-]*\d)[A-Za-z0-9][\w-]*[A-Za-z0-9]\b")


def _value_after(topic: Phrases, sentence: str) -> str | None:
    """The code or number a sentence gives for the topic: the first one after the topic's
    words ("my passport number is QX-55123-LM"), not a date or count elsewhere in it."""
    named = topic.search(sentence)
    if named is None:
        return None
    found = _CODE.search(sentence, named[1])
    return found.group() if found else None


def requested(message: str) -> str | None:
    """What a chat message asks Mnemo to forget ("passport number"), or None. Such a message
    is never given to the model: the person sees the preview and decides."""
    found = _REQUEST.match(message.strip())
    if found is None or len(message) > 200:
        return None
    what = found.group("what").strip()
    named = [word.text for word in words(what)]
    return what if [word for word in named if word not in _STOPWORDS] else None  # "forget it"


def plan_topic(mnemo: Mnemo, topic: str) -> ForgetPlan:
    """What a chat request means ("forget my passport number"): every sentence that mentions
    the topic, the facts it names, and the value itself wherever else it is written (a code or
    number in those sentences, a fact's value): the value is what the person wants gone."""
    found = [word.text for word in words(topic)]
    named = set(found) - _STOPWORDS
    if not named:
        raise InputError(f"Say what to forget: {topic!r} names nothing Mnemo could look for.")
    topic_words = Phrases([found])
    sentences: list[str] = []

    def collect(value: str) -> str:
        for sentence in _SENTENCE_END.split(value):
            if topic_words.search(sentence):
                sentences.append(sentence.strip())
        return value

    _survey(mnemo, ForgetPlan("", []), collect, _prefilter(found))
    plan = ForgetPlan(f"what you said about {topic!r}", [])
    values = {value for sentence in sentences if (value := _value_after(topic_words, sentence))}
    for fact_id, subject, predicate, obj in _facts(mnemo):  # "passport" names (user, passport, …)
        relation_words = {word.text for word in words(predicate)} - _STOPWORDS
        if relation_words & named or topic_words.search(f"{subject} {obj}"):
            plan.items.append(("fact", str(fact_id)))
            plan.stones.append(("fact", [subject, predicate, obj], f"fact {fact_id}"))
            if predicate in LITERAL_VALUED:
                values.add(obj)
    pieces = [*dict.fromkeys(sentences), *values]
    for piece in pieces:
        tokens = [word.text for word in words(piece)]
        if tokens:
            plan.stones.append(("words", tokens, f"{len(tokens)} words"))
    if pieces:
        plan.matcher = Phrases([[word.text for word in words(piece)] for piece in pieces])
        marker = forgotten_marker()
        everything = plan.matcher
        _survey(mnemo, plan, outside_markers(lambda value: everything.sub(marker, value)), None)
    return plan


def _facts(mnemo: Mnemo) -> list[tuple[int, str, str, str]]:
    with mnemo.database.connect() as connection:
        return [
            (row.id, row.subject, row.predicate, row.object)
            for row in connection.execute(
                text(
                    "SELECT r.id, s.name AS subject, r.predicate, "
                    "COALESCE(o.name, r.value) AS object FROM relation r "
                    "JOIN entity s ON s.id = r.subject_id LEFT JOIN entity o ON o.id = r.object_id"
                )
            )
        ]


def plan_item(mnemo: Mnemo, kind: str, item_id: str) -> ForgetPlan:
    """One message, passage, fact or conversation, whole."""
    # The tombstones' labels keep the ids (a tombstone never holds the text it forgets); what
    # the person reads (``what``, ``shown``) quotes the item's words.
    if kind == "message":
        message = mnemo.recall.get(int(item_id))
        tokens = [word.text for word in words(message.text)]
        said = _quoted(message.text)
        return ForgetPlan(
            f"the message {said}",
            [("whole", tokens, f"message {item_id}")] if tokens else [],
            items=[("message", item_id)],
            shown={("message", item_id): _excerpt(message.text, None)},
        )
    if kind == "passage":
        passage = mnemo.archival.get(item_id)
        tokens = [word.text for word in words(passage.text)]
        return ForgetPlan(
            f"the passage {_quoted(passage.text)}",
            [("whole", tokens, f"passage {item_id[:8]}")] if tokens else [],
            items=[(PASSAGE, item_id)],
            shown={(PASSAGE, item_id): _excerpt(passage.text, None)},
        )
    if kind == "fact":
        fact = mnemo.knowledge.fact(int(item_id))
        parts = [fact.subject, fact.predicate, fact.object]
        return ForgetPlan(
            f"the fact {_quoted(fact.to_person())}",
            [("fact", parts, f"fact {item_id}")],
            items=[("fact", item_id)],
            shown={("fact", item_id): fact.to_person()},
        )
    if kind == "conversation":
        with mnemo.database.connect() as connection:
            rows = connection.execute(
                text("SELECT id, text FROM message WHERE conversation_id = :c"), {"c": item_id}
            ).all()
        if not rows and not mnemo.conversations.exists(item_id):
            raise NotFoundError(f"There is no conversation {item_id!r}; `mnemo chat --list`.")
        stones: list[tuple[Kind, list[str], str]] = []
        for row in rows:
            tokens = [word.text for word in words(row.text)]
            if tokens:
                stones.append(("whole", tokens, f"a message of conversation {item_id}"))
        title = mnemo.recall.titles({item_id}).get(item_id, "")
        plan = ForgetPlan(
            f"the conversation {_quoted(title)}" if title else "a conversation",
            stones,
            items=[("conversation", item_id)],
            shown={("conversation", item_id): title} if title else {},
        )
        plan.items += [("message", str(row.id)) for row in rows]
        plan.shown.update({("message", str(row.id)): _excerpt(row.text, None) for row in rows})
        return plan
    raise InputError(
        f"Mnemo cannot forget a {kind!r}; forget a text, message, passage, fact, "
        "entity or conversation."
    )


def plan_items(mnemo: Mnemo, kind: str, item_ids: list[str]) -> ForgetPlan:
    """Several messages, passages or facts, each whole, in one preview."""
    plans = [plan_item(mnemo, kind, item_id) for item_id in item_ids]
    if len(plans) == 1:
        return plans[0]
    return ForgetPlan(
        f"{len(plans)} {kind}s",
        [stone for plan in plans for stone in plan.stones],
        items=[item for plan in plans for item in plan.items],
        shown={key: words for plan in plans for key, words in plan.shown.items()},
    )


def _quoted(text: str) -> str:
    """A few words of an item to name it in a sentence: “My sister lives in…”."""
    flat = " ".join(text.split())
    return f"“{flat if len(flat) <= QUOTED_CHARS else flat[:QUOTED_CHARS].rstrip() + '…'}”"


class Phrases:
    """Runs of words (``words``, normalised) found in a text however it is written: any case,
    width or separator, a decomposed letter, a soft hyphen or zero-width character inside."""

    def __init__(self, runs: list[list[str]]) -> None:
        self._runs: dict[int, set[tuple[str, ...]]] = {}
        for run in runs:
            if run:
                self._runs.setdefault(len(run), set()).add(tuple(run))

    def spans(self, value: str) -> list[tuple[int, int]]:
        return runs_in(words(value), self._runs, tuple)

    def search(self, value: str) -> tuple[int, int] | None:
        return min(self.spans(value), default=None)

    def sub(self, marker: str, value: str) -> str:
        return replace_spans(value, self.spans(value), marker)


_MARKER = re.compile(r"\[forgotten(?: on \d{4}-\d{2}-\d{2})?\]")


def outside_markers(redact: Redact) -> Redact:
    """``redact`` applied to the text between earlier "[forgotten…]" markers only: a marker's
    date is never taken for a forgotten number."""

    def apply(value: str) -> str:
        pieces = _MARKER.split(value)
        if len(pieces) == 1:
            return redact(value)
        markers = _MARKER.findall(value)
        redacted = [redact(piece) for piece in pieces]
        return "".join(p + m for p, m in zip(redacted, [*markers, ""], strict=True))

    return apply


def forgotten_marker() -> str:
    """What stands where a forgotten text was ("forgotten on DATE" in a block's history)."""
    return f"[forgotten on {datetime.now():%Y-%m-%d}]"


def _prefilter(tokens: list[str]) -> str | None:
    """A LIKE pattern that every match written in ASCII holds (its longest ASCII word): the
    scan reads only those rows and the ones with other characters (``_rows``)."""
    ascii_words = [token for token in tokens if token.isascii()]
    if not ascii_words:
        return None
    return "%" + max(ascii_words, key=len) + "%"


# -- the survey: where a text is held ------------------------------------------------------------


def _survey(mnemo: Mnemo, plan: ForgetPlan, redact: Redact, like: str | None) -> None:
    with mnemo.database.connect() as connection:
        plan.places += _sql_places(connection, redact, like)
    plan.places += [
        Place(PASSAGE, f"passage {row['id'][:8]}", _excerpt(row["text"], plan.matcher))
        for row in _passages(mnemo.passage_vectors.rows(_lance_where(like), _PASSAGE_READ), redact)
    ]
    plan.places += [
        Place(LOG, path.name, "") for path in _log_files(mnemo) if _changes(path, redact)
    ]
    plan.places += [Place(kind, path.name, "") for kind, path in _held_files(mnemo, redact)]
    plan.snapshots = [
        snapshot.id
        for snapshot in mnemo.snapshots.all()
        if _snapshot_holds(mnemo, snapshot.id, redact, like)
    ]


def _sql_places(connection: Connection, redact: Redact, like: str | None) -> list[Place]:
    places = []
    for table, key, columns, kind in COLUMNS:
        for row in _rows(connection, table, key, columns, like):
            for column in columns:
                value = row[column]
                if isinstance(value, str) and redact(value) != value:
                    places.append(Place(kind, f"{kind} {row[key]}", _excerpt(value, None)))
                    break
    return places


def _rows(
    connection: Connection, table: str, key: str, columns: tuple[str, ...], like: str | None
) -> Iterable[Any]:
    """The rows that may hold the words: those whose ASCII text holds ``like``, and every row
    with other characters (a full-width or decomposed word is found only by reading it)."""
    where = ""
    if like:
        other = (
            "octet_length({c}) != char_length({c})"
            if connection.dialect.name == "postgresql"
            else "length(CAST({c} AS BLOB)) != length({c})"
        )
        where = " WHERE " + " OR ".join(
            f"lower({c}) LIKE :like OR {other.format(c=c)}" for c in columns
        )
    sql = f"SELECT {key}, {', '.join(columns)} FROM {table}{where}"
    return connection.execute(text(sql), {"like": like}).mappings().all()


def _lance_where(like: str | None) -> str | None:
    """Passages that may hold the words (as ``_rows``), in any of their columns."""
    if not like:
        return None
    columns = ["text", "source_path", "source_section", "array_to_string(tags, ' ')"]
    return " OR ".join(
        f"lower({c}) LIKE {quote_sql(like)} OR octet_length({c}) != character_length({c})"
        for c in columns
    )


_PASSAGE_READ = ["id", *PASSAGE_COLUMNS]


def _passages(rows: list[dict[str, Any]], redact: Redact) -> list[dict[str, Any]]:
    """The rows ``redact`` changes, each with ``new``: its changed columns, redacted."""
    changed = []
    for row in rows:
        new: dict[str, Any] = {}
        for column in PASSAGE_COLUMNS:
            value = row.get(column)
            if isinstance(value, str):
                redacted: Any = redact(value)
            elif isinstance(value, list):
                redacted = [redact(tag) for tag in value]
            else:
                continue
            if redacted != value:
                new[column] = redacted
        if new:
            changed.append({**row, "new": new})
    return changed


def _held_files(mnemo: Mnemo, redact: Redact) -> list[tuple[str, Path]]:
    """The hand-off files and uploaded documents that hold the text (in their name or their
    words): they are deleted whole (a PDF cannot be rewritten without it)."""
    held = []
    for folder, kind in FILE_FOLDERS.items():
        for path in sorted((mnemo.profile.root / folder).glob("*")):
            if path.is_file() and (redact(path.name) != path.name or _file_holds(path, redact)):
                held.append((kind, path))
    return held


def _file_holds(path: Path, redact: Redact) -> bool:
    """Whether a file's text holds what ``redact`` removes: a document as Mnemo reads it, any
    other file as text."""
    from engine.ingest.loaders import is_supported, load

    if _changes(path, redact):
        return True
    if not is_supported(path):
        return False
    try:
        return any(
            redact(section.text) != section.text
            or redact(section.label or "") != (section.label or "")
            for section in load(path)
        )
    except Exception:  # noqa: BLE001 (a damaged upload: its raw bytes were read above)
        return False


def _excerpt(value: str, found: Phrases | None) -> str:
    span = found.search(value) if found is not None else None
    start = max(0, span[0] - EXCERPT_CHARS // 2) if span else 0
    piece = " ".join(value[start : start + EXCERPT_CHARS * 2].split())
    return ("…" if start else "") + piece


def _snapshot_holds(mnemo: Mnemo, snapshot_id: str, redact: Redact, like: str | None) -> bool:
    folder = mnemo.profile.root / "snapshots" / snapshot_id
    copy = folder / "mnemo.sqlite"
    if copy.exists():
        from sqlalchemy import create_engine

        engine = create_engine(f"sqlite:///file:{copy}?mode=ro&uri=true")
        try:
            with engine.connect() as connection:
                if _sql_places(connection, redact, like):
                    return True
        finally:
            engine.dispose()
    tag = f"snapshot-{snapshot_id}"
    table = mnemo.passage_vectors
    if table.has_tag(tag):
        return bool(_passages(table.rows_at(tag, _lance_where(like), _PASSAGE_READ), redact))
    return False


def _log_files(mnemo: Mnemo) -> list[Path]:
    folder = mnemo.profile.log_path.parent
    return sorted(path for path in folder.glob("*") if path.is_file()) if folder.exists() else []


def _changes(path: Path, redact: Redact) -> bool:
    content = path.read_text(encoding="utf-8", errors="replace")
    return redact(content) != content


# -- forgetting ------------------------------------------------------------------------------------


def forget(mnemo: Mnemo, plan: ForgetPlan) -> ForgetResult:
    """Do what ``plan`` previewed: tombstones first, then every place, then the disk."""
    if plan.empty:
        raise InputError(f"Mnemo holds nothing of {plan.what}; there was nothing to forget.")
    stones = [mnemo.tombstones.add(kind, parts, label) for kind, parts, label in plan.stones]
    marker = forgotten_marker()
    matcher_ = plan.matcher

    @outside_markers
    def redact(value: str) -> str:
        changed = matcher_.sub(marker, value) if matcher_ is not None else value
        return mnemo.tombstones.redact(changed, stones, marker)

    forgotten = Counter(kind for kind, _ in plan.items)
    _remove_items(mnemo, plan.items)
    forgotten.update(_remove(mnemo, redact, plan.like))
    deleted = []
    for snapshot_id in plan.snapshots:
        with suppress(NotFoundError):  # gone since the preview (another forget took it)
            mnemo.snapshots.delete(snapshot_id)
            deleted.append(snapshot_id)
    notes = _scrub(mnemo)
    for stone in stones:
        mnemo.tombstones.set_status(stone.id, "done")
    # The log names the tombstones ("3 words"), never the text: it is forgotten in the log too.
    log.info("forgot %s: %s", ", ".join(label for *_, label in plan.stones), dict(forgotten))
    return ForgetResult(dict(forgotten), deleted, notes)


def sweep(mnemo: Mnemo, stones: list[Tombstone] | None = None) -> dict[str, int]:
    """Remove whatever the tombstones forget that is held again: after an import, a snapshot's
    restore, or a forget cut short. Reads every row (by hash there is no word to search for)."""
    chosen = mnemo.tombstones.active() if stones is None else stones
    if not chosen:
        return {}
    marker = "[forgotten]"
    found = _remove(
        mnemo, outside_markers(lambda value: mnemo.tombstones.redact(value, chosen, marker)), None
    )
    facts = {stone.digest for stone in chosen if stone.kind == "fact"}
    if facts:
        found.update(_remove_forgotten_facts(mnemo, facts))
    if found:
        _scrub(mnemo)
        log.info("forgot again what tombstones forget: %s", dict(found))
    return dict(found)


def finish_forgets(mnemo: Mnemo) -> None:
    """Finish a forget a crash cut short (at open): its tombstone says what, never the text."""
    pending = [stone for stone in mnemo.tombstones.all() if stone.status == "forgetting"]
    if not pending:
        return
    log.info("finishing %d forgets cut short", len(pending))
    forget_again(mnemo, pending)
    for stone in pending:
        mnemo.tombstones.set_status(stone.id, "done")


def _remove_items(mnemo: Mnemo, items: list[tuple[str, str]]) -> None:
    for kind, item_id in items:
        if kind == "message":
            with suppress(NotFoundError):  # a conversation's message already gone
                mnemo.recall.delete(int(item_id))
        elif kind == "archival passage":
            mnemo.archival.delete(item_id)
        elif kind == "fact":
            with mnemo.database.begin() as connection:
                _delete_relations(connection, [int(item_id)])
        elif kind == "conversation":
            with mnemo.database.begin() as connection:
                for table, key in (("conversation", "id"), ("agent_state", "conversation_id")):
                    connection.execute(
                        text(f"DELETE FROM {table} WHERE {key} = :c"), {"c": item_id}
                    )


def _remove(mnemo: Mnemo, redact: Redact, like: str | None) -> Counter[str]:
    """Every place ``redact`` changes, changed (entities, names and facts removed whole)."""
    found: Counter[str] = Counter()
    changed_messages: list[int] = []
    with mnemo.database.begin() as connection:
        for table, key, columns, kind in COLUMNS:
            for row in _rows(connection, table, key, columns, like):
                values = {c: row[c] for c in columns if isinstance(row[c], str)}
                new = {c: redact(v) for c, v in values.items() if redact(v) != v}
                if not new:
                    continue
                found[kind] += 1
                if table in REMOVED_WHOLE and REMOVED_WHOLE[table] in new:
                    _delete_whole(connection, table, row[key])
                    continue
                sets = ", ".join(f"{column} = :{column}" for column in new)
                if table == "message":
                    sets += ", search_text = :text, embedded = 0"
                    changed_messages.append(int(row[key]))
                connection.execute(
                    text(f"UPDATE {table} SET {sets} WHERE {key} = :key"), {**new, "key": row[key]}
                )
        if changed_messages:
            _reindex(connection, changed_messages)
    if changed_messages:
        ids = ", ".join(map(str, changed_messages))
        mnemo.recall_vectors.delete(f"id IN ({ids})")
        mnemo.recall.embed_missing()  # their vectors, made again from what is left
    for row in _passages(mnemo.passage_vectors.rows(_lance_where(like), _PASSAGE_READ), redact):
        found[PASSAGE] += 1
        left = row["new"].get("text", row["text"])
        # A passage of a document whose path holds it goes whole, as the document's entry does.
        whole = "source_path" in row["new"]
        if not whole and [word for word in words(left) if not _is_marker_word(word.text)]:
            mnemo.archival.rewrite(row["id"], row["new"])
        else:
            mnemo.archival.delete(row["id"])
    for kind, path in _held_files(mnemo, redact):
        found[kind] += 1
        path.unlink(missing_ok=True)
    for path in _log_files(mnemo):
        content = path.read_text(encoding="utf-8", errors="replace")
        if redact(content) != content:
            found[LOG] += 1
            path.write_text(redact(content), encoding="utf-8")
    return found


def _is_marker_word(word: str) -> bool:
    return word in ("forgotten", "on") or word.isdigit()


def _reindex(connection: Connection, message_ids: list[int]) -> None:
    """The keyword text of changed messages and of the turns that had them as neighbours."""
    listed = ", ".join(map(str, message_ids))
    rows = connection.execute(
        text(f"SELECT id, conversation_id FROM message WHERE id IN ({listed})")
    ).all()
    for message_id, conversation_id in rows:
        keyword_text.refresh_around(
            lambda sql, params: connection.execute(text(sql), params).all(),
            lambda sql, params: connection.execute(text(sql), params),
            conversation_id,
            message_id,
        )


def _delete_whole(connection: Connection, table: str, key: Any) -> None:
    if table == "relation":
        _delete_relations(connection, [int(key)])
    elif table == "document":
        connection.execute(text("DELETE FROM document WHERE path = :k"), {"k": key})
    elif table == "entity_alias":
        connection.execute(text("DELETE FROM entity_alias WHERE key = :k"), {"k": key})
    elif table == "entity":
        ids = [int(key)]
        ids += [
            row[0]
            for row in connection.execute(
                text("SELECT id FROM entity WHERE merged_into = :e"), {"e": key}
            )
        ]
        listed = ", ".join(map(str, ids))
        relations = connection.execute(
            text(
                f"SELECT id FROM relation WHERE subject_id IN ({listed}) OR object_id IN ({listed})"
            )
        ).all()
        _delete_relations(connection, [row[0] for row in relations])
        connection.execute(text(f"DELETE FROM entity_alias WHERE entity_id IN ({listed})"))
        connection.execute(text(f"UPDATE entity SET merged_into = NULL WHERE id IN ({listed})"))
        connection.execute(text(f"DELETE FROM entity WHERE id IN ({listed})"))


def _delete_relations(connection: Connection, ids: list[int]) -> None:
    if not ids:
        return
    listed = ", ".join(map(str, ids))
    connection.execute(
        text(f"UPDATE relation SET superseded_by = NULL WHERE superseded_by IN ({listed})")
    )
    connection.execute(text(f"DELETE FROM relation WHERE id IN ({listed})"))


def _remove_forgotten_facts(mnemo: Mnemo, digests: set[str]) -> Counter[str]:
    found: Counter[str] = Counter()
    gone = [
        fact_id
        for fact_id, subject, predicate, obj in _facts(mnemo)
        if mnemo.tombstones.fact_digest(subject, predicate, obj) in digests
    ]
    with mnemo.database.begin() as connection:
        _delete_relations(connection, gone)
        found["fact"] += len(gone)
    return found


# -- the disk ------------------------------------------------------------------------------------


def _scrub(mnemo: Mnemo) -> list[str]:
    """Leave no byte of what was removed: SQLite's free pages and WAL, Lance's old versions and
    data files, and what this process keeps in memory (search traces, query vectors)."""
    notes = []
    trace.clear()
    clear_query_vectors()
    forget_prompt_states()  # the local model's kept prompts (core memory and conversations)
    mnemo.wait_for_background_work()
    for table in (mnemo.passage_vectors, mnemo.recall_vectors):
        table.scrub()
    engine = mnemo.database
    if on_postgres(engine):
        notes.append(
            "The rows are gone from PostgreSQL; the server's own backups and its tables until "
            "their next vacuum may still hold them."
        )
        return notes
    _scrub_sqlite(engine)
    return notes


def _scrub_sqlite(engine: Engine) -> None:
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.exec_driver_sql("INSERT INTO message_fts(message_fts) VALUES('optimize')")
        connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        for attempt in range(5):
            try:
                connection.exec_driver_sql("VACUUM")
                break
            except Exception:  # another connection reads: wait, then try again
                if attempt == 4:
                    raise
                time.sleep(0.5)
        connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")


# -- the check -------------------------------------------------------------------------------------

SCAN_CHARS = 8 * 2**20  # read a file this much at a time (with an overlap for words on a seam)


def held_on_disk(mnemo: Mnemo) -> list[str]:
    """Where the profile still holds a forgotten text, found by the tombstones' hashes
    (`mnemo check`): the stores' rows as they read (a text a data file glues to the next one
    is found there), then every byte of every file, so it takes a while on a large profile."""
    stones = [stone for stone in mnemo.tombstones.active() if stone.kind == "words"]
    if not stones:
        return []
    longest = max(stone.length for stone in stones)
    root = mnemo.profile.root
    redact = outside_markers(lambda value: mnemo.tombstones.redact(value, stones, "[forgotten]"))
    held = []
    with mnemo.database.connect() as connection:
        held += sorted(
            {f"the database ({place.kind})" for place in _sql_places(connection, redact, None)}
        )
    if _passages(mnemo.passage_vectors.rows(None, _PASSAGE_READ), redact):
        held.append("archival memory (its passages)")
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.name.startswith("forgotten."):
            continue
        with path.open("rb") as file:
            carried = ""
            while piece := file.read(SCAN_CHARS):
                text_ = carried + piece.decode("utf-8", errors="replace")  # (never glued)
                if mnemo.tombstones.spans(text_, stones):
                    held.append(str(path.relative_to(root)))
                    break
                carried = " ".join(word.text for word in words(text_)[-longest:])
    return held


def forget_again(mnemo: Mnemo, stones: list[Tombstone] | None = None) -> list[str]:
    """Forget again what tombstones forget, still held (`mnemo check --repair`, a forget cut
    short): the snapshots that hold it go (their ids are returned), every store is swept and
    the disk scrubbed."""
    stones = mnemo.tombstones.active() if stones is None else stones
    marker = "[forgotten]"
    deleted = []
    for snapshot in mnemo.snapshots.all():
        if _snapshot_holds(
            mnemo, snapshot.id, lambda v: mnemo.tombstones.redact(v, stones, marker), None
        ):
            mnemo.snapshots.delete(snapshot.id)
            deleted.append(snapshot.id)
    sweep(mnemo, stones)
    _scrub(mnemo)
    return deleted
