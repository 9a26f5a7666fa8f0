"""The lines the assisted mode proposes for the ``human`` block of core memory from what the
person says: one short line per statement, a changed value written into the line that held the
old one, and nothing the block or a waiting line already says (``Keeper`` decides what is said)."""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from engine.agent import assisted_rules as assisted
from engine.errors import CoreMemoryError
from engine.memory.knowledge import USER, name_key
from engine.memory.proposals import Proposal
from engine.memory.recall import MessageHit, RecallTransaction

if TYPE_CHECKING:
    from engine.mnemo import Mnemo

log = logging.getLogger("mnemo.agent")


class HumanBlockLines:
    """Proposes the person's statements for the ``human`` block (``Keeper.human_block``)."""

    def __init__(self, mnemo: Mnemo, conversation_id: str) -> None:
        self.mnemo, self.conversation_id = mnemo, conversation_id

    def propose(
        self,
        transaction: RecallTransaction,
        user: MessageHit,
        lines: list[str],
        replaced: dict[str, str],
        ended_facts: list[str],
    ) -> list[Proposal]:
        """The person's statements for the ``human`` block, one short line each ("Your sister
        Ines lives in Ghent."), so that its card shows what Mnemo knows of them: appended, or
        in place of the line that held what a change replaced (``replaced``: old value -> new),
        that line with the new value ("Your sister Ines lives in Antwerp.", not the news as it
        was said: "Ines moved to Antwerp last month."), unless that line says more than the
        replaced facts (``ended_facts``): "You work at Tailspin as a data analyst" is not true
        of Wingtip, so the news takes its place. A line the block or a waiting proposal
        already holds is not proposed again; a full block takes no more. They wait for the
        person, or apply at once under the ``auto`` write policy. A waiting line that holds
        what the change replaced is withdrawn (approved, it would write a stale line). A line
        that says again what the block or a waiting line says (``says_again``: "You have a
        cat called Olive" beside "Olive, your cat, needs a vet") is not proposed: the note keeps
        it, and the block, in every prompt, stays short."""
        held_lines = self.mnemo.core.block("human").value.splitlines()
        held = [
            *held_lines,
            *(
                p.new_content
                for p in self.mnemo.proposals.pending(None)
                if p.kind == "core" and p.label == "human"
            ),
        ]
        proposals: list[Proposal] = []
        names_in = functools.cache(self._names_in)  # each held line is read once a message
        stale: str | None = None  # the line whose value changed, written again with the new one
        for waiting in self.mnemo.proposals.pending(None):
            if (
                waiting.kind == "core"
                and waiting.label == "human"
                and _holds_any(waiting.new_content, replaced)
            ):
                self.mnemo.proposals.withdraw_in(transaction.session, waiting.id)
                held.remove(waiting.new_content)
                stale = waiting.new_content
        old_line = next((said for said in held_lines if _holds_any(said, replaced)), None)
        stale = old_line or stale
        for line in dict.fromkeys(lines):
            # The line of the news takes the stale line's place; any other is added.
            replacing = stale is not None and any(
                _value(old).search(stale) and _value(new).search(line)
                for old, new in replaced.items()
            )
            if replacing and stale is not None and not assisted.said_beyond(stale, ended_facts):
                line = _with_new_values(stale, replaced)
            if line.casefold() in {said.casefold() for said in held} or (
                not replacing and assisted.says_again(line, held, names_in)
            ):
                continue
            proposal = self.propose_line(transaction, user, line, old_line if replacing else None)
            if replacing:
                stale = old_line = None
            if proposal is not None:
                held.append(line)
                proposals.append(proposal)
        return proposals

    def _names_in(self, line: str) -> frozenset[str]:
        """The names a line holds: its values, and the people, pets and places memory knows
        by name even where the line opens with them ("Olive, your cat, needs a vet")."""
        known = {name_key(e.name) for e in self.mnemo.knowledge.mentioned(line) if e.name != USER}
        return assisted.names_held(line) | known

    def propose_line(
        self,
        transaction: RecallTransaction,
        user: MessageHit,
        line: str,
        old_line: str | None = None,
        *,
        untrusted: str | None = None,
    ) -> Proposal | None:
        """A line for the ``human`` block from the user's message (in place of ``old_line``),
        proposed in the step's transaction: applied at once under the ``auto`` policy unless
        ``untrusted``; None when the block is full or read-only."""
        savepoint = transaction.session.begin_nested()
        try:
            proposal = self.mnemo.proposals.create_in(
                transaction.session,
                conversation_id=self.conversation_id,
                label="human",
                action="replace" if old_line else "append",
                new_content=line,
                old_content=old_line,
                cause_kind="message",
                cause_ref=str(user.id),
                untrusted_reason=untrusted,
                auto_approve=self.mnemo.settings.core_write_policy == "auto",
            )
        except CoreMemoryError as error:
            savepoint.rollback()
            log.info("a line from the message was not proposed for core memory: %s", error)
            return None
        savepoint.commit()
        return proposal


def _value(value: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(value)}(?!\w)")


def _holds_any(line: str, values: Iterable[str]) -> bool:
    """Whether ``line`` states one of ``values`` (a line to replace)."""
    return any(_value(value).search(line) for value in values)


def _with_new_values(line: str, replaced: dict[str, str]) -> str:
    """``line`` with each old value that it states replaced by the new one."""
    for old, new in replaced.items():
        line = _value(old).sub(new, line)
    return line
