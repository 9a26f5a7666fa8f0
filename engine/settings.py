"""Profile settings: typed values with defaults, stored as JSON in the ``setting`` table.

Only names listed in ``DEFAULTS`` exist, so a typo in a key is a bug, not a silently new setting.
Secrets never go here (API keys live in the OS keyring).
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Engine, text
from sqlmodel import Session

from engine.db import write_session
from engine.db.schema import Setting
from engine.errors import MnemoError

CORE_WRITE_POLICIES = ("ask", "auto")
# Set once, when the profile is created (``Mnemo.open(archival_url=…)``): changing it later would
# leave the memory behind in the old storage.
PLACED_AT_CREATION = ("storage.archival_url",)
MEMORY_MODES = ("auto", "self", "assisted")
# What a setting touches. These touch the machine the memory runs on (the model, its address,
# size and threads, files and folders, storage); on a server they are its operator's, chosen
# with `mnemo serve`'s options, and no user may change them. The others shape one assistant.
MACHINE_SETTINGS = ("model.", "models.", "ingest.", "storage.")
BACKENDS = ("local", "openai", "anthropic")
# The model that comes with Mnemo, used while "model.path" is empty (engine.llm.local finds it).
BUNDLED_MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"

DEFAULTS: dict[str, Any] = {
    # The most model steps one user turn may take before the turn is stopped.
    "agent.step_limit": 10,
    # "self": the model pages its memory through function calls (MemGPT); "assisted": the engine
    # recalls for each message and the model replies in plain text; "auto": chosen by model size.
    "agent.mode": "auto",
    # The most tokens of an assisted reply (a few sentences: ~25 tokens each, and room for a short
    # list or recipe); the self-managed mode's replies are capped by the model's step
    # (engine.llm: up to 768 tokens locally).
    "agent.reply_tokens": 96,
    # The conversation the chat continues (`mnemo chat --new` starts one); empty: the first.
    "chat.conversation": "",
    # "ask": the model's core-memory edits wait for the user; "auto": trusted ones apply at once.
    "memory.core_write_policy": "ask",
    # Notes from other programs over MCP (`mnemo mcp`): "ask", each waits for the user like a
    # core edit; "apply", kept at once (with the program's name). Their core edits always wait.
    "mcp.notes": "ask",
    # "local" (a GGUF file through llama.cpp), "openai" (any OpenAI-compatible server) or
    # "anthropic".
    "model.backend": "local",
    # The local GGUF model; empty means the bundled SmolLM2-135M-Instruct.
    "model.path": "",
    # The API model's name and server; an empty base URL means the provider's own.
    "model.name": "",
    "model.base_url": "",
    # Tokens of context; unset, API models get their provider's usual window.
    "model.context_length": 4096,
    "model.gpu_layers": 0,
    "model.threads": 0,  # 0: one per CPU core
    # The local model samples its replies; a seed of 0 or more makes them repeatable (tests, a
    # bug report), -1 draws a new one for every reply.
    "model.seed": -1,
    # Where `mnemo models download` and the Models page put GGUF files; empty: <profile>/models.
    "models.folder": "",
    # A re-ranker GGUF (a cross-encoder, such as Qwen3-Reranker or BGE's) that orders the best
    # hits of conversation and archival search again (engine.cross_encoder); empty: none.
    # A file on the machine: on a server, its operator's.
    "models.reranker": "",
    # An embedding GGUF (EmbeddingGemma, Qwen3-Embedding, a BERT-style one) that makes the vectors
    # of messages and passages in place of the bundled MiniLM; empty: MiniLM. Changed only by
    # `mnemo reembed --embedder` or the Models page, which re-embed what is stored.
    "models.embedder": "",
    # Larger files are refused with a message (a log dump or disk image is rarely a document).
    "ingest.max_file_mb": 100,
    # A file may take a minute plus this many seconds per MB to read and embed; longer, it is
    # stopped with an error of its own and the next file goes on. Text is the densest (about
    # 1,600 passages a MB); a slow 2-core machine with another job running embeds it at well
    # under 300 s a MB (ingest_throughput.py), so this stops only a file that is stuck, never a
    # large one that is merely long.
    "ingest.seconds_per_mb": 300,
    # Where archival memory and the message vectors live: empty, the profile's own folder;
    # "s3://bucket/prefix", S3-compatible object storage, with "?endpoint=http://host:port" for a
    # server other than Amazon's and "&region=…". Credentials come from the keyring
    # (`mnemo keys set s3-key-id`, `s3-secret`) or the environment (AWS_ACCESS_KEY_ID,
    # AWS_SECRET_ACCESS_KEY), never from the profile.
    "storage.archival_url": "",
}


class SettingError(MnemoError):
    """A setting was given a value it cannot take."""


def touches_the_machine(key: str) -> bool:
    """Whether ``key`` is about the computer rather than the assistant (``MACHINE_SETTINGS``)."""
    return key.startswith(MACHINE_SETTINGS)


def _check(key: str, value: Any) -> Any:
    if key not in DEFAULTS:
        raise SettingError(f"There is no setting named {key!r}; known: {', '.join(DEFAULTS)}.")
    default = DEFAULTS[key]
    if isinstance(default, int) and not isinstance(value, bool):
        try:
            value = int(value)
        except (TypeError, ValueError):
            raise SettingError(f"The setting {key} takes a whole number, not {value!r}.") from None
    elif isinstance(default, str):
        value = str(value)
    if key == "agent.step_limit" and not 1 <= value <= 100:
        raise SettingError("The step limit must be between 1 and 100.")
    if key == "agent.reply_tokens" and not 16 <= value <= 4096:
        raise SettingError("An assisted reply's cap must be between 16 and 4096 tokens.")
    if key == "agent.mode" and value not in MEMORY_MODES:
        raise SettingError("The memory mode is 'auto', 'self' or 'assisted'.")
    if key == "memory.core_write_policy" and value not in CORE_WRITE_POLICIES:
        raise SettingError("The core-memory write policy is either 'ask' or 'auto'.")
    if key == "mcp.notes" and value not in ("ask", "apply"):
        raise SettingError("Notes from MCP clients are either 'ask' or 'apply'.")
    if key == "model.backend" and value not in BACKENDS:
        raise SettingError(f"The model back-end is one of {', '.join(BACKENDS)}.")
    if key == "model.context_length" and value < 512:
        raise SettingError("The context length must be at least 512 tokens.")
    if key in ("model.gpu_layers", "model.threads", "model.seed") and value < -1:
        raise SettingError(f"The setting {key} cannot be below -1.")
    return value


_ONE = text("SELECT value FROM setting WHERE key = :key")
_ALL = text("SELECT key, value FROM setting")


class Settings:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def get(self, key: str) -> Any:
        if key not in DEFAULTS:
            raise SettingError(f"There is no setting named {key!r}.")
        # A plain query, not the ORM's: a start reads about 80 settings (each read again, since
        # another Mnemo may change them), 0.6 ms apiece through a Session.
        with self._engine.connect() as connection:
            value = connection.execute(_ONE, {"key": key}).scalar()
        return DEFAULTS[key] if value is None else json.loads(value)

    def set(self, key: str, value: Any) -> Any:
        """Validate and store a value; return it as stored."""
        if key in PLACED_AT_CREATION:
            raise SettingError(
                f"{key} is chosen when an assistant is created (`mnemo serve --archival-url`); "
                "moving a memory from one storage to another is not supported yet."
            )
        return self.store(key, _check(key, value))

    def store(self, key: str, value: Any) -> Any:
        """Store a checked value, including those only the engine may place."""
        with write_session(self._engine) as session:
            row = session.get(Setting, key) or Setting(key=key, value="")
            row.value = json.dumps(value)
            session.add(row)
            session.commit()
        return value

    def reset(self, key: str) -> None:
        """Back to the default: the value is no longer the user's choice (``is_set``)."""
        with write_session(self._engine) as session:
            row = session.get(Setting, key)
            if row is not None:
                session.delete(row)
                session.commit()

    def is_set(self, key: str) -> bool:
        """Whether the user chose a value (as opposed to the default)."""
        with Session(self._engine) as session:
            return session.get(Setting, key) is not None

    def all(self) -> dict[str, Any]:
        with self._engine.connect() as connection:
            stored = {str(key): str(value) for key, value in connection.execute(_ALL)}
        return {
            key: json.loads(stored[key]) if key in stored else default
            for key, default in DEFAULTS.items()
        }

    @property
    def step_limit(self) -> int:
        return int(self.get("agent.step_limit"))

    @property
    def reply_tokens(self) -> int:
        return int(self.get("agent.reply_tokens"))

    @property
    def memory_mode(self) -> str:
        return str(self.get("agent.mode"))

    @property
    def core_write_policy(self) -> str:
        return str(self.get("memory.core_write_policy"))
