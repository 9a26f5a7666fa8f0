"""The recursive summary: evicted messages folded, piece by piece, into the summary so far.

Each model call gets the previous summary plus as many transcript lines as fit, so summarizing
never overflows the model's context, however many messages are evicted at once.
"""

from __future__ import annotations

import threading

from engine.llm.base import ChatModel
from engine.memory.recall import MessageHit
from engine.resources import resource_path

MARGIN_TOKENS = 32
LINE_CHARS = 600  # one message contributes at most this much to the summary's input


def transcript_line(hit: MessageHit) -> str:
    text = " ".join(hit.text.split())
    if len(text) > LINE_CHARS:
        text = text[: LINE_CHARS - 1] + "…"
    who = {
        "user": "User",
        "assistant": "Assistant",
        "function_call": "Assistant called",
        "function_result": f"Result of {hit.name or 'function'}",
        "system": "System",
    }.get(hit.role, hit.role)
    return f"[{hit.created_at:%Y-%m-%d %H:%M}] {who}: {text}"


def _request(previous: str, lines: list[str]) -> str:
    return f"Summary so far:\n{previous or '(none yet)'}\n\nNew messages:\n" + "\n".join(lines)


def summarize(
    model: ChatModel,
    previous: str,
    messages: list[MessageHit],
    max_tokens: int,
    *,
    cancel: threading.Event | None = None,
) -> str:
    """Return the summary of ``previous`` plus ``messages`` in at most ``max_tokens`` tokens."""
    system = (
        resource_path("prompts/summarize.txt")
        .read_text("utf-8")
        .strip()
        .format(max_words=max(20, int(max_tokens * 0.7)))
    )
    fixed = model.count_tokens(system) + model.count_tokens(_request("", [])) + MARGIN_TOKENS
    # The previous summary is at most max_tokens, and the answer needs max_tokens more.
    budget = model.context_length - fixed - 2 * max_tokens
    if budget < 32:
        raise ValueError(f"a context of {model.context_length} tokens is too small to summarize")
    summary = previous
    piece: list[str] = []
    piece_tokens = 0
    for hit in messages:
        line = transcript_line(hit)
        tokens = model.count_tokens(line) + 1
        while tokens > budget:  # a single line longer than a piece: shorten it
            line = line[: int(len(line) * 0.7)] + "…"
            tokens = model.count_tokens(line) + 1
        if piece and piece_tokens + tokens > budget:
            summary = model.complete(
                system, _request(summary, piece), max_tokens=max_tokens, cancel=cancel
            ).strip()
            piece, piece_tokens = [], 0
        piece.append(line)
        piece_tokens += tokens
    if piece:
        summary = model.complete(
            system, _request(summary, piece), max_tokens=max_tokens, cancel=cancel
        ).strip()
    return summary
