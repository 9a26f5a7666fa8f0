"""`mnemo doctor`: what Mnemo runs with, and whether each part works."""

from __future__ import annotations

import argparse
import importlib.metadata
import platform
import sqlite3
import time
from typing import TYPE_CHECKING

from engine import __version__, hardware, keys
from engine.cli.models import describe_model, models_folder_of
from engine.db import SCHEMA_VERSION
from engine.errors import ModelError
from engine.llm import load_model
from engine.llm.base import mode_for

if TYPE_CHECKING:
    from engine.mnemo import Mnemo

PACKAGES = ("llama-cpp-python", "lancedb", "onnxruntime", "PySide6-Essentials", "httpx", "keyring")


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
    print(
        f"This computer: {hardware.detect(models_folder_of(mnemo), measure_speed=False).summary()}"
    )
    print(f"Model: {describe_model(mnemo)}")
    started = time.perf_counter()
    try:
        model = load_model(mnemo.settings)
        print(f"  loads: yes ({time.perf_counter() - started:.1f} s)")
        mode = mode_for(mnemo.settings.memory_mode, model)
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
                    'CUDA or Metal to use a GPU (docs/user-guide.md, "Local models on a GPU")'
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
