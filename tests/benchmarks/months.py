"""Six months of a person's life through the real agent, then questions: does memory stay true?

``months_life.py`` writes the life from a seed; this plays it, each conversation on its own day
(``engine.clock.travel``), with the documents dropped in on theirs, through the real agent and
the bundled model (or ``--model``). At the end of each day the person approves what waits for
them, as the proposals panel asks (``--leave-proposals``: they never look). On the day after the
last conversation they ask the questions, a few in each conversation (``QUESTIONS_AT_ONCE``).
Then memory is tidied (``engine.agent.tidying``: the pass, and the person approving its batch
whole) and the questions are asked again. One JSON line per seed, with ``before`` and
``after`` tidying:

- ``strict`` by question kind: right, as ``conversation.py`` counts it, holds the answer (a
  "when" question: a date within ``WITHIN_DAYS`` of the day), no superseded value given as
  the answer, no value from nowhere, no frame of the recall note, no run-on; a question about
  what was never said is right when the reply says it does not know;
- ``superseded_as_current``: current-value replies that give a superseded value as the answer;
- ``duplicate_notes``: archival notes that state a lasting fact another note states already
  (current notes with current ones, history with history), as a share of all notes;
  ``musings_as_facts``: facts or notes that hold a dream town;
- ``human_block_chars`` and ``human_lines_true``: the share of the human block's lines that name
  no superseded value; ``proposals_waiting``;
- ``probe_s_start`` and ``probe_s_end``: the median turn of the same small talk (``probe``)
  after the first day and on the last, and their ratio: what memory grown over months adds to
  a turn; ``probe_memory_s_start``, ``probe_memory_s_end`` and their ratio: the same turns
  less the writing of the reply after its first token (a sampled reply's length varies from
  run to run, and memory adds to the rest);
- ``turn_s_start`` and ``turn_s_end``: median turn time of the first and last conversations,
  and their ratio (of other messages: as much the mix as the memory); ``phases_start`` and
  ``phases_end``: where those turns' time went (the median of each phase: recall, window,
  model, memory step, drafts, tokens evaluated);
  ``profile_mb``: the profile on disk, and ``profile_mb_settled`` once the table versions
  upkeep keeps for a few minutes are pruned; ``tidy_s``: the pass's own time, and ``tidied``: what
  it said it changed.

    uv run python tests/benchmarks/months.py [--seeds 1,2] [--pool POOL] [--model PATH.gguf]

``--pool held_out`` (POOL) says the life in the second pool of wordings, ``sealed`` in the third,
``unseen`` in the fourth and ``untold`` in the fifth (``months_life.py`` says which session may
read which).
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from _common import emit, use_model
from conversation import FRAME, UNKNOWN, answers, as_answer, invented, known_words, runaway
from months_life import DREAM_TOWNS, POOLS, WITHIN_DAYS, Life, Question, write_life

from engine import Mnemo, clock
from engine.agent import Agent
from engine.agent import assisted_rules as assisted
from engine.agent.tidying import plan, propose
from engine.embed import default_embedder
from engine.errors import MnemoError
from engine.ingest.ingestor import Ingestor
from engine.llm import load_model
from engine.memory.vectors.lance import lancedb

MONTHS = "january february march april may june july august september october november december"
_MONTH = {name: number for number, name in enumerate(MONTHS.split(), 1)}
_DAY_MONTH = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)?(?: of)? ([A-Za-z]+)\b")
_MONTH_DAY = re.compile(r"\b([A-Za-z]+) (\d{1,2})(?:st|nd|rd|th)?\b")
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
QUESTIONS_AT_ONCE = 6  # questions a person asks in one conversation


def dates_in(reply: str, year: int) -> list[date]:
    """The days a reply names: "14 March", "March 14th", "2026-03-14"."""
    found: list[date] = []
    for day, month in _DAY_MONTH.findall(reply):
        if month.casefold() in _MONTH:
            found.append(_day(year, _MONTH[month.casefold()], int(day)))
    for month, day in _MONTH_DAY.findall(reply):
        if month.casefold() in _MONTH:
            found.append(_day(year, _MONTH[month.casefold()], int(day)))
    for y, m, d in _ISO.findall(reply):
        found.append(_day(int(y), int(m), int(d)))
    return [day for day in found if day != date.min]


def _day(year: int, month: int, day: int) -> date:
    try:
        return date(year, month, day)
    except ValueError:
        return date.min


def right(question: Question, reply: str, known: set[str]) -> bool:
    """The strict count of ``conversation.py``, with a "when" question's date."""
    if FRAME.search(reply) or runaway(reply) or invented(reply, known):
        return False
    if question.kind == "never":
        return bool(UNKNOWN.search(reply))
    if question.on is not None:
        return any(abs((day - question.on).days) <= WITHIN_DAYS for day in dates_in(reply, 2026))
    return answers(reply, question.answer) and not as_answer(reply, question.wrong)


def play(
    life: Life, root: Path, model_spec: str, show: bool, approve: bool, tidy_daily: bool
) -> dict[str, Any]:
    profile = root / f"seed-{life.seed}-{life.pool}"
    mnemo = Mnemo.open(profile, embedder=default_embedder())
    use_model(mnemo.settings, model_spec)
    model = load_model(mnemo.settings)
    said: list[str] = []
    turn_s: list[list[float]] = []
    phases: list[list[dict[str, float]]] = []  # where each turn's time went
    approved = 0
    probe_start: list[tuple[float, float]] = []
    for number, lines in enumerate(life.conversations):
        day = lines[0].day
        if number == 1:  # after the first day: what a turn costs with little in memory
            probe_start = probe(mnemo, model, life, life.conversations[0][0].day)
        with clock.travel(datetime(day.year, day.month, day.day, 19)):
            for dropped in (d for d in life.documents if d.day == day):
                path = profile.with_name(f"{profile.name}-files") / dropped.name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(dropped.text, encoding="utf-8")
                Ingestor(mnemo).ingest_file(path)
                said.append(dropped.text)
            agent = Agent(mnemo, model, conversation_id=mnemo.conversations.start())
            times, spent = [], []
            for line in lines:
                started = time.perf_counter()
                finished = agent.send(line.text)
                times.append(time.perf_counter() - started)
                spent.append(finished.phases)
                reply = finished.reply or ""
                said.append(line.text)
                if show:
                    took = ", ".join(f"{k} {v:g}" for k, v in sorted(finished.phases.items()))
                    print(
                        f"{day} > {line.text}\n           < {reply[:200]}\n"
                        f"           ({times[-1]:.2f} s: {took})",
                        file=sys.stderr,
                    )
            turn_s.append(times)
            phases.append(spent)
            mnemo.wait_for_background_work()
            if approve:
                approved += approve_waiting(mnemo)
            if tidy_daily:  # the window left alone overnight tidies, and the person approves
                batch = propose(mnemo, plan(mnemo))
                approved += approve_waiting(mnemo, batch) if batch else 0
    end = life.conversations[-1][0].day + timedelta(days=1)
    probe_end = probe(mnemo, model, life, end)
    known = known_words([*said, *(f"{d:%-d %B %Y}" for d in _all_days(life, end))])
    before = {**ask(mnemo, model, life, end, known, show), **memory_figures(mnemo, life)}
    with clock.travel(datetime(end.year, end.month, end.day, 9)):
        started = time.perf_counter()
        tidying = plan(mnemo)
        batch = propose(mnemo, tidying)
        tidy_s = time.perf_counter() - started
        approved_tidy = approve_waiting(mnemo, batch) if batch else 0
    after = {**ask(mnemo, model, life, end, known, show), **memory_figures(mnemo, life)}
    mnemo.close()
    size = _folder_size(profile)
    settled = _settled_size(profile)
    start = statistics.median([t for times in turn_s[:3] for t in times])
    finish = statistics.median([t for times in turn_s[-3:] for t in times])
    return {
        "benchmark": "months",
        "seed": life.seed,
        "pool": life.pool,
        "conversations": len(life.conversations),
        "messages": life.messages,
        "questions": len(life.questions),
        "person_approved": approved if approve else None,
        "tidy_daily": tidy_daily,
        "before": before,
        "tidied": tidying.summary(),
        "tidy_changes_approved": approved_tidy,
        "tidy_s": round(tidy_s, 2),
        "after": after,
        "turn_s_start": round(start, 2),
        "turn_s_end": round(finish, 2),
        "turn_ratio": round(finish / start, 2) if start else None,
        **_probe_figures(
            "probe", [took for took, _ in probe_start], [took for took, _ in probe_end]
        ),
        **_probe_figures(
            "probe_memory", [part for _, part in probe_start], [part for _, part in probe_end]
        ),
        "phases_start": _median_phases(phases[:3]),
        "phases_end": _median_phases(phases[-3:]),
        "profile_mb": round(size / 2**20, 1),
        "profile_mb_settled": round(settled / 2**20, 1),
    }


def _folder_size(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def _settled_size(profile: Path) -> int:
    """The profile on disk once upkeep has pruned the table versions it keeps for a few minutes
    (``KEEP_VERSIONS_FOR``, for readers still on them): the months are played in minutes here,
    so at the end the versions of most of them are still on disk."""
    for versions in profile.rglob("_versions"):  # a table's folder holds its versions
        table = versions.parent
        dataset = lancedb().connect(table.parent).open_table(table.stem).to_lance()
        dataset.cleanup_old_versions(older_than=timedelta(0), error_if_tagged_old_versions=False)
    return _folder_size(profile)


def _probe_figures(name: str, start: list[float], end: list[float]) -> dict[str, float]:
    first, last = statistics.median(start), statistics.median(end)
    return {
        f"{name}_s_start": round(first, 2),
        f"{name}_s_end": round(last, 2),
        f"{name}_ratio": round(last / first, 2),
    }


def probe(mnemo: Mnemo, model: Any, life: Life, day: date) -> list[tuple[float, float]]:
    """The same small talk (the pool's own), in a conversation of its own late on ``day``,
    each line timed: what a turn costs with the memory of that day. The life's own turns at
    the start and the end are other messages (advice asked at the end ran to the reply cap,
    greetings at the start did not), so their ratio is as much the mix as the memory."""
    said = POOLS[life.pool]["small_talk"]
    with clock.travel(datetime(day.year, day.month, day.day, 22)):
        agent = Agent(mnemo, model, conversation_id=mnemo.conversations.start())
        took = []
        for text in [*said, *said]:  # twice: the replies are sampled
            started = time.perf_counter()
            phases = agent.send(text).phases
            whole = time.perf_counter() - started
            # The turn less the writing of its reply after the first token: recall, the
            # window, reading the prompt, the memory step. A sampled reply's length varies
            # from run to run; this part is what memory grown over months can add.
            took.append((whole, whole - phases.get("model", 0.0) + phases.get("prompt", 0.0)))
        mnemo.wait_for_background_work()
    return took


def approve_waiting(mnemo: Mnemo, batch: str | None = None) -> int:
    """The person approves what waits for them (of one tidy ``batch``, or all)."""
    waiting = mnemo.proposals.batch(batch) if batch else mnemo.proposals.pending()
    done = 0
    for proposal in (p for p in waiting if p.status == "pending"):
        try:
            mnemo.proposals.approve(proposal.id)
            done += 1
        except MnemoError:  # no longer applies: the panel would say so, and they reject it
            mnemo.proposals.reject(proposal.id)
    return done


def ask(
    mnemo: Mnemo, model: Any, life: Life, end: date, known: set[str], show: bool
) -> dict[str, Any]:
    """The questions, a few to a conversation, on the day after the last: strict counts."""
    by_kind: Counter[str] = Counter()
    right_by_kind: Counter[str] = Counter()
    superseded = 0
    misses: list[dict[str, str]] = []
    with clock.travel(datetime(end.year, end.month, end.day, 10)):
        for first in range(0, len(life.questions), QUESTIONS_AT_ONCE):
            agent = Agent(mnemo, model, conversation_id=mnemo.conversations.start())
            for question in life.questions[first : first + QUESTIONS_AT_ONCE]:
                reply = agent.send(question.text).reply or ""
                by_kind[question.kind] += 1
                if right(question, reply, known):
                    right_by_kind[question.kind] += 1
                else:
                    misses.append({"kind": question.kind, "q": question.text, "reply": reply[:160]})
                if question.kind == "current" and as_answer(reply, question.wrong):
                    superseded += 1
                if show:
                    print(f"? {question.text}\n  < {reply[:200]}", file=sys.stderr)
            mnemo.wait_for_background_work()
    return {
        "strict": {kind: f"{right_by_kind[kind]}/{n}" for kind, n in sorted(by_kind.items())},
        "current_strict": _share(right_by_kind["current"], by_kind["current"]),
        "past_when_order_strict": _share(
            sum(right_by_kind[k] for k in ("past", "when", "order")),
            sum(by_kind[k] for k in ("past", "when", "order")),
        ),
        "superseded_as_current": superseded,
        "misses": misses[:8],
    }


def memory_figures(mnemo: Mnemo, life: Life) -> dict[str, Any]:
    """Duplicate notes, musings kept as facts, the human block's truth, proposals waiting."""
    passages = [p for p in mnemo.archival.recent(10_000) if p.source.path is None]
    notes = [p.text for p in passages]
    stated: Counter[tuple[bool, str, str]] = Counter()
    for passage in passages:
        history = assisted.REPLACED_TAG in passage.tags
        for topic, timeline in life.timeline.items():
            for _since, held in timeline:
                if held and re.search(rf"\b{re.escape(held)}\b", passage.text, re.IGNORECASE):
                    stated[(history, topic, held)] += 1
    duplicates = sum(count - 1 for count in stated.values() if count > 1)
    mused = [line.text for lines in life.conversations for line in lines if line.kind == "muse"]
    dreams = [town for town in DREAM_TOWNS if any(town in text for text in mused)]
    facts = [
        f.sentence() for e, _ in mnemo.knowledge.entities() for f in mnemo.knowledge.facts(e.name)
    ]
    musings = sum(
        any(dream.casefold() in text.casefold() for dream in dreams) for text in [*notes, *facts]
    )
    lines = [line for line in mnemo.core.get("human").splitlines() if line.strip()]
    true = [line for line in lines if not stale(line, life)]
    return {
        "notes": len(notes),
        "duplicate_notes": _share(duplicates, len(notes)),
        "musings_as_facts": musings,
        "human_block_chars": len(mnemo.core.get("human")),
        "human_lines_true": _share(len(true), len(lines)),
        "proposals_waiting": len(mnemo.proposals.pending()),
    }


def stale(line: str, life: Life) -> bool:
    """Whether a line of the human block gives a value that no longer holds: it names a
    superseded value of a topic, and not the topic's current one before it ("Dogs are your
    thing, not cats" is true at the end; "You prefer cats over dogs" is not)."""

    def at(value: str) -> int | None:
        found = re.search(rf"\b{re.escape(value)}\b", line, re.IGNORECASE)
        return found.start() if found else None

    for history in life.timeline.values():
        now = at(history[-1][1]) if history[-1][1] else None
        for _since, held in history[:-1]:
            old = at(held) if held else None
            if old is not None and (now is None or old < now):
                return True
    return False


def _median_phases(conversations: list[list[dict[str, float]]]) -> dict[str, float]:
    """The median of each phase of the turns (seconds; "drafts" and token counts as counted),
    a turn without the phase counting as 0: what a slower turn at the end spends more on."""
    turns = [phases for turns in conversations for phases in turns]
    keys = sorted({key for phases in turns for key in phases})
    return {key: round(statistics.median(p.get(key, 0.0) for p in turns), 3) for key in keys}


# Days a line names by counting back from its own: a reply that says "you moved on 28 February"
# of "I relocated last weekend", said on 7 March, invents no day.
_DAYS_BACK = {
    "yesterday": [1],
    "last night": [1],
    "last week": range(1, 8),
    "last weekend": range(1, 9),
}


def _all_days(life: Life, end: date) -> list[date]:
    """The days the person spoke on, the day of the questions, and the days their words name."""
    days = [*(lines[0].day for lines in life.conversations), end]
    for line in (line for lines in life.conversations for line in lines):
        for phrase, back in _DAYS_BACK.items():
            if phrase in line.text.casefold():
                days += [line.day - timedelta(days=n) for n in back]
    return days


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 2) if whole else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1,2", help="the generator's seeds: tune on one")
    parser.add_argument(
        "--pool", default="tuned", choices=sorted(POOLS), help="the wordings the life is said in"
    )
    parser.add_argument("--model", default="", help="PATH.gguf, openai:NAME or anthropic:NAME")
    parser.add_argument("--conversations", type=int, default=0, help="only the first N (a try)")
    parser.add_argument("--questions", type=int, default=0, help="only the first N (a try)")
    parser.add_argument("--show", action="store_true")
    parser.add_argument(
        "--leave-proposals", action="store_true", help="the person never approves anything"
    )
    parser.add_argument(
        "--tidy-daily",
        action="store_true",
        help="tidy each evening and approve the batch, as the window left alone would",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for seed in (int(s) for s in args.seeds.split(",")):
            life = write_life(seed, args.pool)
            if args.conversations:
                life.conversations = life.conversations[: args.conversations]
            if args.questions:
                life.questions = life.questions[: args.questions]
            emit(
                play(
                    life,
                    Path(folder),
                    args.model,
                    args.show,
                    not args.leave_proposals,
                    args.tidy_daily,
                )
            )


if __name__ == "__main__":
    main()
