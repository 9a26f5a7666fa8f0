"""Conversations as a person has them: many turns, new conversations, a restart, then questions.

Each scripted person talks to the real agent in a fresh profile: small talk, requests,
statements about their life, corrections, and questions about what they said, in the same
conversation, in a new one, and after the profile was closed and opened again. Four groups:
``tuned`` (``conversation_people.py``, the people the rules were tuned on), ``heldout``
(``conversation_heldout.py``, everyday phrasings, whose misses have since been read),
``fresh`` (``conversation_fresh.py``, written before a change, since read) and ``untold``
(``conversation_untold.py``, never tuned on); ``--group`` picks one. The conversations happen
on ``--on`` (a fixed day: the bundled model answers a little differently on another weekday,
and ages and "next Friday" depend on it). One JSON line out:

- ``fully_correct``: memory questions whose reply is right by the strict count: it holds the
  current value, no superseded one (unless as history: "before that, Ghent"), no value that is
  in neither what the person said nor their documents (``invented``), no frame of the recall
  note (``frame_leak``), is no repeat of an earlier reply, nor the same shape with a phrase
  changed, and ends (``runaway``: a sentence said twice, or more than ``RUNAWAY_CHARS``);
- ``corrected_new``: questions about a corrected fact answered with the new value alone;
- ``invented_rate``: replies to questions about the person stating a value from nowhere;
- ``frame_leaks``, ``runaways``: replies (all of them) with a frame, or that ran on;
  ``placeholders``: replies with another bracketed label or tag ("Dear [Landlord's Name]");
- ``musings_kept``: hypotheticals ("if I ever moved to Berlin…") kept as if they were facts;

- ``repeat_rate``: replies at least 0.8 similar (difflib) to an earlier reply of the same
  conversation, as a share of all replies;
- ``facts_kept``: stated facts found outside the transcript afterwards (core memory, knowledge
  memory, an archival note or a waiting proposal), each fact's words in one stored item;
- ``answered``: memory questions whose reply holds the answer; ``ceiling``: the same model and
  prompt with every statement of the person pasted in as recalled memory; ``answered_ratio``;
- ``admits_unknown``: questions about things never said whose reply says it does not know;
- ``wrong_sources``: replies whose Sources line names a file that does not hold what the reply
  says (a reply that cites a file without the answer, or cites on a turn about no file), and
  ``sources_precision``, the share of cited files that were right;
- ``first_token_s`` p50/p95 (send to the first streamed text), ``reply_s`` p50 (send to the
  finished reply) and ``after_reply_s`` p50/p95: how long the turn goes on after the reply is
  shown (the memory step), which the window does not make the person wait for.

    uv run python tests/benchmarks/conversation.py [--group tuned|heldout|fresh|untold]
        [--people priya,tom] [--model PATH.gguf | openai:NAME --base-url URL] [--seed 7]
        [--no-ceiling] [--show] [--on 2026-12-07]
"""

from __future__ import annotations

import argparse
import difflib
import re
import statistics
import sys
import tempfile
import time
from datetime import date, datetime
from pathlib import Path
from typing import Any

from _common import emit, percentile, use_model
from conversation_fresh import FRESH
from conversation_heldout import HELDOUT
from conversation_people import PEOPLE, Ask, Document, Muse, Tell, Turn
from conversation_untold import UNTOLD

from engine import Mnemo, clock
from engine.agent import Agent
from engine.context.window import load_state
from engine.embed import default_embedder
from engine.events import Event, MessageSent, TextStreamed
from engine.ingest.ingestor import Ingestor
from engine.llm import ChatModel, load_model
from engine.llm.base import ChatMessage, Prompt
from engine.llm.local import LlamaModel
from engine.transcript import SECTION_HEAD

SIMILAR = 0.8
UNKNOWN = re.compile(
    r"\b(?:don't|do not|didn't|did not|haven't|have not|can't|cannot|no)\s+(?:\w+\s+){0,3}?"
    r"(?:know|remember|recall|record|information|mention|mentioned|told|tell|say|said|"
    r"memory|idea|sure)|\bnot sure\b|\bnothing (?:in|about)\b|\bunknown\b",
    re.IGNORECASE,
)


GROUPS = {"tuned": PEOPLE, "heldout": HELDOUT, "fresh": FRESH, "untold": UNTOLD}
RUNAWAY_CHARS = 1200  # a few sentences are ~300; four times that is a reply that ran on
SHAPE_WORDS = 6  # shorter replies ("Hi!", "You're welcome.") may well recur
SHAPE_SIMILARITY = 0.75  # of the words, in order: the same sentence with a phrase changed
# What the recall note and the prompt look like, and never a reply to a person: headings, the
# note's label, "the user", file names, chunk numbers, bracketed dates, the prompt's bracketed
# labels and block tags.
FRAME = re.compile(
    r"recalled from memory|^\s*#+\s|core memory|\bthe user\b|\buser said\b|"
    r"\bchunk \d|\b[\w-]+\.(?:md|txt|pdf|docx|html?)\b|\(\s*\d{1,2} [A-Z][a-z]+ \d{4}|"
    r"\[(?:system note|result of|status|recalled)[^\]\n]{0,60}\]|"
    r"^\s*(?:mnemo|assistant|user)\s*:|</?(?:human|persona|memory|summary|\w+ chars=)[^>]*>",
    re.IGNORECASE | re.MULTILINE,
)
# Other bracketed labels and tags: a letter's "[Landlord's Name]", an HTML example. No frame
# of the prompt, but no finished reply either; counted apart (``placeholders``).
PLACEHOLDER = re.compile(r"\[[^\]\n]{1,60}\]|</?\w+(?:\s[^>]*)?>")
# How a superseded value may still be named: as history, never as the answer.
HISTORY = re.compile(
    r"\((?:before that|before|previously|earlier|formerly|was|it was)\b[^)]*\)"
    r"|\b(?:not|no longer|instead of|used to|previously|before that|moved from|changed from)"
    r"\b[^.;!?]*",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"\d+(?:[,.]\d+)*")
NOT_VALUES = frozenset("i i'm i'd i've i'll you you're you've you'd you'll your yours".split())
_WORDS = re.compile(r"[\w'-]+")
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")


def similar(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a.casefold(), b.casefold()).ratio()


def same_shape(a: str, b: str) -> bool:
    """The same reply with a phrase changed ("I'm not familiar with the term "X"…")."""
    words_a, words_b = _WORDS.findall(a.casefold()), _WORDS.findall(b.casefold())
    if min(len(words_a), len(words_b)) < SHAPE_WORDS:
        return False
    matcher = difflib.SequenceMatcher(None, words_a, words_b, autojunk=False)
    return matcher.ratio() >= SHAPE_SIMILARITY


def repeats(reply: str, earlier: list[str]) -> bool:
    return any(similar(reply, before) >= SIMILAR or same_shape(reply, before) for before in earlier)


def values(text: str) -> set[str]:
    """What only a source can tell: numbers of two or more digits ("16th" is 16) and names
    (capitalised words inside a sentence), casefolded, without a possessive."""
    found = {n.replace(",", "") for n in _NUMBER.findall(text) if len(n.replace(",", "")) > 1}
    for sentence in _SENTENCES.split(text):
        for word in _WORDS.findall(sentence)[1:]:
            if word[0].isupper() and word.casefold() not in NOT_VALUES:
                found.add(word.casefold().removesuffix("'s"))
    return found


def known_words(texts: list[str]) -> set[str]:
    words = {w.casefold().removesuffix("'s") for text in texts for w in _WORDS.findall(text)}
    return words | {n.replace(",", "") for text in texts for n in _NUMBER.findall(text)}


def invented(reply: str, known: set[str]) -> set[str]:
    """Values the reply states that the person never said (nor their documents)."""
    return {value for value in values(reply) if value not in known and value != "mnemo"}


def runaway(reply: str) -> bool:
    sentences = [s.strip().casefold() for s in _SENTENCES.split(reply) if len(s.strip()) >= 20]
    return len(reply) > RUNAWAY_CHARS or len(sentences) != len(set(sentences))


def as_answer(reply: str, old: tuple[str, ...]) -> bool:
    """Whether ``reply`` gives a superseded value other than as history."""
    return bool(old) and answers(HISTORY.sub(" ", reply), old)


def holds(text: str, words: tuple[str, ...]) -> bool:
    """Every word of ``words`` starts a word of ``text`` (case and accents as typed)."""
    folded = text.casefold()
    return all(re.search(r"(?<!\w)" + re.escape(word.casefold()), folded) for word in words)


def answers(reply: str, answer: tuple[str, ...]) -> bool:
    return any(holds(reply, (spelling,)) for spelling in answer)


def stored_items(mnemo: Mnemo) -> list[str]:
    """Everything kept outside the transcript, one text per item: a fact that a change
    replaced counts, as knowledge memory keeps it as history ("before that, Lisbon")."""
    items = [block.value for block in mnemo.core.blocks()]
    for entity, _count in mnemo.knowledge.entities():
        items += [fact.sentence() for fact in mnemo.knowledge.history(entity.name)]
    items += [passage.text for passage in mnemo.archival.recent(10_000)]
    for proposal in mnemo.proposals.pending(None):
        items.append(proposal.new_fact() if proposal.kind == "fact" else proposal.new_content)
    return items


class Turns:
    """Runs a person's turns and keeps the figures."""

    def __init__(self, model: ChatModel, show: bool) -> None:
        self.model = model
        self.show = show
        self.replies: dict[str, list[str]] = {}  # per profile and conversation
        self.repeats = 0
        self.reply_count = 0
        self.first_token: list[float] = []
        self.reply_s: list[float] = []
        self.after_reply: list[float] = []
        self.asked = 0
        self.answered = 0
        self.unknown_asked = 0
        self.unknown_admitted = 0
        self.cited = 0
        self.wrong_sources = 0
        self.fully_correct = 0
        self.corrected_asked = 0
        self.corrected_new = 0
        self.about_person = 0  # replies to questions about the person (for invented_rate)
        self.invented = 0
        self.frame_leaks = 0
        self.placeholders = 0
        self.runaways = 0
        self.musings = 0
        self.musings_kept = 0
        self.turns: list[tuple[float, str, dict[str, float]]] = []  # seconds, message, phases
        self.failures: list[dict[str, Any]] = []

    def send(self, agent: Agent, text: str) -> tuple[str, tuple[Any, ...], bool]:
        """The reply, its sources, and whether it repeats an earlier one (or its shape)."""
        started = time.perf_counter()
        marks: dict[str, float] = {}
        sources: list[Any] = []

        def on_event(event: Event) -> None:
            if isinstance(event, TextStreamed) and "first" not in marks:
                marks["first"] = time.perf_counter() - started
            if isinstance(event, MessageSent):
                marks["reply"] = time.perf_counter() - started
                sources.extend(event.sources)

        result = agent.send(text, on_event=on_event)
        total = time.perf_counter() - started
        self.turns.append((total, text, result.phases))
        reply = result.reply or ""
        if "first" in marks:
            self.first_token.append(marks["first"])
        if "reply" in marks:
            self.reply_s.append(marks["reply"])
            self.after_reply.append(total - marks["reply"])
        earlier = self.replies.setdefault(f"{agent.mnemo.profile.root}/{agent.conversation_id}", [])
        repeated = False
        if reply:
            self.reply_count += 1
            repeated = repeats(reply, earlier)
            if repeated:
                self.repeats += 1
                self.failures.append({"repeat": reply[:120], "to": text})
            earlier.append(reply)
            if FRAME.search(reply):
                self.frame_leaks += 1
                self.failures.append({"frame": FRAME.search(reply)[0], "reply": reply[:200]})
            elif PLACEHOLDER.search(reply):
                self.placeholders += 1
            if runaway(reply):
                self.runaways += 1
                self.failures.append({"runaway": reply[:200], "to": text})
        if self.show:
            print(f"  > {text}\n  < {reply[:300]}", file=sys.stderr)
        return reply, tuple(sources), repeated


def ceiling_reply(mnemo: Mnemo, model: ChatModel, question: str, statements: list[str]) -> str:
    """The same model, asked in a fresh window with all the person said pasted in as memory."""
    agent = Agent(mnemo, model, conversation_id="ceiling")
    prompt, _ = agent.window.build(load_state(mnemo, "ceiling"), assisted=True)
    note = "\n".join([SECTION_HEAD, *(f"- the user said: {text}" for text in statements)])
    pasted = Prompt(
        instructions=prompt.instructions,
        functions=[],
        memory=prompt.memory,
        messages=[ChatMessage("user", question), ChatMessage("system", note)],
    )
    return model.step(pasted).text


def run_person(
    name: str,
    script: list[Turn],
    model: ChatModel,
    embedder: Any,
    turns: Turns,
    ceiling: bool,
    root: Path,
) -> dict[str, Any]:
    profile = root / name
    mnemo = Mnemo.open(profile, embedder=embedder)
    statements: list[str] = []
    facts: list[tuple[str, ...]] = []
    never: list[tuple[str, ...]] = []
    said: list[str] = []  # everything the person typed or dropped in: what a reply may state
    documents: dict[str, Path] = {}
    conversation = mnemo.conversations.current()
    agent = Agent(mnemo, model, conversation_id=conversation)
    where = "same"
    ceiling_hits = 0
    asked = answered = 0
    for turn in script:
        if isinstance(turn, Document):
            path = root / f"{name}-files" / turn.name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(turn.text, encoding="utf-8")
            Ingestor(mnemo).ingest_file(path)
            documents[turn.name] = path
            said.append(turn.text)
            continue
        if isinstance(turn, Ask) and turn.where != where:
            if turn.where == "new":
                conversation = mnemo.conversations.start()
            else:  # restart: the profile closed and opened, the last conversation continued
                mnemo.close()
                mnemo = Mnemo.open(profile, embedder=embedder)
                conversation = mnemo.conversations.current()
            agent = Agent(mnemo, model, conversation_id=conversation)
            where = turn.where
        said.append(turn.text)
        reply, sources, repeated = turns.send(agent, turn.text)
        if isinstance(turn, Tell):
            statements.append(turn.text)
            facts += turn.kept
        if isinstance(turn, Muse):
            never += turn.never
        cited_right = isinstance(turn, Ask) and turn.document is not None
        for source in sources:
            turns.cited += 1
            name_of = Path(source.path).name
            file_text = documents[name_of].read_text("utf-8") if name_of in documents else ""
            right = (
                cited_right
                and isinstance(turn, Ask)
                and name_of == turn.document
                and answers(reply, turn.answer)
                and answers(file_text, turn.answer)
            )
            if not right:
                turns.wrong_sources += 1
                turns.failures.append(
                    {"wrong_source": source.path, "to": turn.text, "reply": reply[:600]}
                )
        if not isinstance(turn, Ask):
            continue
        # Memory holds when each thing was said: today, in this benchmark.
        today = f"{clock.now():%-d %B %Y}"
        made_up = invented(reply, known_words([*said, today]))
        turns.about_person += 1
        if made_up:
            turns.invented += 1
            turns.failures.append({"invented_values": sorted(made_up), "reply": reply[:200]})
        if not turn.answer:
            turns.unknown_asked += 1
            if UNKNOWN.search(reply):
                turns.unknown_admitted += 1
            else:
                turns.failures.append({"invented": reply[:120], "to": turn.text})
            continue
        asked += 1
        if answers(reply, turn.answer):
            answered += 1
        else:
            turns.failures.append({"unanswered": turn.text, "reply": reply[:120], "in": where})
        superseded = as_answer(reply, turn.old)
        if turn.old:
            turns.corrected_asked += 1
            if answers(reply, turn.answer) and not superseded:
                turns.corrected_new += 1
            elif superseded:
                turns.failures.append({"superseded": turn.text, "reply": reply[:200]})
        if (
            answers(reply, turn.answer)
            and not superseded
            and not made_up
            and not FRAME.search(reply)
            and not repeated
            and not runaway(reply)
        ):
            turns.fully_correct += 1
        if ceiling and turn.document is None:
            if answers(ceiling_reply(mnemo, model, turn.text, statements), turn.answer):
                ceiling_hits += 1
        elif ceiling:
            ceiling_hits += answers(reply, turn.answer)  # a document question has no paste
    mnemo.wait_for_background_work()
    items = stored_items(mnemo)
    kept = [fact for fact in facts if any(holds(item, fact) for item in items)]
    for fact in facts:
        if fact not in kept:
            turns.failures.append({"lost": fact, "person": name})
    for words in never:  # a musing is no fact about their life: nothing keeps it
        turns.musings += 1
        if any(holds(item, words) for item in items):
            turns.musings_kept += 1
            turns.failures.append({"musing_kept": words, "person": name})
    mnemo.close()
    turns.asked += asked
    turns.answered += answered
    return {
        "person": name,
        "facts": len(facts),
        "kept": len(kept),
        "asked": asked,
        "answered": answered,
        "ceiling": ceiling_hits,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--group", choices=sorted(GROUPS), default="tuned")
    parser.add_argument("--people", default="", help="some of the group's people, by name")
    parser.add_argument("--model", default="", help="PATH.gguf, openai:NAME or anthropic:NAME")
    parser.add_argument("--base-url", default="")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-ceiling", dest="ceiling", action="store_false")
    parser.add_argument("--show", action="store_true", help="print each exchange to stderr")
    parser.add_argument("--failures", action="store_true", help="list what failed, to stderr")
    parser.add_argument(
        "--on", type=date.fromisoformat, default=date(2026, 12, 7), help="the day they talk"
    )
    args = parser.parse_args()
    embedder = default_embedder()
    started = time.perf_counter()
    with (
        clock.travel(datetime(args.on.year, args.on.month, args.on.day, 10)),
        tempfile.TemporaryDirectory(prefix="mnemo-conversation-") as folder,
    ):
        root = Path(folder)
        settings_profile = Mnemo.open(root / "settings", embedder=embedder)
        use_model(settings_profile.settings, args.model, args.base_url)
        if settings_profile.settings.get("model.backend") == "local":
            model: ChatModel = LlamaModel(args.model or None, seed=args.seed)
        else:
            model = load_model(settings_profile.settings)
        settings_profile.close()
        turns = Turns(model, args.show)
        group = GROUPS[args.group]
        people = [
            run_person(name, group[name], model, embedder, turns, args.ceiling, root)
            for name in (args.people.split(",") if args.people else group)
        ]
    facts = sum(p["facts"] for p in people)
    kept = sum(p["kept"] for p in people)
    ceiling = sum(p["ceiling"] for p in people)
    answered = turns.answered / turns.asked if turns.asked else 0.0
    median_turn = statistics.median(t[0] for t in turns.turns)
    if args.failures:
        for failure in turns.failures:
            print(failure, file=sys.stderr)
        for seconds, message, phases in turns.turns:
            if seconds > 3 * median_turn:
                print({"slow": message[:60], "s": round(seconds, 2), **phases}, file=sys.stderr)
    slowest = max(turns.turns, key=lambda t: t[0])
    emit(
        {
            "benchmark": "conversation",
            "model": model.name,
            "group": args.group,
            "seed": args.seed,
            "on": args.on.isoformat(),
            "people": len(people),
            "replies": turns.reply_count,
            "repeat_rate": round(turns.repeats / max(1, turns.reply_count), 3),
            "facts_kept": round(kept / max(1, facts), 3),
            "facts": facts,
            "answered": round(answered, 3),
            "fully_correct": round(turns.fully_correct / max(1, turns.asked), 3),
            "questions": turns.asked,
            "corrected_new": round(turns.corrected_new / max(1, turns.corrected_asked), 3),
            "corrected_questions": turns.corrected_asked,
            "invented_rate": round(turns.invented / max(1, turns.about_person), 3),
            "frame_leaks": turns.frame_leaks,
            "placeholders": turns.placeholders,
            "runaways": turns.runaways,
            "musings_kept": f"{turns.musings_kept}/{turns.musings}",
            **(
                {
                    "ceiling": round(ceiling / max(1, turns.asked), 3),
                    "answered_ratio": round(turns.answered / max(1, ceiling), 2),
                }
                if args.ceiling
                else {}
            ),
            "admits_unknown": round(turns.unknown_admitted / max(1, turns.unknown_asked), 3),
            "wrong_sources": turns.wrong_sources,
            "citations": turns.cited,
            "sources_precision": round(1 - turns.wrong_sources / max(1, turns.cited), 3),
            "first_token_s": {
                "p50": percentile(turns.first_token, 0.5),
                "p95": percentile(turns.first_token, 0.95),
            },
            "reply_s_p50": round(statistics.median(turns.reply_s or [0.0]), 3),
            # Each turn whole (send to the end of the memory step), and the slowest one's phases.
            "turn_s_p50": round(median_turn, 3),
            "slowest_turn": {
                "s": round(slowest[0], 3),
                "x_median": round(slowest[0] / median_turn, 2),
                "message": slowest[1][:60],
                "phases": {k: round(v, 3) for k, v in slowest[2].items()},
            },
            "turns_over_3x_median": sum(t[0] > 3 * median_turn for t in turns.turns),
            "after_reply_s": {
                "p50": percentile(turns.after_reply, 0.5),
                "p95": percentile(turns.after_reply, 0.95),
            },
            "per_person": {
                p["person"]: [p["kept"], p["facts"], p["answered"], p["asked"]] for p in people
            },
            "wall_s": round(time.perf_counter() - started, 1),
        }
    )


if __name__ == "__main__":
    main()
