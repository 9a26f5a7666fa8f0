"""The fold and ablation tables of docs/benchmarks.md, as Markdown, from benchmark lines.

Each FILE holds the JSON line of one ``--folds`` run (``locomo_recall.py``,
``longmemeval_recall.py``; the last line of the file counts). Its label is NAME=FILE's NAME,
or the file's stem.

    uv run python tests/benchmarks/fold_tables.py LME=lme.json LoCoMo=locomo.json ...
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _line(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text().strip().splitlines()[-1])


def _metric(table: dict[str, Any]) -> str:
    return next(key for key in table if key.startswith("effect_of_")).removeprefix("effect_of_")


def fold_table(label: str, table: dict[str, Any]) -> list[str]:
    """One row per held fold and the mean: the chosen configuration's held score, as built's,
    and BM25's on the same questions."""
    metric = _metric(table)
    lines = [
        f"**{label}**, {metric}",
        "",
        "| fold | questions | chosen on the other folds | held | as built | BM25 |",
        "|---|---|---|---|---|---|",
    ]
    for row in table["folds"]:
        lines.append(
            f"| {row['fold']} | {row['n']} | {row['chosen']} | {row[f'held_{metric}']} "
            f"| {row[f'as_built_{metric}']} | {row.get(f'bm25_{metric}', '')} |"
        )
    mean = table["held_fold_mean"]
    lines.append(
        f"| mean | {sum(r['n'] for r in table['folds'])} | | **{mean[f'held_{metric}']}** "
        f"| {mean[f'as_built_{metric}']} | {mean.get(f'bm25_{metric}', '')} |"
    )
    return [*lines, ""]


def ablation_table(columns: dict[str, dict[str, Any]]) -> list[str]:
    """Each rule switched off: the held-fold change, mean (lowest .. highest fold), per column.
    Negative: the rule helps."""
    rules: dict[str, None] = {}  # in the order the runs list them
    for table in columns.values():
        rules.update({name: None for name in table[f"effect_of_{_metric(table)}"]})
    header = " | ".join(f"{label} ({_metric(table)})" for label, table in columns.items())
    lines = [f"| switched off | {header} |", "|---" * (len(columns) + 1) + "|"]
    for name in (name for name in rules if name.startswith("-")):
        cells = []
        for table in columns.values():
            effect = table[f"effect_of_{_metric(table)}"].get(name)
            cells.append(
                f"{effect['mean']:+.1f} ({effect['min']:+.1f} .. {effect['max']:+.1f})"
                if effect
                else "n/a"
            )
        lines.append(f"| {name[1:]} | {' | '.join(cells)} |")
    return [*lines, ""]


def main(arguments: list[str]) -> None:
    runs: dict[str, dict[str, Any]] = {}
    for argument in arguments:
        label, _, file = argument.rpartition("=")
        runs[label or Path(file).stem] = _line(Path(file))
    out = ["### Held folds", ""]
    for label, line in runs.items():
        out += fold_table(label, line)
    out += ["### Paraphrase sets (questions whose evidence shares at most one word with them)", ""]
    for label, line in runs.items():
        out += fold_table(f"{label}, paraphrased", line["paraphrased"])
    out += ["### Ablations", ""]
    columns = {label: line for label, line in runs.items()}
    columns.update({f"{label}, paraphrased": line["paraphrased"] for label, line in runs.items()})
    out += ablation_table(columns)
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1:])
