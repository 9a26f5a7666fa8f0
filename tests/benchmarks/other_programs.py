"""What reaching Mnemo from another program costs: one MCP search against the same search
in-process, and one `/v1/chat/completions` turn (scripted model, so only the engine and the
server count) against the same turn through Mnemo's own `/v1/assistants/NAME/turns`.

A profile of ``--messages`` conversation turns; each search is `conversation_search`'s
(``engine.functions.search_conversation``), run ``--repeat`` times in-process, then through the
MCP SDK's own client against `mnemo mcp` on stdio (the same queries, interleaved). Medians in
one run; one JSON line out.

    uv run python tests/benchmarks/other_programs.py [--messages 2000] [--repeat 50]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import REPO, TextGenerator, emit

sys.path.insert(0, str(REPO))

from engine import Mnemo  # noqa: E402
from engine.functions import search_conversation  # noqa: E402
from engine.llm import ScriptedModel  # noqa: E402
from tests.agent_helpers import say  # noqa: E402
from tests.mnemo_server import Server  # noqa: E402


def ms(seconds: list[float]) -> float:
    return round(1000 * statistics.median(seconds), 2)


def mcp_searches(profile: Path, queries: list[str]) -> list[float]:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "engine.cli", "--profile", str(profile), "mcp"]
    )

    async def run() -> list[float]:
        times = []
        async with Client(params) as client:
            await client.call_tool("search_conversations", {"query": queries[0]})  # warm
            for query in queries:
                began = time.perf_counter()
                await client.call_tool("search_conversations", {"query": query})
                times.append(time.perf_counter() - began)
        return times

    return asyncio.run(run())


def turns(root: Path, repeat: int) -> tuple[list[float], list[float]]:
    import openai

    model = ScriptedModel()
    server = Server(root, lambda: model)
    try:
        native = server.client("alice")
        native.post("/v1/assistants", json={"name": "home"}).raise_for_status()
        client = openai.OpenAI(api_key=server.tokens["alice"], base_url=f"{server.url}/v1")
        completions, own = [], []
        for number in range(repeat + 1):
            model.enqueue([say(f"Reply {number}.")])
            began = time.perf_counter()
            client.chat.completions.create(
                model="mnemo:home", messages=[{"role": "user", "content": f"Message {number}"}]
            )
            completions.append(time.perf_counter() - began)
            model.enqueue([say(f"Own reply {number}.")])
            began = time.perf_counter()
            with native.stream(
                "POST", "/v1/assistants/home/turns", json={"text": f"Own message {number}"}
            ) as answer:
                for _ in answer.iter_lines():
                    pass
            own.append(time.perf_counter() - began)
        return completions[1:], own[1:]  # the first of each loads the model
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    text = TextGenerator(seed=3)
    queries = text.sentences(args.repeat, 2, 6)
    with tempfile.TemporaryDirectory() as folder:
        profile = Path(folder) / "profile"
        with Mnemo.open(profile) as mnemo:
            roles = ("user", "assistant")
            for number, said in enumerate(text.sentences(args.messages, 6, 30)):
                mnemo.recall.add(roles[number % 2], said)
            mnemo.wait_for_background_work()
            search_conversation(mnemo, queries[0])  # warm
            in_process = []
            for query in queries:
                began = time.perf_counter()
                search_conversation(mnemo, query)
                in_process.append(time.perf_counter() - began)
        over_mcp = mcp_searches(profile, queries)
        completions, own = turns(Path(folder) / "server", args.repeat)
    emit(
        {
            "benchmark": "other_programs",
            "messages": args.messages,
            "repeat": args.repeat,
            "search_in_process_ms_p50": ms(in_process),
            "search_over_mcp_ms_p50": ms(over_mcp),
            "mcp_added_ms_p50": round(ms(over_mcp) - ms(in_process), 2),
            "chat_completion_turn_ms_p50": ms(completions),
            "own_turn_endpoint_ms_p50": ms(own),
        }
    )


if __name__ == "__main__":
    main()
