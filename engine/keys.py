"""API keys and storage credentials: kept only in the OS keyring, never in files, the database
or logs.

Where a machine has no secure keyring (common on headless Linux), a key can be given for this run
only: it lives in this process's memory and is gone when Mnemo exits. There is deliberately no
plaintext fallback. Keys in the usual environment variables (``OPENAI_API_KEY``...) are read too.
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import TYPE_CHECKING

from engine.errors import MnemoError, register_secret

if TYPE_CHECKING:
    from keyring.backend import KeyringBackend

SERVICE = "mnemo"
# The model providers, the credentials of S3-compatible storage for archival memory, and the
# password of a PostgreSQL server holding the rest.
PROVIDERS = ("openai", "anthropic", "s3-key-id", "s3-secret", "postgres")
ENVIRONMENT = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "s3-key-id": "AWS_ACCESS_KEY_ID",
    "s3-secret": "AWS_SECRET_ACCESS_KEY",
    "postgres": "PGPASSWORD",
}
NO_KEYRING = (
    "This computer has no secure keyring (common on headless Linux), so Mnemo cannot save the "
    "key; it can keep one for this run only. To save keys, install and unlock a keyring service "
    "such as GNOME Keyring or KWallet."
)
_session_keys: dict[str, str] = {}


class KeyringUnavailableError(MnemoError):
    """No secure keyring: the key can only be used for this run."""


def _check_provider(provider: str) -> None:
    if provider not in PROVIDERS:
        raise MnemoError(f"Unknown provider {provider!r}; use one of {', '.join(PROVIDERS)}.")


def _keyring() -> ModuleType:
    """The keyring package, imported when a key is first looked up (60 ms of every start that
    needs no key: a local model's chat, the window's first paint)."""
    import keyring
    import keyring.errors

    return keyring


def _backend() -> KeyringBackend:
    return _keyring().get_keyring()


def keyring_status() -> tuple[str, bool]:
    """The keyring backend's name and whether it stores secrets securely."""
    backend = _backend()
    name = f"{type(backend).__module__}.{type(backend).__name__}"
    insecure = ("fail", "null", "keyrings.alt")
    secure = backend.priority > 0 and not any(part in name for part in insecure)
    return name, secure


def _find(provider: str) -> tuple[str | None, str]:
    """A provider's key and where it came from: this run, the keyring, or the environment."""
    _check_provider(provider)
    if provider in _session_keys:
        return _session_keys[provider], "given for this run"
    stored = _from_keyring(provider)
    if stored:
        return stored, "saved in the keyring"
    variable = ENVIRONMENT[provider]
    if os.environ.get(variable):
        return os.environ[variable], f"from ${variable}"
    return None, "none"


def get_key(provider: str) -> str | None:
    """This run's key, else the keyring's, else the environment's; None when there is none."""
    key = _find(provider)[0]
    register_secret(key)  # from now on no error, log line or note may carry it
    return key


def key_source(provider: str) -> str:
    """Where ``get_key`` finds the key, in words."""
    return _find(provider)[1]


def save_key(provider: str, key: str) -> None:
    """Store a key in the keyring; raises ``KeyringUnavailableError`` when there is none."""
    _check_provider(provider)
    key = key.strip()
    if not key:
        raise MnemoError("The key is empty; paste the whole key.")
    _to_keyring(provider, key)


def _to_keyring(name: str, secret: str) -> None:
    if not keyring_status()[1]:
        raise KeyringUnavailableError(NO_KEYRING)
    try:
        _keyring().set_password(SERVICE, name, secret)
    except _keyring().errors.KeyringError as error:
        raise KeyringUnavailableError(f"{NO_KEYRING} ({error})") from error


def _from_keyring(name: str) -> str | None:
    if not keyring_status()[1]:
        return None
    try:
        return _keyring().get_password(SERVICE, name)
    except _keyring().errors.KeyringError:
        return None


def use_key_for_this_run(provider: str, key: str) -> None:
    _check_provider(provider)
    if not key.strip():
        raise MnemoError("The key is empty; paste the whole key.")
    _session_keys[provider] = key.strip()
    register_secret(key)


def delete_key(provider: str) -> bool:
    """Forget a provider's key (keyring and this run); return whether there was one."""
    _check_provider(provider)
    removed = _session_keys.pop(provider, None) is not None
    if keyring_status()[1]:
        try:
            _keyring().delete_password(SERVICE, provider)
            removed = True
        except _keyring().errors.PasswordDeleteError:
            pass
    return removed


def save_secret(name: str, secret: str) -> None:
    """Keep another secret under ``name`` (a server's token): in the keyring if this computer
    has one, else for this run only (``KeyringUnavailableError`` says so after keeping it)."""
    secret = secret.strip()
    if not secret:
        raise MnemoError("The token is empty; paste the whole token.")
    register_secret(secret)
    try:
        _to_keyring(name, secret)
    except KeyringUnavailableError:
        _session_keys[name] = secret
        raise


def get_secret(name: str) -> str | None:
    """A secret kept by ``save_secret``: this run's, else the keyring's; None when none."""
    if name in _session_keys:
        return _session_keys[name]
    secret = _from_keyring(name)
    register_secret(secret)
    return secret
