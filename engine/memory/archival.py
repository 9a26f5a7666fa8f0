"""Archival memory: passages from documents and facts worth keeping, in LanceDB.

Each passage keeps its text, vector, where it came from (a file position or the message that
inserted it), tags, when it was stored, who stored it (``origin``: user, model or document; the last
two are untrusted input) and which embedder made its vector. Search fuses BM25 and vectors.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from typing import Any, Literal

import numpy as np
import pyarrow as pa

from engine import clock
from engine.cross_encoder import CrossEncoder
from engine.embed.base import Embedder
from engine.errors import InputError, NotFoundError, redact
from engine.memory import trace, word_match
from engine.memory.search import (
    EXPIRED_GRACE_S,
    KEYWORD_SEARCHES,
    Page,
    SearchMode,
    candidate_pools,
    check_paging,
    chunked,
    coordinated,
    exact_first,
    expiry_timestamp,
    from_timestamp,
    fuse,
    is_weak,
    query_terms,
    to_timestamp,
)
from engine.memory.tombstones import Tombstones
from engine.memory.vectors import VectorTable, quote_sql

Origin = Literal["user", "model", "document"]
IMPORTED_TAG = "imported"  # on every passage an import adds: it was read from a file
ORIGINS: tuple[str, ...] = ("user", "model", "document")
EMBED_CHUNK = 1024

SCHEMA = pa.schema(
    [
        pa.field("id", pa.string()),
        pa.field("text", pa.string()),
        pa.field("vector", pa.list_(pa.float32(), 1)),  # width set from the embedder
        pa.field("source_path", pa.string()),
        pa.field("source_section", pa.string()),
        pa.field("source_chunk", pa.int32()),
        pa.field("source_message_id", pa.int64()),
        pa.field("origin", pa.string()),
        pa.field("tags", pa.list_(pa.string())),
        pa.field("created_at", pa.float64()),
        pa.field("embedder", pa.string()),
        pa.field("dim", pa.int32()),
        pa.field("expires_at", pa.float64()),  # leaves search then; purged after the grace
    ]
)
_COLUMNS = [name for name in SCHEMA.names if name != "vector"]
_TEXT = ["id", "text"]


@dataclass(frozen=True)
class Source:
    """Where a passage came from: a position in a file, or the message that inserted it."""

    path: str | None = None
    section: str | None = None  # page number or heading
    chunk: int | None = None  # position of the passage within the file
    message_id: int | None = None

    def describe(self) -> str:
        if self.path:
            parts = [self.path]
            if self.section:
                parts.append(self.section)
            if self.chunk is not None:
                parts.append(f"chunk {self.chunk}")
            return ", ".join(parts)
        if self.message_id is not None:
            return f"message {self.message_id}"
        return "entered directly"


@dataclass(frozen=True)
class Passage:
    id: str
    text: str
    source: Source
    tags: list[str]
    created_at: datetime
    origin: str
    embedder: str
    score: float | None = None
    weak: bool = False  # found, but neither clearly close in meaning nor sharing most words
    expires_at: datetime | None = None

    @property
    def trusted(self) -> bool:
        """Only what the user wrote here is trusted: documents, model output and anything read
        from an imported file (whatever the file said) may carry injections."""
        return self.origin == "user" and IMPORTED_TAG not in self.tags


@dataclass(frozen=True)
class NewPassage:
    text: str
    source: Source | str | int | None = None
    tags: Sequence[str] = field(default_factory=tuple)
    created_at: datetime | date | str | float | None = None
    origin: Origin = "user"
    id: str | None = None  # an import keeps the id (so a second import finds it)
    vector: Any = None  # and the vector, when the same embedder made it
    expires_at: datetime | date | str | float | None = None


def _as_source(source: Source | str | int | None) -> Source:
    if source is None:
        return Source()
    if isinstance(source, Source):
        return source
    if isinstance(source, int):
        return Source(message_id=source)
    return Source(path=str(source))


_NOTE_LABELS = frozenset({"note", "notes", "remember", "reminder", "fyi", "todo", "memo"})


def duplicate_key(text: str) -> str:
    """What two notes must share to be the same one: their content words, in order. Case,
    punctuation, spacing and words such as "the" or "note" do not count; a different number,
    name or colour does (tests/benchmarks/duplicate_threshold.py measures why not a cosine)."""
    words = query_terms(text, max_terms=10**6)
    while words and words[0] in _NOTE_LABELS:  # "Note: …", "Reminder: …"
        words = words[1:]
    return " ".join(words)


def _expiry(when: datetime | date | str | float | None, origin: str) -> float | None:
    """When a passage leaves search (``expiry_timestamp``). A document's passages never expire
    by age: they leave when the file does."""
    if when is not None and origin == "document":
        raise InputError(
            "A document's passages do not expire; they leave archival memory when the file is "
            "removed or stops being watched."
        )
    return expiry_timestamp(when)


def _names_kept_out(item: NewPassage, tombstones: Tombstones) -> NewPassage:
    """A new passage's tags and source with what the person asked to forget kept out."""
    source = _as_source(item.source)
    return replace(
        item,
        tags=[tombstones.redact(tag) for tag in item.tags],
        source=replace(
            source,
            path=source.path and tombstones.redact(source.path),
            section=source.section and tombstones.redact(source.section),
        ),
    )


def _still_kept_out(
    row: dict[str, Any], tombstones: Tombstones, vectors: VectorTable
) -> dict[str, Any]:
    """A row made before a forget that began meanwhile, kept out as that forget says (the
    forget read the table before this row was in it)."""
    kept: dict[str, Any] = {
        "text": tombstones.redact(row["text"]),
        "tags": [tombstones.redact(tag) for tag in row["tags"]],
        "source_path": row["source_path"] and tombstones.redact(row["source_path"]),
        "source_section": row["source_section"] and tombstones.redact(row["source_section"]),
    }
    if all(kept[key] == row[key] for key in kept):
        return row
    if kept["text"] != row["text"]:
        kept["vector"] = vectors.embed([kept["text"]])[0]
    return {**row, **kept}


def _passage(row: Mapping[str, Any], score: float | None = None, weak: bool = False) -> Passage:
    return Passage(
        id=row["id"],
        text=row["text"],
        source=Source(
            path=row["source_path"],
            section=row["source_section"],
            chunk=row["source_chunk"],
            message_id=row["source_message_id"],
        ),
        tags=list(row["tags"] or []),
        created_at=from_timestamp(row["created_at"]),
        origin=row["origin"],
        embedder=row["embedder"],
        score=score,
        weak=weak,
        expires_at=from_timestamp(row["expires_at"]) if row.get("expires_at") else None,
    )


class ArchivalStore:
    """Passages in the ``passages`` LanceDB table."""

    def __init__(self, vectors: VectorTable, tombstones: Tombstones | None = None) -> None:
        self._vectors = vectors
        self._tombstones = tombstones
        # Whether any passage carries an expiry (None: not counted yet). Until one does, searches
        # need no expiry filter, which makes every search a filtered one and, at a million
        # passages, much slower (archival_search.py).
        self._any_expiry: bool | None = None
        self.cross_encoder: CrossEncoder | None = None  # a re-ranker, when one is attached

    def _expires(self) -> bool:
        """Whether any passage carries an expiry (counted once, then kept by the writes)."""
        if self._any_expiry is None:
            self._any_expiry = self._vectors.count("expires_at IS NOT NULL") > 0
        return self._any_expiry

    def _expiry_clause(self) -> str | None:
        if not self._expires():
            return None
        return f"(expires_at IS NULL OR expires_at > {clock.timestamp()!r})"

    @property
    def embedder_mismatch(self) -> str | None:
        """A sentence describing a change of embedder that needs a re-embed, or None."""
        return self._vectors.mismatch

    # -- writing -------------------------------------------------------------------------------

    def insert(
        self,
        text: str,
        source: Source | str | int | None = None,
        tags: Sequence[str] = (),
        *,
        created_at: datetime | date | str | float | None = None,
        origin: Origin = "user",
    ) -> str:
        """Store one passage and return its id."""
        return self.insert_many([NewPassage(text, source, tuple(tags), created_at, origin)])[0]

    def insert_client_note(self, text: str, client: str) -> str:
        """A note another program wrote over MCP: a model's note, tagged with "mcp" and the
        program's name so that its source shows wherever the note does."""
        return self.insert(text, tags=("mcp", client), origin="model")

    def insert_many(self, passages: Iterable[NewPassage | Mapping[str, Any] | str]) -> list[str]:
        """Store many passages, embedding them in batches; return their ids in order."""
        self._vectors.require_current_embedder()
        items: list[NewPassage] = []
        for item in passages:
            if isinstance(item, str):
                item = NewPassage(item)
            elif isinstance(item, Mapping):
                item = NewPassage(**item)
            if not item.text.strip():
                raise InputError("An archival passage needs some text.")
            if item.origin not in ORIGINS:
                raise ValueError(f"unknown origin {item.origin!r}; use one of {ORIGINS}")
            clean = redact(item.text)  # an API key, from a model's note or a document
            if self._tombstones is not None:  # what the person asked to forget stays out,
                clean = self._tombstones.redact(clean)  # of its tags and source's names too
                item = _names_kept_out(item, self._tombstones)
            items.append(item if clean == item.text else replace(item, text=clean, vector=None))
        ids: list[str] = []
        now = clock.timestamp()
        for chunk in chunked(items, EMBED_CHUNK):
            if all(item.vector is not None for item in chunk):
                vectors = np.asarray([item.vector for item in chunk], dtype=np.float32)
            else:
                vectors = self._vectors.embed([item.text for item in chunk])
            rows = []
            for item, vector in zip(chunk, vectors, strict=True):
                source = _as_source(item.source)
                passage_id = item.id or uuid.uuid4().hex
                ids.append(passage_id)
                rows.append(
                    {
                        "id": passage_id,
                        "text": item.text,
                        "vector": vector,
                        "source_path": source.path,
                        "source_section": source.section,
                        "source_chunk": source.chunk,
                        "source_message_id": source.message_id,
                        "origin": item.origin,
                        "tags": list(item.tags),
                        "created_at": to_timestamp(item.created_at) or now,
                        "embedder": self._vectors.embedder.name,
                        "dim": self._vectors.embedder.dim,
                        "expires_at": _expiry(item.expires_at, item.origin),
                    }
                )
            if any(row["expires_at"] is not None for row in rows):
                self._any_expiry = True
            with self._vectors.writer_lock:  # no forget runs now: its tombstones are all there
                if self._tombstones is not None:
                    rows = [_still_kept_out(row, self._tombstones, self._vectors) for row in rows]
                self._vectors.add(pa.Table.from_pylist(rows, schema=self._vectors.table.schema))
        return ids

    # -- duplicates ----------------------------------------------------------------------------

    def find_duplicate(self, text: str, origin: Origin) -> Passage | None:
        """A live note of the same origin that says the same (``duplicate_key``), if any: a
        note saved twice is stored once."""
        key = duplicate_key(text)
        if not key or origin == "document":  # a document's passages are its file's, by place
            return None
        where = _filter(self._expiry_clause(), None, None, None, None, origin)
        for row in self._vectors.text_search(key, 10, where, ["id", "text"]):
            if duplicate_key(row["text"]) == key:
                return self.get(row["id"])
        return None

    def duplicate_clusters(self) -> list[list[Passage]]:
        """Notes that say the same, grouped (oldest first in each group), for the user to merge;
        the largest groups first."""
        groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
        where = "origin != 'document'"
        for row in self._vectors.rows(where, _COLUMNS):
            groups.setdefault((row["origin"], duplicate_key(row["text"])), []).append(row)
        clusters = [
            sorted((_passage(row) for row in rows), key=lambda p: p.created_at)
            for (_origin, key), rows in groups.items()
            if key and len(rows) > 1
        ]
        return sorted(clusters, key=len, reverse=True)

    def merge(self, passage_ids: Sequence[str]) -> Passage:
        """Keep the oldest of these passages, with every tag any of them had; delete the rest."""
        passages = sorted((self.get(i) for i in passage_ids), key=lambda p: p.created_at)
        if len(passages) < 2:
            raise InputError("Choose at least two passages to merge.")
        kept, gone = passages[0], passages[1:]
        tags = list(dict.fromkeys(tag for passage in passages for tag in passage.tags))
        if tags != kept.tags:
            self.update(kept.id, tags=tags)
        for passage in gone:
            self.delete(passage.id)
        return self.get(kept.id)

    # -- expiry --------------------------------------------------------------------------------

    def set_expiry(self, passage_id: str, when: datetime | date | str | float | None) -> Passage:
        """Make a passage leave search at ``when`` (None: keep it for good, which also brings
        back an expired one)."""
        passage = self.get(passage_id)
        stamp = _expiry(when, passage.origin)
        if stamp is not None:
            self._any_expiry = True
        self._vectors.update_values(
            f"id = {quote_sql(passage_id)}",
            {"expires_at": "NULL" if stamp is None else repr(stamp)},
        )
        return self.get(passage_id)

    def expired(self, limit: int = 100) -> list[Passage]:
        """Passages that have expired and are not purged yet, the latest to expire first."""
        now = clock.timestamp()
        where = f"expires_at <= {now!r} AND expires_at > {now - EXPIRED_GRACE_S!r}"
        rows = self._vectors.rows(where, _COLUMNS, limit)
        rows.sort(key=lambda row: row["expires_at"], reverse=True)
        return [_passage(row) for row in rows]

    def purge_expired(self) -> int:
        """Delete the passages whose grace after expiring is over (run on every open: with no
        expiring passage, it costs the one count searches need anyway)."""
        if not self._expires():
            return 0
        return self.delete_where(f"expires_at <= {clock.timestamp() - EXPIRED_GRACE_S!r}")

    def update(
        self, passage_id: str, text: str | None = None, tags: Sequence[str] | None = None
    ) -> Passage:
        """Correct a passage's text (its vector is recomputed) or replace its tags."""
        current = self.get(passage_id)
        new_text = current.text if text is None else text
        if not new_text.strip():
            raise InputError("An archival passage needs some text.")
        row = self._raw(passage_id)
        row["text"] = new_text
        if tags is not None:
            row["tags"] = list(tags)
        if text is not None and text != current.text:
            row["vector"] = self._vectors.embed([new_text])[0]
            row["embedder"], row["dim"] = self._vectors.embedder.name, self._vectors.embedder.dim
        self._vectors.upsert(
            pa.Table.from_pylist([row], schema=self._vectors.table.schema).to_pylist()
        )
        return self.get(passage_id)

    def rewrite(self, passage_id: str, columns: Mapping[str, Any]) -> None:
        """Replace a passage's text, tags or source as they are (a forget): no check, a new
        vector when the text changed."""
        row = {**self._raw(passage_id), **columns}
        if "text" in columns:
            row["vector"] = self._vectors.embed([row["text"]])[0]
            row["embedder"], row["dim"] = self._vectors.embedder.name, self._vectors.embedder.dim
        self._vectors.upsert(
            pa.Table.from_pylist([row], schema=self._vectors.table.schema).to_pylist()
        )

    def delete(self, passage_id: str) -> None:
        self.get(passage_id)  # raises NotFoundError with a clear sentence
        self._vectors.delete(f"id = {quote_sql(passage_id)}")

    def delete_by_source(self, path: str) -> int:
        """Drop every passage that came from ``path``; return how many went."""
        return self.delete_where(f"source_path = {quote_sql(path)}")

    def delete_from_uncommitted_steps(self, latest_message_id: int) -> int:
        """Drop passages the model stored in a step that never committed (a crash mid-step).

        Such a passage names a function-call message id above the newest committed message.
        """
        return self.delete_where(
            f"origin = 'model' AND source_message_id > {int(latest_message_id)}"
        )

    def delete_where(self, where: str) -> int:
        count = self._vectors.count(where)
        if count:
            self._vectors.delete(where)
        return count

    def reembed(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Recompute every vector with the current embedder (ask the user first: it takes time)."""
        rows = self._vectors.rows(None, _COLUMNS)
        vectors: list[np.ndarray] = []
        for done, chunk in enumerate(chunked(rows, EMBED_CHUNK)):
            vectors.extend(self._vectors.embed([row["text"] for row in chunk]))
            if progress:
                progress(min((done + 1) * EMBED_CHUNK, len(rows)), len(rows))
        for row, vector in zip(rows, vectors, strict=True):
            row["vector"] = vector
            row["embedder"], row["dim"] = self._vectors.embedder.name, self._vectors.embedder.dim
        self._vectors.replace_all(rows)
        return len(rows)

    # -- reading -------------------------------------------------------------------------------

    def _raw(self, passage_id: str) -> dict[str, Any]:
        rows = self._vectors.rows(f"id = {quote_sql(passage_id)}", [*_COLUMNS, "vector"], limit=1)
        if not rows:
            raise NotFoundError(f"There is no archival passage with id {passage_id}.")
        return rows[0]

    def get(self, passage_id: str) -> Passage:
        return _passage(self._raw(passage_id))

    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` are stored (an import skips them)."""
        found: set[str] = set()
        for chunk in chunked(list(ids), 500):
            where = "id IN (" + ", ".join(quote_sql(i) for i in chunk) + ")"
            found.update(row["id"] for row in self._vectors.rows(where, ["id"]))
        return found

    def rows_for_export(self, chunk: int = 2000) -> Iterator[dict[str, Any]]:
        """Every passage with its vector, a chunk at a time (an export streams them out)."""
        for offset in range(0, self.count(), chunk):
            yield from self._vectors.rows(None, [*_COLUMNS, "vector"], chunk, offset)

    def by_short_id(self, short_id: str) -> Passage:
        """The passage whose id starts with ``short_id`` (the model sees 8 characters)."""
        key = short_id.strip().casefold()
        if not re.fullmatch(r"[0-9a-f-]{6,36}", key):
            raise NotFoundError(
                f"{short_id!r} is not a passage id; use the id shown in search results."
            )
        rows = self._vectors.rows(f"id LIKE {quote_sql(key + '%')}", _COLUMNS, limit=2)
        if not rows:
            raise NotFoundError(f"There is no archival passage with id {short_id}.")
        if len(rows) > 1:
            raise NotFoundError(f"Several passages start with {short_id}; give more of the id.")
        return _passage(rows[0])

    def count(self) -> int:
        return self._vectors.count()

    def recent(
        self,
        limit: int = 50,
        offset: int = 0,
        *,
        tags: Sequence[str] | None = None,
        source: str | None = None,
        origin: Origin | None = None,
    ) -> list[Passage]:  # expired ones are listed by ``expired``
        """Passages for browsing, newest first, optionally filtered like ``search``."""
        where = _filter(self._expiry_clause(), tags, source, None, None, origin)
        rows = self._vectors.rows(where, _COLUMNS, limit, offset, newest_first=True)
        return [_passage(row) for row in rows]

    def list_by_source(self, path: str) -> list[Passage]:
        """All passages of one file, in document order."""
        rows = self._vectors.rows(f"source_path = {quote_sql(path)}", _COLUMNS)
        rows.sort(key=lambda row: (row["source_chunk"] is None, row["source_chunk"] or 0))
        return [_passage(row) for row in rows]

    def search(
        self,
        query: str,
        limit: int = 10,
        page: int = 1,
        *,
        mode: SearchMode = "hybrid",
        tags: Sequence[str] | None = None,
        source: str | None = None,
        start: datetime | date | str | None = None,
        end: datetime | date | str | None = None,
        origin: Origin | None = None,
    ) -> Page[Passage]:
        """Passages ranked by words, by meaning, or both fused; filtered by tag, source and time.

        ``source`` matches a file path exactly or everything under a folder; ``origin`` keeps
        what the user, the model or documents wrote.
        """
        check_paging(limit, page)
        where = _filter(self._expiry_clause(), tags, source, start, end, origin)
        keyword_pool, semantic_pool = candidate_pools(limit, page)
        notes: list[str] = []
        terms = query_terms(query) if mode != "semantic" else []
        vectors = self._vectors.searched_in(mode)
        if mode == "hybrid" and not vectors:
            notes.append(str(self._vectors.mismatch))  # words still work while vectors wait
        if vectors:
            self._vectors.embed_query(query)
        # Both halves read their candidates' text (one query each, side by side); the chosen
        # page's whole rows come in one more query. Reading whole rows for every candidate costs
        # one more read per column, and fetching the texts apart two more queries
        # (archival_search.py).
        keyword_future = (
            KEYWORD_SEARCHES.submit(
                self._vectors.text_search, " ".join(terms), keyword_pool, where, _TEXT
            )
            if terms
            else None
        )
        semantic: dict[str, float] = {}
        texts: dict[str, str] = {}
        dropped: list[tuple[Any, float]] = []
        if vectors:
            for row, score in self._vectors.similar_rows(
                query, semantic_pool, where, _TEXT, dropped
            ):
                semantic[row["id"]] = score
                texts[row["id"]] = row["text"]
        keyword_rows = keyword_future.result() if keyword_future else []
        texts.update((row["id"], row["text"]) for row in keyword_rows)
        keyword, ranked = _rank(query, mode, keyword_rows, semantic, texts, self._vectors.embedder)
        if mode == "hybrid" and self.cross_encoder is not None:
            ranked = self.cross_encoder.reorder(ranked, texts, query)
        chosen = ranked[(page - 1) * limit : page * limit]
        rows = self._rows_by_id([passage_id for passage_id, _ in chosen])
        hits = [
            _passage(
                rows[passage_id],
                score,
                mode != "keyword" and is_weak(semantic.get(passage_id), texts[passage_id], query),
            )
            for passage_id, score in chosen
            if passage_id in rows  # deleted meanwhile
        ]
        traced = trace.record(
            "archival",
            query,
            mode,
            keyword,
            semantic,  # type: ignore[arg-type]
            ranked,
            [(hit.id, hit.text, hit.weak) for hit in hits],
            (page - 1) * limit + 1,
            dropped,
        )
        return Page(hits, len(ranked), page, limit, notes, traced)

    def _rows_by_id(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        if not ids:
            return {}
        where = "id IN (" + ",".join(quote_sql(passage_id) for passage_id in ids) + ")"
        return {row["id"]: row for row in self._vectors.rows(where, _COLUMNS, limit=len(ids))}


def _rank(
    query: str,
    mode: SearchMode,
    keyword_rows: list[dict[str, Any]],
    semantic: dict[str, float],
    texts: dict[str, str],
    embedder: Embedder,
) -> tuple[dict[Hashable, float], list[tuple[str, float]]]:
    """The candidates in order (id, score), and the keyword half's scores, for ``mode``."""
    keyword, keyword_weight = coordinated(
        {row["id"]: float(row["_score"]) for row in keyword_rows},
        {row["id"]: row["text"] for row in keyword_rows},
        query,
    )
    if mode == "hybrid":
        ranked = fuse(keyword, semantic, keyword_weight)
        # Each word of the question matched in other words ("plane" against "Flight"): notes
        # asked for in a person's own words, recall@5 0.781 -> 0.812 (paraphrase_search).
        piece_vectors = word_match.piece_vectors_of(embedder)
        if piece_vectors is not None:
            ranked = word_match.rerank(ranked, texts, query, piece_vectors)
    else:
        scores = keyword if mode == "keyword" else semantic
        ranked = sorted(scores.items(), key=lambda item: item[1], reverse=True)
    if mode != "semantic":
        # A verbatim match holds every query word, so it is a keyword candidate, however
        # low fusion ranked it (a code the embedder cannot tell from its neighbours).
        ranked = exact_first(ranked, texts, query)
    return keyword, ranked


def _filter(
    live: str | None,
    tags: Sequence[str] | None,
    source: str | None,
    start: datetime | date | str | None,
    end: datetime | date | str | None,
    origin: Origin | None = None,
) -> str | None:
    """The WHERE of a search: ``live`` (not expired), then the person's filters."""
    clauses = [live] if live else []
    if origin is not None:
        clauses.append(f"origin = {quote_sql(origin)}")
    if tags:
        clauses.append(
            "(" + " OR ".join(f"array_has(tags, {quote_sql(tag)})" for tag in tags) + ")"
        )
    if source:
        folder = source.rstrip("/\\") + "/"
        clauses.append(
            f"(source_path = {quote_sql(source)} OR starts_with(source_path, {quote_sql(folder)}))"
        )
    if start is not None:
        clauses.append(f"created_at >= {to_timestamp(start)!r}")
    if end is not None:
        clauses.append(f"created_at <= {to_timestamp(end, end_of_day=True)!r}")
    return " AND ".join(clauses) or None
