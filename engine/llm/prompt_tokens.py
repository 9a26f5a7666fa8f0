"""A rendered chat prompt's tokens, from the tokens of its pieces, each remembered.

llama.cpp splits a text at special tokens before it tokenizes what lies between them, each part
on its own. A chat template puts special tokens around every message, so a prompt's tokens are
the tokens of its pieces (a piece: a special token and the text up to the next one), and each
step's prompt repeats the previous step's pieces but for the last few. Tokenizing a 4,000-token
prompt whole took ~3 ms each time it was counted (turn_overhead.py); a piece is tokenized once.

It holds only where a piece's tokens cannot depend on its neighbours. A special token that strips
the whitespace before it (LSTRIP) reaches into the previous piece, so it never starts one; and
the first prompt is tokenized both ways: if they differ, this model's prompts are tokenized whole
from then on.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

log = logging.getLogger("mnemo.llm")

PIECES_KEPT = 4096  # a few windows' worth; the cache starts again when full


class PromptTokens:
    """``tokens(text)`` equals ``tokenize(text)``, reusing the tokens of repeated pieces.

    ``tokenize`` parses special tokens; ``special_text(token)`` is a special token's text when it
    may split a prompt (None for an ordinary token, or a special one that may not).
    """

    def __init__(
        self,
        tokenize: Callable[[str], list[int]],
        special_text: Callable[[int], str | None],
    ) -> None:
        self._tokenize = tokenize
        self._special_text = special_text
        self._split: re.Pattern[str] | None = None
        self._whole = False  # the pieces disagreed with the whole once: always tokenize whole
        self._pieces: dict[str, list[int]] = {}

    def tokens(self, text: str) -> list[int]:
        if self._whole:
            return self._tokenize(text)
        if self._split is None:
            return self._learn(text)
        tokens: list[int] = []
        for piece in self._split.split(text):
            cached = self._pieces.get(piece)
            if cached is None:
                if len(self._pieces) >= PIECES_KEPT:
                    self._pieces.clear()
                cached = self._pieces[piece] = self._tokenize(piece)
            tokens += cached
        return tokens

    def _learn(self, text: str) -> list[int]:
        """Find the special tokens this model's prompts split at, and check the pieces against
        the whole once."""
        whole = self._tokenize(text)
        specials = {token: self._special_text(token) for token in set(whole)}
        texts = sorted({t for t in specials.values() if t}, key=len, reverse=True)
        if not texts:
            self._whole = True
            return whole
        self._split = re.compile("(?=" + "|".join(map(re.escape, texts)) + ")")
        self._pieces.clear()
        if self.tokens(text) != whole:
            log.info("this model's prompt pieces do not tokenize alone; tokenizing whole")
            self._whole = True
        return whole
