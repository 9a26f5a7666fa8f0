"""Time in answers: a question about the person's past, or about when something in their life
changed, answered from knowledge history and the days things were said.

Knowledge memory keeps a fact that a later one replaced as history, with the day it began (the
day said, or the day the sentence named) and the day it ended. For where the person lived and
where they worked, that history is a timeline; a question that asks along it ("Where did I live
before Lisbon?", "When did I move to Madrid?", "Which came first, the move or the new job?",
"How many times have I moved?", "Do I still work at Contoso?") is answered from it in one
sentence with its days, not by a small model, which gave the current value or a note's words
for most of them ("You told me on 22 June: you live in Lisbon" for the town before Lisbon):

    You lived in Lisbon from 3 March until you moved to Madrid on 14 June (you told me on 14
    June).

A question the timeline cannot answer (another relation, a value it never held) is left to the
rest of the turn.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING

import regex

from engine.agent import assisted_rules as assisted
from engine.errors import NotFoundError
from engine.memory.knowledge import PETS, RELATIVES, USER, Fact, name_key, with_article
from engine.text import CAPITAL

if TYPE_CHECKING:
    from engine.mnemo import Mnemo


@dataclass(frozen=True)
class Relation:
    """How a timeline's relation is asked about and said."""

    predicates: tuple[str, ...]
    words: re.Pattern[str]  # a question asks about it by these
    now: str  # "live in {}"
    was: str  # "lived in {}"
    began: str  # "moved to {}"
    change: str  # "move": what a change is called when counted
    many: str  # "times you moved": what is counted
    began_by: re.Pattern[str]  # "when did I …" asks the start by these ("move", "get")
    alone: bool = False  # a value ends by itself (a pet that died), not by the next one
    titled: bool = False  # a value said with its article ("work as a nurse")

    def say(self, template: str, value: str) -> str:
        """``template`` ("live in {}") with ``value`` in it."""
        return template.format(with_article(value) if self.titled else value)


RELATIONS = (
    Relation(
        ("lives_in",),
        # "for a living" is work, not home
        re.compile(
            r"\b(?:live[ds]?|(?<!a )living|home|moved?|moves|moving|flat|town|city|based)\b", re.I
        ),
        "live in {}",
        "lived in {}",
        "moved to {}",
        "move",
        "moves",
        re.compile(r"\b(?:move[ds]?|moving|live|lived)\b", re.I),
    ),
    Relation(
        ("works_at",),
        re.compile(r"\b(?:work(?:ed|ing)?|jobs?|employers?|company|companies)\b", re.I),
        "work at {}",
        "worked at {}",
        "started at {}",
        "job change",
        "jobs",
        re.compile(r"\b(?:start(?:ed)?|join(?:ed)?|change[ds]?|switch(?:ed)?|work(?:ed)?)\b", re.I),
    ),
    Relation(
        (*PETS, "pet"),
        re.compile(rf"\b(?:pets?|{'|'.join(PETS)})\b", re.I),  # "cats or dogs?" asks a taste
        "have {}",
        "had {}",
        "got {}",
        "pet",
        "pets",
        re.compile(r"\b(?:get|got|adopt(?:ed)?|bring|brought|have|had)\b", re.I),
        alone=True,
    ),
    Relation(
        ("job_title",),
        re.compile(r"\b(?:jobs?|for a living|professions?|occupations?|roles?|titles?)\b", re.I),
        "work as {}",
        "worked as {}",
        "started as {}",
        "change of role",
        "roles",
        re.compile(r"\b(?:start(?:ed)?|bec[oa]me|change[ds]?|switch(?:ed)?)\b", re.I),
        titled=True,
    ),
    Relation(
        ("partner",),
        re.compile(r"\b(?:partner|seeing|dating|together)\b", re.I),
        "are with {}",
        "were with {}",
        "started seeing {}",
        "partner",
        "partners",
        re.compile(r"\b(?:seeing|dating|together|meet|met|start(?:ed)?)\b", re.I),
    ),
)
_THEIRS = {*PETS, "partner"}  # ties a timeline above is of the person's own
_MONTHS = "january february march april may june july august september october november december"
_MONTH = re.compile(rf"\bin ({'|'.join(_MONTHS.split())})\b", re.I)
_BEFORE = re.compile(r"\bbefore\b", re.I)
_FIRST = re.compile(r"\b(?:at first|first|originally|in the beginning|to begin with)\b", re.I)
_PREVIOUS = re.compile(r"\b(?:old|previous|former|last one|used to|lost)\b|\bfrom\?$", re.I)
_WHEN = re.compile(r"^\W*when\b", re.I)
_LAST = re.compile(r"\b(?:last|latest|most recent)\b", re.I)
_HOW_MANY = re.compile(r"^\W*how (?:many|often)\b", re.I)
_STILL = re.compile(r"\bstill\b", re.I)
_WHICH_FIRST = re.compile(r"\b(?:which|what) came first\b|\bbefore or after\b", re.I)
_PAST_TENSE = re.compile(r"^\W*(?:where|what|which|who)\b.*\b(?:did|was|were)\b", re.I)
_NOW = re.compile(r"^\W*(?:where|what|which|who)\b(?!.*\b(?:did|was|were|will|would)\b)", re.I)
# A question about someone else's home or work ("Where does my sister live?") is not the
# person's timeline.
_SOMEONE_ELSE = re.compile(
    rf"\b(?:does|do they|is (?:she|he)|{'|'.join(set(RELATIVES) - _THEIRS)}|colleague|friend)s?\b",
    re.I,
)


@dataclass(frozen=True)
class Span:
    """One value of a timeline: held from ``since`` (the day it began) to ``until``."""

    value: str
    since: date
    until: date | None
    told: date  # the day the person said it
    kind: str = ""  # the fact's relation ("cat", "lives_in")


def timeline(facts: list[Fact], predicates: tuple[str, ...]) -> list[Span]:
    """The values a relation of the person held, in order (retracted ones are no history)."""
    held = [
        f
        for f in facts
        if f.predicate in predicates and f.status in ("current", "superseded", "ended")
    ]
    held.sort(key=lambda f: (_began(f), f.id))
    spans: list[Span] = []
    for fact in held:
        if spans and name_key(spans[-1].value) == name_key(fact.object):
            continue  # said again
        spans.append(
            Span(
                fact.object,
                _began(fact),
                fact.valid_to.astimezone().date() if fact.valid_to else None,
                fact.learned_at.astimezone().date(),
                fact.predicate,
            )
        )
    return spans


def _said_first(mnemo: Mnemo, spans: list[Span]) -> list[Span]:
    """The spans with the day the person first told of each value, when that was before
    knowledge memory learned it ("The boxes are unpacked in Lisbon, the move is done" on 24
    May; "I live in Lisbon", which it learned from, on 10 June): the day things were said."""
    dated: list[Span] = []
    for index, span in enumerate(spans):
        after = spans[index - 1].since if index else None
        hits = mnemo.recall.search(span.value, 50, mode="keyword", start=after, roles=["user"])
        days = [
            hit.created_at.astimezone().date()
            for hit in hits
            if names(hit.text, span.value)
            and not hit.text.rstrip().endswith("?")
            and assisted.lasting(hit.text)
        ]
        first = min(days, default=span.since)
        if first < span.since:
            span = Span(span.value, first, span.until, first, span.kind)
        dated.append(span)
    return dated


def _began(fact: Fact) -> date:
    return (fact.valid_from or fact.learned_at).astimezone().date()


def of_the_person(question: str) -> bool:
    """Whether a question speaks of the person ("How often did I move?", "Is Tofu still with
    me?"), which their timeline may answer."""
    return re.search(r"\b(?:I|my|me)\b", question) is not None


def answer(mnemo: Mnemo, question: str) -> str | None:
    """The sentence that answers a question along a timeline of the person's life, or None."""
    asked = question.strip()
    if not asked.endswith("?") or _SOMEONE_ELSE.search(asked):
        return None  # every turn asks: news and others' questions read nothing
    try:
        facts = mnemo.knowledge.history(USER)
    except NotFoundError:  # nothing known of the person yet
        return None
    for relation in RELATIONS:
        spans = timeline(facts, relation.predicates)
        named = any(names(asked, s.value) for s in spans)
        if not spans or not (named or (relation.words.search(asked) and of_the_person(asked))):
            continue
        spans = _said_first(mnemo, spans)
        other = _other_timeline(facts, relation, asked)
        if other is not None:  # dated the same way as the one asked about
            other = (other[0], _said_first(mnemo, other[1]))
        said = _answer(relation, spans, asked, other)
        if said is not None:
            return said
    return None


def _other_timeline(
    facts: list[Fact], relation: Relation, asked: str
) -> tuple[Relation, list[Span]] | None:
    """For "which came first, my move to A or my job at B": the other relation named."""
    for other in RELATIONS:
        if other is relation:
            continue
        spans = timeline(facts, other.predicates)
        if any(names(asked, span.value) for span in spans):
            return other, spans
    return None


def names(text: str, value: str) -> bool:
    """Whether ``text`` names ``value`` as a whole word, in any case."""
    return re.search(rf"(?<!\w){re.escape(value)}(?!\w)", text, re.I) is not None


def _answer(
    relation: Relation,
    spans: list[Span],
    asked: str,
    other: tuple[Relation, list[Span]] | None,
) -> str | None:
    named = [index for index, span in enumerate(spans) if names(asked, span.value)]
    if _WHICH_FIRST.search(asked) and other is not None:
        return _order(relation, spans, named, *other, asked)
    if _HOW_MANY.match(asked):
        changes = len(spans) - 1
        if relation.many in ("jobs", "pets") and re.search(rf"\b{relation.many}\b", asked, re.I):
            listed = ", then ".join(span.value for span in spans)
            return f"{_count(len(spans), relation.many[:-1])} that you told me of: {listed}."
        return (
            f"{_count(changes, relation.change)}: " + _story(relation, spans) if changes else None
        )
    if _STILL.search(asked) and named:
        span = spans[named[0]]
        if span.until is None and named[0] == len(spans) - 1:
            now = relation.say(relation.now, span.value)
            return f"Yes: you {now} (you told me on {_day(span.told)})."
        later = spans[named[0] + 1] if named[0] + 1 < len(spans) else None
        if later is None and not (relation.alone and span.until):
            return None
        lived = _lived(relation, span, later or span)
        return f"No: {lived[0].lower()}{lived[1:]}."
    if (no := _not_held(relation, spans, asked)) is not None:
        return no
    if _WHEN.match(asked):
        if not relation.began_by.search(asked):
            return None  # "When is Miso's vet appointment?" asks of something else
        if named:
            return _when(relation, spans, named[0])
        if _LAST.search(asked) or len(spans) == 2:
            return _when(relation, spans, len(spans) - 1)
        return None
    if not (_PAST_TENSE.match(asked) or _PREVIOUS.search(asked)):
        return _now(relation, spans, asked)
    if (_BEFORE.search(asked) or asked.endswith("from?")) and named:
        if named[0] == 0:
            return None
        span, after = spans[named[0] - 1], spans[named[0]]
        return _lived(relation, span, after) + "."
    if (month := _MONTH.search(asked)) is not None:
        number = _MONTHS.split().index(month[1].casefold()) + 1
        return _held_in(relation, spans, number)
    if _FIRST.search(asked) and len(spans) > 1:
        return _lived(relation, spans[0], spans[1]) + "."
    if _PREVIOUS.search(asked) and len(spans) > 1:
        return _lived(relation, spans[-2], spans[-1]) + "."
    return None


_YES_NO = re.compile(r"^\W*(?:do|did|have|am|was)\s+I\b", re.I)
_PLACE = regex.compile(rf"\b(?:in|to|at|for)\s+({CAPITAL}[\w-]+)")


def _not_held(relation: Relation, spans: list[Span], asked: str) -> str | None:
    """ "Do I live in Berlin?" of a place they never lived: no, and where they do."""
    if not _YES_NO.match(asked) or relation.alone:
        return None
    asked_of = [m[1] for m in _PLACE.finditer(asked)]
    if not asked_of or any(names(asked, span.value) for span in spans):
        return None
    span = spans[-1]
    if span.until is not None:
        return None
    return (
        f"No: you {relation.say(relation.now, span.value)} (you told me on {_day(span.told)}); you "
        f"never told me you {relation.say(relation.now, asked_of[0])}."
    )


def _now(relation: Relation, spans: list[Span], asked: str) -> str | None:
    """The current value, for a question in the present ("Where do I live now?"); a job's
    title is not where one works ("What is my job?")."""
    span = spans[-1]
    if not _NOW.match(asked) or span.until is not None:
        return None
    if relation.predicates == ("works_at",) and not re.search(
        r"\b(?:where|employer|company)\b", asked, re.I
    ):
        return None
    since = f"since {_day(span.since)}; " if len(spans) > 1 else ""
    said = (
        f"Your {span.kind} is {span.value}"
        if relation.alone
        else (f"You {relation.say(relation.now, span.value)}")
    )
    return f"{said} ({since}you told me on {_day(span.told)})."


def _lived(relation: Relation, span: Span, after: Span) -> str:
    """ "You lived in Lisbon from 3 March until you moved to Madrid on 14 June (you told me
    on 14 June)"; of a value that ended by itself, "You had Tofu from 11 January until 15
    March" (so too of one that ended before the next began: a role that ended with its
    employer)."""
    if span.until is not None and (relation.alone or span.until < after.since):
        held = relation.say(relation.was, span.value)
        return f"You {held} from {_day(span.since)} until {_day(span.until)}"
    return (
        f"You {relation.say(relation.was, span.value)} from {_day(span.since)} until you "
        f"{relation.say(relation.began, after.value)} on {_day(after.since)} (you told me on "
        f"{_day(after.told)})"
    )


def _when(relation: Relation, spans: list[Span], index: int) -> str:
    span = spans[index]
    if index == 0:
        return (
            f"You told me on {_day(span.told)} that you {relation.say(relation.now, span.value)}; "
            "you did not say since when."
        )
    return (
        f"You {relation.say(relation.began, span.value)} on {_day(span.since)} (you told me on "
        f"{_day(span.told)}); before that you {relation.say(relation.was, spans[index - 1].value)}."
    )


def _held_in(relation: Relation, spans: list[Span], month: int) -> str | None:
    """The value held in a month: the first that began by its end and had not ended by its
    start (told on 17 January, it is January's)."""
    year = spans[-1].since.year
    first_day = date(year, month, 1)
    last_day = date(year + month // 12, month % 12 + 1, 1)
    for index, span in enumerate(spans):
        if span.since < last_day and (span.until is None or span.until > first_day):
            if span.until is None or index + 1 == len(spans):
                return f"You {relation.say(relation.now, span.value)}, since {_day(span.since)}."
            return _lived(relation, span, spans[index + 1]) + "."
    return None


def _order(
    relation: Relation,
    spans: list[Span],
    named: list[int],
    other: Relation,
    other_spans: list[Span],
    asked: str,
) -> str | None:
    mine = [spans[i] for i in named if i > 0]
    theirs = [s for i, s in enumerate(other_spans) if i > 0 and names(asked, s.value)]
    if not mine or not theirs:
        return None
    a, b = mine[0], theirs[0]
    said_a, said_b = relation.say(relation.began, a.value), other.say(other.began, b.value)
    told = f"you {said_a} on {_day(a.since)}, and {said_b} on {_day(b.since)}"
    if re.search(r"\bbefore or after\b", asked, re.I):
        # "Did I move to A before or after I started at B?": said of what is asked first.
        a_asked_first = _position(asked, a.value) < _position(asked, b.value)
        a_first = a.since <= b.since
        return f"{'Before' if a_asked_first == a_first else 'After'}: {told}."
    first, second = (said_a, said_b) if a.since <= b.since else (said_b, said_a)
    days = sorted([a.since, b.since])
    return f"You {first} first, on {_day(days[0])}, and {second} later, on {_day(days[1])}."


def _position(text: str, value: str) -> int:
    found = re.search(rf"(?<!\w){re.escape(value)}(?!\w)", text, re.I)
    return found.start() if found else len(text)


def _story(relation: Relation, spans: list[Span]) -> str:
    moves = [f"{relation.say(relation.began, s.value)} on {_day(s.since)}" for s in spans[1:]]
    return (
        f"you {relation.say(relation.was, spans[0].value)} at first, then "
        + ", then ".join(moves)
        + "."
    )


def _count(n: int, noun: str) -> str:
    words = ["no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
    said = words[n] if n < len(words) else str(n)
    plural = noun + ("es" if noun.endswith("ch") else "s") if n != 1 else noun
    return f"{said.capitalize()} {plural}"


def _day(day: date | datetime) -> str:
    return f"{day.day} {day:%B}"
