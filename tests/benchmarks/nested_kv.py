"""The MemGPT paper's nested key-value task, through `archival_memory_search`. One JSON line out.

The 140 key-value pairs go into archival memory as "Key-value pair: key = K, value = V". For every
ordering at nesting levels 0-4 (files 1_levels ... 5_levels, 100 chains each), the values along
the chain are replaced by the next pair's key, and the chain is followed as the agent would:
search archival memory for "key = <current UUID>", take the first result, read its value, repeat.
A chain counts only if every hop's first result is the right pair. Target: 100% at every level.

The query names the key ("key = ...") because a nested UUID appears in two passages (as one
pair's value and the next pair's key); an agent that knows the format asks for the key.

    uv run python tests/benchmarks/nested_kv.py [--data ../shared/data] [--levels 0 1 2 3 4]
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import tempfile
import time
from pathlib import Path

from _common import REPO, emit

from engine import Mnemo
from engine.functions import search_archival

PAIR = re.compile(r"key = ([0-9a-f-]{36}), value = ([0-9a-f-]{36})")


def text_of(key: str, value: str) -> str:
    return f"Key-value pair: key = {key}, value = {value}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--levels", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    args = parser.parse_args()
    folder = args.data / "memgpt_nested_kv"
    with gzip.open(folder / "kv-retrieval-140_keys.jsonl.gz", "rt") as file:
        pairs = [tuple(pair) for pair in json.loads(file.readline())["ordered_kv_records"]]
    results: dict[str, float] = {}
    hops_total = hops_right = 0
    search_ms: list[float] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as workdir, Mnemo.open(workdir) as mnemo:
        ids = mnemo.archival.insert_many([text_of(key, value) for key, value in pairs])
        for level in args.levels:
            lines = folder / f"random_orderings_100_samples_140_indices_{level + 1}_levels.jsonl"
            chains = [json.loads(line) for line in lines.read_text().splitlines() if line.strip()]
            solved = 0
            for chain in chains:
                records = [list(pair) for pair in pairs]
                for here, following in zip(chain, chain[1:], strict=False):
                    records[here][1] = records[following][0]  # the value points at the next key
                changed = list(chain[:-1])
                for index in changed:  # only the chain's pairs differ from the originals
                    mnemo.archival.update(ids[index], text_of(*records[index]))
                current = records[chain[0]][0]
                right = True
                for index in chain:
                    began = time.perf_counter()
                    hits = search_archival(mnemo, f"key = {current}")
                    search_ms.append((time.perf_counter() - began) * 1000)
                    hops_total += 1
                    found = PAIR.search(hits[0].text) if hits.hits else None
                    if found is None or found.group(1) != records[index][0]:
                        right = False
                        break
                    hops_right += 1
                    current = found.group(2)
                if right and current == records[chain[-1]][1]:
                    solved += 1
                for index in changed:
                    mnemo.archival.update(ids[index], text_of(*pairs[index]))
            results[f"level_{level}"] = round(100 * solved / len(chains), 1)
    search_ms.sort()
    emit(
        {
            "benchmark": "nested_kv",
            "accuracy_percent_by_nesting_level": results,
            "hops_right_first": f"{hops_right}/{hops_total}",
            "search_ms_p50": round(search_ms[len(search_ms) // 2], 1),
            "seconds": round(time.perf_counter() - started, 1),
        }
    )


if __name__ == "__main__":
    main()
