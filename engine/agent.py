"""The step loop: model -> one function call -> result -> another step (heartbeat) or yield.

Every step commits atomically: the call, its result and anything the function wrote to SQLite
(proposals) land in one transaction, so a crash at any instant leaves the conversation at the last
whole step, never with half a call. A turn ends when the model replies with ``send_message``, when
it yields, at the step limit or when it repeats a call; the user always sees why.

In the assisted mode (``engine.assisted``, chosen by ``engine.modes``) a turn is instead: recall
for the message (stored as a ``recall`` call, so the chat shows it), one plain-text reply, then a
memory step after the reply. Both modes share the window, storage, proposals and events.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

import sqlalchemy.exc

from engine import assisted
from engine.context.window import (
    PRESSURE_FRACTION,
    AgentState,
    ContextStats,
    ContextWindow,
    load_state,
)
from engine.errors import (
    ContextOverflowError,
    CoreMemoryError,
    GenerationCancelled,
    MnemoError,
    user_message,
)
from engine.events import (
    ContextEvicted,
    Event,
    FunctionCalled,
    FunctionReturned,
    MemoryPressure,
    MessageSent,
    Notice,
    NoticeKind,
    ProposalApplied,
    ProposalCreated,
    ReplyWithdrawn,
    StepStarted,
    TextStreamed,
    TurnFinished,
)
from engine.llm.base import ChatModel, Prompt, Step, safe_text
from engine.memory.archival import NewPassage, Passage
from engine.memory.extract import Candidate, facts_in
from engine.memory.knowledge import USER, Fact
from engine.memory.proposals import Proposal
from engine.memory.recall import (
    DEFAULT_CONVERSATION,
    MessageHit,
    RecallTransaction,
    pasted_reason,
)
from engine.mnemo import Mnemo
from engine.modes import ModeChoice, choose_mode
from engine.tools import (
    SEND_MESSAGE,
    ToolContext,
    check_arguments,
    cited_passages,
    describe_call,
    propose_fact,
    run_function,
)
from engine.transcript import (
    CITE,
    NOTICE,
    Citation,
    call_text,
    citations_text,
    read_call,
    recall_note_shown,
    result_ok,
    result_text,
)

log = logging.getLogger("mnemo.agent")

EventCallback = Callable[[Event], None]
MAX_EVICTIONS_PER_STEP = 4
RECENT_FOR_QUESTION = 40  # rows looked through for the message a reply answers
PASTED_PROPOSALS = 3  # statements of a pasted text proposed for the human block, at most


def _ignore(_event: Event) -> None:
    pass


def _call_key(name: str, arguments: dict[str, Any]) -> str:
    meaningful = {k: v for k, v in arguments.items() if k != "request_heartbeat"}
    return name + json.dumps(meaningful, sort_keys=True, ensure_ascii=False)


class _Turn:
    """What one turn has done so far."""

    def __init__(self) -> None:
        self.steps = 0
        self.seen_calls: set[str] = set()
        self.untrusted_reason: str | None = None
        self.must_reply = False
        self.passages: list[Passage] = []  # read this turn; a reply may cite them
        # Messages and passages in memory, for the status line: counted at the turn's first
        # step only (a count of 100k messages takes 4 ms; the few a turn adds tell the model
        # nothing).
        self.memory_size: tuple[int, int] | None = None


class Agent:
    """One conversation with one model. ``send`` runs a whole turn on the calling thread."""

    def __init__(
        self, mnemo: Mnemo, model: ChatModel, *, conversation_id: str = DEFAULT_CONVERSATION
    ) -> None:
        self.mnemo = mnemo
        self.model = model
        self.conversation_id = conversation_id
        self.window = ContextWindow(mnemo, model, conversation_id)
        self._lock = threading.Lock()
        self._drop_orphaned_passages()

    # -- public --------------------------------------------------------------------------------

    def send(
        self,
        text: str,
        *,
        on_event: EventCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> TurnFinished:
        """Store the user's message and run the turn it starts."""
        text = text.strip()
        if not text:
            raise MnemoError("Type a message first; an empty message was not sent.")
        if safe_text(text) != text:  # bytes that are not UTF-8, as a terminal may pass them
            raise MnemoError(
                "The message holds characters that are not valid UTF-8 text, so it was not sent; "
                "set your terminal to UTF-8 (for example LANG=C.UTF-8)."
            )
        with self._lock:
            self.mnemo.recall.add("user", text, conversation_id=self.conversation_id)
            return self._run_turn(_ignore if on_event is None else on_event, cancel)

    @property
    def mode(self) -> ModeChoice:
        """The memory mode of the next turn (the setting can change between turns)."""
        return choose_mode(self.mnemo.settings.memory_mode, self.model.parameter_count)

    @property
    def interrupted(self) -> bool:
        """True when the last turn stopped before it finished (a crash or a kill mid-turn)."""
        last = self.mnemo.recall.recent(2, self.conversation_id)
        if not last:
            return False
        if last[-1].role == "user" or last[-1].name == assisted.RECALL:
            return True
        if last[-1].name == CITE:
            return False  # the reply before it finished the turn
        if last[-1].role != "function_result" or len(last) < 2:
            return False
        if not result_ok(last[-1].text):
            return True
        call = read_call(last[-2].text)
        return bool(call and call.arguments.get("request_heartbeat"))

    def resume(
        self,
        *,
        on_event: EventCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> TurnFinished | None:
        """Finish a turn that a crash interrupted; None when there is nothing to finish."""
        with self._lock:
            if not self.interrupted:
                return None
            emit = _ignore if on_event is None else on_event
            emit(Notice("resumed", "Continuing the turn that was interrupted."))
            return self._run_turn(emit, cancel)

    def context_stats(self) -> ContextStats:
        """Token use of the window as the next step would see it."""
        state = load_state(self.mnemo, self.conversation_id)
        return self.window.build(state, assisted=self.mode.mode == "assisted")[1]

    # -- the loop ------------------------------------------------------------------------------

    def _run_turn(self, emit: EventCallback, cancel: threading.Event | None) -> TurnFinished:
        turn = _Turn()
        try:
            # Text the user did not write stays in the context after the turn that read it
            # (and across a restart): edits wait for the user while it is there.
            turn.untrusted_reason = self.mnemo.recall.untrusted_reason(self.conversation_id)
            if self.mode.mode == "assisted":
                return self._assisted_turn(turn, emit, cancel)
            return self._self_managed_turn(turn, emit, cancel)
        except GenerationCancelled:
            return self._stop(
                turn, emit, "cancelled", "Stopped. Nothing from the unfinished step was kept."
            )
        except Exception as error:  # the user's to fix, their storage's, or a bug: say which
            sentence = user_message(error, self.mnemo.read_only)
            if sentence is not None:
                return self._fail(turn, emit, sentence)
            log.exception("the turn failed")
            return self._fail(
                turn,
                emit,
                "Something went wrong inside Mnemo, and this turn was stopped (the details are "
                "in the log). Send your message again.",
            )

    def _fail(self, turn: _Turn, emit: EventCallback, sentence: str) -> TurnFinished:
        """End a turn that cannot go on. The note closes it, so that the next start does not
        retry it (a message that fails every time would otherwise fail at every start)."""
        try:
            self._note(f"The turn stopped: {sentence}")
        except (MnemoError, sqlalchemy.exc.OperationalError):
            log.warning("could not record the failed turn: %s", sentence)
        emit(Notice("error", sentence))
        return self._finish(TurnFinished(None, turn.steps, "error"), emit)

    def _self_managed_turn(
        self, turn: _Turn, emit: EventCallback, cancel: threading.Event | None
    ) -> TurnFinished:
        limit = self.mnemo.settings.step_limit
        while turn.steps < limit:
            final = turn.must_reply or turn.steps == limit - 1
            prompt, stats = self._prepare(turn, final, emit, cancel)
            turn.steps += 1
            emit(StepStarted(turn.steps, stats))
            step = self.model.step(
                prompt, on_text=lambda text: emit(TextStreamed(text)), cancel=cancel
            )
            outcome = self._execute(step, turn, emit)
            if isinstance(outcome, TurnFinished):
                if outcome.reason == "replied":
                    self._keep_after_self_managed_reply(emit)
                return self._finish(outcome, emit)
        return self._stop(
            turn,
            emit,
            "step_limit",
            f"Stopped after {limit} steps without a reply. Ask again, or raise the step "
            "limit in the settings if the assistant needs more steps.",
        )

    def _keep_after_self_managed_reply(self, emit: EventCallback) -> None:
        """A model that manages its memory may still not save what the person said about
        their life: after the reply, the same rules as the assisted mode keep it (a fact the
        model stored itself, in knowledge memory or as the same line of the human block, is
        not kept twice)."""
        state = load_state(self.mnemo, self.conversation_id)
        user = next(
            (hit for hit in reversed(self.window.messages(state)) if hit.role == "user"), None
        )
        if user is not None:
            self._keep_what_was_said(user, emit)

    def _prepare(
        self,
        turn: _Turn,
        final: bool,
        emit: EventCallback,
        cancel: threading.Event | None,
        assisted_mode: bool = False,
    ) -> tuple[Prompt, ContextStats]:
        """The next step's prompt: warn at memory pressure, evict when full."""
        state = load_state(self.mnemo, self.conversation_id)
        if assisted_mode:

            def build() -> tuple[Prompt, ContextStats]:
                return self.window.build(state, assisted=True)

        else:
            status = self._status(turn, final)
            allowed = frozenset({SEND_MESSAGE}) if final else None

            def build() -> tuple[Prompt, ContextStats]:
                return self.window.build(state, status, allowed)

        prompt, stats = build()
        if (
            not assisted_mode  # the warning asks the model to save memory with functions
            and not state.pressure_warned
            and PRESSURE_FRACTION <= stats.fraction <= 1.0
        ):
            with self.mnemo.recall.transaction() as transaction:
                self.window.warn(state, transaction, stats)
            emit(MemoryPressure(stats))
            prompt, stats = build()
        evictions = 0
        while stats.total > stats.limit:
            evicted = self.window.evict(state, cancel) if evictions < MAX_EVICTIONS_PER_STEP else 0
            if not evicted:
                raise ContextOverflowError(
                    f"The newest messages alone do not fit the model's context window "
                    f"({stats.total} of {stats.limit} usable tokens). Choose a larger context "
                    "size in the model settings."
                )
            evictions += 1
            emit(ContextEvicted(evicted, state.summary))
            prompt, stats = build()
        return prompt, stats

    # -- the assisted mode ---------------------------------------------------------------------

    def _assisted_turn(
        self, turn: _Turn, emit: EventCallback, cancel: threading.Event | None
    ) -> TurnFinished:
        """Recall, reply in plain text, then the memory step (after the user has the reply)."""
        state = load_state(self.mnemo, self.conversation_id)
        hits = self.window.messages(state)
        users = [hit for hit in hits if hit.role == "user"]
        if not users:
            return self._stop(turn, emit, "no_reply", "There is no message to reply to.")
        prompt, stats = self._prepare(turn, False, emit, cancel, assisted_mode=True)
        question = users[-1].text
        about_user = assisted.asks_about_the_user(question)
        if not self._recalled_already(hits):  # a resumed turn may have
            # With the model on a GPU, it evaluates the prompt so far while memory is searched.
            # On the CPU the two compete for the same cores (llama.cpp's threads spin while they
            # wait), and searching first was faster: TTFT p50 0.146 s against 0.152 s, 4 rounds
            # of 30 turns each way alternated (assisted_latency.py's runs, 2 cores).
            warm = None
            if getattr(self.model, "gpu_layers", 0):
                warm = threading.Thread(target=self._prefill, args=(prompt,), daemon=True)
                warm.start()
            try:
                found = self._recall(hits, users, emit)
            finally:
                if warm is not None:
                    warm.join()
            turn.passages = found.passages
            if found or about_user:
                prompt, stats = self._prepare(turn, False, emit, cancel, assisted_mode=True)
        turn.steps = 1
        emit(StepStarted(1, stats))
        if prompt.messages and prompt.messages[-1].content.endswith(assisted.NOTHING_FOUND):
            # A question about the user that memory holds nothing on: said so, not invented.
            text = assisted.not_told(question)
            emit(TextStreamed(text))
            step = Step(None, raw=text, text=text)
        else:
            note = prompt.messages[-1].content if prompt.messages else ""
            memory = (
                assisted.memory_words(note, question)
                if note.startswith(assisted.NOTE_MARK) and about_user
                else None
            )
            step = self._new_reply(prompt, emit, cancel, memory)
        if step.error or not step.text:
            return self._stop(
                turn,
                emit,
                "no_reply",
                "The model gave no reply (" + (step.error or "empty output") + "). Ask again.",
            )
        finished = self._reply(step.text, turn, emit)
        self._after_reply(users[-1], emit, cancel)
        return self._finish(finished, emit)

    def _new_reply(
        self,
        prompt: Prompt,
        emit: EventCallback,
        cancel: threading.Event | None,
        memory: list[str] | None = None,
    ) -> Step:
        """The model's reply, written again while it repeats an earlier reply of the
        conversation (``assisted.RepeatGuard`` keeps a copy from being shown), reads its prompt
        back (``assisted.without_prompt_echo``), or answers a question about the user without a
        word of what memory found for it (``memory``: those words). A retry sees only the
        newest message and what was recalled for it: with its earlier replies in view, the
        bundled model copied them even when sampled (and with only the replies taken out, the
        user's messages ran together)."""
        earlier = [
            hit.text
            for hit in self.mnemo.recall.recent(4 * assisted.EARLIER_REPLIES, self.conversation_id)
            if hit.role == "assistant"
        ][-assisted.EARLIER_REPLIES :]
        last = assisted.REPLY_ATTEMPTS - 1
        for attempt in range(assisted.REPLY_ATTEMPTS):
            guard = assisted.RepeatGuard(earlier, lambda text: emit(TextStreamed(text)))
            step = self.model.step(prompt, on_text=guard.feed, cancel=cancel)
            if step.error or not step.text:
                return step
            echo = assisted.without_prompt_echo(step.text)
            if echo is not None and attempt == last and echo:
                return dataclasses.replace(step, text=echo)  # what it said before the echo
            repeated = guard.repeats(step.text)
            if (
                echo is None
                and not repeated
                and (not memory or assisted.uses_memory(step.text, memory))
            ):
                return step
            if echo is None and not repeated and attempt == last:
                return step  # it answers without memory, but it is no copy
            log.info(
                "reply %d %s: %.80s",
                attempt + 1,
                "read its prompt back"
                if echo is not None
                else "repeated an earlier one"
                if repeated
                else "used nothing memory found",
                step.text,
            )
            if guard.released:
                emit(ReplyWithdrawn())
            newest = max(i for i, m in enumerate(prompt.messages) if m.role == "user")
            prompt = dataclasses.replace(
                prompt,
                messages=prompt.messages[newest:],
                temperature=assisted.RETRY_TEMPERATURE,
            )
        emit(TextStreamed(assisted.NO_NEW_REPLY))
        return Step(None, raw=step.raw, text=assisted.NO_NEW_REPLY, stats=step.stats)

    def _after_reply(
        self, user: MessageHit, emit: EventCallback, cancel: threading.Event | None
    ) -> None:
        """While the user reads the reply: keep what their message said about them, then fold
        the window if it is past the pressure line and evaluate the folded prompt, so that the
        next turn finds it in the KV cache."""
        self._keep_what_was_said(user, emit)
        state = load_state(self.mnemo, self.conversation_id)
        if self._evict_ahead(state, emit, cancel):
            self._prefill(self.window.build(state, assisted=True)[0])

    def _evict_ahead(
        self, state: AgentState, emit: EventCallback, cancel: threading.Event | None
    ) -> bool:
        """Once the window is past the pressure line, fold its oldest half into the summary
        now, so that the user's next message does not wait for it (eviction inside a turn
        stalled the bundled model for ~24 s). Whether anything was folded."""
        if self.window.build(state, assisted=True)[1].fraction < PRESSURE_FRACTION:
            return False
        try:
            evicted = self.window.evict(state, cancel)
        except GenerationCancelled:
            return False  # nothing was changed; the next turn evicts if it must
        except MnemoError as error:
            log.warning("evicting after the reply failed; the next turn will: %s", error)
            return False
        if evicted:
            emit(ContextEvicted(evicted, state.summary))
        return bool(evicted)

    @staticmethod
    def _recalled_already(hits: list[MessageHit]) -> bool:
        """Whether the newest user message already has its recall note (a resumed turn)."""
        for hit in reversed(hits):
            if hit.role == "user":
                return False
            if hit.role == "function_result" and hit.name == assisted.RECALL:
                return True
        return False

    def _prefill(self, prompt: Prompt) -> None:
        try:
            self.model.prefill(prompt)
        except Exception as error:  # only a head start; the step itself reports real failures
            log.warning("prefilling the prompt failed: %s", error)

    def _recall(
        self, hits: list[MessageHit], users: list[MessageHit], emit: EventCallback
    ) -> assisted.Recalled:
        """Search memory for the newest message; store and show what was found that the model
        does not already see (nothing when nothing new clearly fits)."""
        message = users[-1].text
        previous = users[-2].text if len(users) > 1 else None
        seen_messages, seen_passages, seen_facts = {hit.id for hit in hits}, set(), set()
        if message.rstrip().endswith("?"):
            # A question gets what memory holds on it even when it is in the window already:
            # the bundled model answered from a fresh note, not from a message ten turns up
            # ("What's my daughter's name?" got "Emily" with "…called Asha" in view).
            seen_messages = {users[-1].id}
            hits = []
        for hit in hits:
            if hit.role == "function_call" and hit.name == assisted.RECALL:
                shown_messages, shown_passages, shown_facts = recall_note_shown(hit.text)
                seen_messages.update(shown_messages)
                seen_passages.update(shown_passages)
                seen_facts.update(shown_facts)
        found = assisted.recall_for(
            self.mnemo,
            message,
            previous=previous,
            visible=seen_messages,
            shown_passages=seen_passages,
            shown_facts=seen_facts,
        )
        if not found and not assisted.asks_about_the_user(message):
            return found  # nothing to say: the prompt stays as it was, and its cache with it
        arguments = {
            "query": message[:200],
            "found": found.summary() or "nothing",
            "messages": [hit.id for hit in found.messages],
            "passages": [passage.id for passage in found.passages],
            "facts": [fact.id for fact in found.facts],
        }
        emit(FunctionCalled(assisted.RECALL, arguments, describe_call(assisted.RECALL, arguments)))
        text = found.text()
        with self.mnemo.recall.transaction() as transaction:
            self._store_call(transaction, assisted.RECALL, arguments)
            transaction.add(
                "function_result",
                text,
                name=assisted.RECALL,
                conversation_id=self.conversation_id,
                untrusted_reason=found.untrusted_reason,
            )
        emit(
            FunctionReturned(
                assisted.RECALL, True, text, assisted.RECALL_SUMMARY, tuple(found.trace)
            )
        )
        return found

    def _keep_what_was_said(self, user: MessageHit, emit: EventCallback) -> None:
        """Keep what the user's message tells about their life, by rule, not by a small model's
        choice (asked to choose, the bundled model kept 3 of 25 facts in a conversation):

        - every first-person statement that is not a passing remark (``assisted.lasting``) is
          kept in the user's own words as an archival note;
        - a statement of a fact knowledge memory holds (``engine.memory.extract``: home, work,
          family, birthdays, allergies) is kept there too, or only there when it says no more;
        - "it's X, not Y" puts right what was kept before (``_correct``).

        The trust rules are those of any write: typed text is kept at once; text the user
        pasted (``pasted_reason``) becomes proposals that wait for them."""
        today = user.created_at.astimezone().date()
        known = self._known_facts()
        learned: dict[str, list[Candidate]] = {}  # statements that state a knowledge fact
        notes: list[str] = []
        for statement in assisted.user_statements(user.text):
            if not assisted.lasting(statement):
                continue
            found = facts_in(statement, today)
            new = [
                c
                for c in found
                if not self.mnemo.knowledge.holds(*c.triple)
                and c.sentence().casefold() not in known  # said again before approval
            ]
            if new:
                learned[statement] = new
            sentences = [candidate.sentence() for candidate in found]
            if (not found or assisted.said_beyond(statement, sentences)) and (
                assisted.fact_line(statement).casefold() not in known
            ):
                notes.append(statement)
        correction = assisted.correction_in(user.text)
        if learned or notes or correction:
            self._remember(user, notes, learned, correction, emit)

    def _known_facts(self) -> str:
        """The human block and pending additions and facts, casefolded (to skip what is
        already known or already waits for the user)."""
        blocks = {block.label: block.value for block in self.mnemo.core.blocks()}
        pending = [
            p.new_fact() if p.kind == "fact" else p.new_content
            for p in self.mnemo.proposals.pending(self.conversation_id)
        ]
        return "\n".join([blocks.get("human", ""), *pending]).casefold()

    def _remember(
        self,
        user: MessageHit,
        notes: list[str],
        candidates: dict[str, list[Candidate]],
        correction: tuple[str, str] | None,
        emit: EventCallback,
    ) -> None:
        """Store what ``_keep_what_was_said`` chose, as one ``remember`` call: the notes, the
        knowledge facts (stored at once, or proposed when they contradict a current fact), and
        the correction. From pasted text, the notes become proposals for the ``human`` block
        and nothing is corrected."""
        knowledge = [fact for facts in candidates.values() for fact in facts]
        kept = list(dict.fromkeys([*candidates, *notes]))
        arguments: dict[str, Any] = {"facts": kept}
        if knowledge:
            arguments["knowledge"] = [fact.sentence() for fact in knowledge]
        if correction:
            arguments["correction"] = f"{correction[0]}, not {correction[1]}"
        emit(
            FunctionCalled(
                assisted.REMEMBER, arguments, describe_call(assisted.REMEMBER, arguments)
            )
        )
        untrusted = pasted_reason(user.text)
        proposals: list[Proposal] = []
        outcomes: list[str] = []
        if untrusted is None:
            outcomes += self._store_notes(user, notes)
            if correction:
                outcomes.append(self._correct(*correction))
        with self.mnemo.recall.transaction() as transaction:
            self._store_call(transaction, assisted.REMEMBER, arguments)
            if untrusted is not None and notes:
                notes = notes[:PASTED_PROPOSALS]
                for fact in notes:
                    savepoint = transaction.session.begin_nested()
                    try:
                        proposal = self.mnemo.proposals.create_in(
                            transaction.session,
                            conversation_id=self.conversation_id,
                            label="human",
                            action="append",
                            new_content=assisted.fact_line(fact),
                            cause_kind="message",
                            cause_ref=str(user.id),
                            untrusted_reason=untrusted,
                        )
                    except CoreMemoryError as error:  # the block is full or read-only
                        savepoint.rollback()
                        log.info("a remembered fact was not proposed: %s", error)
                        continue
                    savepoint.commit()
                    proposals.append(proposal)
                outcomes.append(
                    f"{len(proposals)} of {len(notes)} statements proposed for the human block; "
                    "they wait for the user's approval"
                )
            for candidate in knowledge:
                outcome, waiting = self._learn(transaction, user, candidate, untrusted)
                outcomes.append(outcome)
                if waiting is not None:
                    proposals.append(waiting)
            result = "; ".join(outcomes) or "nothing new"
            transaction.add(
                "function_result",
                result,
                name=assisted.REMEMBER,
                conversation_id=self.conversation_id,
            )
        emit(FunctionReturned(assisted.REMEMBER, True, result, f"{len(kept) or 1} kept"))
        for proposal in proposals:
            applied = proposal.status == "approved"
            emit(ProposalApplied(proposal) if applied else ProposalCreated(proposal))

    def _store_notes(self, user: MessageHit, notes: list[str]) -> list[str]:
        """The user's own statements as archival notes (one each, never twice)."""
        lines = [assisted.fact_line(statement) for statement in notes]
        fresh = [line for line in lines if self.mnemo.archival.find_duplicate(line, "user") is None]
        if not fresh:
            return []
        self.mnemo.archival.insert_many(
            [
                NewPassage(text, source=user.id, tags=(assisted.NOTE_TAG,), origin="user")
                for text in fresh
            ]
        )
        return [f"noted: {text}" for text in fresh]

    def _correct(self, new: str, old: str) -> str:
        """Put right the newest fact or note of the user that says ``old``: "it's Thursday, not
        Tuesday" after "my appointment is on Tuesday". What was put right, in words."""
        pattern = re.compile(rf"(?<!\w){re.escape(old)}(?!\w)", re.IGNORECASE)
        for fact in self.mnemo.knowledge.facts(USER, limit=50):
            if fact.subject_is(USER) and pattern.fullmatch(fact.object):
                corrected = self.mnemo.knowledge.correct(fact.id, new)
                return f"corrected: {corrected.sentence()}"
        for note in self.mnemo.archival.recent(50, origin="user"):
            if pattern.search(note.text):
                text = pattern.sub(new, note.text)
                self.mnemo.archival.update(note.id, text)
                return f"corrected: {text}"
        return f"nothing said {old!r} to correct"

    def _learn(
        self,
        transaction: RecallTransaction,
        user: MessageHit,
        candidate: Candidate,
        untrusted: str | None,
    ) -> tuple[str, Proposal | None]:
        """One fact from the user's message into knowledge memory: what happened, in words,
        and the proposal when it waits for the user."""
        source = {"source_kind": "message", "source_ref": str(user.id)}
        session = transaction.session
        savepoint = session.begin_nested()
        try:
            current = self.mnemo.knowledge.contradicted(*candidate.triple)
            if untrusted is None:
                stored = self.mnemo.knowledge.add_in(
                    session,
                    candidate.subject,
                    candidate.predicate,
                    candidate.object,
                    valid_from=candidate.valid_from,
                    asserted_by="user",
                    **source,  # type: ignore[arg-type]
                )
                if isinstance(stored, Fact):
                    savepoint.commit()
                    return f"learned: {stored.sentence()}", None
                current = stored.current
            result = propose_fact(
                self.mnemo,
                session,
                self.conversation_id,
                subject=candidate.subject,
                relation=candidate.predicate,
                obj=candidate.object,
                current=current,
                valid_from=candidate.valid_from,
                asserted_by="user",
                untrusted_reason=untrusted,
                **source,
            )
        except MnemoError as error:
            savepoint.rollback()
            log.info("a fact from the message was not kept: %s", error)
            return f"not kept: {candidate.sentence()} ({error})", None
        savepoint.commit()
        return result.text, result.proposal

    def _status(self, turn: _Turn, final: bool) -> str:
        """The line that rides with the newest message: what changes every step."""
        now = datetime.now().astimezone()
        if turn.memory_size is None:
            turn.memory_size = (
                self.mnemo.recall.count(self.conversation_id),
                self.mnemo.archival.count(),
            )
        messages, passages = turn.memory_size
        parts = [
            f"{now:%A %Y-%m-%d %H:%M}",
            f"{messages} messages in conversation history",
            f"{passages} passages in archival memory",
        ]
        pending = self.mnemo.proposals.count_pending(self.conversation_id)
        if pending:
            parts.append(f"{pending} core memory edits await the user's approval")
        status = "[Status: " + " · ".join(parts) + "]"
        if final:
            status += "\n[Reply to the user now with send_message.]"
        return status

    # -- one step ------------------------------------------------------------------------------

    def _execute(self, step: Step, turn: _Turn, emit: EventCallback) -> TurnFinished | None:
        """Run the step's call and commit it; a TurnFinished ends the turn, None continues."""
        call = step.call
        if call is None and step.text and not step.error:
            return self._reply(step.text, turn, emit)  # a chat API answered in plain text
        if call is None:
            self._record_failure(step.raw or step.text, None, step.error or "no call", emit)
            return None
        functions = {f.name: f for f in self.window.functions()}
        function = functions.get(call.name)
        if function is None:
            self._record_failure(
                call.to_json(),
                call.name,
                f"there is no function {call.name!r}; use one of {', '.join(functions)}",
                emit,
            )
            return None
        problem = check_arguments(function, call.arguments)
        if problem:
            self._record_failure(call.to_json(), call.name, problem, emit)
            return None
        if call.name == SEND_MESSAGE:
            return self._reply(call.arguments["message"], turn, emit)
        key = _call_key(call.name, call.arguments)
        if key in turn.seen_calls:
            return self._repeated(call.name, turn, emit)
        turn.seen_calls.add(key)
        if turn.must_reply:  # the model ignored the request to reply
            return self._stop(
                turn,
                emit,
                "step_limit",
                "The assistant kept calling functions instead of replying; the turn was stopped.",
            )
        return self._run_function(call.name, call.arguments, turn, emit)

    def _run_function(
        self, name: str, arguments: dict[str, Any], turn: _Turn, emit: EventCallback
    ) -> TurnFinished | None:
        emit(FunctionCalled(name, arguments, describe_call(name, arguments)))
        with self.mnemo.recall.transaction() as transaction:
            call_id = self._store_call(transaction, name, arguments)
            context = ToolContext(
                mnemo=self.mnemo,
                transaction=transaction,
                conversation_id=self.conversation_id,
                call_message_id=call_id,
                untrusted_reason=turn.untrusted_reason,
                max_result_chars=self.window.max_result_chars,
            )
            savepoint = transaction.session.begin_nested()
            result = run_function(context, name, arguments)
            if result.ok:
                savepoint.commit()
            else:
                savepoint.rollback()  # a failed function leaves no rows behind
            transaction.add(
                "function_result",
                result_text(result.text, result.ok),
                name=name,
                conversation_id=self.conversation_id,
                untrusted_reason=result.untrusted_reason,
            )
        emit(FunctionReturned(name, result.ok, result.text, result.summary, result.trace))
        turn.untrusted_reason = turn.untrusted_reason or result.untrusted_reason
        turn.passages += result.passages
        if result.proposal is not None:
            applied = result.proposal.status == "approved"
            emit(ProposalApplied(result.proposal) if applied else ProposalCreated(result.proposal))
        if not result.ok or arguments.get("request_heartbeat"):
            return None
        turn.must_reply = True  # it yielded without a word to the user: ask for one
        return None

    def _store_call(
        self, transaction: RecallTransaction, name: str, arguments: dict[str, Any]
    ) -> int:
        """A call as stored in recall (the model's, or one the engine made for it)."""
        return transaction.add(
            "function_call",
            call_text(name, arguments),
            name=name,
            conversation_id=self.conversation_id,
        )

    def _reply(self, text: str, turn: _Turn, emit: EventCallback) -> TurnFinished:
        """Store the reply with the documents it relies on (a ``cite`` row right after it)."""
        sources = tuple(
            Citation(passage.source.path or "", passage.source.section)
            for passage in cited_passages(text, turn.passages, self._newest_user_text())
        )
        with self.mnemo.recall.transaction() as transaction:
            message_id = transaction.add(
                "assistant", text, name=SEND_MESSAGE, conversation_id=self.conversation_id
            )
            if sources:
                transaction.add(
                    "function_result",
                    citations_text(sources),
                    name=CITE,
                    conversation_id=self.conversation_id,
                )
        emit(MessageSent(text, message_id, sources))
        return TurnFinished(text, turn.steps, "replied")

    def _newest_user_text(self) -> str:
        recent = self.mnemo.recall.recent(RECENT_FOR_QUESTION, self.conversation_id)
        return next((hit.text for hit in reversed(recent) if hit.role == "user"), "")

    def _record_failure(
        self, raw: str, name: str | None, problem: str, emit: EventCallback
    ) -> None:
        """Store a call that could not run and the correction the model gets back."""
        emit(FunctionCalled(name or "(invalid)", {}, f"made an invalid call: {problem}"))
        correction = f"{problem[0].upper()}{problem[1:].rstrip('.')}. Fix the call and try again."
        with self.mnemo.recall.transaction() as transaction:
            transaction.add(
                "function_call",
                raw[:4000],
                name=name,
                conversation_id=self.conversation_id,
            )
            transaction.add(
                "function_result",
                result_text(correction, ok=False),
                name=name,
                conversation_id=self.conversation_id,
            )
        emit(FunctionReturned(name or "(invalid)", False, correction, "error"))

    def _repeated(self, name: str, turn: _Turn, emit: EventCallback) -> TurnFinished | None:
        text = f"The assistant repeated the same {name} call, so it was not run again."
        if turn.must_reply:
            return self._stop(turn, emit, "repeated_call", text + " The turn was stopped.")
        self._note(text + " Reply to the user now.", for_model=True)
        emit(Notice("repeated_call", text))
        turn.must_reply = True
        return None

    def _stop(self, turn: _Turn, emit: EventCallback, kind: NoticeKind, text: str) -> TurnFinished:
        self._note(text)
        emit(Notice(kind, text))
        reason = kind if kind in ("step_limit", "repeated_call", "cancelled") else "error"
        return self._finish(TurnFinished(None, turn.steps, reason), emit)

    def _note(self, text: str, *, for_model: bool = False) -> None:
        """A system note in the conversation. It closes a failed turn (so a restart does not
        retry it) and is kept from the model, which has no use for an error's text (and an
        error may quote what a server sent); ``for_model`` notes are instructions to it."""
        self.mnemo.recall.add(
            "system",
            text,
            conversation_id=self.conversation_id,
            name=None if for_model else NOTICE,
        )

    def _finish(self, result: TurnFinished, emit: EventCallback) -> TurnFinished:
        log.info(
            "turn of %s finished after %d steps: %s", self.model.name, result.steps, result.reason
        )
        emit(result)
        return result

    # -- start-up repair -----------------------------------------------------------------------

    def _drop_orphaned_passages(self) -> None:
        """Remove passages a killed step stored for a function call that never committed."""
        removed = self.mnemo.archival.delete_from_uncommitted_steps(self.mnemo.recall.latest_id())
        if removed:
            log.info("removed %d archival passages of an interrupted step", removed)
