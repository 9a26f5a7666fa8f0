"""`mnemo serve` under load: concurrent clients doing chat turns and searches for a while.

The server runs in a process of its own (uvicorn, as `mnemo serve` runs it) with a scripted
model that answers every turn at once, so what is measured is the server and the engine: HTTP,
auth, the turn's storage (messages, their vectors, the context window) and search. Each client
is one assistant of one of five users; it loops: a turn with a numbered note, then a recall
search. At the end every client's messages are read back: each turn must have stored exactly
its user message and its reply (no lost writes), and no request may have failed.

    uv run python tests/benchmarks/server_load.py [--clients 20] [--seconds 300] [--postgres]

``--postgres`` keeps the assistants' tables in a PostgreSQL with pgvector (``pgserver``'s, started
here) instead of each assistant's SQLite file.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
from _common import emit

ROOT = Path(__file__).resolve().parents[2]
SERVER = r"""
import sys, uvicorn
from pathlib import Path
from engine.llm import ScriptedModel
from engine.server.accounts import Accounts
from engine.server.app import Limits, create_app
from engine.server.hub import Hub
root, port, database = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3] or None
model = ScriptedModel(
    default=lambda _prompt: {"function": "send_message", "arguments": {"message": "Noted."}}
)
accounts = Accounts(root)
hub = Hub(accounts.folder, lambda: model, database_url=database)
app = create_app(accounts, hub, Limits(rate=1000, burst=1000))
uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--postgres", action="store_true", help="tables in PostgreSQL")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        sys.path.insert(0, str(ROOT))
        from engine.server.accounts import Accounts

        accounts = Accounts(Path(scratch))
        tokens = {f"user{i}": accounts.add(f"user{i}") for i in range(5)}
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        database = ""
        if args.postgres:
            import pgserver

            postgres = pgserver.get_server(Path(scratch) / "postgres", cleanup_mode="stop")
            database = postgres.get_uri()
        server = subprocess.Popen(
            [sys.executable, "-c", SERVER, scratch, str(port), database], cwd=ROOT
        )
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(300):
                try:
                    httpx.get(f"{url}/openapi.json", timeout=1)
                    break
                except httpx.TransportError:
                    time.sleep(0.1)
            started = time.monotonic()
            results = run_clients(url, tokens, args.clients, args.seconds)
            elapsed = time.monotonic() - started
        finally:
            server.terminate()
            server.wait(30)
            if args.postgres:
                postgres.cleanup()
    turns = [t for r in results for t in r["turns"]]
    searches = [s for r in results for s in r["searches"]]
    emit(
        {
            "benchmark": "server_load",
            "clients": args.clients,
            "tables": "postgresql" if args.postgres else "sqlite",
            "seconds": args.seconds,
            "turns": len(turns),
            "searches": len(searches),
            "elapsed_s": round(elapsed),
            "turns_per_s": round(len(turns) / elapsed, 1),
            "turn_ms_p50": round(statistics.median(turns) * 1000),
            "turn_ms_p95": round(statistics.quantiles(turns, n=20)[18] * 1000),
            "search_ms_p50": round(statistics.median(searches) * 1000),
            "search_ms_p95": round(statistics.quantiles(searches, n=20)[18] * 1000),
            "errors": sum(r["errors"] for r in results),
            "lost_writes": sum(r["lost"] for r in results),
        }
    )


def run_clients(url: str, tokens: dict[str, str], clients: int, seconds: float) -> list[dict]:
    users = list(tokens)
    results: list[dict] = [{} for _ in range(clients)]

    def client(index: int) -> None:
        user = users[index % len(users)]
        http = httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {tokens[user]}"}, timeout=120
        )
        name = f"assistant{index}"
        errors = 0
        if http.post("/v1/assistants", json={"name": name}).status_code != 201:
            errors += 1
        turns: list[float] = []
        searches: list[float] = []
        deadline = time.monotonic() + seconds
        sent = 0
        while time.monotonic() < deadline and sent < 1000:  # 2,000 messages: one page to check
            started = time.perf_counter()
            response = http.post(
                f"/v1/assistants/{name}/turns", json={"text": f"Note {sent}: buy bread {index}."}
            )
            finished = "event: turn_finished" in response.text
            turns.append(time.perf_counter() - started)
            if response.status_code != 200 or not finished:
                errors += 1
            sent += 1
            started = time.perf_counter()
            found = http.get(
                f"/v1/assistants/{name}/search", params={"q": "bread", "store": "recall"}
            )
            searches.append(time.perf_counter() - started)
            errors += found.status_code != 200
        stored = http.get(f"/v1/assistants/{name}/messages", params={"limit": 2000}).json()
        notes = {m["text"] for m in stored if m["role"] == "user"}
        replies = sum(1 for m in stored if m["role"] == "assistant")
        lost = sum(1 for n in range(sent) if f"Note {n}: buy bread {index}." not in notes)
        lost += abs(sent - replies)
        results[index] = {"turns": turns, "searches": searches, "errors": errors, "lost": lost}

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


if __name__ == "__main__":
    main()
