"""The names of knowledge memory's people, places and things: one entity per name or alias, as
compared (accents, case and a leading article do not count; "I" and "the user" are the user),
merges that fold two names into one, and the names a message mentions. The facts between them
are ``engine.memory.knowledge``'s."""

from __future__ import annotations

import difflib
import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import Engine, or_
from sqlmodel import Session, col, func, select

from engine import clock
from engine.db import write_session
from engine.db.schema import EntityAliasRow, EntityRow, RelationRow
from engine.errors import InputError, NotFoundError

EntityKind = Literal["person", "place", "organisation", "thing", "event", "other"]
KINDS: tuple[str, ...] = ("person", "place", "organisation", "thing", "event", "other")
FUZZY_CUTOFF = 0.8  # difflib ratio for "did you mean": "Ana Souza" ~ "Ana Sousa" (0.89)
NAME_CHARS = 200

_ARTICLE = re.compile(r"^(the|a|an)\s+")
NOT_WORD = re.compile(r"[^\w]+")
# The person using Mnemo: one entity, whatever they or the model call it.
USER = "User"
USER_KEY = "user"
_USER_WORDS = frozenset({"i", "me", "myself", "user", "human", "the user", "the human"})
MENTION_WORDS = 4  # the longest name looked for in a message, in words


def name_key(name: str) -> str:
    """A name as compared: accents, case, punctuation and a leading article do not count, and
    "I", "me" and "the user" are all the user."""
    text = unicodedata.normalize("NFKD", name)
    text = "".join(c for c in text if not unicodedata.combining(c)).casefold()
    text = NOT_WORD.sub(" ", text).strip()
    return USER_KEY if text in _USER_WORDS else _ARTICLE.sub("", text)


@dataclass(frozen=True)
class Entity:
    id: int
    name: str
    kind: str
    aliases: tuple[str, ...]
    note: str


class EntityNames:
    """The entities of a knowledge store, by name (``KnowledgeStore`` builds its facts on it)."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def resolve(self, name: str) -> Entity | None:
        """The entity this name or alias stands for (after merges), or None."""
        with Session(self._engine) as session:
            row = self._resolve_row(session, name)
            return self._entity(session, row) if row else None

    def entity(self, name: str, kind: EntityKind = "other") -> Entity:
        """The entity named ``name``, created if there is none."""
        with write_session(self._engine) as session:
            row = self._entity_row(session, name, kind)
            session.commit()
            return self._entity(session, row)

    def similar(self, name: str, limit: int = 5) -> list[tuple[Entity, float]]:
        """Entities whose name or an alias is close to ``name`` (a merge to suggest), best first."""
        key = name_key(name)
        matcher = difflib.SequenceMatcher()
        matcher.set_seq2(key)  # compared with many: difflib caches what it learns of seq2
        with Session(self._engine) as session:
            keys = [
                *session.exec(select(EntityRow.key, EntityRow.id)),
                *session.exec(select(EntityAliasRow.key, EntityAliasRow.entity_id)),
            ]
            scores: dict[int, float] = {}
            for other, entity_id in keys:
                matcher.set_seq1(other)
                # The cheap upper bounds first, as difflib.get_close_matches does.
                if (
                    matcher.real_quick_ratio() >= FUZZY_CUTOFF
                    and matcher.quick_ratio() >= FUZZY_CUTOFF
                    and (score := matcher.ratio()) >= FUZZY_CUTOFF
                ):
                    final = self._final_id(session, int(entity_id or 0))
                    scores[final] = max(scores.get(final, 0.0), score)
            best = sorted(scores.items(), key=lambda item: item[1], reverse=True)[:limit]
            return [(self._entity(session, session.get(EntityRow, i)), s) for i, s in best]  # type: ignore[arg-type]

    def find(self, text: str, limit: int = 10) -> list[Entity]:
        """Entities whose name or an alias holds ``text`` (as compared), then close names."""
        key = name_key(text)
        if not key:
            return []
        pattern = "%" + key.replace("_", "\\_") + "%"  # a key holds only word characters
        with Session(self._engine) as session:
            ids = [
                *session.exec(
                    select(EntityRow.id).where(
                        col(EntityRow.key).like(pattern, escape="\\"),
                        col(EntityRow.merged_into).is_(None),
                    )
                ),
                *session.exec(
                    select(EntityAliasRow.entity_id).where(
                        col(EntityAliasRow.key).like(pattern, escape="\\")
                    )
                ),
            ]
            found = list(dict.fromkeys(self._final_id(session, i) for i in ids if i is not None))
            rows = [session.get(EntityRow, i) for i in found[:limit]]
            entities = [self._entity(session, row) for row in rows if row is not None]
        close = [entity for entity, _ in self.similar(text, limit) if entity not in entities]
        return (entities + close)[:limit]

    def add_alias(self, name: str, alias: str) -> Entity:
        with write_session(self._engine) as session:
            row = self._require(session, name)
            self._alias(session, row, alias)
            session.commit()
            return self._entity(session, row)

    def merge(self, keep: str, merge: str) -> Entity:
        """Fold ``merge`` into ``keep`` (the user confirmed they are one): its facts, aliases and
        name move over; the merged entity stays only as a pointer, so old references resolve."""
        with write_session(self._engine) as session:
            kept, gone = self._require(session, keep), self._require(session, merge)
            if kept.id == gone.id:
                raise InputError(f"{kept.name} and {merge} are already the same entity.")
            for relation in session.exec(
                select(RelationRow).where(
                    or_(
                        col(RelationRow.subject_id) == gone.id,
                        col(RelationRow.object_id) == gone.id,
                    )
                )
            ):
                if relation.subject_id == gone.id:
                    relation.subject_id = kept.id  # type: ignore[assignment]
                if relation.object_id == gone.id:
                    relation.object_id = kept.id
                session.add(relation)
            for alias in session.exec(
                select(EntityAliasRow).where(EntityAliasRow.entity_id == gone.id)
            ):
                alias.entity_id = kept.id  # type: ignore[assignment]
                session.add(alias)
            gone.merged_into = kept.id
            session.add(gone)
            session.flush()
            self._alias(session, kept, gone.name)
            session.commit()
            return self._entity(session, kept)

    def add_name_in(self, session: Session, name: str, kind: str, alias: str | None) -> bool:
        """An imported person or thing, by ``name`` (found, or made of ``kind``), and one more
        name for it; False when ``alias`` already names someone else here (the caller says
        so: merging two people is the person's decision)."""
        row = self._entity_row(session, name, kind if kind in KINDS else "other")
        if alias is None:
            return True
        other = self._resolve_row(session, alias)
        if other is not None and other.id != row.id:
            return False
        self._alias(session, row, alias)
        return True

    def mentioned(self, text: str, limit: int = 3) -> list[Entity]:
        """The entities a text names (by name or alias, up to ``MENTION_WORDS`` words; "I" and
        "my" name the user), in the order they first appear: whose facts to recall."""
        words = name_key(text.replace("'s ", " ")).split()
        spans = {
            " ".join(words[start : start + size]): start
            for size in range(MENTION_WORDS, 0, -1)
            for start in range(len(words) - size + 1)
        }
        if {"i", "my", "me", "mine", "myself", "we", "our", "us"} & set(words):
            spans.setdefault(USER_KEY, len(words))  # after anyone named: less specific
        if not spans:
            return []
        keys = list(spans)
        with Session(self._engine) as session:
            found = [
                *session.exec(
                    select(EntityRow.key, EntityRow.id).where(col(EntityRow.key).in_(keys))
                ),
                *session.exec(
                    select(EntityAliasRow.key, EntityAliasRow.entity_id).where(
                        col(EntityAliasRow.key).in_(keys)
                    )
                ),
            ]
            found.sort(key=lambda pair: spans[pair[0]])
            ids = list(dict.fromkeys(self._final_id(session, int(i)) for _, i in found))
            rows = [session.get(EntityRow, i) for i in ids[:limit]]
            return [self._entity(session, row) for row in rows if row is not None]

    def entities(self, limit: int = 500) -> list[tuple[Entity, int]]:
        """Every entity with its number of current facts (about it, or with it as the value),
        the user first, then by name: the People & things page's list."""
        counts: dict[int, int] = {}
        with Session(self._engine) as session:
            for column in (col(RelationRow.subject_id), col(RelationRow.object_id)):
                for entity_id, count in session.exec(
                    select(column, func.count())
                    .where(RelationRow.status == "current", column.is_not(None))
                    .group_by(column)
                ):
                    counts[int(entity_id or 0)] = counts.get(int(entity_id or 0), 0) + count
            rows = session.exec(
                select(EntityRow)
                .where(col(EntityRow.merged_into).is_(None))
                .order_by(col(EntityRow.key) != USER_KEY, col(EntityRow.key))
                .limit(limit)
            ).all()
            return [(self._entity(session, row), counts.get(row.id or 0, 0)) for row in rows]

    def _final_id(self, session: Session, entity_id: int) -> int:
        row = session.get(EntityRow, entity_id)
        while row is not None and row.merged_into is not None:
            row = session.get(EntityRow, row.merged_into)
        return entity_id if row is None else row.id  # type: ignore[return-value]

    def _resolve_row(self, session: Session, name: str) -> EntityRow | None:
        key = name_key(name)
        if not key:
            return None
        row = session.exec(select(EntityRow).where(EntityRow.key == key)).first()
        if row is None:
            alias = session.get(EntityAliasRow, key)
            row = session.get(EntityRow, alias.entity_id) if alias else None
        if row is None:
            return None
        return session.get(EntityRow, self._final_id(session, row.id))  # type: ignore[arg-type]

    def _require(self, session: Session, name: str) -> EntityRow:
        row = self._resolve_row(session, name)
        if row is None:
            raise NotFoundError(f"Knowledge memory knows no one and nothing called {name!r}.")
        return row

    def _entity_row(self, session: Session, name: str, kind: str = "other") -> EntityRow:
        found = self._resolve_row(session, name)
        if found is not None:
            return found
        if kind not in KINDS:
            raise InputError(f"{kind!r} is not a kind of entity; use one of {', '.join(KINDS)}.")
        clean = clean_text(name, "a name")
        key = name_key(clean)
        if key == USER_KEY:
            clean, kind = USER, "person"
        row = EntityRow(name=clean, key=key, kind=kind, created_at=clock.timestamp())
        if not row.key:
            raise InputError(f"{name!r} is not a name: it has no letters or digits.")
        session.add(row)
        session.flush()
        return row

    def _alias(self, session: Session, row: EntityRow, alias: str) -> None:
        key = name_key(clean_text(alias, "an alias"))
        if not key or key == row.key:
            return
        other = self._resolve_row(session, alias)
        if other is not None and other.id != row.id:
            raise InputError(
                f"{alias!r} already names {other.name}; merge the two if they are one."
            )
        session.merge(EntityAliasRow(key=key, alias=alias.strip(), entity_id=row.id))  # type: ignore[arg-type]

    def _entity(self, session: Session, row: EntityRow) -> Entity:
        aliases = session.exec(
            select(EntityAliasRow.alias).where(EntityAliasRow.entity_id == row.id)
        ).all()
        return Entity(row.id, row.name, row.kind, tuple(sorted(aliases)), row.note)  # type: ignore[arg-type]


def clean_text(text: str, what: str) -> str:
    clean = " ".join(text.split())
    if not clean:
        raise InputError(f"Give {what}; it was empty.")
    if len(clean) > NAME_CHARS:
        raise InputError(f"Keep {what} under {NAME_CHARS} characters (it had {len(clean)}).")
    return clean
