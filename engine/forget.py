"""Forgetting: the one exception to "nothing is deleted".

Edits and undo keep every version; a forget removes a text from everywhere Mnemo holds it: the
stores, the files in the profile's folder and the snapshots that hold it (listed in the
preview, then rewritten without it, so that an import's undo or a restore still works). The
person asks, sees a preview (``plan_*``), and confirms (``forget``): the model never forgets on
its own.

A forget first leaves a tombstone (``engine.memory.tombstones``) marked "forgetting", then the
stores' redaction (``engine.memory.redaction``) takes the text out, by its words and by the
tombstone's hash, so a forget cut short by a crash finishes at the next open without the text
ever being written down. This module works over the whole open profile, above the stores; the
profile itself calls only the redaction.
"""

from __future__ import annotations

import functools
import logging
import re
import time
from collections import Counter
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import text

from engine.errors import InputError, NotFoundError
from engine.memory.knowledge import LITERAL_VALUED
from engine.memory.redaction import (
    LOG,
    PASSAGE,
    PASSAGE_READ,
    Phrases,
    Place,
    Redact,
    excerpt,
    facts,
    forget_in_snapshots,
    held_again,
    held_files,
    holds_text,
    lance_where,
    log_files,
    outside_markers,
    passages,
    remove,
    remove_items,
    scrub,
    snapshot_holds,
    sql_places,
)
from engine.memory.search import _STOPWORDS
from engine.memory.tombstones import Kind, words
from engine.mnemo import Mnemo
from engine.profile import FORGOTTEN, last_forget, prompt_states_folder
from engine.resources import resource_path

log = logging.getLogger("mnemo.forget")

# A text this short, or made of such common words, would wipe half the memory.
MIN_CHARS = 3
TOO_MANY = 500  # places; more asks for a narrower text
QUOTED_CHARS = 40  # of an item named in a sentence ("To forget the message “…”")
SNAPSHOT = "snapshot"


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
            kinds.setdefault(SNAPSHOT, []).append(f"snapshot {snapshot_id}, taken out of it")
        return kinds


@dataclass
class ForgetResult:
    forgotten: dict[str, int]  # places by kind
    snapshots_rewritten: list[str]  # taken out of, in place
    notes: list[str]


# -- planning --------------------------------------------------------------------------------------


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


REQUEST_CHARS = 200  # a longer message is no request to forget: it says more


@functools.cache
def _request_phrases() -> dict[str, list[tuple[str, ...]]]:
    """The phrases of each part of a request to forget (``language/forget_requests.txt``),
    longest first, as words."""
    sections: dict[str, list[tuple[str, ...]]] = {}
    section = ""
    for line in resource_path("language/forget_requests.txt").read_text("utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        sections.setdefault(section, []).append(tuple(line.split()))
    return {name: sorted(found, key=len, reverse=True) for name, found in sections.items()}


_REQUEST_WORD = re.compile(r"[\w']+")


def _starting(words: list[str], section: str) -> int:
    """How many of ``words`` the longest phrase of ``section`` they begin with takes (0)."""
    for phrase in _request_phrases()[section]:
        if tuple(words[: len(phrase)]) == phrase:
            return len(phrase)
    return 0


def requested(message: str) -> str | None:
    """What a chat message asks Mnemo to forget ("passport number"), or None. Such a message
    is never given to the model: the person sees the preview and decides. It reads
    "[openers] verb [fillers] what [endings]", each part's phrases being data
    (``language/forget_requests.txt``)."""
    text = message.strip().replace("\u2019", "'")
    if len(text) > REQUEST_CHARS:
        return None
    found = list(_REQUEST_WORD.finditer(text))
    said = [match.group().lower() for match in found]
    at = 0
    while taken := _starting(said[at:], "openers"):
        at += taken
    strong = _starting(said[at:], "verbs")  # "don't remember my PIN" is one
    if not strong and _starting(said[at:], "not"):
        return None  # "don't forget to call Mum"
    weak = 0 if strong else _starting(said[at:], "weak verbs")
    if not strong and not weak:
        return None
    at += strong or weak
    start = at
    while taken := _starting(said[at:], "fillers"):
        at += taken
    end = len(said)
    while end > at and (taken := _ending(said[at:end])):
        end -= taken
    if at >= end:
        return None
    from_memory = bool({"memory", "notes"} & set(said[end:]))
    if weak and not (_starting(said[start:], "personal") or from_memory):
        return None  # "remove the stain with vinegar": not one of the person's own things
    what = text[found[at].start() : found[end - 1].end()].strip(" ,.;:!?")
    named = [word.text for word in words(what)]
    return what if [word for word in named if word not in _STOPWORDS] else None  # "forget it"


def _ending(words: list[str]) -> int:
    """How many of ``words``' last ones an ending phrase takes (0)."""
    for phrase in _request_phrases()["endings"]:
        if len(words) > len(phrase) and tuple(words[-len(phrase) :]) == phrase:
            return len(phrase)
    return 0


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
    for fact_id, subject, predicate, obj in facts(mnemo):  # "passport" names (user, passport, …)
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
            shown={("message", item_id): excerpt(message.text, None)},
        )
    if kind == "passage":
        passage = mnemo.archival.get(item_id)
        tokens = [word.text for word in words(passage.text)]
        return ForgetPlan(
            f"the passage {_quoted(passage.text)}",
            [("whole", tokens, f"passage {item_id[:8]}")] if tokens else [],
            items=[(PASSAGE, item_id)],
            shown={(PASSAGE, item_id): excerpt(passage.text, None)},
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
        plan.shown.update({("message", str(row.id)): excerpt(row.text, None) for row in rows})
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


def _survey(mnemo: Mnemo, plan: ForgetPlan, redact: Redact, like: str | None) -> None:
    with mnemo.database.connect() as connection:
        plan.places += sql_places(connection, redact, like)
    plan.places += [
        Place(PASSAGE, f"passage {row['id'][:8]}", excerpt(row["text"], plan.matcher))
        for row in passages(mnemo.passage_vectors.rows(lance_where(like), PASSAGE_READ), redact)
    ]
    plan.places += [
        Place(LOG, path.name, "") for path in log_files(mnemo) if holds_text(path, redact)
    ]
    plan.places += [Place(kind, path.name, "") for kind, path in held_files(mnemo, redact)]
    plan.snapshots = [
        snapshot.id
        for snapshot in mnemo.snapshots.all()
        if snapshot_holds(mnemo, snapshot.id, redact, like)
    ]


# -- forgetting ------------------------------------------------------------------------------------


def forget(mnemo: Mnemo, plan: ForgetPlan) -> ForgetResult:
    """Do what ``plan`` previewed: tombstones first, then every place, then the disk."""
    if plan.empty:
        raise InputError(f"Mnemo holds nothing of {plan.what}; there was nothing to forget.")
    began = time.time()
    stones = [mnemo.tombstones.add(kind, parts, label) for kind, parts, label in plan.stones]
    marker = forgotten_marker()
    matcher_ = plan.matcher

    @outside_markers
    def redact(value: str) -> str:
        changed = matcher_.sub(marker, value) if matcher_ is not None else value
        return mnemo.tombstones.redact(changed, stones, marker)

    forgotten = Counter(kind for kind, _ in plan.items)
    remove_items(mnemo, plan.items)
    mnemo.profile.wait_for_turns()  # between its steps, a turn the person waits for goes first
    forgotten.update(remove(mnemo, redact, plan.like))
    mnemo.profile.wait_for_turns()
    notes = scrub(mnemo)
    # After the disk: a snapshot another program took as this ran is found, and rewritten.
    rewritten = forget_in_snapshots(mnemo, redact, plan.like, since=began)
    for stone in stones:
        mnemo.tombstones.set_status(stone.id, "done")
    # The log names the tombstones ("3 words"), never the text: it is forgotten in the log too.
    log.info("forgot %s: %s", ", ".join(label for *_, label in plan.stones), dict(forgotten))
    return ForgetResult(dict(forgotten), rewritten, notes)


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
    redact = held_again(mnemo, stones)
    held = []
    if _prompt_states_from_before_a_forget():
        held.append("the local model's kept prompt states (in the cache folder)")
    with mnemo.database.connect() as connection:
        held += sorted(
            {f"the database ({place.kind})" for place in sql_places(connection, redact, None)}
        )
    if passages(mnemo.passage_vectors.rows(None, PASSAGE_READ), redact):
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


def _prompt_states_from_before_a_forget() -> bool:
    """Whether a kept prompt state is older than the last forget (every forget removes them
    all, so one is left only by a model that kept it while the forget ran): its tokens hold core
    memory and conversations as they were."""
    last = last_forget()
    for path in prompt_states_folder().glob("*"):
        with suppress(OSError):
            if path.name != FORGOTTEN and path.stat().st_mtime <= last:
                return True
    return False
