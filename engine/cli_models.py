"""`mnemo models`, `mnemo keys`, `mnemo doctor`: choosing a model, its API key, a check-up."""

from __future__ import annotations

import argparse
import getpass
import importlib.metadata
import platform
import sqlite3
import sys
import time
from pathlib import Path

from engine import __version__, keys
from engine.db import SCHEMA_VERSION
from engine.errors import MnemoError, ModelError
from engine.llm import load_model, model_settings
from engine.llm.local import bundled_model_path, check_model_file
from engine.mnemo import Mnemo
from engine.modes import choose_mode

PACKAGES = ("llama-cpp-python", "lancedb", "onnxruntime", "PySide6-Essentials", "httpx", "keyring")


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


def _describe_model(mnemo: Mnemo) -> str:
    values = model_settings(mnemo.settings)
    if values["backend"] == "local":
        path = Path(values["path"]) if values["path"] else bundled_model_path()
        label = "bundled " if not values["path"] else ""
        return (
            f"local {label}{path.name}, context {values['context_length']} tokens, "
            f"GPU layers {values['gpu_layers']}"
        )
    url = values["base_url"] or "the provider's default URL"
    return (
        f"{values['backend']}:{values['name'] or '(no model chosen)'} at {url}, "
        f"context {values['context_length']} tokens"
    )


# -- models ------------------------------------------------------------------------------------


def cmd_models_list(mnemo: Mnemo, _args: argparse.Namespace) -> int:
    print(f"In use: {_describe_model(mnemo)}")
    candidates = [("default", bundled_model_path())]
    folders = {mnemo.profile.models_path}
    configured = mnemo.settings.get("model.path")
    if configured:
        folders.add(Path(configured).parent)
    for folder in sorted(folders):
        if folder.is_dir():
            candidates += [(str(path), path) for path in sorted(folder.glob("*.gguf"))]
    print("Local models (`mnemo models use NAME-OR-PATH`):")
    for name, path in candidates:
        size = f"{path.stat().st_size / 2**20:.0f} MB" if path.exists() else "missing"
        print(f"  {name}  ({path.name}, {size})")
    print(
        f"Put GGUF files in {mnemo.profile.models_path} to list them here. API models: "
        "`mnemo models use openai:MODEL [--base-url URL]` or `mnemo models use anthropic:MODEL`."
    )
    return 0


def cmd_models_use(mnemo: Mnemo, args: argparse.Namespace) -> int:
    spec: str = args.model
    settings = mnemo.settings
    backend, _, name = spec.partition(":")
    if backend in ("openai", "anthropic") and name:
        settings.set("model.backend", backend)
        settings.set("model.name", name)
        settings.set("model.base_url", args.base_url or "")
    else:
        if args.base_url:
            raise MnemoError("--base-url is for API models (openai:MODEL or anthropic:MODEL).")
        path = "" if spec == "default" else str(Path(spec).expanduser().resolve())
        if path:
            check_model_file(Path(path))
        settings.set("model.backend", "local")
        settings.set("model.path", path)
    if args.context is not None:
        settings.set("model.context_length", args.context)
    if args.gpu_layers is not None:
        settings.set("model.gpu_layers", args.gpu_layers)
    print(f"Now using {_describe_model(mnemo)}.")
    return 0


# -- keys --------------------------------------------------------------------------------------


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


# -- doctor ------------------------------------------------------------------------------------


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def cmd_doctor(mnemo: Mnemo, _args: argparse.Namespace) -> int:
    """Print what Mnemo runs with and whether each part works; exit 1 if something does not."""
    healthy = True
    print(f"Mnemo {__version__}, Python {platform.python_version()} on {platform.platform()}")
    print(
        f"Profile: {mnemo.profile.root} (database schema {SCHEMA_VERSION}; "
        f"{mnemo.recall.count()} messages, {mnemo.archival.count()} passages)"
    )
    print(f"Log: {mnemo.profile.log_path}")
    print(f"Model: {_describe_model(mnemo)}")
    started = time.perf_counter()
    try:
        model = load_model(mnemo.settings)
        print(f"  loads: yes ({time.perf_counter() - started:.1f} s)")
        mode = choose_mode(mnemo.settings.memory_mode, model.parameter_count)
        print(f"  memory mode: {mode.label} ({mode.reason})")
        check = getattr(model, "check", None)
        if check is not None:
            print(f"  server: {check()}")
        offload = getattr(model, "gpu_offload_supported", None)
        if offload is not None:
            layers = mnemo.settings.get("model.gpu_layers")
            if offload:
                print(f"  GPU offload: available in this build; {layers} layers requested")
            else:
                print(
                    "  GPU offload: not in this build (CPU only); rebuild llama-cpp-python with "
                    "CUDA or Metal to use a GPU (see the README)"
                )
    except ModelError as error:
        healthy = False
        print(f"  loads: no. {error}")
    name, secure = keys.keyring_status()
    print(f"Keyring: {name}" + ("" if secure else f". {keys.NO_KEYRING}"))
    for provider in keys.PROVIDERS:
        print(f"  {provider} key: {keys.key_source(provider)}")
    print(f"Embedder: {mnemo.embedder.name} ({mnemo.embedder.dim} dimensions)")
    if mnemo.embedder_mismatch:
        healthy = False
        print(f"  {mnemo.embedder_mismatch}")
    versions = ", ".join(f"{package} {_version(package)}" for package in PACKAGES)
    print(f"Versions: {versions}, SQLite {sqlite3.sqlite_version}")
    print("Everything works." if healthy else "Something needs attention (see above).")
    return 0 if healthy else 1


def add_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    models = commands.add_parser("models", help="list the models or choose the one to use")
    models.set_defaults(handler=cmd_models_list)
    models_commands = models.add_subparsers(metavar="ACTION")
    models_commands.add_parser("list", help="the model in use and local GGUF files").set_defaults(
        handler=cmd_models_list
    )
    use = models_commands.add_parser(
        "use", help="default | PATH.gguf | openai:MODEL | anthropic:MODEL"
    )
    use.add_argument("model")
    use.add_argument(
        "--base-url", help="an OpenAI-compatible server, e.g. http://localhost:11434/v1"
    )
    use.add_argument("--context", type=int, help="context size in tokens")
    use.add_argument("--gpu-layers", type=int, help="local models: layers to offload to the GPU")
    use.set_defaults(handler=cmd_models_use)

    keys_parser = commands.add_parser("keys", help="API keys (kept in the OS keyring only)")
    keys_parser.set_defaults(handler=cmd_keys_list)
    keys_commands = keys_parser.add_subparsers(metavar="ACTION")
    keys_commands.add_parser("list", help="where each provider's key comes from").set_defaults(
        handler=cmd_keys_list
    )
    set_key = keys_commands.add_parser("set", help="save a key in the keyring")
    set_key.add_argument("provider", choices=keys.PROVIDERS)
    set_key.add_argument("--stdin", action="store_true", help="read the key from standard input")
    set_key.set_defaults(handler=cmd_keys_set)
    remove = keys_commands.add_parser("remove", help="forget a key")
    remove.add_argument("provider", choices=keys.PROVIDERS)
    remove.set_defaults(handler=cmd_keys_remove)

    doctor = commands.add_parser("doctor", help="check the model, keyring, profile and versions")
    doctor.set_defaults(handler=cmd_doctor)
