"""Which memory mode a model gets: self-managed (the MemGPT design) or assisted.

Self-managed: the model pages its memory by calling functions, and must pick a function before it
can say anything. Small local models cannot: the bundled 135M model picks a sensible function 8
times in 16 and never a recall function, yet answers correctly when the facts are in its prompt.
Assisted: the engine recalls for each message and the model replies in plain text.

``auto`` gives assisted to local models below a size line and self-managed to larger local models
and to API models; a catalogue entry's own mode (``engine.llm.catalog``, with the evidence behind
it) wins over the line. The line is drawn from public evidence on function calling, since only
the bundled model could be measured here:

- For architectures from before 2025 it is 6B: the models the community tuned or recommended
  for MemGPT-style function calling in 2024 started at 7B (Mistral-7B MemGPT fine-tunes,
  Hermes-2-Pro-Llama-3-8B, Gemma-2-9B, GLM-4-9B).
- For architectures that first appeared in 2025 or later it is 4B. On BFCL V4, whose agentic
  part includes memory, Qwen3 4B Instruct 2507 scores 35.7 % and Qwen3.5 4B 56.8 %, above the
  leaderboard's average of 31 %, while Qwen3 1.7B scores 28.4 %, below it. On BFCL v3, current
  4B models (61.9 %) stand well above the 2024 7B line (Qwen2 7B: 41.3 %). Figures gathered by
  whatmodel.sh from the leaderboards and the makers.

`tests/benchmarks/memory_qa.py --model PATH` measures both modes for any model, so the lines can
move with evidence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ASSISTED_BELOW_PARAMETERS = 6_000_000_000  # architectures from before 2025
CURRENT_ASSISTED_BELOW_PARAMETERS = 4_000_000_000  # architectures from 2025 on
# llama.cpp's names (a GGUF's general.architecture) of architectures first released in 2025 or
# later.
CURRENT_ARCHITECTURES = frozenset(
    {
        "apertus", "ernie4_5", "exaone4", "falcon-h1", "gemma3", "gemma3n", "gpt-oss",
        "granitehybrid", "hunyuan-dense", "lfm2", "llama4", "nemotron_h", "qwen3", "qwen35",
        "qwen3moe", "qwen3next", "seed_oss", "smollm3",
    }
)  # fmt: skip

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


def choose_mode(
    setting: str,
    count: int | None,
    *,
    architecture: str | None = None,
    catalogued: Mode | None = None,
    server_on_this_computer: bool = False,
) -> ModeChoice:
    """The mode under the ``agent.mode`` setting (auto, self or assisted) for a model of
    ``count`` parameters (None: not known, as with API models), of llama.cpp's
    ``architecture``, whose catalogue entry gives it ``catalogued`` (None: no entry), served from
    this computer or its network or not."""
    if setting == "self":
        return ModeChoice("self", "chosen in the settings")
    if setting == "assisted":
        return ModeChoice("assisted", "chosen in the settings")
    if catalogued is not None:
        how = "manages its own memory" if catalogued == "self" else "gets Mnemo's recall"
        return ModeChoice(
            catalogued, f"automatic: the catalogue says this model {how} (`mnemo models catalog`)"
        )
    if count is None and server_on_this_computer:
        return ModeChoice(
            "assisted",
            "automatic: the server on this computer does not say how large its model is, and "
            "models run at home are mostly small, so Mnemo recalls for it (choose self-managed "
            "in Settings for a large one)",
        )
    if count is None:
        return ModeChoice("self", "automatic: API models manage their own memory")
    current = architecture in CURRENT_ARCHITECTURES
    line = CURRENT_ASSISTED_BELOW_PARAMETERS if current else ASSISTED_BELOW_PARAMETERS
    size = parameters_text(count)
    # Said to the person in the settings: no architecture names or thresholds (`mnemo models
    # catalog` and the docs give those).
    # A current design manages its memory from a smaller size: said, as the line differs.
    design = "a current design" if current else "an older design"
    if count < line:
        return ModeChoice(
            "assisted",
            f"automatic: this model is small ({size} parameters, {design}), so Mnemo looks up "
            "what you told it before for each message and hands it over",
        )
    return ModeChoice(
        "self",
        f"automatic: this model is large enough ({size} parameters, {design}) to search its "
        "memory itself",
    )
