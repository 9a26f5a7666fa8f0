"""What every search returns, and how keyword and vector rankings are fused into one."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from typing import Any, Generic, Literal, TypeVar

import numpy as np

from engine import clock
from engine.errors import InputError

T = TypeVar("T")

SearchMode = Literal["hybrid", "keyword", "semantic"]

# Weighted fusion of per-query z-scores beat reciprocal-rank fusion on conversation turns
# (measured on LoCoMo; the team's notes are in ../shared/FINDINGS.md, outside this repository).
# With neighbours in the keyword index, words weigh a little more. On held folds
# (docs/benchmarks.md) LoCoMo's choose 0.7 and LongMemEval's 0.4: 0.6 stays between them.
KEYWORD_WEIGHT = 0.6
# How similar is "related"? A fixed cosine floor cannot say: a query's cosine to unrelated text
# varies from one query to the next (its mean over everyday sentences ranges from 0.0 to 0.12 and
# its spread from 0.06 to 0.10 with MiniLM), and a note asked for in other words can sit at 0.2.
# So each query is compared with everyday sentences on unrelated subjects
# (resources/search/background.txt), and a vector hit's relevance is how many standard deviations
# it stands above those. Below RELEVANCE_FLOOR it is dropped (a search for something not there
# comes back empty in a small collection); below STRONG_RELEVANCE, and sharing few of the query's
# words, it is shown as a weak match. Measured with tests/benchmarks/paraphrase_search.py: 98% of
# paraphrased targets stand 2.0 above the background (a fixed 0.25 dropped 6 of 64), and the best
# hits of questions about things never stored stood at most 4.0 above it.
RELEVANCE_FLOOR = 2.0
STRONG_RELEVANCE = 4.5
# How many candidates each side contributes before fusion (both grow for deep pages). Keyword
# candidates are cheap (SQLite FTS5); each vector candidate costs an exact re-rank read. 60 vector
# candidates: LoCoMo frac@10 76.5 against 75.7 with 30 (100: 76.6, but +5 ms per fused search at
# 100k messages; 60 costs nothing measurable there).
KEYWORD_CANDIDATES = 100
SEMANTIC_CANDIDATES = 60
# A hybrid search runs its keyword half here while the calling thread embeds the query and searches
# the vectors (SQLite, LanceDB and ONNX Runtime all let go of the GIL while they work).
KEYWORD_SEARCHES = ThreadPoolExecutor(max_workers=4, thread_name_prefix="mnemo-keyword-search")


# A question in the first person ("What did I buy?", "my sister") asks about the user, whose own
# turns hold the answer; an assistant's long replies that merely discuss the topic need this much
# more evidence (in fused z-score units) to rank above them: the user's turns come first unless an
# assistant's is a far better match. "you"/"your" without "I" asks about what the assistant said,
# and the preference turns round. Questions with both, or neither (a third-person question, a
# model's keyword query), rank both roles alike. Held folds (docs/benchmarks.md), without it:
# LongMemEval dev all@10 -12.7; LoCoMo asked in the first person (``--in-person``) frac@10 -3.3;
# LoCoMo's own third-person questions never name a role.
ROLE_PRIOR = 3.0
_FIRST_PERSON = frozenset("i me my mine myself".split())
_SECOND_PERSON = frozenset("you your yours yourself".split())


def addressed_role(query: str) -> str | None:
    """'user' for a first-person question, 'assistant' for one about "you", else None."""
    words = {word.lower() for word in _WORD.findall(query)}
    first, second = bool(words & _FIRST_PERSON), bool(words & _SECOND_PERSON)
    if first != second:
        return "user" if first else "assistant"
    return None


def prefer_role(
    ranked: list[tuple[T, float]], roles: dict[T, str], role: str
) -> list[tuple[T, float]]:
    """Re-rank fused candidates so that those of another role than ``role`` lose ROLE_PRIOR."""
    adjusted = [
        (key, score - (ROLE_PRIOR if roles.get(key, role) != role else 0.0))
        for key, score in ranked
    ]
    return sorted(adjusted, key=lambda item: item[1], reverse=True)


def relevance(similarities: np.ndarray, background: np.ndarray) -> np.ndarray:
    """How far each cosine similarity stands above the query's similarities to unrelated text,
    in standard deviations of those."""
    return (similarities - background.mean()) / max(float(background.std()), 1e-6)


def word_coverage(text: str, query: str) -> float:
    """The share of the query's content words that ``text`` contains (stems compared)."""
    return _coverage(text, _coverage_terms(query))


def _word_parts(terms: Sequence[str]) -> list[tuple[str, bool]]:
    """(what to find, whether it may continue as a longer word) per term: the one rule for when
    a word of a text is a query word, a crude stem match ("allergic" ~ "allergy", the same first
    five letters); shorter words must match exactly."""
    return [(term[:5], True) if len(term) >= 5 else (term, False) for term in terms]


def _coverage_terms(query: str) -> list[tuple[str, bool]]:
    """The parts to find for coverage: content words of ``query``, single letters left out."""
    return _word_parts([term for term in query_terms(query) if len(term) > 1])


def _holds(lowered: str, part: str, prefix: bool) -> bool:
    """Whether ``part`` starts a word of ``lowered`` (and ends it, unless ``prefix``).

    ``str.find`` and a boundary check: a regular expression per term cost 4 ms a search over
    a hundred indexed turns, this a fraction of that.
    """
    start = lowered.find(part)
    while start >= 0:
        end = start + len(part)
        if (start == 0 or not _is_word_char(lowered[start - 1])) and (
            prefix or end == len(lowered) or not _is_word_char(lowered[end])
        ):
            return True
        start = lowered.find(part, start + 1)
    return False


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def _coverage(text: str, terms: Sequence[tuple[str, bool]]) -> float:
    if not terms:
        return 0.0
    lowered = text.lower()
    return sum(_holds(lowered, part, prefix) for part, prefix in terms) / len(terms)


def coordinated(
    scores: dict[T, float],
    texts: dict[T, str],
    query: str,
) -> tuple[dict[T, float], float]:
    """Keyword scores scaled by the share of the query's words each text holds, and the weight
    the keyword side deserves in fusion.

    Fusion compares each side's scores relative to the other candidates of the same query, so
    when every keyword candidate matches only one incidental word of four ("cover" in "when is
    the vehicle cover due"), the best of them would still look like strong evidence and outrank
    a passage that means the same in other words. Scaling by coverage (classic "coord" in
    information retrieval) keeps partial matches partial, and the keyword side weighs its full
    KEYWORD_WEIGHT only when some candidate holds at least half of the query's words: notes
    asked for in other words (paraphrase_search.py) are found more often. Archival search only:
    on conversation turns it did not help on held folds (LoCoMo frac@10 -0.5 with it).
    """
    terms = _coverage_terms(query)
    coverage = {key: _coverage(texts.get(key, ""), terms) for key in scores}
    weight = KEYWORD_WEIGHT * min(1.0, 2 * max(coverage.values(), default=0.0))
    return {key: score * coverage[key] for key, score in scores.items()}, weight


def is_weak(semantic_relevance: float | None, text: str, query: str) -> bool:
    """A hit neither clearly close in meaning nor sharing most of the query's words."""
    if semantic_relevance is not None and semantic_relevance >= STRONG_RELEVANCE:
        return False
    return word_coverage(text, query) < 0.5


def candidate_pools(limit: int, page: int) -> tuple[int, int]:
    """Keyword and vector candidate counts that cover the requested page."""
    needed = 2 * page * limit
    return max(KEYWORD_CANDIDATES, needed), max(SEMANTIC_CANDIDATES, needed)


_STOPWORDS = frozenset(
    """a an and are as at be but by did do does for from had has have he her his how i if in is it
    its me my of on or our she so that the their them then there they this to was we were what
    when where which who whom why will with would you your""".split()
)
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass
class Page(Generic[T]):
    """One page of search results; iterates and indexes like a list of hits."""

    hits: list[T]
    total: int
    page: int = 1
    page_size: int = 10
    notes: list[str] = field(default_factory=list)
    trace: Any = None  # how the hits were ranked (engine.memory.trace.SearchTrace)

    @property
    def pages(self) -> int:
        return max(1, math.ceil(self.total / self.page_size))

    def describe(self) -> str:
        """'showing 5 of 37, page 1 of 8', the line a user or the model sees above results."""
        return f"showing {len(self.hits)} of {self.total}, page {self.page} of {self.pages}"

    def __iter__(self) -> Iterator[T]:
        return iter(self.hits)

    def __len__(self) -> int:
        return len(self.hits)

    def __getitem__(self, index: int) -> T:
        return self.hits[index]


def check_paging(limit: int, page: int) -> None:
    if limit < 1:
        raise InputError("The number of results per page must be at least 1.")
    if page < 1:
        raise InputError("The page number must be at least 1.")


def query_terms(text: str, max_terms: int = 32) -> list[str]:
    """The words of a free-text query, lower-cased, stop words dropped unless nothing else is left.

    Only word characters survive, so quotes, operators and punctuation can never break a
    full-text query.
    """
    words = [w.lower() for w in _WORD.findall(text)]
    content = [w for w in words if w not in _STOPWORDS] or words
    return list(dict.fromkeys(content))[:max_terms]


STEM = 5  # words compared by their first letters: "allergic" and "allergy"


def same_word(a: str, b: str) -> bool:
    """ "allergic" and "allergy", "live" and "lives", "run" and "runs": the same first letters,
    one word of four letters or more the start of the other, or a plural (for the rules that
    match a question to what was said)."""
    short, long = sorted((a, b), key=len)
    if a[:STEM] == b[:STEM] or long in (short + "s", short + "es"):
        return True
    return len(short) >= 4 and long.startswith(short)


def excerpt(text: str, query: str, limit: int) -> str:
    """At most ``limit`` characters of ``text``, centred on the part that matches ``query``.

    A long hit (an assistant's answer, a document section) often holds what was asked far from
    its start; its first few hundred characters would hide it. The window with the most distinct
    query words wins (the earliest on a tie); with none, the text's start. Cuts are marked "…".
    Linear in the text's length, so a pasted megabyte costs milliseconds, not minutes.
    """
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    parts = _word_parts(query_terms(query))
    exact = {part for part, prefix in parts if not prefix}
    prefixes = {part for part, prefix in parts if prefix}
    matches: list[tuple[int, str]] = []  # (position, the query word's part it matched)
    for found in _WORD.finditer(flat):
        word = found.group().lower()
        if word in exact:
            matches.append((found.start(), word))
        elif len(word) >= 5 and word[:5] in prefixes:
            matches.append((found.start(), word[:5]))
    # Each match in turn sits a quarter into the window; count the distinct words after it.
    lead, span = limit // 4, limit - limit // 4 - 2
    best_start, best_count = 0, 0
    counts: dict[str, int] = {}
    right = 0
    for left, (position, _) in enumerate(matches):
        while right < len(matches) and matches[right][0] < position + span:
            counts[matches[right][1]] = counts.get(matches[right][1], 0) + 1
            right += 1
        if len(counts) > best_count:
            best_start, best_count = max(0, min(position - lead, len(flat) - limit)), len(counts)
        term = matches[left][1]
        counts[term] -= 1
        if not counts[term]:
            del counts[term]
    if best_start > 0:
        space = flat.find(" ", best_start)
        best_start = space + 1 if 0 <= space < best_start + 20 else best_start
    head = "…" if best_start > 0 else ""
    room = limit - len(head)
    body = flat[best_start : best_start + room]
    if best_start + room < len(flat):
        body = body[: room - 1]
        space = body.rfind(" ")
        body = (body[:space] if space > room - 20 else body) + "…"
    return head + body


def hit_line(text: str, query: str, width: int, weak: bool = False) -> str:
    """A search hit on one line for a person: the part that matched ``query``, and whether it
    only loosely fits."""
    return excerpt(text, query, width) + (" (weak match)" if weak else "")


def fts5_match(text: str) -> str | None:
    """An FTS5 MATCH expression that ORs the query's words, each quoted; None when empty."""
    terms = query_terms(text)
    return " OR ".join(f'"{term}"' for term in terms) if terms else None


def _zscores(scores: dict[T, float]) -> dict[T, float]:
    if not scores:
        return {}
    values = list(scores.values())
    mean = sum(values) / len(values)
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    if std < 1e-9:
        return {key: 0.0 for key in scores}
    return {key: (value - mean) / std for key, value in scores.items()}


def fuse(
    keyword: dict[T, float], semantic: dict[T, float], keyword_weight: float = KEYWORD_WEIGHT
) -> list[tuple[T, float]]:
    """Rank the union of two candidate lists by weighted z-scores, best first.

    Scores are "higher is better" on each side; the semantic side weighs 1 - ``keyword_weight``.
    A candidate missing from one side gets that side's lowest z-score minus a half, so being
    absent counts against it.
    """
    kz, sz = _zscores(keyword), _zscores(semantic)
    k_missing = (min(kz.values()) - 0.5) if kz else 0.0
    s_missing = (min(sz.values()) - 0.5) if sz else 0.0
    fused = {
        key: keyword_weight * kz.get(key, k_missing) + (1 - keyword_weight) * sz.get(key, s_missing)
        for key in {**keyword, **semantic}
    }
    return sorted(fused.items(), key=lambda item: item[1], reverse=True)


# An expired passage or fact leaves search at once and stays listed (and restorable) as expired
# this long, then it is purged: a week covers "I did not mean that" without keeping clutter.
EXPIRED_GRACE_S = 7 * 24 * 3600


def expiry_timestamp(when: datetime | date | str | float | None) -> float | None:
    """When a passage or fact stops mattering, as a timestamp; a day alone means its end."""
    if isinstance(when, str) and len(when.strip()) == 10:  # YYYY-MM-DD
        return to_timestamp(when, end_of_day=True)
    return to_timestamp(when)


# The times memory holds: from 1900 to a year from now. Anything else is no time anyone said
# something ("99999999 days ago", a file's created_at of 9e18, NaN): date arithmetic on it raised,
# and every turn and search that met it failed. So it is no time at all (``held_seconds``), and a
# stored one out of range reads as the nearest time in range (``from_timestamp``).
EARLIEST = datetime(1900, 1, 1, tzinfo=UTC).timestamp()
AHEAD_S = 366 * 86400


def held_seconds(value: float) -> float | None:
    """``value`` as UNIX seconds memory can hold, or None (not finite, before 1900, or more
    than a year from now)."""
    if not math.isfinite(value) or not EARLIEST <= value <= clock.timestamp() + AHEAD_S:
        return None
    return float(value)


def to_timestamp(
    value: datetime | date | str | float | None, *, end_of_day: bool = False
) -> float | None:
    """UNIX seconds for a datetime, a date (its first or last instant) or an ISO-8601 string;
    None for a number memory cannot hold (``held_seconds``: a file's), and the nearest time it
    can hold for a date beyond (a search "until 2999" searches until next year).

    Naive datetimes and dates are read as the user's local time.
    """
    if value is None:
        return None
    if isinstance(value, int | float):
        return held_seconds(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            value = date.fromisoformat(text) if len(text) == 10 else datetime.fromisoformat(text)
        except ValueError as error:
            raise InputError(
                f"{text!r} is not a date; write it as YYYY-MM-DD or YYYY-MM-DDTHH:MM."
            ) from error
    if isinstance(value, datetime):
        aware = value.astimezone() if value.tzinfo is None else value
    else:
        aware = datetime.combine(value, time.max if end_of_day else time.min).astimezone()
    try:
        seconds = aware.timestamp()
    except (OverflowError, OSError, ValueError):  # the year 9999's last day, on some systems
        seconds = math.inf if aware.year > 1970 else -math.inf
    return min(max(seconds, EARLIEST), clock.timestamp() + AHEAD_S)


def from_timestamp(seconds: float) -> datetime:
    """An aware datetime in the user's local time zone; a time memory cannot hold (stored by an
    older Mnemo) as the nearest one it can."""
    latest = clock.timestamp() + AHEAD_S
    held = min(max(seconds, EARLIEST), latest) if math.isfinite(seconds) else EARLIEST
    return datetime.fromtimestamp(held, tz=UTC).astimezone()


def chunked(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def verbatim(text: str) -> str:
    """Lower-case text with runs of whitespace made single spaces, for exact-phrase checks."""
    return " ".join(text.lower().split())


def exact_first(
    ranked: list[tuple[T, float]], texts: dict[T, str], query: str
) -> list[tuple[T, float]]:
    """Put candidates that contain the whole query verbatim first, keeping the order otherwise.

    Someone who types an exact phrase, a code or an identifier wants the passage that has it
    as written, ahead of passages that merely share its words.
    """
    phrase = verbatim(query)
    if len(phrase.split()) < 2 and len(phrase) < 8:
        return ranked
    exact = [item for item in ranked if phrase in verbatim(texts.get(item[0], ""))]
    if not exact:
        return ranked
    chosen = {item[0] for item in exact}
    return exact + [item for item in ranked if item[0] not in chosen]
