"""How many everyday ways of asking to forget in the chat are read as requests, on the pool the
reader was shaped on and on the held-out one (tests/data/forget_requests.json): a request must
give what it asks to forget (compared without "my" and "the"), and no ordinary message may be
taken for one. One JSON line.

    uv run python tests/benchmarks/forget_requests.py
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from engine import forget  # noqa: E402


def topic(text: str | None) -> list[str]:
    return [w for w in re.findall(r"[\w']+", (text or "").lower()) if w not in ("my", "the")]


def main() -> None:
    pools = json.loads((REPO / "tests" / "data" / "forget_requests.json").read_text("utf-8"))
    result: dict[str, object] = {"benchmark": "forget_requests"}
    for pool in ("tuned", "held_out"):
        right = [m for m, what in pools[pool] if topic(forget.requested(m)) == topic(what)]
        result[pool] = f"{len(right)}/{len(pools[pool])}"
        result[f"{pool}_missed"] = [m for m, _ in pools[pool] if m not in right]
    taken = [m for m in pools["not_requests"] if forget.requested(m) is not None]
    result["false_requests"] = f"{len(taken)}/{len(pools['not_requests'])}"
    print(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    main()
