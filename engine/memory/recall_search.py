"""Searching recall memory: by words (SQLite FTS5, BM25), by meaning (the message vectors), both
fused, or by date; every search returns a ``Page`` whose total matches the page it came with."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

from sqlalchemy import Engine, text

from engine.db import on_postgres
from engine.memory import context_index, trace
from engine.memory.messages import COLUMNS, MessageHit, check_role, hit_from_row
from engine.memory.recall_vectors import EMBEDDED_ROLES
from engine.memory.search import (
    KEYWORD_SEARCHES,
    Page,
    SearchMode,
    addressed_role,
    candidate_pools,
    check_paging,
    coordinated,
    fts5_match,
    fuse,
    is_weak,
    prefer_role,
    query_terms,
    to_timestamp,
)
from engine.memory.vectors import VectorTable, quote_sql


class RecallSearch:
    """The searches behind ``RecallStore.search`` and ``search_by_date``."""

    def __init__(
        self, engine: Engine, vectors: VectorTable, only_turns: threading.Event | None = None
    ) -> None:
        self._engine = engine
        self._vectors = vectors
        # Set when the vectors are all of turn roles (``recall_vectors.MessageVectors``).
        self._only_turns = only_turns or threading.Event()
        self._postgres = on_postgres(engine)

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
        with self._engine.connect() as connection:
            if self._postgres:  # one snapshot for both queries
                connection.execute(text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"))
            else:
                connection.exec_driver_sql("BEGIN")
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
            semantic = self._semantic_scores(
                query, semantic_pool, start, end, roles, conversation_id, dropped
            )
        elif mode == "hybrid":
            notes.append(str(self._vectors.mismatch))  # words still work while vectors wait
        keyword, keyword_weight = keyword_future.result() if keyword_future else ({}, 0.0)
        if mode == "hybrid":
            ranked = fuse(keyword, semantic, keyword_weight)
            role = addressed_role(query)
            if role and (not roles or len(set(roles) & set(context_index.TURN_ROLES)) > 1):
                rows = self._rows_by_id([i for i, _ in ranked], "m.id, m.role")
                ranked = prefer_role(ranked, {i: row.role for i, row in rows.items()}, role)
        else:
            ranked = sorted(semantic.items(), key=lambda item: item[1], reverse=True)
        chosen = ranked[(page - 1) * limit : page * limit]
        rows = self._rows_by_id([message_id for message_id, _ in chosen])
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

    def _words_query(self, query: str, where: str) -> tuple[str, str, str, str | None]:
        """The FROM-WHERE clause of a search by words, its score (higher is better), its
        order, and what ``:match`` is (None: the query has no words).

        SQLite ranks by FTS5's BM25; PostgreSQL by ``ts_rank`` over the generated tsvector
        (normalised by the text's length, as BM25 is), through its GIN index."""
        extra = f"AND {where}" if where else ""
        if self._postgres:
            terms = query_terms(query)
            match = " | ".join(f"'{term}'" for term in terms) if terms else None
            tsquery = "to_tsquery('english', :match)"
            return (
                f"FROM message m WHERE m.search_vector @@ {tsquery} {extra}",
                f"ts_rank(m.search_vector, {tsquery}, 1)",
                "score DESC, m.id",  # ties in a stable order, or pages could overlap
                match,
            )
        return (
            "FROM message_fts JOIN message m ON m.id = message_fts.rowid "
            f"WHERE message_fts MATCH :match {extra}",
            "-bm25(message_fts)",
            "bm25(message_fts)",
            fts5_match(query),
        )

    def _keyword_page(
        self, query: str, limit: int, page: int, where: str, params: dict[str, Any]
    ) -> Page[MessageHit]:
        base, score, order, match = self._words_query(query, where)
        if match is None:
            return Page([], 0, page, limit)
        return self._page(
            f"SELECT {COLUMNS}, {score} AS score {base} ORDER BY {order} "
            "LIMIT :limit OFFSET :offset",
            f"SELECT count(*) {base}",
            {**params, "match": match},
            limit,
            page,
        )

    def _keyword_scores(
        self, query: str, limit: int, where: str, params: dict[str, Any]
    ) -> tuple[dict[int, float], float]:
        """BM25 of the best ``limit`` messages, scaled by how many of the query's words each
        one's indexed text holds, and the keyword side's weight (``search.coordinated``)."""
        base, score, order, match = self._words_query(query, where)
        if match is None:
            return {}, 0.0
        with self._engine.connect() as connection:
            rows = connection.execute(
                text(
                    f"SELECT m.id AS id, {score} AS score, m.search_text AS indexed {base} "
                    f"ORDER BY {order} LIMIT :limit"
                ),
                {**params, "match": match, "limit": limit},
            ).all()
        return coordinated(
            {row.id: float(row.score) for row in rows}, {row.id: row.indexed for row in rows}, query
        )

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
