"""A profile's conversations: the person starts new ones, reopens earlier ones, and comes back to
the one they left.

Memory (recall, archival, knowledge, core) is the profile's; a conversation owns only its
messages and its window (``AgentStateRow``). Mnemo's own conversations get a row in the
``conversation`` table when they start (origin ``Mnemo``), as imported ones do; the first one
(``default``) predates conversations and has none. A title is the row's, or else the first thing
the person said in it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, Engine, text

from engine import clock
from engine.db import writing
from engine.errors import NotFoundError
from engine.memory.recall.messages import DEFAULT_CONVERSATION
from engine.settings import Settings
from engine.text import one_line

OWN = "Mnemo"  # the origin of conversations started here
CURRENT = "chat.conversation"  # the setting: the conversation the chat opens with
TITLE_CHARS = 60
UNTITLED = "New conversation"


@dataclass(frozen=True)
class ConversationInfo:
    id: str
    title: str
    origin: str  # "Mnemo", or where it was imported from ("ChatGPT", "Claude", "Letta")
    last_at: datetime | None  # the newest message; None while it has none
    messages: int  # the person's messages and the replies

    @property
    def label(self) -> str:
        """The title as a list shows it: imported ones say where they came from."""
        return self.title if self.origin == OWN else f"{self.origin}: {self.title}"


class Conversations:
    def __init__(self, engine: Engine, settings: Settings) -> None:
        self._engine = engine
        self._settings = settings

    def current(self) -> str:
        """The conversation the chat continues: the one last started or opened."""
        chosen = str(self._settings.get(CURRENT))
        return chosen if chosen and self.exists(chosen) else DEFAULT_CONVERSATION

    def start(self) -> str:
        """A new, empty conversation, made the current one (the current one, when it is still
        empty: pressing "New" twice leaves no empty conversations behind)."""
        current = self.current()
        if not self._has_messages(current):
            self._settings.store(CURRENT, current)
            return current
        with self._engine.connect() as connection:  # one started and left empty: that one
            empty = connection.execute(
                text(
                    "SELECT id FROM conversation c WHERE origin = :own AND NOT EXISTS "
                    "(SELECT 1 FROM message m WHERE m.conversation_id = c.id) "
                    "ORDER BY created_at DESC LIMIT 1"
                ),
                {"own": OWN},
            ).scalar()
        if empty is not None:
            self._settings.store(CURRENT, empty)
            return str(empty)
        conversation_id = f"c-{uuid.uuid4().hex[:12]}"
        with writing(self._engine).begin() as connection:
            connection.execute(
                text(
                    "INSERT INTO conversation (id, title, origin, created_at) "
                    "VALUES (:id, '', :origin, :now)"
                ),
                {"id": conversation_id, "origin": OWN, "now": clock.timestamp()},
            )
        self._settings.store(CURRENT, conversation_id)
        return conversation_id

    def open(self, conversation_id: str) -> str:
        """Make an earlier conversation the current one."""
        if not self.exists(conversation_id):
            raise NotFoundError(
                f"There is no conversation {conversation_id!r}; `mnemo chat --list` shows them."
            )
        self._settings.store(CURRENT, conversation_id)
        return conversation_id

    def ensure(self, conversation_id: str, title: str, origin: str) -> str:
        """A conversation another program names (its id chosen by the caller), made the first
        time with ``title``; it does not become the current one."""
        if not self.exists(conversation_id):
            with writing(self._engine).begin() as connection:
                connection.execute(
                    text(
                        "INSERT INTO conversation (id, title, origin, created_at) "
                        "VALUES (:id, :title, :origin, :now)"
                    ),
                    {
                        "id": conversation_id,
                        "title": title,
                        "origin": origin,
                        "now": clock.timestamp(),
                    },
                )
        return conversation_id

    def exists(self, conversation_id: str) -> bool:
        if conversation_id == DEFAULT_CONVERSATION:
            return True
        with self._engine.connect() as connection:
            found = connection.execute(
                text(
                    "SELECT 1 FROM conversation WHERE id = :id UNION ALL "
                    "SELECT 1 FROM message WHERE conversation_id = :id LIMIT 1"
                ),
                {"id": conversation_id},
            ).first()
        return found is not None

    def _has_messages(self, conversation_id: str) -> bool:
        with self._engine.connect() as connection:
            found = connection.execute(
                text("SELECT 1 FROM message WHERE conversation_id = :id LIMIT 1"),
                {"id": conversation_id},
            ).first()
        return found is not None

    def rename(self, conversation_id: str, title: str) -> None:
        title = one_line(title.strip(), TITLE_CHARS)
        with writing(self._engine).begin() as connection:
            changed = connection.execute(
                text("UPDATE conversation SET title = :title WHERE id = :id"),
                {"title": title, "id": conversation_id},
            ).rowcount
            if not changed:
                connection.execute(
                    text(
                        "INSERT INTO conversation (id, title, origin, created_at) "
                        "VALUES (:id, :title, :origin, :now)"
                    ),
                    {
                        "id": conversation_id,
                        "title": title,
                        "origin": OWN,
                        "now": clock.timestamp(),
                    },
                )

    def all(self) -> list[ConversationInfo]:
        """Every conversation with messages, and the current one (empty ones left behind, from
        before ``start`` reused them, are not listed: the list filled with "New
        conversation")."""
        current = self.current()
        return [
            info
            for info in all_conversations(self._engine)
            if info.messages or info.origin != OWN or info.id == current
        ]


# Where a conversation's id is written: its messages, window state, proposals and the
# indexing work waiting for it, and the conversation itself.
HELD_IN = (
    ("message", "conversation_id"),
    ("agent_state", "conversation_id"),
    ("proposal", "conversation_id"),
    ("message_context_pending", "conversation_id"),
    ("message_sentences_pending", "conversation_id"),
    ("conversation", "id"),
)


def move_in(connection: Connection, old: str, new: str) -> None:
    """Give the conversation ``old`` the id ``new`` wherever the database holds it (its
    vectors are the recall store's, ``RecallStore.move_conversation``)."""
    for table, column in HELD_IN:
        connection.execute(
            text(f"UPDATE {table} SET {column} = :new WHERE {column} = :old"),
            {"new": new, "old": old},
        )


def all_conversations(engine: Engine) -> list[ConversationInfo]:
    """Every conversation that has messages or was started here, the newest activity first,
    titled as the list shows them (the browser's column and forget's preview say the same)."""
    with engine.connect() as connection:
        activity = {
            row.conversation_id: (row.last_at, row.messages)
            for row in connection.execute(
                text(
                    "SELECT conversation_id, max(created_at) AS last_at, count(*) AS messages "
                    "FROM message WHERE role IN ('user', 'assistant') "
                    "GROUP BY conversation_id"
                )
            )
        }
        firsts = {
            row.conversation_id: row.text
            for row in connection.execute(
                text(
                    "SELECT conversation_id, text FROM message WHERE id IN "
                    "(SELECT min(id) FROM message WHERE role = 'user' "
                    "GROUP BY conversation_id)"
                )
            )
        }
        rows = {
            row.id: (row.title, row.origin, row.created_at)
            for row in connection.execute(
                text("SELECT id, title, origin, created_at FROM conversation")
            )
        }
    found: list[tuple[float, ConversationInfo]] = []
    for conversation_id in {*activity, *rows}:
        last_at, count = activity.get(conversation_id, (None, 0))
        title, origin, created_at = rows.get(conversation_id, ("", OWN, None))
        title = title or one_line(firsts.get(conversation_id, ""), TITLE_CHARS) or UNTITLED
        when = datetime.fromtimestamp(last_at).astimezone() if last_at else None
        info = ConversationInfo(conversation_id, title, origin, when, int(count))
        found.append((last_at or created_at or 0.0, info))
    return [info for _key, info in sorted(found, key=lambda pair: pair[0], reverse=True)]
