"""Errors a user can understand and act on.

Anything raised as a ``MnemoError`` is shown to the user as it is: one sentence that says what went
wrong and how to fix it. Every other exception is a bug.
"""

from __future__ import annotations

import logging

REDACTED = "[key removed]"
SECRET_FRAGMENT = 12  # a run this long of a key's characters counts as the key (a server's echo)
_secrets: set[str] = set()


def register_secret(value: str | None) -> None:
    """Remember an API key, so that no error, log line or stored note ever carries it."""
    if value and len(value.strip()) >= SECRET_FRAGMENT:
        _secrets.add(value.strip())


def redact(text: str) -> str:
    """``text`` without any known key, whole or echoed in part (servers often quote a part):
    each run of characters covered by some 12-character stretch of a key becomes one mark."""
    for secret in _secrets:
        stretches = {
            secret[i : i + SECRET_FRAGMENT] for i in range(len(secret) - SECRET_FRAGMENT + 1)
        }
        covered = [False] * len(text)
        for i in range(len(text) - SECRET_FRAGMENT + 1):
            if text[i : i + SECRET_FRAGMENT] in stretches:
                covered[i : i + SECRET_FRAGMENT] = [True] * SECRET_FRAGMENT
        if any(covered):
            text = "".join(
                REDACTED if hidden and (i == 0 or not covered[i - 1]) else "" if hidden else char
                for i, (char, hidden) in enumerate(zip(text, covered, strict=True))
            )
    return text


class RedactingFilter(logging.Filter):
    """A log filter that takes known keys out of every record's message."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, ()
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


class MnemoError(Exception):
    """A failure the user can fix; ``str(error)`` is the sentence to show. Errors become text
    here, so known keys are taken out here (a server may echo the key in its error)."""

    def __init__(self, *args: object) -> None:
        super().__init__(*(redact(arg) if isinstance(arg, str) else arg for arg in args))


class ProfileError(MnemoError):
    """The profile directory or its database cannot be used."""


class ProfileTooNewError(ProfileError):
    """The profile was written by a newer Mnemo; it is refused, never rewritten."""


class CoreMemoryError(MnemoError):
    """A core-memory edit was refused (over the limit, read-only, unknown block...)."""


class NotFoundError(MnemoError):
    """A message, passage or block that does not exist was asked for."""


class EmbedderMismatchError(MnemoError):
    """Archival memory was embedded with another model; re-embedding needs the user's consent."""


class ModelError(MnemoError):
    """A model cannot be loaded or used (file missing, not a GGUF, server unreachable...)."""


class ContextOverflowError(ModelError):
    """A prompt does not fit the model's context window, even after eviction."""


class GenerationCancelled(MnemoError):
    """The user stopped a generation; nothing from the unfinished step was kept."""
