"""The fold and ablation tables of docs/benchmarks.md, as Markdown, from benchmark lines.

Each FILE holds the JSON line of one ``--folds`` run (``locomo_recall.py``,
``longmemeval_recall.py``; the last line of the file counts). Its label is NAME=FILE's NAME,
or the file's stem. A run ``--build-without`` a rule is not a table of its own: it adds that
rule's row to the run of the same benchmark, tables and questions built with it.

    uv run python tests/benchmarks/fold_tables.py [--ablations] LME=lme.json LoCoMo=locomo.json ...

``--ablations``: the ablation tables only.
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


def _kind(line: dict[str, Any]) -> tuple[Any, ...]:
    return line["benchmark"], line.get("tables"), bool(line.get("in_person"))


def with_index_time(base: dict[str, Any], without: dict[str, Any], rule: str) -> None:
    """Add to ``base``'s effects that of a profile built without ``rule`` (each fold's as built,
    one run against the other; nothing is chosen there)."""
    metric = _metric(base)
    deltas = [
        other[f"as_built_{metric}"] - own[f"as_built_{metric}"]
        for own, other in zip(base["folds"], without["folds"], strict=True)
    ]
    base[f"effect_of_{metric}"][f"-{rule}"] = {
        "mean": round(sum(deltas) / len(deltas), 1),
        "min": round(min(deltas), 1),
        "max": round(max(deltas), 1),
    }


def main(arguments: list[str]) -> None:
    only_ablations = "--ablations" in arguments
    arguments = [argument for argument in arguments if argument != "--ablations"]
    runs: dict[str, dict[str, Any]] = {}
    index_time = []
    for argument in arguments:
        label, _, file = argument.rpartition("=")
        line = _line(Path(file))
        if line.get("built_without"):
            index_time.append(line)
        else:
            runs[label or Path(file).stem] = line
    for without in index_time:  # a run built without a rule: a row of its base's table
        for base in runs.values():
            if _kind(base) == _kind(without):
                rule = f"{without['built_without']} (index time)"
                with_index_time(base, without, rule)
                with_index_time(base["paraphrased"], without["paraphrased"], rule)
    out = []
    if not only_ablations:
        out += ["#### Held folds", ""]
        for label, line in runs.items():
            out += fold_table(label, line)
        out += ["#### Paraphrase sets", ""]
        for label, line in runs.items():
            out += fold_table(f"{label}, paraphrased", line["paraphrased"])
    out += ["#### Ablations", ""]
    out += ablation_table(runs)
    out += ablation_table(
        {f"{label}, paraphrased": line["paraphrased"] for label, line in runs.items()}
    )
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1:])
