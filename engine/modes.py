"""Which memory mode a model gets: self-managed (the MemGPT design) or assisted.

Self-managed: the model pages its memory by calling functions, and must pick a function before it
can say anything. Small local models cannot: the bundled 135M model picks a sensible function 8
times in 16 and never a recall function, yet answers correctly when the facts are in its prompt.
Assisted: the engine recalls for each message and the model replies in plain text.

``auto`` gives assisted to local models below ``ASSISTED_BELOW_PARAMETERS`` and self-managed to
larger local models and to API models. The threshold is a judgement from public evidence, since
only the bundled model could be measured here: the models the community tuned or recommends for
MemGPT-style function calling start at 7B (Mistral-7B MemGPT fine-tunes, Hermes-2-Pro-Llama-3-8B,
Gemma-2-9B, GLM-4-9B). `tests/benchmarks/memory_qa.py --model PATH` measures both modes for any
model, so the line can move with evidence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ASSISTED_BELOW_PARAMETERS = 6_000_000_000

Mode = Literal["self", "assisted"]


@dataclass(frozen=True)
class ModeChoice:
    mode: Mode
    reason: str  # for the status bar, Settings, `mnemo status` and `mnemo doctor`

    @property
    def label(self) -> str:
        return "assisted memory" if self.mode == "assisted" else "self-managed memory"


def parameters_text(count: int) -> str:
    """135M, 1.5B, 8B."""
    if count >= 10**9:
        return f"{count / 10**9:.1f}".removesuffix(".0") + "B"
    return f"{round(count / 10**6)}M"


def choose_mode(setting: str, count: int | None) -> ModeChoice:
    """The mode under the ``agent.mode`` setting (auto, self or assisted) for a model of
    ``count`` parameters (None: an API model, whose size is not known)."""
    if setting == "self":
        return ModeChoice("self", "chosen in the settings")
    if setting == "assisted":
        return ModeChoice("assisted", "chosen in the settings")
    if count is None:
        return ModeChoice("self", "automatic: API models manage their own memory")
    size = parameters_text(count)
    limit = parameters_text(ASSISTED_BELOW_PARAMETERS)
    if count < ASSISTED_BELOW_PARAMETERS:
        return ModeChoice(
            "assisted",
            f"automatic: a {size} local model is below {limit}, so Mnemo recalls for it",
        )
    return ModeChoice(
        "self", f"automatic: a {size} local model ({limit} or more) manages its own memory"
    )
