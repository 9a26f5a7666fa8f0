"""Chunking: sections cut into passages that fit the embedder, along the text's own seams.

A passage holds whole paragraphs while they fit the budget; a longer paragraph is cut at sentence
ends, and a longer sentence at word boundaries. Consecutive passages of a section overlap by a few
words so that a fact on a seam is found from either side. Each passage keeps its section label
and its position in the file, so an answer can cite where it came from.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from engine.loaders import Section

# all-MiniLM-L6-v2 reads 256 word pieces; English averages ~1.3 pieces a word.
CHUNK_WORDS = 160
OVERLAP_WORDS = 24

_PARAGRAPHS = re.compile(r"\n\s*\n")
_SENTENCES = re.compile(r"(?<=[.!?。])\s+")
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Chunk:
    text: str
    section: str | None
    position: int  # 0-based, across the whole file


def _pieces(paragraph: str, budget: int) -> Iterator[list[str]]:
    """A paragraph as word lists of at most ``budget`` words, cut at sentence ends if needed."""
    words = paragraph.split()
    if len(words) <= budget:
        yield words
        return
    current: list[str] = []
    for sentence in _SENTENCES.split(paragraph):
        sentence_words = sentence.split()
        while len(sentence_words) > budget:  # one enormous sentence (or no punctuation at all)
            if current:
                yield current
                current = []
            yield sentence_words[:budget]
            sentence_words = sentence_words[budget:]
        if len(current) + len(sentence_words) > budget and current:
            yield current
            current = []
        current += sentence_words
    if current:
        yield current


def chunk_sections(
    sections: Iterable[Section], words: int = CHUNK_WORDS, overlap: int = OVERLAP_WORDS
) -> Iterator[Chunk]:
    """Passages of at most ``words`` words (plus the overlap carried from the previous one)."""
    position = 0
    for section in sections:
        label = _labeller(section)
        current: list[str] = []
        carried = 0  # words at the start of ``current`` repeated from the previous passage
        taken = 0  # words of the section in passages so far: ``current`` ends there
        for paragraph in _PARAGRAPHS.split(section.text):
            for piece in _pieces(paragraph, words):
                if len(current) - carried + len(piece) > words and len(current) > carried:
                    yield Chunk(" ".join(current), label(taken - len(current), taken), position)
                    position += 1
                    current = current[-overlap:] if overlap else []
                    carried = len(current)
                current += piece
                taken += len(piece)
        if len(current) > carried:
            yield Chunk(" ".join(current), label(taken - len(current), taken), position)
            position += 1


def _labeller(section: Section) -> Callable[[int, int], str | None]:
    """What a passage of words ``start`` to ``end`` (their places in the section) is labelled:
    the section's label, or for text read by lines the lines those words are on. A passage's
    words are the section's words in order (chunking only groups them), so their places give
    their lines."""
    if section.first_line is None:
        return lambda _start, _end: section.label
    lines: list[int] = []
    line = section.first_line
    at = 0
    for word in _WORD.finditer(section.text):
        line += section.text.count("\n", at, word.start())
        at = word.start()
        lines.append(line)
    last = len(lines) - 1  # (the same words as ``str.split``; a guard all the same)
    return lambda start, end: f"lines {lines[min(start, last)]}-{lines[min(end - 1, last)]}"
