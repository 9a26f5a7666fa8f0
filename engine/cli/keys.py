"""`mnemo keys ...`: API keys, kept in the operating system's keyring only."""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import TYPE_CHECKING

from engine import keys

if TYPE_CHECKING:
    from engine.mnemo import Mnemo


def ask_key_for_this_run(provider: str) -> str | None:
    """Offer to take a key for this run when none is stored (the keyring may be missing)."""
    if not keys.keyring_status()[1]:
        print(keys.NO_KEYRING, file=sys.stderr)
    else:
        print(
            f"No API key for {provider} is saved (`mnemo keys set {provider}` saves one).",
            file=sys.stderr,
        )
    if not sys.stdin.isatty():
        return None
    key = getpass.getpass(f"Paste a {provider} key for this run only (Enter to cancel): ")
    return key.strip() or None


def cmd_keys_list(_mnemo: Mnemo, _args: argparse.Namespace) -> int:
    name, secure = keys.keyring_status()
    print(f"Keyring: {name}" + ("" if secure else f" ({keys.NO_KEYRING})"))
    for provider in keys.PROVIDERS:
        print(f"  {provider}: {keys.key_source(provider)}")
    return 0


def cmd_keys_set(_mnemo: Mnemo, args: argparse.Namespace) -> int:
    if args.stdin:
        key = sys.stdin.readline().strip()
    else:
        key = getpass.getpass(f"Paste the {args.provider} API key (it is not shown): ")
    try:
        keys.save_key(args.provider, key)
    except keys.KeyringUnavailableError as error:
        print(f"mnemo: {error} `mnemo chat` asks for a key for its session.", file=sys.stderr)
        return 1
    print(f"Saved the {args.provider} key in the keyring.")
    return 0


def cmd_keys_remove(_mnemo: Mnemo, args: argparse.Namespace) -> int:
    removed = keys.delete_key(args.provider)
    print(f"Removed the {args.provider} key." if removed else f"No {args.provider} key was saved.")
    return 0
