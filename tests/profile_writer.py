"""A process that writes one profile through the engine, as another Mnemo program beside the
window would (tests/test_writers.py and tests/benchmarks/writers.py start them, and kill them).

Each kind of writer works until its time is up or it is killed. What it was told is stored goes
to its log at once, one JSON line, flushed, so that a kill -9 leaves every acknowledged write
listed: ``{"text": …}`` for a message, ``{"note": …}`` for an archival note, ``{"forgotten": …}``
for a text it forgot, ``{"error": …}`` for a write that failed, ``{"op": …}`` for anything else
it did.

- ``messages``: messages added back to back (`mnemo chat` storing a conversation);
- ``chat``: turns through the agent, in the assisted mode, with a scripted model (the person's
  messages are kept as facts and notes, as with the bundled model);
- ``import``: real ChatGPT conversations (``../shared/data/real``) imported again and again,
  each time under new ids and with a mark in every message, so each import brings new messages;
- ``forget``: a fresh text said, then forgotten;
- ``tidy``: the tidy pass, over and over;
- ``mcp``: notes written through `mnemo mcp` by the official MCP SDK's client.

    python -m tests.profile_writer KIND PROFILE SECONDS LOG [SEED]
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from engine import Mnemo
from engine.profile import behind_turns

REAL_EXPORT = (
    Path(__file__).resolve().parents[2] / "shared/data/real/chatgpt_2026/conversations-002.json"
)
CONVERSATIONS_PER_IMPORT = 4
FACTS = [
    "My sister {name} lives in {place}.",
    "I work as a {job} at {place} now.",
    "My cat {name} needs her pills at {hour} every day.",
    "I'm allergic to {thing}, so please remember that.",
]
NAMES = ["Lena", "Joaquín", "Zoë", "Søren", "Ama", "Kenji", "Ines", "Ólafur"]
PLACES = ["Porto", "Ghent", "Leeds", "Abuja", "Kraków", "Aarhus", "Oslo", "Lyon"]
JOBS = ["baker", "nurse", "architect", "teacher", "welder"]
THINGS = ["penicillin", "peanuts", "kiwi", "latex"]


class Log:
    """The writer's log: a line per write, on disk before the next write begins."""

    def __init__(self, file: IO[str]) -> None:
        self._file = file

    def __call__(self, **entry: Any) -> None:
        self._file.write(json.dumps(entry, ensure_ascii=False) + "\n")
        self._file.flush()

    def attempt(self, work: Callable[[], Any]) -> Any:
        """``work()``, its failure logged as an error line (the run goes on)."""
        try:
            return work()
        except Exception as error:  # noqa: BLE001 (every failure is the benchmark's finding)
            self(error=f"{type(error).__name__}: {error}"[:500])
            return None


def messages(mnemo: Mnemo, log: Log, until: float, rng: random.Random) -> None:
    while time.monotonic() < until:
        text = f"Second-process message {uuid.uuid4().hex[:8]} about the garden shed roof."
        if log.attempt(lambda text=text: mnemo.recall.add("user", text)) is not None:
            log(text=text)


def chat(mnemo: Mnemo, log: Log, until: float, rng: random.Random) -> None:
    from engine.agent import Agent
    from engine.llm import ScriptedModel

    model = ScriptedModel(parameter_count=135_000_000, default=lambda _prompt: "Noted, thanks.")
    agent = Agent(mnemo, model, conversation_id=f"chat-{uuid.uuid4().hex[:6]}")
    while time.monotonic() < until:
        fact = rng.choice(FACTS).format(
            name=rng.choice(NAMES),
            place=rng.choice(PLACES),
            job=rng.choice(JOBS),
            hour=f"{rng.randint(6, 10)}am",
            thing=rng.choice(THINGS),
        )
        text = f"{fact} (turn {uuid.uuid4().hex[:8]})"
        if log.attempt(lambda text=text: agent.send(text)) is not None:
            log(text=text)


def import_exports(mnemo: Mnemo, log: Log, until: float, rng: random.Random) -> None:
    from engine.exchange import unfinished
    from engine.exchange.chat_exports import import_conversations, read_conversation

    log.attempt(lambda: unfinished.undo_unfinished(mnemo))  # one a kill cut short
    source = json.loads(REAL_EXPORT.read_text(encoding="utf-8"))
    folder = Path(mnemo.profile.root).parent / f"exports-{uuid.uuid4().hex[:6]}"
    folder.mkdir(exist_ok=True)
    while time.monotonic() < until:
        mark = uuid.uuid4().hex[:8]
        chosen = [_marked(item, mark) for item in rng.sample(source, CONVERSATIONS_PER_IMPORT)]
        path = folder / f"conversations-{mark}.json"
        path.write_text(json.dumps(chosen), encoding="utf-8")
        texts = [m.text for item in chosen for m in read_conversation(item).messages]
        if log.attempt(lambda path=path: import_conversations(mnemo, path)) is not None:
            log(op="import", texts=texts)
        path.unlink()


def _marked(item: dict[str, Any], mark: str) -> dict[str, Any]:
    """A conversation of the real export under a new id, each message's text marked."""
    copy = json.loads(json.dumps(item))
    copy["conversation_id"] = copy["id"] = f"{copy.get('id', 'c')}-{mark}"
    for node in (copy.get("mapping") or {}).values():
        content = ((node or {}).get("message") or {}).get("content") or {}
        parts = content.get("parts")
        if isinstance(parts, list):
            content["parts"] = [
                f"{part} [{mark}]" if isinstance(part, str) and part.strip() else part
                for part in parts
            ]
    return copy


def forgets(mnemo: Mnemo, log: Log, until: float, rng: random.Random) -> None:
    from engine import forget

    while time.monotonic() < until:
        token = f"zq{uuid.uuid4().hex[:10]}"

        def said_and_forgotten(token: str = token) -> bool:
            mnemo.recall.add("user", f"My new door code is {token}, keep it safe.")
            forget.forget(mnemo, forget.plan_text(mnemo, token))
            return True

        if log.attempt(said_and_forgotten):
            log(forgotten=token)
        time.sleep(rng.uniform(0.5, 2.0))


def tidy(mnemo: Mnemo, log: Log, until: float, rng: random.Random) -> None:
    from engine.agent import tidying

    while time.monotonic() < until:
        batch = log.attempt(lambda: tidying.propose(mnemo, tidying.plan(mnemo)))
        log(op="tidy", batch=batch)
        time.sleep(rng.uniform(1.0, 3.0))


def mcp_notes(mnemo: Mnemo, log: Log, until: float, rng: random.Random) -> None:
    from mcp import Client, StdioServerParameters
    from mcp_types import Implementation

    mnemo.settings.set("mcp.notes", "apply")  # notes are kept at once (archival writes)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "engine.cli", "--profile", str(mnemo.profile.root), "mcp"],
    )

    async def session() -> None:
        info = Implementation(name="Stress Client", version="1.0")
        async with Client(params, client_info=info) as client:
            while time.monotonic() < until:
                note = f"The plumber's note {uuid.uuid4().hex[:8]}: the boiler valve was changed."
                try:
                    result = await client.call_tool("save_note", {"text": note})
                    said = "\n".join(part.text for part in result.content)
                except Exception as error:  # noqa: BLE001
                    log(error=f"{type(error).__name__}: {error}"[:500])
                    continue
                if said.startswith("Kept in archival memory"):
                    log(note=note)
                else:
                    log(error=said[:500])
                await asyncio.sleep(rng.uniform(0.05, 0.3))

    asyncio.run(session())


KINDS: dict[str, Callable[[Mnemo, Log, float, random.Random], None]] = {
    "messages": messages,
    "chat": chat,
    "import": import_exports,
    "forget": forgets,
    "tidy": tidy,
    "mcp": mcp_notes,
}


def main(kind: str, profile: Path, seconds: float, log_path: Path, seed: int) -> None:
    if kind == "import":
        behind_turns()  # as `mnemo import` does
    mnemo = Mnemo.open(profile)
    print("open", flush=True)  # the caller starts its clock here
    try:
        with log_path.open("a", encoding="utf-8") as file:
            KINDS[kind](mnemo, Log(file), time.monotonic() + seconds, random.Random(seed))
    finally:
        mnemo.close()


if __name__ == "__main__":
    main(
        sys.argv[1],
        Path(sys.argv[2]),
        float(sys.argv[3]),
        Path(sys.argv[4]),
        int(sys.argv[5]) if len(sys.argv) > 5 else 0,
    )
