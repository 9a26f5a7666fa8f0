"""`mnemo serve` under a hostile user: does another user's memory stay as quick as when quiet?

`mnemo serve` runs as the operator starts it, in a process of its own, with an OpenAI-compatible
model server on 127.0.0.1 that misbehaves: it trickles one chunk a second and never finishes.
First alice's requests (list her assistants, search her memory, read her core blocks) are timed
on a quiet server. Then mallory attacks for ``--seconds``:
- turn after turn on three assistants, each held by the model server (two run, the third is
  refused with 429);
- clients that open a turn's stream and never read it, then go away;
- 40 sockets that send nothing, and 20 that send a header a byte at a time;
- bodies of 50 MB sent chunked without a token;
while alice's same requests are timed again. One JSON line: the quiet and attacked p50/p95 (ms),
their ratio (the goal: attacked p95 within 2x quiet), and what mallory's requests got.

    uv run python tests/benchmarks/server_fairness.py [--seconds 30] [--requests 150]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
from _common import emit, percentile

ROOT = Path(__file__).resolve().parents[2]


class TricklingModelServer:
    """A model server that answers every chat request with one chunk a second, forever."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
                self.rfile.read(int(self.headers.get("content-length") or 0))
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                chunk = {"choices": [{"index": 0, "delta": {"content": "."}}]}
                with contextlib.suppress(OSError):
                    while True:
                        self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                        self.wfile.flush()
                        time.sleep(1.0)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def cli(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "engine.cli", *args], capture_output=True, text=True, check=True
    )
    return done.stdout


def alice_requests(client: httpx.Client, count: int) -> list[float]:
    """Alice's memory requests, each timed in ms (a failed one counts as 10 s)."""
    times = []
    paths = [
        ("GET", "/v1/assistants", None),
        ("GET", "/v1/assistants/home/search?q=garden%20shed", None),
        ("POST", "/v1/assistants/home/call", {"store": "core", "method": "blocks"}),
    ]
    for i in range(count):
        method, path, body = paths[i % len(paths)]
        started = time.perf_counter()
        try:
            answer = client.request(method, path, json=body, timeout=10)
            ok = answer.status_code == 200
        except httpx.HTTPError:
            ok = False
        times.append((time.perf_counter() - started) * 1000 if ok else 10_000.0)
        time.sleep(0.02)
    return times


def attack(url: str, token: str, port: int, stop: threading.Event, got: Counter) -> None:
    headers = {"Authorization": f"Bearer {token}"}

    def turns(assistant: str) -> None:
        with httpx.Client(base_url=url, headers=headers, timeout=30) as client:
            while not stop.is_set():
                try:
                    with client.stream(
                        "POST", f"/v1/assistants/{assistant}/turns", json={"text": "Hi"}
                    ) as answer:
                        got[f"turn {answer.status_code}"] += 1
                        if answer.status_code == 200:
                            for _line in answer.iter_lines():  # held by the model server
                                if stop.is_set():
                                    break
                        else:
                            time.sleep(0.2)
                except httpx.HTTPError:
                    got["turn dropped"] += 1

    def walk_away() -> None:
        while not stop.is_set():
            with (
                contextlib.suppress(httpx.HTTPError),
                httpx.Client(base_url=url, headers=headers, timeout=5) as client,
                client.stream("POST", "/v1/assistants/spare/turns", json={"text": "Hi"}) as answer,
            ):
                got[f"abandoned {answer.status_code}"] += 1
            time.sleep(0.5)

    def sockets() -> None:
        held: list[socket.socket] = []
        while not stop.is_set():
            with contextlib.suppress(OSError):
                for _ in range(40 - len(held)):
                    held.append(socket.create_connection(("127.0.0.1", port)))
                for sock in held[:20]:
                    sock.sendall(b"G")  # a header a byte at a time
            alive = []
            for sock in held:
                sock.setblocking(False)
                try:
                    closed = sock.recv(1) == b""
                except BlockingIOError:
                    closed = False
                except OSError:
                    closed = True
                if closed:
                    got["slow socket closed by the server"] += 1
                    sock.close()
                else:
                    sock.setblocking(True)
                    alive.append(sock)
            held = alive
            time.sleep(1.0)
        for sock in held:
            sock.close()

    def bodies() -> None:
        def chunks() -> Iterator[bytes]:
            for _ in range(50):
                yield b"x" * 2**20

        while not stop.is_set():
            try:
                answer = httpx.post(url + "/v1/assistants", content=chunks(), timeout=10)
                got[f"body {answer.status_code}"] += 1
            except httpx.HTTPError:
                got["body cut off"] += 1
            time.sleep(0.5)

    workers = [threading.Thread(target=turns, args=(name,)) for name in ("one", "two", "three")]
    workers += [threading.Thread(target=walk_away), threading.Thread(target=sockets)]
    workers += [threading.Thread(target=bodies)]
    for worker in workers:
        worker.daemon = True
        worker.start()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--requests", type=int, default=150)
    args = parser.parse_args()
    model = TricklingModelServer()
    with tempfile.TemporaryDirectory(prefix="mnemo-fairness-") as folder:
        root = Path(folder) / "server"
        tokens = {
            user: cli("server-users", "--root", str(root), "add", user).strip().splitlines()[-1]
            for user in ("alice", "mallory")
        }
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        server = subprocess.Popen(
            [sys.executable, "-m", "engine.cli", "serve", "--root", str(root), "--port",
             str(port), "--model", "openai:trickle", "--base-url", model.url,
             "--rate", "1000", "--burst", "1000"],  # alice's pace is not what is measured
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                with contextlib.suppress(httpx.HTTPError):
                    httpx.get(url + "/v1/version", timeout=1)
                    break
                time.sleep(0.2)
            alice = httpx.Client(
                base_url=url, headers={"Authorization": f"Bearer {tokens['alice']}"}
            )
            alice.post("/v1/assistants", json={"name": "home"})
            for name in ("one", "two", "three", "spare"):
                httpx.post(
                    url + "/v1/assistants",
                    json={"name": name},
                    headers={"Authorization": f"Bearer {tokens['mallory']}"},
                )
            alice_requests(alice, 20)  # warm: the assistant opened, the embedder loaded
            quiet = alice_requests(alice, args.requests)
            stop = threading.Event()
            got: Counter = Counter()
            attack(url, tokens["mallory"], port, stop, got)
            time.sleep(3)  # the attack under way
            attacked: list[float] = []
            until = time.monotonic() + args.seconds
            while time.monotonic() < until:
                attacked += alice_requests(alice, 30)
            stop.set()
            failed = sum(1 for ms in attacked if ms >= 10_000)
        finally:
            server.terminate()
            server.wait(timeout=30)
    quiet_p95, attacked_p95 = percentile(quiet, 0.95), percentile(attacked, 0.95)
    emit(
        {
            "benchmark": "server_fairness",
            "seconds": args.seconds,
            "quiet_ms": {"p50": round(statistics.median(quiet), 1), "p95": round(quiet_p95, 1)},
            "attacked_ms": {
                "p50": round(statistics.median(attacked), 1),
                "p95": round(attacked_p95, 1),
                "n": len(attacked),
                "failed": failed,
            },
            "p95_ratio": round(attacked_p95 / max(quiet_p95, 1e-6), 2),
            "goal_ratio": 2.0,
            "mallory_got": dict(got),
        }
    )


if __name__ == "__main__":
    main()
