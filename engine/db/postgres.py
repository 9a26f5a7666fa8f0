"""A profile's relational memory in PostgreSQL: the same tables as in SQLite, one schema per
assistant, and message vectors in pgvector.

The migrations are ``engine.db.schema.MIGRATIONS``, each in its PostgreSQL form, so a schema
version means the same on both. The version is kept in ``mnemo_schema``, and a newer one is
refused untouched.

The password never goes in the profile: libpq reads it from ``PGPASSWORD`` or ``~/.pgpass``, and
Mnemo from the keyring (``mnemo keys set postgres``).
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from pathlib import Path
from urllib.parse import urlsplit

from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from engine.db.schema import MIGRATIONS
from engine.errors import InputError, ProfileError, ProfileTooNewError
from engine.keys import get_key
from engine.profile import DATABASE_LOCATION

log = logging.getLogger("mnemo.db")

_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
# One lock number for every Mnemo migration on a server: two processes opening the same new
# assistant at once must not both create its tables.
_MIGRATION_LOCK = 0x6D6E656D6F


def is_postgres(url: str | None) -> bool:
    return bool(url) and urlsplit(str(url)).scheme.split("+")[0] in ("postgresql", "postgres")


def check_url(url: str) -> str:
    """The server's address as the profile keeps it; refused in words when it is not a
    PostgreSQL URL or carries a password (which would then sit in a file)."""
    if not is_postgres(url):
        raise InputError(
            f"{url!r} is not a PostgreSQL address; write postgresql://USER@HOST:PORT/DATABASE."
        )
    try:
        parsed = make_url(url)
    except Exception as error:
        raise InputError(f"{url!r} is not a valid PostgreSQL address ({error}).") from error
    if parsed.password:
        raise InputError(
            "Leave the password out of the database address: Mnemo reads it from the keyring "
            "(`mnemo keys set postgres`) or PGPASSWORD, and never writes it into the profile."
        )
    return url


def new_schema() -> str:
    """A schema for a new assistant: a server may hold many assistants, of many users."""
    return "mnemo_" + uuid.uuid4().hex[:16]


def record_location(root: Path, url: str, schema: str) -> None:
    """Write down, in the profile folder, that its tables are in ``schema`` on ``url``."""
    (root / DATABASE_LOCATION).write_text(
        json.dumps({"url": url, "schema": schema}, indent=1), "utf-8"
    )


def location(root: Path) -> tuple[str, str] | None:
    """The server address and schema of a profile kept in PostgreSQL, or None (SQLite)."""
    path = root / DATABASE_LOCATION
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text("utf-8"))
        url, schema = str(data["url"]), str(data["schema"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ProfileError(
            f"{path} should say which PostgreSQL server holds this assistant, and cannot be "
            f"read ({error}); restore it from a backup."
        ) from error
    if not _SCHEMA_NAME.fullmatch(schema):
        raise ProfileError(f"{path} names the schema {schema!r}, which is not a Mnemo schema.")
    return url, schema


def open_postgres(url: str, schema: str) -> Engine:
    """Connect, create the schema and pgvector if needed, and migrate; a newer schema is
    refused before anything is written."""
    parsed = make_url(url).set(drivername="postgresql+psycopg")
    password = get_key("postgres")
    if password and not parsed.password:
        parsed = parsed.set(password=password)
    engine = create_engine(
        parsed,
        pool_size=4,
        max_overflow=8,
        pool_pre_ping=True,
        connect_args={"options": f"-c search_path={schema},public", "connect_timeout": 10},
    )
    where = f"{parsed.host or 'localhost'}/{parsed.database or ''}"
    try:
        _migrate(engine, schema)
    except ProfileError:
        engine.dispose()
        raise
    except SQLAlchemyError as error:
        engine.dispose()
        reason = str(getattr(error, "orig", None) or error).strip().splitlines()[0]
        raise ProfileError(
            f"Cannot open this assistant's database on the PostgreSQL server {where} ({reason}); "
            "check that the server is running and reachable, and the user and password."
        ) from error
    return engine


def _migrate(engine: Engine, schema: str) -> None:
    with engine.begin() as connection:
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK})
        connection.execute(text(f"CREATE SCHEMA IF NOT EXISTS {schema}"))
        if not connection.execute(
            text("SELECT 1 FROM pg_extension WHERE extname = 'vector'")
        ).first():
            try:
                with connection.begin_nested():
                    connection.execute(text("CREATE EXTENSION vector WITH SCHEMA public"))
            except SQLAlchemyError as error:
                raise ProfileError(
                    "The PostgreSQL server has no pgvector, or this user may not add it; ask "
                    "its administrator to run CREATE EXTENSION vector in this database."
                ) from error
        connection.execute(
            text(f"CREATE TABLE IF NOT EXISTS {schema}.mnemo_schema (version INTEGER NOT NULL)")
        )
        version = connection.execute(text(f"SELECT version FROM {schema}.mnemo_schema")).scalar()
        if version is None:
            connection.execute(text(f"INSERT INTO {schema}.mnemo_schema VALUES (0)"))
            version = 0
        if version > len(MIGRATIONS):
            raise ProfileTooNewError(
                "This assistant's database was written by a newer version of Mnemo (schema "
                f"{version}; this version understands up to {len(MIGRATIONS)}). Update Mnemo "
                "to open it; nothing has been changed."
            )
        for number, migration in enumerate(MIGRATIONS[version:], start=version + 1):
            log.info(
                "applying migration %d (%s) to PostgreSQL schema %s", number, migration.name, schema
            )
            connection.exec_driver_sql(migration.for_postgres)
            connection.execute(
                text(f"UPDATE {schema}.mnemo_schema SET version = :v"), {"v": number}
            )
