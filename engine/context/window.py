"""The context window: what the model sees at each step, and what happens when it fills up.

Layout, from most to least stable so a local model reuses its KV cache for the unchanged prefix:
``[instructions + function schemas] [core memory] [recursive summary] [recent messages]``. What
changes every step (the clock, counts of stored items) rides with the newest message only.

The window's messages are a conversation's messages from ``context_start_id`` on. At about 70% of
the usable window the model gets one memory-pressure warning per cycle; past the limit the oldest
half is folded into the summary and ``context_start_id`` moves on. Evicted messages stay in recall.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from sqlmodel import Session

from engine import clock
from engine.context.summary import summarize
from engine.db import write_session
from engine.db.schema import AgentStateRow
from engine.functions import SEND_MESSAGE, function_schemas
from engine.llm.base import (
    ChatMessage,
    ChatModel,
    FunctionSchema,
    Prompt,
    ToolCall,
    message_text,
)
from engine.memory.core import Block
from engine.memory.recall import MessageHit, RecallTransaction
from engine.resources import resource_path
from engine.transcript import (
    FOR_THE_USER_ONLY,
    NOTE_MARKS,
    RECALL,
    REMEMBER,
    read_call,
    spoken_date,
)

if TYPE_CHECKING:
    from engine.mnemo import Mnemo

PRESSURE_FRACTION = 0.7
EVICT_FRACTION = 0.5
MESSAGE_OVERHEAD = 4  # chat-template tokens around a message, for per-message estimates
TEXT_TOKENS_KEPT = 4096  # texts whose token counts are remembered (a few windows' worth)
CUT_NOTE = " … [cut to fit the context window; the whole text is in conversation history]"

Pressure = Literal["ok", "warning", "full"]


@dataclass
class AgentState:
    """What is in the window: messages from ``context_start_id`` on, and the summary of the rest."""

    conversation_id: str
    context_start_id: int = 0
    summary: str = ""
    summarized_count: int = 0
    pressure_warned: bool = False
    read_at: float = field(default_factory=time.time)  # when the summary was read


@dataclass(frozen=True)
class ContextStats:
    """Token use of one prompt, by section (the context viewer shows this)."""

    context_length: int
    limit: int  # usable: the context length minus room for one step's output
    instructions: int
    functions: int
    core: int
    summary: int
    messages: int
    total: int  # exact, as the model's tokenizer counts the whole prompt
    message_count: int
    evicted_count: int
    recalled: int = 0  # the assisted mode's notes of what was recalled for messages

    @property
    def fraction(self) -> float:
        return self.total / self.limit

    @property
    def pressure(self) -> Pressure:
        if self.total > self.limit:
            return "full"
        return "warning" if self.fraction >= PRESSURE_FRACTION else "ok"


def load_state(mnemo: Mnemo, conversation_id: str) -> AgentState:
    with Session(mnemo.database) as session:
        row = session.get(AgentStateRow, conversation_id)
    if row is None:
        return AgentState(conversation_id)
    return AgentState(
        conversation_id,
        row.context_start_id,
        row.summary,
        row.summarized_count,
        bool(row.pressure_warned),
    )


def save_state_in(session: Session, state: AgentState) -> None:
    row = session.get(AgentStateRow, state.conversation_id) or AgentStateRow(
        conversation_id=state.conversation_id, updated_at=0.0
    )
    row.context_start_id = state.context_start_id
    row.summary = state.summary
    row.summarized_count = state.summarized_count
    row.pressure_warned = int(state.pressure_warned)
    row.updated_at = clock.timestamp()
    session.add(row)


# Rows shown to the user (sources under a reply, notices of failed turns), never to a model.


ENGINE_STEPS = frozenset({RECALL, REMEMBER})  # calls the engine makes for the model


def to_chat_messages(hits: list[MessageHit], plain: bool = False) -> list[ChatMessage]:
    """Stored messages as the model sees them; a result always follows its call. ``plain``
    (assisted mode): replies are plain text, what was recalled for a message is a note after it,
    and other function rows are left out (the model there calls no functions). Mnemo's own
    steps are system notes in both modes. Notes stay where
    they were written, so each prompt extends the last one and its KV cache is reused."""
    messages: list[ChatMessage] = []
    last_call_id: str | None = None
    for hit in hits:
        if hit.name in FOR_THE_USER_ONLY:
            continue
        if hit.role == "user":
            messages.append(ChatMessage("user", hit.text))
        elif hit.name in ENGINE_STEPS and hit.role in ("function_call", "function_result"):
            # Steps Mnemo took for the model are notes, never calls it made: a model shown a
            # call to a function it does not have may try it.
            if hit.role == "function_result" and (not plain or hit.name == RECALL):
                messages.append(ChatMessage("system", hit.text))
        elif plain and hit.role == "assistant":
            messages.append(ChatMessage("assistant", hit.text))
        elif plain and hit.role in ("function_call", "function_result"):
            continue
        elif hit.role == "assistant":
            call = ToolCall(SEND_MESSAGE, {"message": hit.text}, id=f"m{hit.id}")
            messages.append(ChatMessage("assistant", call=call))
        elif hit.role == "function_call":
            last_call_id = f"m{hit.id}"
            stored = read_call(hit.text)
            if stored is None:  # malformed output kept as it was
                messages.append(ChatMessage("assistant", hit.text))
            else:
                call = ToolCall(stored.name, stored.arguments, id=last_call_id)
                messages.append(ChatMessage("assistant", call=call))
        elif hit.role == "function_result":
            messages.append(
                ChatMessage("tool", hit.text, call_id=last_call_id, name=hit.name or "function")
            )
        else:
            messages.append(ChatMessage("system", hit.text))
    return messages


class ContextWindow:
    """Builds prompts for one conversation and keeps them within the model's window."""

    def __init__(self, mnemo: Mnemo, model: ChatModel, conversation_id: str) -> None:
        self._mnemo = mnemo
        self._model = model
        self.conversation_id = conversation_id
        self._instructions = resource_path("prompts/system.txt").read_text("utf-8").strip()
        self._assisted_instructions = (
            resource_path("prompts/assisted.txt").read_text("utf-8").strip()
        )
        self._text_tokens: dict[str, int] = {}  # see ``tokens``
        self._counted_functions: tuple[tuple[str, ...], int] = ((), 0)

    # -- sizes ---------------------------------------------------------------------------------

    @property
    def limit(self) -> int:
        return self._model.context_length - self._model.max_step_tokens

    @property
    def summary_tokens(self) -> int:
        """The most the recursive summary may take (it lives in the stable prefix)."""
        return max(48, self.limit // 8)

    @property
    def max_message_tokens(self) -> int:
        """A single message larger than this is cut in the window (never in recall)."""
        return max(96, self.limit // 4)

    @property
    def max_result_chars(self) -> int:
        return max(400, min(6000, self.max_message_tokens * 3))

    # -- sections ------------------------------------------------------------------------------

    def functions(self, blocks: list[Block] | None = None) -> list[FunctionSchema]:
        blocks = self._mnemo.core.blocks() if blocks is None else blocks
        return function_schemas([block.label for block in blocks])

    def core_text(self, blocks: list[Block] | None = None) -> str:
        parts = ["### Core memory"]
        for block in self._mnemo.core.blocks() if blocks is None else blocks:
            parts.append(
                f'<{block.label} chars="{len(block.value)}/{block.char_limit}">\n'
                f"{block.value}\n</{block.label}>"
            )
        return "\n".join(parts)

    @staticmethod
    def summary_text(state: AgentState) -> str:
        if not state.summarized_count:
            return ""
        return (
            f"### Summary of the earlier conversation ({state.summarized_count} older messages "
            f"are in conversation history)\n{state.summary}"
        )

    def _fit(self, message: ChatMessage) -> ChatMessage:
        """Cut one oversized message so that it cannot take the whole window."""
        if message.call is not None:
            return message
        budget = self.max_message_tokens
        content = message.content
        if self.tokens(content) <= budget:
            return message
        chars = len(content)
        while chars > 0 and self._model.count_tokens(content[:chars] + CUT_NOTE) > budget:
            chars = int(chars * 0.8)
        return ChatMessage(
            message.role, content[:chars] + CUT_NOTE, call_id=message.call_id, name=message.name
        )

    def tokens(self, text: str) -> int:
        """The model's count of ``text``, remembered: a step's prompt repeats the previous one
        but for its last lines, and counting every part anew took ~30 tokenizer calls per step
        (a third of the engine's time per turn at 100k messages, turn_overhead.py)."""
        count = self._text_tokens.get(text)
        if count is None:
            if len(self._text_tokens) >= TEXT_TOKENS_KEPT:
                self._text_tokens.clear()  # a window's worth is counted again at once
            count = self._text_tokens[text] = self._model.count_tokens(text)
        return count

    def message_tokens(self, message: ChatMessage) -> int:
        return self.tokens(message_text(message)) + MESSAGE_OVERHEAD

    def _function_tokens(self, functions: list[FunctionSchema]) -> int:
        if not functions:
            return 0
        key = tuple(function.name + repr(function.parameters) for function in functions)
        if key != self._counted_functions[0]:
            self._counted_functions = (key, self._model.count_functions(functions))
        return self._counted_functions[1]

    # -- building ------------------------------------------------------------------------------

    def messages(self, state: AgentState) -> list[MessageHit]:
        return self._mnemo.recall.since(state.context_start_id, self.conversation_id)

    def build(
        self,
        state: AgentState,
        status: str = "",
        allowed: frozenset[str] | None = None,
        *,
        assisted: bool = False,
    ) -> tuple[Prompt, ContextStats]:
        """The prompt of the next step. ``assisted``: no functions, plain replies with the
        recalled notes, and today's date after core memory (it changes once a day, where a
        clock beside the newest message would change the prompt's tail every turn)."""
        read_at = min(time.time(), state.read_at)  # what the prompt holds was read since
        hits = self.messages(state)
        chat = [self._fit(message) for message in to_chat_messages(hits, plain=assisted)]
        if chat and status:
            last = chat[-1]
            chat[-1] = ChatMessage(
                last.role, f"{last.content}\n\n{status}", last.call, last.call_id, last.name
            )
        blocks = self._mnemo.core.blocks()  # read once for the function schemas and the text
        functions = [] if assisted else self.functions(blocks)
        instructions = self._assisted_instructions if assisted else self._instructions
        core, summary = self.core_text(blocks), self.summary_text(state)
        if assisted:
            today = clock.now()
            core += f"\n\nToday is {today:%A} {spoken_date(today)}."
        recalled = [m.content for m in chat if m.content.startswith(NOTE_MARKS)]
        prompt = Prompt(
            instructions=instructions,
            functions=functions,
            memory="\n\n".join(part for part in (core, summary) if part),
            messages=chat,
            allowed=allowed,
            # An assisted reply is a few sentences; a self-managed step writes a call.
            max_tokens=self._mnemo.settings.reply_tokens if assisted else None,
            read_at=read_at,
        )
        count = self.tokens
        stats = ContextStats(
            context_length=self._model.context_length,
            limit=self.limit,
            instructions=count(instructions),
            functions=self._function_tokens(functions),
            core=count(core),
            summary=count(summary),
            messages=sum(map(self.message_tokens, chat)) - sum(map(count, recalled)),
            total=self._model.count_prompt(prompt),
            message_count=len(chat),
            evicted_count=state.summarized_count,
            recalled=sum(map(count, recalled)),
        )
        return prompt, stats

    # -- eviction ------------------------------------------------------------------------------

    def evict(self, state: AgentState, cancel: threading.Event | None = None) -> int:
        """Fold the oldest half of the window's messages into the summary; return how many.

        The cut never falls between a function call and its result, and the current turn stays
        (from the newest user message on) unless it alone overflows the window. Nothing is
        deleted: evicted messages remain searchable in recall.
        """

        hits = [hit for hit in self.messages(state) if hit.name not in FOR_THE_USER_ONLY]
        chat = to_chat_messages(hits)  # function rows count, as they do in self-managed mode
        counts = [self.message_tokens(message) for message in chat]
        target = sum(counts) * EVICT_FRACTION
        # The current turn (from the newest user message on) stays, unless it is all there is.
        users = [index for index, hit in enumerate(hits) if hit.role == "user"]
        last_cut = users[-1] if users and users[-1] > 0 else len(hits) - 1
        cut, evicted_tokens = 0, 0
        while cut < last_cut and evicted_tokens < target:
            evicted_tokens += counts[cut]
            cut += 1
        while 0 < cut < len(hits) and hits[cut].role == "function_result":
            cut -= 1  # keep the call with its result
        if cut == 0:
            return 0
        evicted = hits[:cut]
        state.summary = summarize(
            self._model, state.summary, evicted, self.summary_tokens, cancel=cancel
        )
        state.summarized_count += len(evicted)
        state.context_start_id = hits[cut].id
        state.pressure_warned = False
        with write_session(self._mnemo.database) as session:
            save_state_in(session, state)
            session.commit()
        return len(evicted)

    def warn(self, state: AgentState, transaction: RecallTransaction, stats: ContextStats) -> None:
        """Add the memory-pressure warning to the conversation (once per eviction cycle)."""
        template = resource_path("prompts/memory_pressure.txt").read_text("utf-8").strip()
        transaction.add(
            "system",
            template.format(percent=round(100 * stats.fraction)),
            conversation_id=self.conversation_id,
        )
        state.pressure_warned = True
        save_state_in(transaction.session, state)
