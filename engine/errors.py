"""Errors a user can understand and act on.

Anything raised as a ``MnemoError`` is shown to the user as it is: one sentence that says what went
wrong and how to fix it. Every other exception is a bug.
"""


class MnemoError(Exception):
    """A failure the user can fix; ``str(error)`` is the sentence to show."""


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
