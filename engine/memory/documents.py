"""The document index: one row per file Mnemo has read, with its state (queued, indexing, done,
skipped, error), its size, time and hash when it was read, and the embedder that read it. A
store of the profile's (``Mnemo.documents`` lists it); ingestion (``engine.ingest``) writes it.

It is how a re-scan skips unchanged files at the cost of one ``stat`` each, and how a crash or a
cancel is resumed: files are marked queued in one transaction before any is read.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable

from sqlalchemy import Engine
from sqlmodel import Session, col, select

from engine.db import write_session
from engine.db.schema import DocumentRow

UNFINISHED = ("queued", "indexing")


class DocumentIndex:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def all(self, under: str | None = None) -> list[DocumentRow]:
        """Every file's row, by path; ``under``: only those inside this folder."""
        with Session(self._engine) as session:
            query = select(DocumentRow).order_by(col(DocumentRow.path))
            if under is not None:
                prefix = under.rstrip(os.sep) + os.sep
                query = query.where(col(DocumentRow.path).startswith(prefix))
            return list(session.exec(query))

    def get(self, path: str) -> DocumentRow | None:
        with Session(self._engine) as session:
            return session.get(DocumentRow, path)

    def unfinished(self) -> list[str]:
        """Files a crash or a cancel left queued or half-read."""
        with Session(self._engine) as session:
            query = select(DocumentRow).where(col(DocumentRow.status).in_(UNFINISHED))
            return [row.path for row in session.exec(query)]

    def set(self, path: str, **values: object) -> None:
        """Update a file's row (created queued if it has none)."""
        with write_session(self._engine) as session:
            row = session.get(DocumentRow, path) or DocumentRow(
                path=path, status="queued", updated_at=0.0
            )
            for key, value in values.items():
                setattr(row, key, value)
            row.updated_at = time.time()
            session.add(row)
            session.commit()

    def queue(self, paths: Iterable[str]) -> None:
        """Mark files as queued in one transaction, so a crash leaves a list to resume from;
        a file that failed or was skipped before is tried again."""
        with write_session(self._engine) as session:
            for path in paths:
                row = session.get(DocumentRow, path)
                if row is None:
                    session.add(DocumentRow(path=path, status="queued", updated_at=time.time()))
                elif row.status in ("error", "skipped"):
                    row.status = "queued"
                    session.add(row)
            session.commit()

    def delete(self, path: str) -> None:
        with write_session(self._engine) as session:
            row = session.get(DocumentRow, path)
            if row is not None:
                session.delete(row)
                session.commit()
