"""Searching recall memory: by words (SQLite FTS5, BM25), by meaning (the message vectors), both
fused, or by date; every search returns a ``Page`` whose total matches the page it came with."""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

from sqlalchemy import Engine, text

from engine.cross_encoder import CrossEncoder
from engine.db import on_postgres
from engine.errors import VectorTableDamagedError
from engine.memory import trace, word_match
from engine.memory.recall import keyword_text
from engine.memory.recall.messages import COLUMNS, MessageHit, check_role, hit_from_row
from engine.memory.recall.vectors import EMBEDDED_ROLES
from engine.memory.search import (
    KEYWORD_SEARCHES,
    KEYWORD_WEIGHT,
    Page,
    SearchMode,
    addressed_role,
    candidate_pools,
    check_paging,
    fts5_match,
    fuse,
    is_weak,
    prefer_role,
    query_terms,
    to_timestamp,
)
from engine.memory.vectors import VectorTable, quote_sql
from engine.memory.word_match import RERANK_DEPTH, piece_vectors_of

# How far a word's messages are counted for its weight on PostgreSQL (``RecallSearch._idf``).
IDF_COUNT_CAP = 10_000
# The messages in all: the planner's estimate once PostgreSQL has analysed the table (counting a
# large table on every search is slow), else counted.
_MESSAGE_COUNT = (
    "(SELECT CASE WHEN c.reltuples > 0 THEN c.reltuples::bigint "
    "ELSE (SELECT count(*) FROM message) END FROM pg_class c WHERE c.oid = 'message'::regclass)"
)


class RecallSearch:
    """The searches behind ``RecallStore.search`` and ``search_by_date``."""

    def __init__(
        self, engine: Engine, vectors: VectorTable, only_turns: threading.Event | None = None
    ) -> None:
        self._engine = engine
        self._vectors = vectors
        # Set when the vectors are all of turn roles (``recall.vectors.MessageVectors``).
        self._only_turns = only_turns or threading.Event()
        self._postgres = on_postgres(engine)
        self.cross_encoder: CrossEncoder | None = None  # a re-ranker, when one is attached

    def search_by_date(
        self,
        start: datetime | date | str | None,
        end: datetime | date | str | None,
        limit: int = 10,
        page: int = 1,
        *,
        roles: Sequence[str] | None = None,
        conversation_id: str | None = None,
    ) -> Page[MessageHit]:
        """Messages from ``start`` to ``end``, oldest first (a date ``end`` covers its day)."""
        check_paging(limit, page)
        where, params = self._filters(start, end, roles, conversation_id)
        clause = f"WHERE {where}" if where else ""
        return self._page(
            f"SELECT {COLUMNS}, NULL AS score FROM message m {clause} "
            "ORDER BY m.created_at, m.id LIMIT :limit OFFSET :offset",
            f"SELECT count(*) FROM message m {clause}",
            params,
            limit,
            page,
        )

    def _page(
        self, sql: str, count_sql: str, params: dict[str, Any], limit: int, page: int
    ) -> Page[MessageHit]:
        """Run a paged query and its count in one read transaction.

        In WAL mode (and PostgreSQL's repeatable read) a transaction reads one snapshot, so a
        concurrent writer can never make the page and its total disagree.
        """
        with self._engine.connect() as connection:  # (SQLite's begins with it: engine.db)
            if self._postgres:  # one snapshot for both queries
                connection.execute(text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"))
            total = int(connection.execute(text(count_sql), params).scalar_one())
            rows = connection.execute(
                text(sql), {**params, "limit": limit, "offset": (page - 1) * limit}
            ).all()
            connection.rollback()
        return Page([hit_from_row(row, row.score) for row in rows], total, page, limit)

    def search(
        self,
        query: str,
        limit: int = 10,
        page: int = 1,
        *,
        mode: SearchMode = "hybrid",
        start: datetime | date | str | None = None,
        end: datetime | date | str | None = None,
        roles: Sequence[str] | None = None,
        conversation_id: str | None = None,
    ) -> Page[MessageHit]:
        """Messages ranked by words (BM25), by meaning (cosine), or both fused (the default)."""
        check_paging(limit, page)
        where, params = self._filters(start, end, roles, conversation_id)
        if mode == "keyword":
            return self._keyword_page(query, limit, page, where, params)
        keyword_pool, semantic_pool = candidate_pools(limit, page)
        notes: list[str] = []
        vectors = self._vectors.searched_in(mode)
        if vectors:
            self._vectors.embed_query(query)  # before the keyword half starts beside it
        keyword_future = (
            None
            if mode == "semantic"
            else KEYWORD_SEARCHES.submit(self._keyword_scores, query, keyword_pool, where, params)
        )
        semantic: dict[int, float] = {}
        dropped: list[tuple[Any, float]] = []
        if vectors:
            try:
                semantic = self._semantic_scores(
                    query, semantic_pool, start, end, roles, conversation_id, dropped
                )
            except VectorTableDamagedError as error:
                if mode != "hybrid":
                    raise
                notes.append(str(error))  # words still find the messages until the repair
        elif mode == "hybrid":
            notes.append(str(self._vectors.mismatch))  # words still work while vectors wait
        keyword, keyword_weight = keyword_future.result() if keyword_future else ({}, 0.0)
        if mode == "hybrid":
            ranked = fuse(keyword, semantic, keyword_weight)
            role = addressed_role(query)
            if role and (not roles or len(set(roles) & set(keyword_text.TURN_ROLES)) > 1):
                of = self._rows_by_id([i for i, _ in ranked], "m.id, m.role")
                ranked = prefer_role(ranked, {i: row.role for i, row in of.items()}, role)
        rows: dict[int, Any] = {}  # the hits' rows, those of the re-ranked head read once
        piece_vectors = piece_vectors_of(self._vectors.embedder)
        cross = self.cross_encoder
        if mode == "hybrid" and (piece_vectors is not None or cross is not None):
            depth = max(RERANK_DEPTH, cross.depth if cross is not None else 0)
            rows = self._rows_by_id([i for i, _ in ranked[:depth]])
            texts = {i: row.text for i, row in rows.items()}
            if piece_vectors is not None:
                ranked = word_match.rerank(ranked, texts, query, piece_vectors)
            if cross is not None:
                ranked = cross.reorder(ranked, texts, query)
        elif mode != "hybrid":
            ranked = sorted(semantic.items(), key=lambda item: item[1], reverse=True)
        chosen = ranked[(page - 1) * limit : page * limit]
        rows.update(self._rows_by_id([i for i, _ in chosen if i not in rows]))
        hits = [
            hit_from_row(
                rows[message_id],
                score,
                is_weak(semantic.get(message_id), rows[message_id].text, query),
            )
            for message_id, score in chosen
            if message_id in rows
        ]
        traced = trace.record(
            "recall",
            query,
            mode,
            keyword,  # type: ignore[arg-type]
            semantic,  # type: ignore[arg-type]
            ranked,
            [(hit.id, hit.text, hit.weak) for hit in hits],
            (page - 1) * limit + 1,
            dropped,
        )
        return Page(hits, len(ranked), page, limit, notes, traced)

    @staticmethod
    def _filters(
        start: datetime | date | str | None,
        end: datetime | date | str | None,
        roles: Sequence[str] | None,
        conversation_id: str | None,
    ) -> tuple[str, dict[str, Any]]:
        clauses: list[str] = []
        params: dict[str, Any] = {}
        if start is not None:
            clauses.append("m.created_at >= :start")
            params["start"] = to_timestamp(start)
        if end is not None:
            clauses.append("m.created_at <= :end")
            params["end"] = to_timestamp(end, end_of_day=True)
        if roles:
            for role in roles:
                check_role(role)
            clauses.append("m.role IN (" + ",".join(f"'{role}'" for role in roles) + ")")
        if conversation_id is not None:
            clauses.append("m.conversation_id = :conversation_id")
            params["conversation_id"] = conversation_id
        return " AND ".join(clauses), params

    def _words_query(self, query: str, where: str) -> tuple[str, str, str, dict[str, Any] | None]:
        """The FROM-WHERE clause of a search by words, its score (higher is better), its
        order, and its parameters (None: the query has no words).

        SQLite ranks by FTS5's BM25. PostgreSQL has no BM25: ``ts_rank`` (normalised by the
        text's length) knows nothing of how rare a word is, so each query word's rank is
        weighted by its BM25 idf, as FTS5 weighs it (``_idf``)."""
        extra = f"AND {where}" if where else ""
        if not self._postgres:
            match = fts5_match(query)
            return (
                "FROM message_fts JOIN message m ON m.id = message_fts.rowid "
                f"WHERE message_fts MATCH :match {extra}",
                "-bm25(message_fts)",
                "bm25(message_fts)",
                None if match is None else {"match": match},
            )
        terms = query_terms(query)
        if not terms:
            return "", "", "", None
        values: dict[str, Any] = {f"t{i}": f"'{term}'" for i, term in enumerate(terms)}
        values["match"] = " | ".join(values.values())
        weights = self._idf(values, len(terms))
        score = " + ".join(
            f"{weight:.4f} * ts_rank(m.search_vector, to_tsquery('english', :t{i}), 1)"
            for i, weight in enumerate(weights)
        )
        return (
            f"FROM message m WHERE m.search_vector @@ to_tsquery('english', :match) {extra}",
            f"({score})",
            "score DESC, m.id",  # ties in a stable order, or pages could overlap
            values,
        )

    def _idf(self, terms: dict[str, Any], count: int) -> list[float]:
        """BM25's idf of each query word, ln(1 + (N - n + 0.5) / (n + 0.5)), from the messages
        holding it (counted up to IDF_COUNT_CAP: a word that common weighs little either way)."""
        found = ", ".join(
            "(SELECT count(*) FROM (SELECT 1 FROM message WHERE search_vector @@ "
            f"to_tsquery('english', :t{i}) LIMIT {IDF_COUNT_CAP}) AS s{i})"
            for i in range(count)
        )
        with self._engine.connect() as connection:
            row = connection.execute(text(f"SELECT {_MESSAGE_COUNT} AS n, {found}"), terms).one()
        total = float(row[0])
        return [
            math.log(1 + (total - float(n) + 0.5) / (float(n) + 0.5)) for n in row[1 : count + 1]
        ]

    def _keyword_page(
        self, query: str, limit: int, page: int, where: str, params: dict[str, Any]
    ) -> Page[MessageHit]:
        base, score, order, words = self._words_query(query, where)
        if words is None:
            return Page([], 0, page, limit)
        return self._page(
            f"SELECT {COLUMNS}, {score} AS score {base} ORDER BY {order} "
            "LIMIT :limit OFFSET :offset",
            f"SELECT count(*) {base}",
            {**params, **words},
            limit,
            page,
        )

    def _keyword_scores(
        self, query: str, limit: int, where: str, params: dict[str, Any]
    ) -> tuple[dict[int, float], float]:
        """BM25 of the best ``limit`` messages, and the keyword side's weight in fusion."""
        base, score, order, words = self._words_query(query, where)
        if words is None:
            return {}, 0.0
        with self._engine.connect() as connection:
            rows = connection.execute(
                text(f"SELECT m.id AS id, {score} AS score {base} ORDER BY {order} LIMIT :limit"),
                {**params, **words, "limit": limit},
            ).all()
        return {row.id: float(row.score) for row in rows}, KEYWORD_WEIGHT

    def _semantic_scores(
        self,
        query: str,
        limit: int,
        start: datetime | date | str | None,
        end: datetime | date | str | None,
        roles: Sequence[str] | None,
        conversation_id: str | None,
        dropped: list[tuple[Any, float]] | None = None,
    ) -> dict[int, float]:
        clauses = []
        if start is not None:
            clauses.append(f"created_at >= {to_timestamp(start)!r}")
        if end is not None:
            clauses.append(f"created_at <= {to_timestamp(end, end_of_day=True)!r}")
        every_vector = self._only_turns.is_set() and set(roles or ()) >= set(EMBEDDED_ROLES)
        if roles and not every_vector:
            clauses.append("role IN (" + ",".join(quote_sql(role) for role in roles) + ")")
        if conversation_id is not None:
            clauses.append(f"conversation_id = {quote_sql(conversation_id)}")
        return self._vectors.similar(query, limit, " AND ".join(clauses) or None, dropped)

    def _rows_by_id(self, ids: Sequence[int], columns: str = COLUMNS) -> dict[int, Any]:
        if not ids:
            return {}
        with self._engine.connect() as connection:
            rows = connection.execute(
                text(
                    f"SELECT {columns} FROM message m WHERE m.id IN "
                    f"({','.join(str(int(i)) for i in ids)})"
                )
            ).all()
        return {row.id: row for row in rows}
