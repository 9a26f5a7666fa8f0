"""``mnemo chat``: the terminal chat; function calls shown compactly, proposals asked inline.

The turn runs on a worker thread so that Ctrl-C can stop a generation cleanly (the unfinished step
is dropped, as with the desktop's Stop button) instead of tearing through the agent.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from engine import forget, moments
from engine.agent import Agent
from engine.cli.forget import confirm_and_forget
from engine.cli.model_ahead import load_chosen
from engine.errors import MnemoError
from engine.events import (
    ContextEvicted,
    Event,
    FunctionCalled,
    FunctionReturned,
    MemoryPressure,
    MessageSent,
    Notice,
    ProposalApplied,
    ProposalCreated,
    ReplyWithdrawn,
    StepStarted,
    TextStreamed,
    TurnFinished,
)
from engine.interrupt import run_interruptibly
from engine.llm import ChatModel
from engine.memory.proposals import Proposal
from engine.memory.recall.conversations import ConversationInfo
from engine.profile import CHAT
from engine.text import one_line
from engine.transcript import NOTICE

if TYPE_CHECKING:
    from engine.ingest.ingestor import FileResult
    from engine.mnemo import Mnemo

WAITING_WORD_S = 3.0  # a reply not started by then is said to be on its way

HELP = """Commands:
  /new         start a new conversation (what Mnemo remembers stays)
  /list        the conversations, newest first
  /open N      continue conversation N of /list
  /proposals   review core-memory edits waiting for approval
  /context     how full the context window is
  /memory      show core memory
  /quit        leave (Ctrl-D works too); Ctrl-C stops a reply being written"""


class TerminalView:
    """Prints a turn's events: the reply to ``out``, everything else to ``side``."""

    def __init__(self, out: TextIO, side: TextIO, speaker: str = "") -> None:
        self.out = out
        self.side = side
        self.speaker = speaker
        self.proposals: list[Proposal] = []
        self._streaming = False
        self._waiting: threading.Timer | None = None
        self._doing = "searching memory"

    def wait_with_a_word(self) -> None:
        """Say what is happening if no reply has started ``WAITING_WORD_S`` from now: on a busy
        computer a turn of the bundled model has taken minutes, with nothing on the screen."""
        self._waiting = threading.Timer(WAITING_WORD_S, self._say_waiting)
        self._waiting.daemon = True
        self._waiting.start()

    def _say_waiting(self) -> None:
        self.side.write(f"  · {self._doing}… (Ctrl-C stops it)\n")
        self.side.flush()

    def stop_waiting(self) -> None:
        if self._waiting is not None:
            self._waiting.cancel()
            self._waiting = None

    def _end_stream(self) -> None:
        if self._streaming:
            self.out.write("\n")
            self.out.flush()
            self._streaming = False

    def __call__(self, event: Event) -> None:
        if isinstance(event, StepStarted):
            self._doing = "writing the reply"
        elif not isinstance(event, FunctionCalled | FunctionReturned):
            self.stop_waiting()  # something is shown: no word needed
        match event:
            case TextStreamed(text=text):
                if not self._streaming:
                    moments.mark("first-token")
                    self.out.write(self.speaker)
                    self._streaming = True
                self.out.write(text)
                self.out.flush()
            case MessageSent(text=text, sources=sources):
                moments.mark("replied")
                if not self._streaming:
                    self.out.write(self.speaker + text)
                    self._streaming = True
                self._end_stream()
                if sources:
                    listed = "; ".join(f"{s.label()} ({s.path})" for s in sources)
                    self.side.write(f"  sources: {listed}\n")
            case ReplyWithdrawn():
                self._end_stream()
                self.side.write("  · that repeated an earlier reply; writing another\n")
            case FunctionCalled(description=description):
                self._end_stream()
                self.side.write(f"  · {description}")
                self.side.flush()
            case FunctionReturned(ok=ok, summary=summary, result=result):
                self.side.write(f" → {summary}\n" if ok else f" ✗ {one_line(result)}\n")
            case ProposalCreated(proposal=proposal):
                self.proposals.append(proposal)
            case ProposalApplied(proposal=proposal):
                self.side.write(f"  · core memory updated (auto-approved): {proposal.describe()}\n")
            case MemoryPressure(stats=stats):
                self.side.write(
                    f"  · memory pressure: {round(100 * stats.fraction)}% of the context is used\n"
                )
            case ContextEvicted(evicted=evicted):
                self.side.write(f"  · moved {evicted} older messages into the summary\n")
            case Notice(text=text):
                self._end_stream()
                self.side.write(f"  ! {text}\n")
            case TurnFinished():
                moments.mark("turn-finished")
                self._end_stream()
        self.side.flush()


def run_turn(
    agent: Agent, text: str | None, view: TerminalView, side: TextIO
) -> TurnFinished | None:
    """Run ``agent.send(text)`` (or ``resume`` when text is None) so that Ctrl-C stops it."""

    def work(cancel: threading.Event) -> TurnFinished | None:
        if text is None:
            return agent.resume(on_event=view, cancel=cancel)
        return agent.send(text, on_event=view, cancel=cancel)

    view.wait_with_a_word()
    try:
        return run_interruptibly(work, lambda: side.write("\n  ! stopping…\n"))
    finally:
        view.stop_waiting()


def describe_proposal(mnemo: Mnemo, proposal: Proposal) -> list[str]:
    lines = [f"Proposal {proposal.id}: {proposal.describe()}"]
    if not proposal.trusted:
        lines.append(f"  caution: {proposal.untrusted_reason}")
    try:
        before, after = mnemo.proposals.preview(proposal.id)
        lines.append(f"  {proposal.target} now:   {one_line(before) or '(empty)'}")
        lines.append(f"  {proposal.target} after: {one_line(after) or '(empty)'}")
    except MnemoError as error:
        lines.append(f"  it no longer applies: {error}")
    return lines


def review_proposals(
    mnemo: Mnemo,
    proposals: list[Proposal],
    ask: Callable[[str], str],
    out: TextIO,
) -> None:
    """Ask about each proposal: approve, edit, reject, or leave it for later."""
    for proposal in proposals:
        for line in describe_proposal(mnemo, proposal):
            out.write(line + "\n")
        while True:
            answer = ask("[a]pprove, [e]dit, [r]eject or [l]ater? ").strip().lower()
            try:
                if answer in ("a", "approve"):
                    mnemo.proposals.approve(proposal.id)
                    out.write(f"  approved; {proposal.target} updated.\n")
                elif answer in ("e", "edit"):
                    text = ask("  new text: ").strip()
                    if not text:
                        continue
                    mnemo.proposals.approve(proposal.id, text)
                    out.write(f"  approved with your text; {proposal.target} updated.\n")
                elif answer in ("r", "reject"):
                    mnemo.proposals.reject(proposal.id)
                    out.write("  rejected; core memory unchanged.\n")
                elif answer in ("l", "later", ""):
                    out.write(f"  left pending (`mnemo memory approve {proposal.id}` later).\n")
                else:
                    continue
            except MnemoError as error:
                out.write(f"  {error}\n")
            break


def _print_context(agent: Agent, out: TextIO) -> None:
    stats = agent.context_stats()
    out.write(
        f"Context: {stats.total} of {stats.limit} usable tokens ({round(100 * stats.fraction)}%, "
        f"{stats.pressure}); window {stats.context_length}.\n"
        f"  instructions {stats.instructions}, functions {stats.functions}, core memory "
        f"{stats.core}, summary {stats.summary}, messages {stats.messages} "
        f"({stats.message_count} in view, {stats.evicted_count} summarised)\n"
    )


def _print_recent(mnemo: Mnemo, agent: Agent, out: TextIO) -> None:
    recent = [
        hit
        for hit in mnemo.recall.recent(12, agent.conversation_id)
        if hit.role in ("user", "assistant") or hit.name == NOTICE
    ][-4:]
    if recent:
        out.write("Earlier in this conversation:\n")
        for hit in recent:
            who = {"user": "you: ", "assistant": "mnemo: "}.get(hit.role, "! ")  # "!": a notice
            out.write(f"  {who}{one_line(hit.text)}\n")


def list_conversations(mnemo: Mnemo, out: TextIO) -> list[ConversationInfo]:
    """Print the conversations, numbered, the current one marked; return them in that order."""
    listed = mnemo.conversations.all()
    current = mnemo.conversations.current()
    if not listed:
        out.write("No conversations yet.\n")
    for number, info in enumerate(listed, 1):
        when = f"{info.last_at:%Y-%m-%d %H:%M}" if info.last_at else "(empty)"
        mark = "*" if info.id == current else " "
        out.write(
            f"{mark}{number:>3}  {when:<16}  {info.messages:>4} messages  {info.label}"
            f"  [{info.id}]\n"
        )
    return listed


def chat(
    mnemo: Mnemo,
    model: ChatModel,
    *,
    message: str | None = None,
    ask: Callable[[str], str] = input,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """The chat loop (or one turn with ``message``) in the current conversation; returns the
    exit status. ``out`` and ``err``: standard output and error as they are when it runs."""
    out, err = out or sys.stdout, err or sys.stderr
    agent = Agent(
        mnemo, model, conversation_id=mnemo.conversations.current(), fold_ahead=message is None
    )
    if message is not None and forget.requested(message):
        plan = forget.plan_topic(mnemo, forget.requested(message) or "")
        return 0 if confirm_and_forget(mnemo, plan, ask, out, yes=False) else 1
    if message is not None:
        view = TerminalView(out, err)
        if agent.interrupted:
            run_turn(agent, None, view, err)
        result = run_turn(agent, message, view, err)
        model.keep_state()  # the next `mnemo chat` in this conversation starts from here
        for proposal in view.proposals:
            err.write(
                f"Proposal {proposal.id} waits for you: {proposal.describe()} "
                f"(`mnemo memory approve {proposal.id}` or `reject {proposal.id}`)\n"
            )
        return 0 if result is not None and result.reply is not None else 1
    out.write(
        f"Mnemo chat with {model.name} ({model.context_length}-token context). "
        "Type /help for commands; Ctrl-D leaves.\n"
    )
    _print_recent(mnemo, agent, out)
    view = TerminalView(out, out, speaker="mnemo › ")
    if agent.interrupted:
        run_turn(agent, None, view, out)
    stop_folding = agent.catch_up_behind()  # what a `mnemo chat -m` left, while they type
    pending = mnemo.proposals.pending(agent.conversation_id)
    if pending:
        out.write(f"{len(pending)} core-memory edits wait for your approval (/proposals).\n")
    try:
        while True:
            try:
                text = ask("you › ").strip()
            except (EOFError, KeyboardInterrupt):
                out.write("\n")
                return 0
            if not text:
                continue
            if text in ("/quit", "/exit"):
                return 0
            if text == "/help":
                out.write(HELP + "\n")
            elif text == "/new":
                stop_folding()
                agent = Agent(mnemo, model, conversation_id=mnemo.conversations.start())
                out.write("New conversation. Mnemo still remembers what it knows about you.\n")
            elif text == "/list":
                list_conversations(mnemo, out)
            elif text.startswith("/open"):
                listed = mnemo.conversations.all()
                number = text.removeprefix("/open").strip()
                if not number.isdigit() or not 1 <= int(number) <= len(listed):
                    out.write("Say which: /open N, with N from /list.\n")
                    continue
                chosen = listed[int(number) - 1]
                stop_folding()
                agent = Agent(mnemo, model, conversation_id=mnemo.conversations.open(chosen.id))
                out.write(f"Continuing: {chosen.label}\n")
                _print_recent(mnemo, agent, out)
                stop_folding = agent.catch_up_behind()
            elif text == "/proposals":
                pending = mnemo.proposals.pending(agent.conversation_id)
                if not pending:
                    out.write("No core-memory edits are waiting.\n")
                review_proposals(mnemo, pending, ask, out)
            elif text == "/context":
                _print_context(agent, out)
            elif text == "/memory":
                for block in mnemo.core.blocks():
                    out.write(f"[{block.label}] {block.value}\n")
            elif text.startswith("/"):
                out.write(f"Unknown command {text}; /help lists them.\n")
            elif forget.requested(text):  # the person decides, in a preview: never the model
                try:
                    plan = forget.plan_topic(mnemo, forget.requested(text) or "")
                    confirm_and_forget(mnemo, plan, ask, out, yes=False)
                except MnemoError as error:
                    out.write(f"  ! {error}\n")
            else:
                view.proposals.clear()
                try:
                    run_turn(agent, text, view, out)
                except MnemoError as error:
                    out.write(f"  ! {error}\n")
                review_proposals(mnemo, view.proposals, ask, out)
    finally:
        stop_folding()  # cancelled: nothing of it is kept
        model.keep_state()  # the next start in this conversation begins where this one stands


def cmd_chat(mnemo: Mnemo, args: argparse.Namespace) -> int:
    if args.list:
        list_conversations(mnemo, sys.stdout)
        return 0
    if args.new:
        mnemo.conversations.start()
    elif args.open:
        mnemo.conversations.open(args.open)
    with mnemo.profile.hold_assistant(CHAT):  # before the model loads: a refusal is at once
        return _chat_holding(mnemo, args)


def _chat_holding(mnemo: Mnemo, args: argparse.Namespace) -> int:
    started = time.perf_counter()
    ahead = getattr(args, "model_ahead", None)
    model = ahead(mnemo.settings) if ahead is not None else load_chosen(mnemo.settings, args)
    moments.mark("loaded")
    if args.message is not None:
        return chat(mnemo, model, message=args.message)
    print(f"Loaded {model.name} in {time.perf_counter() - started:.1f} s.", file=sys.stderr)
    from engine.ingest.watch import FolderWatcher, WatchedFolders  # the chat loop's, not -m's

    watcher = None
    if WatchedFolders(mnemo).all():  # watched folders stay in sync while the chat is open
        watcher = FolderWatcher(mnemo, on_result=_show_document_change)
        watcher.start()
    try:
        return chat(mnemo, model)
    finally:
        if watcher is not None:
            watcher.stop()


def _show_document_change(result: FileResult) -> None:
    if result.outcome in ("done", "removed", "error"):
        detail = f": {result.error}" if result.error else ""
        print(f"  · document {result.outcome}: {result.path}{detail}", file=sys.stderr)
