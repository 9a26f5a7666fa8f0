"""A turn killed with SIGKILL mid-step resumes at the last whole step, with nothing orphaned."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from agent_helpers import call, say

from engine import Mnemo
from engine.agent import Agent
from engine.llm import ScriptedModel

TESTS = Path(__file__).parent

CHILD = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {tests!r})
    from agent_helpers import call, say, search
    import engine.functions as tools
    from engine import Mnemo
    from engine.agent import Agent
    from engine.llm import ScriptedModel, ScriptedStep

    profile, marker, mode = sys.argv[1:4]

    def mark_and_wait():
        open(marker, "w").write(mode)
        time.sleep(120)

    if mode == "inside-function":
        import dataclasses
        real = tools.BY_NAME["archival_memory_insert"]
        def slow_insert(ctx, arguments):
            result = real.handler(ctx, arguments)  # the passage is already in LanceDB
            mark_and_wait()
            return result
        tools.BY_NAME["archival_memory_insert"] = dataclasses.replace(real, handler=slow_insert)

    def generating(_prompt):
        mark_and_wait()
        return say("never")

    mnemo = Mnemo.open(profile)
    model = ScriptedModel()
    agent = Agent(mnemo, model)
    if mode == "inside-function":
        model.enqueue([search("plans"), call("archival_memory_insert", content="half-done",
                                             request_heartbeat=True), say("never")])
        agent.send("Save my plans")
    elif mode == "generating":
        model.enqueue([search("plans"), ScriptedStep(generating)])
        agent.send("Find my plans")
    else:  # busy: many quick steps, killed at a random moment
        open(marker, "w").write(mode)
        for turn in range(1000):
            model.enqueue([
                call("archival_memory_insert", content=f"fact {{turn}}", request_heartbeat=True),
                search(f"fact {{turn}}"),
                call("core_memory_append", label="human", content=f"Likes {{turn}}.",
                     request_heartbeat=True),
                say(f"Done {{turn}}."),
            ])
            agent.send(f"Remember fact {{turn}}")
    """
).format(tests=str(TESTS))


def run_and_kill(tmp_path: Path, mode: str, delay: float = 0.0) -> Path:
    profile = tmp_path / "profile"
    marker = tmp_path / "marker"
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    child = subprocess.Popen([sys.executable, str(script), str(profile), str(marker), mode])
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert child.poll() is None, f"the child exited early with {child.returncode}"
        assert time.monotonic() < deadline, "the child never reached the kill point"
        time.sleep(0.05)
    time.sleep(delay)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert child.returncode == -signal.SIGKILL
    return profile


def check_consistent(mnemo: Mnemo) -> None:
    """Every call has its result; every passage the model saved names a committed call."""
    messages = mnemo.recall.recent(100_000)
    for index, message in enumerate(messages):
        if message.role == "function_call":
            assert messages[index + 1].role == "function_result", "orphaned function call"
        if message.role == "function_result":
            assert messages[index - 1].role == "function_call", "result without its call"
    call_ids = {m.id for m in messages if m.role == "function_call"}
    for passage in mnemo.archival.recent(100_000):
        if passage.origin == "model":
            assert passage.source.message_id in call_ids, "passage of an uncommitted step"
    for proposal in mnemo.proposals.all(100_000):
        assert int(proposal.cause_ref) in call_ids, "proposal of an uncommitted step"


def test_killed_inside_a_function_leaves_no_half_step(tmp_path, embedder):
    profile = run_and_kill(tmp_path, "inside-function")
    with Mnemo.open(profile, embedder=embedder) as mnemo:
        # The killed step's passage reached LanceDB, but its call never committed.
        assert mnemo.archival.search("half-done", mode="keyword").total == 1
        model = ScriptedModel()
        agent = Agent(mnemo, model)  # opening the agent drops that passage
        check_consistent(mnemo)
        assert mnemo.archival.search("half-done", mode="keyword").total == 0
        assert [m.role for m in mnemo.recall.recent(10)] == [
            "user",
            "function_call",
            "function_result",
        ]
        assert agent.interrupted
        model.enqueue(
            [
                call("archival_memory_insert", content="plans saved", request_heartbeat=True),
                say("Saved your plans."),
            ]
        )
        result = agent.resume()
        assert result is not None and result.reply == "Saved your plans."
        check_consistent(mnemo)


def test_killed_while_generating_resumes_after_the_last_whole_step(tmp_path, embedder):
    profile = run_and_kill(tmp_path, "generating")
    with Mnemo.open(profile, embedder=embedder) as mnemo:
        model = ScriptedModel()
        agent = Agent(mnemo, model)
        check_consistent(mnemo)
        last_call = mnemo.recall.recent(2)[0]
        assert json.loads(last_call.text)["function"] == "archival_memory_search"
        assert agent.interrupted
        model.enqueue([say("Here are your plans.")])
        assert agent.resume().reply == "Here are your plans."


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_killed_at_a_random_moment_stays_consistent(tmp_path, embedder, seed):
    profile = run_and_kill(tmp_path, "busy", delay=random.Random(seed).uniform(0.5, 3.0))
    with Mnemo.open(profile, embedder=embedder) as mnemo:
        model = ScriptedModel()
        agent = Agent(mnemo, model)
        check_consistent(mnemo)
        assert mnemo.recall.count() > 1, "killed before any work was done"
        model.enqueue([say("Back again.")] * 2)
        agent.resume()
        assert agent.send("Still there?").reply == "Back again."
        check_consistent(mnemo)
