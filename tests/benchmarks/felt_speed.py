"""Speed as a person feels it, against llama.cpp alone, in one run.

Run by run, alternating:
- ``mnemo chat -m "Hello! What's a good name for a cat?"`` on a fresh profile, and on a profile
  with 10,000 messages and 10,000 passages (built once with stand-in vectors of the real
  embedder's name and size, kept in ``~/.cache/mnemo-benchmarks``, copied for each run);
- the raw process: a Python that imports llama-cpp-python, loads the bundled model and writes one
  reply to the same prompt Mnemo's first turn sends (captured from a real turn before the runs:
  its system prompt, memory and message) with the same token limit, greedy as Mnemo's local
  model is;
- the window's launch to "chat ready" (``startup.py``'s measure: the model loaded in the full
  window), and the raw model load;
- the window launched to ask one thing: the message is typed as soon as a chat input takes it
  (the first window's; before it had one, the full window's once ready): when the chat takes a
  message, against the raw load, and the launch to the whole reply, against the raw process's
  import, load and reply.

A local model keeps its state after the system prompt between processes
(``engine.llm.prompt_states``), so a ``mnemo chat -m`` after the first evaluates only the
message. The first process after the system prompt changed (core memory, or the date) has none:
each run also times a fresh profile's turn with every kept state removed first ("without kept
state"). Before each other run only the system prompt's state is left: the state a run keeps
after its reply would hold the next run's whole prompt, since every run asks the same.

Each ``mnemo`` writes its moments (``engine.moments``), which give where the time goes: imports,
profile open, the model's load (beside the open), the turn up to the model's step (recall, the
window), prompt evaluation, generation, the memory step after the reply, closing, and exit.

Targets (issue "speed as felt"): ``mnemo chat -m`` <= 1.5x the raw process on both profiles;
chat ready <= 1.5x the raw load, window <= 0.5 s.

    uv run python tests/benchmarks/felt_speed.py [--runs 5] [--tree OTHER_CHECKOUT]
        [--no-window] [--no-bytecode-cache]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ClusteredVectors, TextGenerator, emit
from startup import launched, one_start

from engine.profile import forget_prompt_states, prompt_states_folder

MESSAGE = "Hello! What's a good name for a cat?"
CACHE = Path.home() / ".cache" / "mnemo-benchmarks" / "felt-speed"
BIG = 10_000
# Raised when the way Mnemo keeps a profile changes, so that the template is built anew as
# Mnemo now builds it (2: its passages are in the keyword index, as upkeep now leaves them).
TEMPLATE_VERSION = 2
# Moments in the order a one-shot turn passes them, and the name of the time up to each.
PHASES = [
    ("started", "imports"),
    ("opened", "profile open (the model loading beside it)"),
    ("loaded", "model load left to wait for"),
    ("step", "turn before the model (recall, the window)"),
    ("first-token", "prompt evaluation"),
    ("replied", "generation"),
    ("turn-finished", "memory step and the turn's end"),
    ("closing", "after the turn"),
]

RAW = """
import json, sys, time
started = time.perf_counter()
import llama_cpp
imported = time.perf_counter()
if " amx_int8" in open("/proc/cpuinfo").read():  # as engine.hardware.keep_llama_off_amx does
    default = llama_cpp.llama_cpp.llama_model_default_params
    def without_extra_buffers():
        params = default()
        params.use_extra_bufts = False
        return params
    llama_cpp.llama_cpp.llama_model_default_params = without_extra_buffers
prompt = json.load(open(sys.argv[1]))
llm = llama_cpp.Llama(prompt["model"], n_ctx=prompt["context"], n_threads=prompt["threads"],
                      flash_attn=True, verbose=False)
loaded = time.perf_counter()
if prompt.get("load_only"):
    sys.exit(0)
out = llm.create_chat_completion(messages=prompt["messages"], max_tokens=prompt["max_tokens"],
                                 temperature=0.0)
done = time.perf_counter()
print(json.dumps({"import_s": imported - started, "load_s": loaded - imported,
                  "reply_s": done - loaded, "tokens": out["usage"]}))
"""


# The window as a person who opens it to ask one thing: the message is typed and sent as soon
# as a chat input takes it (the first window's, or in older code the full window's once ready),
# and the moment the whole reply has arrived is written.
ASK_AT_LAUNCH = """
import sys
from PySide6.QtCore import Qt, QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from engine import moments

message = sys.argv[1]
state = {"sent": False, "watched": set()}


def ask():
    for widget in QApplication.topLevelWidgets():
        chat = getattr(widget, "chat", None)
        if chat is not None and id(widget) not in state["watched"]:
            state["watched"].add(id(widget))
            widget.bridge.message_sent.connect(lambda _event: moments.mark("answered"))
        if state["sent"] or not widget.isVisible():
            continue
        typing = getattr(widget, "input", None)  # the first window's chat input
        if typing is None and chat is not None and chat.ready:
            typing = chat.input
        if typing is not None:
            QTest.keyClicks(typing, message)
            QTest.keyClick(typing, Qt.Key.Key_Return)
            state["sent"] = True
            moments.mark("sent")


app = QApplication([sys.argv[0]])
poll = QTimer()
poll.timeout.connect(ask)
poll.start(5)
sys.argv = ["mnemo"]
from desktop.launcher import run_and_exit

run_and_exit()
"""


def ask_at_launch(tree: str | None) -> dict[str, float]:
    """Launch the window on a fresh profile and ask one thing at once: the moments, in seconds
    from the launch, up to the whole reply."""
    asking = [sys.executable, "-c", ASK_AT_LAUNCH, MESSAGE]
    with launched({"QT_QPA_PLATFORM": "offscreen"}, asking, tree, "answered") as (moments, _):
        return moments


def system_state_only() -> None:
    """Leave only the kept state of the system prompt (the one holding the fewest tokens).
    Every run asks the same message, and a state kept after an earlier run's reply would hold
    this run's whole prompt: a person's next message is a new one."""
    listed = sorted(prompt_states_folder().glob("*.tokens"), key=lambda path: path.stat().st_size)
    for tokens in listed[1:]:
        tokens.unlink()
        tokens.with_suffix(".state").unlink(missing_ok=True)


def big_profile() -> Path:
    """A profile with 10,000 messages (in 100 conversations) and 10,000 passages, built once."""
    folder = CACHE / f"profile-{BIG}-{TEMPLATE_VERSION}"
    if (folder / "done").exists():
        return folder
    from engine.embed.minilm import MiniLMEmbedder
    from engine.memory.recall import NewMessage
    from engine.mnemo import Mnemo

    shutil.rmtree(folder, ignore_errors=True)
    texts = TextGenerator(seed=3)
    vectors = ClusteredVectors(MiniLMEmbedder.name, MiniLMEmbedder.dim)
    with Mnemo.open(folder / "profile", embedder=vectors) as mnemo:  # type: ignore[arg-type]
        for _ in range(100):
            conversation = mnemo.conversations.start()
            said = texts.sentences(BIG // 100)
            mnemo.recall.add_many(
                [
                    NewMessage(
                        "user" if i % 2 == 0 else "assistant", text, conversation_id=conversation
                    )
                    for i, text in enumerate(said)
                ]
            )
        mnemo.archival.insert_many([{"text": text} for text in texts.sentences(BIG)])
        mnemo.conversations.start()  # the one-shot turn starts in an empty conversation
        mnemo.wait_for_background_work()
    (folder / "done").write_text("built\n")
    return folder


def captured_prompt(folder: Path) -> dict[str, object]:
    """What Mnemo's model is given on a fresh profile's first turn, for the raw process."""
    from engine.agent import Agent
    from engine.llm.gguf_file import bundled_model_path
    from engine.llm.local import LlamaModel
    from engine.mnemo import Mnemo

    seen: list[list[dict[str, str]]] = []
    model = LlamaModel()
    original = model._chat
    model._chat = lambda prompt: seen.append(original(prompt)) or seen[-1]  # type: ignore[method-assign]
    with Mnemo.open(folder) as mnemo:
        Agent(mnemo, model).send(MESSAGE)
    return {
        "model": str(bundled_model_path()),
        "context": model.context_length,
        "threads": os.cpu_count() or 1,
        "max_tokens": model.max_step_tokens,
        "messages": seen[0],
    }


def mnemo_turn(command: list[str], home: Path, tree: str | None) -> dict[str, float]:
    """One ``mnemo chat -m``: its wall time and its moments, in seconds from its start."""
    env = {
        **os.environ,
        "MNEMO_HOME": str(home),
        "MNEMO_STARTUP_TRACE": "1",
        **({"PYTHONPATH": tree} if tree else {}),
    }
    started = time.time()
    done = subprocess.run(
        [*command, "chat", "-m", MESSAGE], env=env, capture_output=True, text=True, cwd=tree
    )
    ended = time.time()
    if done.returncode != 0:
        raise SystemExit(f"mnemo chat failed: {done.stderr[-2000:]}")
    moments = {"exit": ended - started}
    for line in done.stderr.splitlines():
        if line.startswith("mnemo-startup "):
            _, moment, when = line.split()
            moments.setdefault(moment, float(when) - started)  # the first "step" counts
    return moments


def raw(prompt_file: Path) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", RAW, str(prompt_file)], check=True, capture_output=True)
    return time.perf_counter() - started


def breakdown(runs: list[dict[str, float]]) -> dict[str, float]:
    """Median seconds of each phase (from the previous moment that run reached)."""
    phases: dict[str, list[float]] = {}
    for run in runs:
        previous = 0.0
        for moment, name in [*PHASES, ("exit", "exit")]:
            if moment in run:
                phases.setdefault(name, []).append(run[moment] - previous)
                previous = run[moment]
    return {name: round(statistics.median(values), 2) for name, values in phases.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tree", help="another checkout to measure the same way")
    parser.add_argument("--no-window", action="store_true", help="leave the window out")
    parser.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="every process compiles its modules anew (PYTHONDONTWRITEBYTECODE=1)",
    )
    args = parser.parse_args()
    # Python keeps compiled modules beside their sources unless told not to. This machine's
    # environment tells it not to (PYTHONDONTWRITEBYTECODE=1), which a person's does not: then
    # every start compiles SQLAlchemy, LanceDB and the rest anew, about 1.6 s of each mnemo.
    # The runs are a person's unless asked otherwise, Mnemo and the raw process alike.
    if args.no_bytecode_cache:  # none kept, and none read from where earlier runs kept them
        os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    # The console script's own entry, from this checkout's `mnemo` or from the other tree.
    command = (
        [sys.executable, "-c", "from desktop.launcher import run_and_exit; run_and_exit()"]
        if args.tree
        else [str(Path(sys.executable).parent / "mnemo")]
    )
    template = big_profile()
    work = Path(tempfile.mkdtemp(prefix="mnemo-felt-speed-"))
    if args.no_bytecode_cache:
        os.environ["PYTHONPYCACHEPREFIX"] = str(work / "no-bytecode")  # stays empty
    try:
        prompt = captured_prompt(work / "capture")
        prompt_file = work / "prompt.json"
        prompt_file.write_text(json.dumps(prompt))
        load_file = work / "load.json"
        load_file.write_text(json.dumps({**prompt, "load_only": True}))
        display = {"QT_QPA_PLATFORM": "offscreen"}
        mnemo_turn(command, work / "warm-up", args.tree)  # compiled modules kept, files cached
        raw(prompt_file)
        fresh, cold, big, raws, windows, loads, asked = [], [], [], [], [], [], []
        for run in range(args.runs):
            forget_prompt_states()  # as after core memory (or the date) changed
            cold.append(mnemo_turn(command, work / f"cold-{run}", args.tree))
            system_state_only()
            fresh.append(mnemo_turn(command, work / f"fresh-{run}", args.tree))
            system_state_only()
            copy = work / f"big-{run}"
            shutil.copytree(template / "profile", copy)
            big.append(mnemo_turn(command, copy, args.tree))
            shutil.rmtree(copy)
            raws.append(raw(prompt_file))
            if not args.no_window:
                windows.append(one_start(display, command, args.tree))
                system_state_only()
                asked.append(ask_at_launch(args.tree))
            loads.append(raw(load_file))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    raw_s = statistics.median(raws)
    fresh_s = statistics.median(run["exit"] for run in fresh)
    cold_s = statistics.median(run["exit"] for run in cold)
    big_s = statistics.median(run["exit"] for run in big)
    load_s = statistics.median(loads)
    result: dict[str, object] = {
        "benchmark": "felt_speed",
        "runs": args.runs,
        "tree": args.tree or "this checkout",
        "bytecode_cache": not args.no_bytecode_cache,
        "raw_turn_s_p50": round(raw_s, 2),
        "chat_fresh_s_p50": round(fresh_s, 2),
        "chat_10k_s_p50": round(big_s, 2),
        "ratio_fresh": round(fresh_s / raw_s, 2),
        "chat_fresh_without_kept_state_s_p50": round(cold_s, 2),
        "ratio_fresh_without_kept_state": round(cold_s / raw_s, 2),
        "ratio_10k": round(big_s / raw_s, 2),
        "breakdown_fresh_s": breakdown(fresh),
        "breakdown_fresh_without_kept_state_s": breakdown(cold),
        "breakdown_10k_s": breakdown(big),
        "raw_load_s_p50": round(load_s, 2),
    }
    if windows:
        ready = statistics.median(w[1] for w in windows)
        reply = statistics.median(a["answered"] for a in asked)
        takes = statistics.median(a["sent"] for a in asked)  # typed as soon as an input took it
        result |= {
            "window_shown_s_p50": round(statistics.median(w[0] for w in windows), 2),
            "chat_ready_s_p50": round(ready, 2),
            "ratio_ready": round(ready / load_s, 2),
            "chat_takes_a_message_s_p50": round(takes, 2),
            "ratio_takes_a_message": round(takes / load_s, 2),
            "reply_after_launch_s_p50": round(reply, 2),
            "ratio_reply_after_launch": round(reply / raw_s, 2),
        }
    result["targets"] = {"ratio": 1.5, "ratio_ready": 1.5, "window_shown_s": 0.5}
    emit(result)


if __name__ == "__main__":
    main()
