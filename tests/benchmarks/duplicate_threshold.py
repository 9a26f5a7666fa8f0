"""Which rule says two notes are the same one? Measured on everyday notes.

For each of the 64 hand-written notes of ``paraphrases.PAIRS`` we make
- near-duplicates a person or a model writes when saving the same thing twice: other case, other
  punctuation, an article more or less, a "Note:" in front, spaces;
- one-word changes that say something else: one content word replaced by another note's word
  (a number, a name, a colour...).
Then, for each rule, how many near-duplicates it recognises, how many one-word changes it wrongly
takes for duplicates, and how many pairs among the 2,000 distinct everyday notes
(``paraphrases.distractors``) it would merge. One JSON line.

    uv run python tests/benchmarks/duplicate_threshold.py
"""

from __future__ import annotations

import itertools
import random

import numpy as np
from _common import emit
from paraphrases import PAIRS, distractors

from engine.embed import default_embedder
from engine.memory.archival import duplicate_key
from engine.memory.search import _STOPWORDS, query_terms

THRESHOLDS = (0.90, 0.95, 0.98)


def near_duplicates(note: str, rng: random.Random) -> list[str]:
    variants = [
        note.lower(),
        note.rstrip(".") + "!",
        "Note: " + note,
        "  " + note.replace(" ", "  ") + " ",
        note.replace(" the ", " ", 1) if " the " in note else "The " + note[0].lower() + note[1:],
    ]
    return [v for v in variants if v != note]


def _content(word: str) -> bool:
    """A word that carries meaning: not a stop word ("is", "at", "the")."""
    return any(term not in _STOPWORDS for term in query_terms(word))


def one_word_changes(note: str, others: list[str], rng: random.Random) -> list[str]:
    words = note.split()
    content = [i for i, w in enumerate(words) if _content(w)]
    changed = []
    for index in rng.sample(content, min(3, len(content))):
        replacement = rng.choice([w for o in others for w in o.split() if _content(w)])
        if replacement.strip(".,").lower() != words[index].strip(".,").lower():
            changed.append(" ".join(words[:index] + [replacement] + words[index + 1 :]))
    return changed


def main() -> None:
    rng = random.Random(11)
    notes = [note for note, _query in PAIRS]
    embedder = default_embedder()
    dups = [(note, v) for note in notes for v in near_duplicates(note, rng)]
    changes = [(note, v) for note in notes for v in one_word_changes(note, notes, rng)]
    others = distractors()

    def cosines(pairs: list[tuple[str, str]]) -> np.ndarray:
        a = embedder.embed([p[0] for p in pairs])
        b = embedder.embed([p[1] for p in pairs])
        return np.sum(a * b, axis=1)

    dup_cos, change_cos = cosines(dups), cosines(changes)
    vectors = embedder.embed(others)
    similarity = vectors @ vectors.T
    upper = similarity[np.triu_indices(len(others), k=1)]
    result = {
        "benchmark": "duplicate_threshold",
        "near_duplicates": len(dups),
        "one_word_changes": len(changes),
        "distinct_notes": len(others),
    }
    for threshold in THRESHOLDS:
        result[f"cosine>={threshold}"] = {
            "duplicates_found": round(float(np.mean(dup_cos >= threshold)), 3),
            "changes_merged": round(float(np.mean(change_cos >= threshold)), 3),
            "distinct_pairs_merged": int(np.sum(upper >= threshold)),
        }
    keys = [duplicate_key(o) for o in others]
    result["same_words_in_order"] = {
        "duplicates_found": round(
            sum(duplicate_key(a) == duplicate_key(b) for a, b in dups) / len(dups), 3
        ),
        "changes_merged": round(
            sum(duplicate_key(a) == duplicate_key(b) for a, b in changes) / len(changes), 3
        ),
        "distinct_pairs_merged": sum(1 for a, b in itertools.combinations(keys, 2) if a == b),
    }
    emit(result)


if __name__ == "__main__":
    main()
