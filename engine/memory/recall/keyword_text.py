"""What the keyword index holds for a message: the turn, weighted up, with its neighbours.

A question rarely repeats the words of the one turn that answers it; the turns around it often
share them ("Where did you go?" / "Lisbon, for the conference"). So each user/assistant message
is indexed for BM25 with its own text twice, words from the two turns before and after it in the
same conversation, and its date written out ("8 May 2023"). Its vector still embeds the turn alone.

Neighbours lend words to short turns, not long ones. A long turn (an assistant's several-hundred-
word answer) already holds the words it is about; with its neighbours it would also match
everything said around it and crowd the results. A short turn takes from each neighbour only the
words nearest to it (the end of the turn before, the start of the turn after), so that a long
answer beside it cannot drown its own words. Neighbours come from the same sitting only (no
pause of over an hour between). Between people who both write short turns (LoCoMo)
nothing changes; between a person and an assistant (LongMemEval) it is what lets the person's own
turn be found. Measured: see tests/benchmarks/locomo_recall.py, longmemeval_recall.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC
from typing import Any

from engine.memory.search import from_timestamp

NEIGHBOURS = 2
# Turns further apart than this belong to different sittings and lend each other no words.
SITTING_GAP_S = 3600.0
# A turn of this many words or more is indexed alone: it carries its own vocabulary.
LONG_TURN_WORDS = 100
# How many words a short turn takes from each neighbour, from the side that touches it.
NEIGHBOUR_WORDS = 40
TURN_ROLES = ("user", "assistant")

Execute = Callable[[str, dict[str, Any]], Sequence[Any]]
ExecuteMany = Callable[[str, list[dict[str, Any]]], object]


def date_words(seconds: float) -> str:
    """'8 May 2023 Monday': how a message's date is written into what it is indexed by."""
    moment = from_timestamp(seconds).astimezone(UTC)  # (one out of range: the nearest in it)
    return f"{moment.day} {moment:%B %Y} {moment:%A}"


def _neighbours(rows: Sequence[Any], index: int) -> tuple[list[str], list[str]]:
    """The texts of up to NEIGHBOURS turns each side of ``rows[index]`` in the same sitting.

    ``rows`` are (id, text, created_at), oldest first. A pause longer than SITTING_GAP_S ends a
    sitting: talk resumed days later is about something else.
    """
    start = index
    while (
        start > max(0, index - NEIGHBOURS)
        and abs(rows[start][2] - rows[start - 1][2]) <= SITTING_GAP_S
    ):
        start -= 1
    end = index
    while (
        end < min(len(rows) - 1, index + NEIGHBOURS)
        and abs(rows[end + 1][2] - rows[end][2]) <= SITTING_GAP_S
    ):
        end += 1
    return [row[1] for row in rows[start:index]], [row[1] for row in rows[index + 1 : end + 1]]


def search_text(text: str, created_at: float, before: Sequence[str], after: Sequence[str]) -> str:
    context: list[str] = []
    if len(text.split()) < LONG_TURN_WORDS:
        context += [" ".join(turn.split()[-NEIGHBOUR_WORDS:]) for turn in before]
        context += [" ".join(turn.split()[:NEIGHBOUR_WORDS]) for turn in after]
    return "\n".join([text, text, *context, date_words(created_at)])


def refresh(
    execute: Execute,
    execute_many: ExecuteMany,
    conversation_id: str,
    first_id: int,
    last_id: int | None = None,
) -> None:
    """Recompute the indexed text of turns from ``first_id`` on (up to ``last_id``), and of the
    turns before them whose "after" neighbours those are. Runs inside the caller's write
    transaction."""
    roles = ",".join(f"'{role}'" for role in TURN_ROLES)
    earlier = execute(
        f"SELECT id FROM message WHERE conversation_id = :c AND role IN ({roles}) AND id < :first "
        "ORDER BY id DESC LIMIT :n",
        {"c": conversation_id, "first": first_id, "n": 2 * NEIGHBOURS},
    )
    start = min([row[0] for row in earlier] + [first_id])
    rows = execute(
        f"SELECT id, text, created_at FROM message WHERE conversation_id = :c "
        f"AND role IN ({roles}) AND id >= :start ORDER BY id",
        {"c": conversation_id, "start": start},
    )
    updates = []
    affected_from = min([row[0] for row in earlier][:NEIGHBOURS] + [first_id])
    for index, (message_id, text, created_at) in enumerate(rows):
        if message_id < affected_from:
            continue  # only context for its own neighbours
        if last_id is not None and message_id > last_id:
            break
        before, after = _neighbours(rows, index)
        updates.append(
            {"id": message_id, "search_text": search_text(text, created_at, before, after)}
        )
    if updates:
        execute_many("UPDATE message SET search_text = :search_text WHERE id = :id", updates)


def refresh_around(
    execute: Execute, execute_many: ExecuteMany, conversation_id: str, removed_id: int
) -> None:
    """After turn ``removed_id`` was deleted: recompute the turns that had it as a neighbour, so
    its words are no longer found through them."""
    roles = ",".join(f"'{role}'" for role in TURN_ROLES)
    following = execute(
        f"SELECT id FROM message WHERE conversation_id = :c AND role IN ({roles}) "
        "AND id > :id ORDER BY id LIMIT :n",
        {"c": conversation_id, "id": removed_id, "n": NEIGHBOURS},
    )
    last = max([removed_id] + [row[0] for row in following])
    refresh(execute, execute_many, conversation_id, removed_id, last)
