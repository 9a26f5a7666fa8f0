"""Knowledge memory: people, places and things, and the facts between them, over time.

An entity has a canonical name, a kind, aliases and a note; a fact (a relation) links a subject
entity to an object entity or to literal text ("Ana — works_at — Lisbon City Council", "Ana —
birthday — 12 May"), with when it held, when Mnemo learned it, where it came from and who said it.

Nothing is deleted when a fact changes. A single-valued relation (one place to live, one
birthday) holds one current fact per subject: a different one is a conflict, which the caller
turns into a proposal, and which, once accepted, supersedes the old fact (kept, pointing at the new
one, its ``valid_to`` set). A wrong fact is retracted, also kept. Each write is one transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal

from sqlalchemy import Engine, or_
from sqlmodel import Session, col, select

from engine import clock
from engine.db import committed, row_or_missing, write_session
from engine.db.schema import EntityRow, RelationRow
from engine.errors import InputError
from engine.memory.entities import (
    NOT_WORD,
    USER,
    USER_KEY,
    Entity,
    EntityNames,
    clean_text,
    name_key,
)
from engine.memory.search import (
    EXPIRED_GRACE_S,
    Page,
    check_paging,
    expiry_timestamp,
    from_timestamp,
    to_timestamp,
)
from engine.memory.tombstones import Tombstones

Author = Literal["user", "model", "document"]
SourceKind = Literal["message", "passage", "document", "user"]

# Relations a subject has one of at a time: a different value contradicts the current one.
SINGLE_VALUED = frozenset(
    """lives_in works_at birthday born_on born_in died_on age job job_title employer email phone
    married_to partner spouse nationality name full_name diet""".split()
)
# A relation told in the same breath as another is bound to it: the title said with an employer
# ("I'm a data analyst with Tailspin") is the role there, and ends when the employer changes
# unless it is told again.
BOUND = {"works_at": "job_title"}
# Relations whose object is a value, not an entity (a date, a number, an address).
LITERAL_VALUED = frozenset(
    "birthday born_on died_on age email phone job_title allergic_to name full_name diet "
    "prefers".split()
)
# A taste between two things, "dogs over cats" (or one thing, "dogs"): held one way at a time
# for each pair, so "cats over dogs" contradicts it and "tea over coffee" does not.
PREFERS = "prefers"
# A name is the subject's own: "My name is Priya" makes Priya another word for the user, not a
# second person beside them.
NAMES = frozenset({"name", "full_name"})
# The animals people keep and name: "my rabbit Clover" is (User, rabbit, Clover), a pet.
PETS = (
    "cat dog rabbit hamster gerbil parrot budgie bird fish horse pony tortoise turtle ferret "
    "puppy kitten"
).split()  # not "mouse" nor "chicken": "my mouse" is a computer's, "my chicken" a dinner
# Family, friends and pets: "my sister Ana" is (User, sister, Ana).
RELATIVES = (
    "sister brother mother mum mom father dad wife husband partner son daughter boyfriend "
    "girlfriend fiancé fiancée fiance fiancee grandmother grandfather aunt uncle cousin niece "
    "nephew friend boss"
).split() + PETS
# Relations named by a noun read "Ana's birthday is 12 May"; the others are verbs ("lives in").
_NOUN_RELATIONS = frozenset(
    [*RELATIVES, *"birthday name full_name email phone age job nationality diet".split()]
    + "employer partner spouse".split()
)
# Relations whose words need a verb to read as a sentence: "User is allergic to peanuts".
_PHRASES = {"allergic_to": "is allergic to"}


def relation_words(predicate: str) -> str:
    """``lives_in`` as people read it: "lives in"."""
    return _PHRASES.get(predicate, predicate.replace("_", " "))


def with_article(noun: str) -> str:
    """ "nurse" -> "a nurse", "architect" -> "an architect"."""
    return f"{'an' if noun[:1].casefold() in 'aeiou' else 'a'} {noun}"


def fact_sentence(subject: str, predicate: str, obj: str) -> str:
    """ "User lives in Lyon", "Ana's birthday is 12 May"."""
    if predicate == "job_title":  # "User works as a nurse", not "User's job title is nurse"
        return f"{subject} works as {with_article(obj)}"
    if predicate in _NOUN_RELATIONS:
        return f"{subject}'s {relation_words(predicate)} is {obj}"
    return f"{subject} {relation_words(predicate)} {obj}"


def sentence_to_person(subject: str, predicate: str, obj: str) -> str:
    """A fact about the user as the window says it to them: "You live in Lyon", "Your sister
    is Ana" (the model reads "User lives in Lyon"; the person is "You" everywhere they look)."""
    return said_to_person(fact_sentence(subject, predicate, obj))


def said_to_person(sentence: str) -> str:
    """A fact sentence as ``fact_sentence`` writes it, turned to the person when it is about
    them: "User's sister is Ana" -> "Your sister is Ana", "User lives in Lyon" -> "You live in
    Lyon". Other sentences are returned as they are."""
    first, _, rest = sentence.partition(" ")
    if first.casefold() == "user's":
        return f"Your {rest}"
    if first.casefold() != USER_KEY or not rest:
        return sentence
    verb, _, rest = rest.partition(" ")
    verb = {"is": "are", "has": "have", "was": "were"}.get(verb, verb.removesuffix("s"))
    return " ".join(part for part in ("You", verb, rest) if part)


def taste(value: str) -> tuple[str, str]:
    """ "dogs over cats" -> ("dogs", "cats"); "dogs" -> ("dogs", "")."""
    liked, _, other = value.casefold().partition(" over ")
    return " ".join(liked.split()), " ".join(other.split())


def fact_values(predicate: str, obj: str) -> list[str]:
    """The things a fact's value names: both sides of a taste, else the value."""
    if predicate == PREFERS:
        return [side for side in taste(obj) if side]
    return [obj]


def restates(predicate: str, held: str, new: str) -> bool:
    """Whether ``new`` says the value ``held`` says ("dogs" after "dogs over cats")."""
    if predicate == PREFERS:
        (liked, other), (new_liked, new_other) = taste(held), taste(new)
        return liked == new_liked and (not other or not new_other or other == new_other)
    return name_key(held) == name_key(new)


def contradicts(predicate: str, held: str, new: str) -> bool:
    """Whether ``new`` is another value than ``held`` of a relation held one way at a time: a
    single-valued one, or the same pair of a taste turned round ("dogs" after "cats over
    dogs")."""
    if predicate == PREFERS:
        (liked, other), (new_liked, new_other) = taste(held), taste(new)
        return liked != new_liked and (new_liked == other or liked == new_other)
    return predicate in SINGLE_VALUED and name_key(held) != name_key(new)


def predicate_key(predicate: str) -> str:
    """'Lives in' and 'lives-in' are ``lives_in``."""
    key = NOT_WORD.sub("_", predicate.strip().casefold()).strip("_")
    if not key:
        raise InputError("A fact needs a relation, such as lives_in or works_at.")
    return key


@dataclass(frozen=True)
class Fact:
    id: int
    subject: str
    predicate: str
    object: str  # the object entity's name, or the literal value
    object_is_entity: bool
    valid_from: datetime | None
    valid_to: datetime | None
    learned_at: datetime
    source_kind: str
    source_ref: str | None
    asserted_by: str
    status: str
    superseded_by: int | None
    expires_at: datetime | None = None

    def line(self) -> str:
        """The fact in one line, as the model and the window show it."""
        since = f" (since {self.valid_from:%Y-%m-%d})" if self.valid_from else ""
        return f"{self.subject} — {self.predicate} — {self.object}{since}"

    def subject_is(self, name: str) -> bool:
        return name_key(self.subject) == name_key(name)

    def sentence(self) -> str:
        """ "User lives in Lyon": the form a small model reads and repeats best."""
        return fact_sentence(self.subject, self.predicate, self.object)

    def to_person(self) -> str:
        """ "You live in Lyon": how the window says it to the user."""
        return sentence_to_person(self.subject, self.predicate, self.object)


@dataclass(frozen=True)
class Conflict:
    """A new fact that contradicts current ones of a single-valued relation; nothing stored."""

    subject: str
    predicate: str
    object: str
    current: tuple[Fact, ...]


class KnowledgeStore(EntityNames):
    """Facts between the entities (``EntityNames``: the names, aliases and merges)."""

    def __init__(self, engine: Engine, tombstones: Tombstones | None = None) -> None:
        super().__init__(engine)
        self._tombstones = tombstones

    # -- facts ---------------------------------------------------------------------------------

    def add_in(
        self,
        session: Session,
        subject: str,
        predicate: str,
        obj: str,
        *,
        valid_from: datetime | date | str | None = None,
        source_kind: SourceKind = "user",
        source_ref: str | None = None,
        asserted_by: Author = "user",
        literal: bool | None = None,
        supersede: bool = False,
        expires_at: datetime | date | str | float | None = None,
    ) -> Fact | Conflict:
        """Store a fact; the same current fact again is not stored twice (it is returned).

        A different value of a single-valued relation is a ``Conflict`` unless ``supersede``
        (the user agreed): the current facts are then superseded by the new one. Nothing is
        committed here: the caller's transaction (a step, or a proposal's approval) does, or
        ``add`` does for itself. A fact not stored leaves no entity behind either."""
        relation = predicate_key(predicate)
        value = clean_text(obj, "what the fact says")
        if self._tombstones is not None and self._tombstones.forgets_fact(subject, relation, value):
            raise InputError(
                "That fact holds something you asked Mnemo to forget, so it is not kept "
                "(`mnemo forget --list` shows what was forgotten)."
            )
        is_literal = relation in LITERAL_VALUED if literal is None else literal
        started = to_timestamp(valid_from) if valid_from is not None else None
        # Read before writing: a fact that is known or contradicted creates no entity.
        subject_row = self._resolve_row(session, subject)
        object_row = None if is_literal else self._resolve_row(session, value)
        current = self._current(session, subject_row.id, relation) if subject_row else []  # type: ignore[arg-type]
        for row in current:
            same_object = (
                row.object_id == object_row.id
                if object_row is not None
                else row.object_id is None and restates(relation, row.value or "", value)
            )
            if same_object and (is_literal or object_row is not None):
                return self._fact(session, row)
        # The same value returned above, so every other current value of a single-valued
        # relation contradicts it; a taste is literal, compared by its row's text.
        contradicted = [
            row
            for row in current
            if relation in SINGLE_VALUED or contradicts(relation, row.value or "", value)
        ]
        if contradicted and not supersede:
            assert subject_row is not None
            return Conflict(
                subject_row.name,
                relation,
                object_row.name if object_row else value,
                tuple(self._fact(session, row) for row in contradicted),
            )
        subject_row = subject_row or self._entity_row(session, subject)
        if not is_literal:
            object_row = object_row or self._entity_row(session, value)
        now = clock.timestamp()
        new = RelationRow(
            subject_id=subject_row.id,  # type: ignore[arg-type]
            predicate=relation,
            object_id=object_row.id if object_row else None,
            value=None if object_row else value,
            valid_from=started,
            learned_at=now,
            source_kind=source_kind,
            source_ref=source_ref,
            asserted_by=asserted_by,
            expires_at=expiry_timestamp(expires_at),
        )
        session.add(new)
        session.flush()
        for row in contradicted:
            self._supersede(session, row, new, started if started is not None else now)
            self._end_bound(session, row, new)
        if relation in NAMES:
            other = self._resolve_row(session, value)
            if other is None:
                self._alias(session, subject_row, value)
        return self._fact(session, new)

    add = committed(add_in)

    def add_past_in(
        self,
        session: Session,
        subject: str,
        predicate: str,
        obj: str,
        *,
        literal: bool,
        status: str,
        valid_from: float | None,
        valid_to: float | None,
        learned_at: float,
        source_kind: str,
        source_ref: str | None,
        asserted_by: str,
        expires_at: float | None,
    ) -> bool:
        """An imported fact that no longer holds (superseded or retracted), kept in the
        history beside this profile's own; False when the history has it already."""
        subject_row = self._entity_row(session, subject)
        object_row = None if literal else self._entity_row(session, obj)
        same = select(RelationRow).where(
            RelationRow.subject_id == subject_row.id,
            RelationRow.predicate == predicate_key(predicate),
            RelationRow.status == status,
        )
        for row in session.exec(same):
            if (row.object_id == object_row.id) if object_row else row.value == obj:
                return False
        session.add(
            RelationRow(
                subject_id=subject_row.id,  # type: ignore[arg-type]
                predicate=predicate_key(predicate),
                object_id=object_row.id if object_row else None,
                value=None if object_row else obj,
                valid_from=valid_from,
                valid_to=valid_to,
                learned_at=learned_at,
                source_kind=source_kind,
                source_ref=source_ref,
                asserted_by=asserted_by,
                status=status,
                expires_at=expires_at,
            )
        )
        session.flush()
        return True

    def correct(self, fact_id: int, obj: str) -> Fact:
        """Put right what a fact says (the user edited it): the new fact supersedes the old
        one, which stays in the history."""
        with write_session(self._engine) as session:
            row = self._relation(session, fact_id)
            if row.status != "current":
                raise InputError(f"Fact {fact_id} is {row.status}; only a current fact is edited.")
            subject = session.get(EntityRow, row.subject_id)
            assert subject is not None
            literal = row.object_id is None
            value = clean_text(obj, "what the fact says")
            object_row = None if literal else self._entity_row(session, value)
            new = RelationRow(
                subject_id=row.subject_id,
                predicate=row.predicate,
                object_id=object_row.id if object_row else None,
                value=value if literal else None,
                valid_from=row.valid_from,
                learned_at=clock.timestamp(),
                source_kind="user",
                asserted_by="user",
            )
            session.add(new)
            session.flush()
            self._supersede(session, row, new, row.valid_to)
            session.commit()
            return self._fact(session, new)

    def fact(self, fact_id: int) -> Fact:
        with Session(self._engine) as session:
            return self._fact(session, self._relation(session, fact_id))

    def set_expiry(self, fact_id: int, when: datetime | date | str | float | None) -> Fact:
        """Make a fact stop holding at ``when`` (None: for good, which brings back an expired
        one)."""
        with write_session(self._engine) as session:
            row = self._relation(session, fact_id)
            row.expires_at = expiry_timestamp(when)
            session.add(row)
            session.commit()
            return self._fact(session, row)

    def expired(self, limit: int = 100) -> list[Fact]:
        """Current facts past their expiry and not purged yet, the latest to expire first."""
        now = clock.timestamp()
        with Session(self._engine) as session:
            rows = session.exec(
                select(RelationRow)
                .where(
                    RelationRow.status == "current",
                    col(RelationRow.expires_at) <= now,
                    col(RelationRow.expires_at) > now - EXPIRED_GRACE_S,
                )
                .order_by(col(RelationRow.expires_at).desc())
                .limit(limit)
            ).all()
            return [self._fact(session, row) for row in rows]

    def purge_expired(self) -> int:
        """Delete facts whose grace after expiring is over (unless another fact points at
        them: a history stays whole)."""
        with write_session(self._engine) as session:
            pointed = select(RelationRow.superseded_by).where(
                col(RelationRow.superseded_by).is_not(None)
            )
            rows = session.exec(
                select(RelationRow).where(
                    col(RelationRow.expires_at) <= clock.timestamp() - EXPIRED_GRACE_S,
                    col(RelationRow.id).not_in(pointed),
                )
            ).all()
            for row in rows:
                session.delete(row)
            session.commit()
            return len(rows)

    def retract(self, fact_id: int) -> Fact:
        """Mark a wrong fact retracted (kept in the history, gone from current facts)."""
        with write_session(self._engine) as session:
            row = self._relation(session, fact_id)
            row.status = "retracted"
            session.add(row)
            session.commit()
            return self._fact(session, row)

    def end(self, fact_id: int) -> Fact:
        """A fact that stopped holding with nothing in its place (a pet that died): kept in
        the history, ``ended`` today, gone from current facts."""
        with write_session(self._engine) as session:
            row = self._relation(session, fact_id)
            row.status, row.valid_to = "ended", clock.timestamp()
            session.add(row)
            session.commit()
            return self._fact(session, row)

    def set_status_in(self, session: Session, fact_id: int, status: str) -> None:
        """Retract a fact, or make a retracted one hold again (a tidy change and its undo)."""
        row = self._relation(session, fact_id)
        row.status = status
        session.add(row)

    def revert_in(self, session: Session, subject: str, predicate: str, obj: str) -> None:
        """Take back a fact that was learned (an approved proposal undone): it is retracted,
        and the facts it superseded hold again."""
        subject_row = self._resolve_row(session, subject)
        if subject_row is None:
            return
        key = name_key(obj)
        for row in self._current(session, subject_row.id, predicate_key(predicate)):  # type: ignore[arg-type]
            if name_key(self._fact(session, row).object) != key:
                continue
            row.status = "retracted"
            session.add(row)
            earlier = select(RelationRow).where(RelationRow.superseded_by == row.id)
            for old in session.exec(earlier):
                old.status, old.superseded_by, old.valid_to = "current", None, None
                session.add(old)

    def facts(
        self, name: str, predicate: str | None = None, limit: int = 10, page: int = 1
    ) -> Page[Fact]:
        """The current facts about an entity (as subject or object), newest first."""
        check_paging(limit, page)
        with Session(self._engine) as session:
            row = self._resolve_row(session, name)
            if row is None:
                return Page([], 0, page, limit)
            query = select(RelationRow).where(
                RelationRow.status == "current",
                _unexpired(),
                or_(col(RelationRow.subject_id) == row.id, col(RelationRow.object_id) == row.id),
            )
            if predicate is not None:
                query = query.where(RelationRow.predicate == predicate_key(predicate))
            rows = session.exec(query.order_by(col(RelationRow.learned_at).desc())).all()
            chosen = rows[(page - 1) * limit : page * limit]
            return Page([self._fact(session, r) for r in chosen], len(rows), page, limit)

    def contradicted(self, subject: str, predicate: str, obj: str) -> tuple[Fact, ...]:
        """The current facts that ``obj`` would supersede: those of a single-valued relation
        with another value (what a proposal shows beside the new fact)."""
        relation = predicate_key(predicate)
        current = self.facts(subject, relation, 50)
        return tuple(
            f for f in current if f.subject_is(subject) and contradicts(relation, f.object, obj)
        )

    def holds(self, subject: str, predicate: str, obj: str) -> bool:
        """Whether this fact is already current (so there is nothing to learn)."""
        relation = predicate_key(predicate)
        return any(
            fact.subject_is(subject) and restates(relation, fact.object, obj)
            for fact in self.facts(subject, predicate, 50)
        )

    def history(self, name: str) -> list[Fact]:
        """Every fact ever held about an entity as subject, current or not, oldest first."""
        with Session(self._engine) as session:
            row = self._require(session, name)
            rows = session.exec(
                select(RelationRow)
                .where(RelationRow.subject_id == row.id)
                .order_by(col(RelationRow.learned_at), col(RelationRow.id))
            ).all()
            return [self._fact(session, r) for r in rows]

    # -- rows ----------------------------------------------------------------------------------

    @staticmethod
    def _relation(session: Session, fact_id: int) -> RelationRow:
        return row_or_missing(
            session, RelationRow, fact_id, f"There is no fact {fact_id} in knowledge memory."
        )

    @staticmethod
    def _supersede(
        session: Session, old: RelationRow, new: RelationRow, ended: float | None
    ) -> None:
        old.status = "superseded"
        old.superseded_by = new.id
        old.valid_to = ended
        session.add(old)

    def _end_bound(self, session: Session, old: RelationRow, new: RelationRow) -> None:
        """End the facts ``BOUND`` to a superseded one: told in the same message, and not
        told again with the new one ("a data analyst with Tailspin" ends with Tailspin)."""
        bound = BOUND.get(old.predicate)
        if bound is None or old.source_ref is None:
            return
        for row in self._current(session, old.subject_id, bound):
            if (row.source_kind, row.source_ref) == (old.source_kind, old.source_ref) and (
                row.source_ref != new.source_ref
            ):
                row.status, row.valid_to = "ended", new.valid_from or new.learned_at
                session.add(row)

    def _current(self, session: Session, subject_id: int, predicate: str) -> list[RelationRow]:
        return list(
            session.exec(
                select(RelationRow).where(
                    RelationRow.subject_id == subject_id,
                    RelationRow.predicate == predicate,
                    RelationRow.status == "current",
                    _unexpired(),
                )
            )
        )

    def _fact(self, session: Session, row: RelationRow) -> Fact:
        subject = session.get(EntityRow, row.subject_id)
        target = session.get(EntityRow, row.object_id) if row.object_id is not None else None
        return Fact(
            id=row.id,  # type: ignore[arg-type]
            subject=subject.name if subject else "?",
            predicate=row.predicate,
            object=target.name if target else (row.value or ""),
            object_is_entity=target is not None,
            valid_from=from_timestamp(row.valid_from) if row.valid_from is not None else None,
            valid_to=from_timestamp(row.valid_to) if row.valid_to is not None else None,
            learned_at=from_timestamp(row.learned_at),
            source_kind=row.source_kind,
            source_ref=row.source_ref,
            asserted_by=row.asserted_by,
            status=row.status,
            superseded_by=row.superseded_by,
            expires_at=from_timestamp(row.expires_at) if row.expires_at is not None else None,
        )


def _unexpired() -> Any:
    """A fact that has expired is no longer current (it waits in ``expired``)."""
    return or_(
        col(RelationRow.expires_at).is_(None), col(RelationRow.expires_at) > clock.timestamp()
    )


__all__ = [
    "Conflict",
    "Entity",
    "Fact",
    "KnowledgeStore",
    "USER",
    "fact_sentence",
    "name_key",
    "predicate_key",
    "relation_words",
]
