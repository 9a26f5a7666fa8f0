"""`mnemo models ...`: the model in use, the catalogue, downloads, and choosing a model."""

from __future__ import annotations

import argparse
import dataclasses
import json
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from engine import hardware
from engine.cli.output import confirmed
from engine.embed import embedder_for
from engine.errors import MnemoError
from engine.hardware import Hardware, gib
from engine.llm import model_settings
from engine.llm.catalog import (
    ROLE_SETTING,
    ROLE_WORDS,
    assess,
    best_chat_entry,
    entry_as_dict,
    find_entry,
    load_catalog,
    models_folder,
    role_of_file,
    use_local_model,
)
from engine.llm.download import (
    DownloadError,
    DownloadPaused,
    DownloadProgress,
    discard_partial,
    download,
    partial_download,
    resolve_source,
)
from engine.llm.gguf_file import bundled_model_path, check_model_file
from engine.modes import parameters_text

if TYPE_CHECKING:
    from engine.mnemo import Mnemo


def describe_model(mnemo: Mnemo) -> str:
    config = model_settings(mnemo.settings)
    if config.backend == "local":
        path = Path(config.path) if config.path else bundled_model_path()
        label = "bundled " if not config.path else ""
        return (
            f"local {label}{path.name}, context {config.context_length} tokens, "
            f"GPU layers {config.gpu_layers}"
        )
    url = config.base_url or "the provider's default URL"
    return (
        f"{config.backend}:{config.name or '(no model chosen)'} at {url}, "
        f"context {config.context_length} tokens"
    )


# -- models ------------------------------------------------------------------------------------


def models_folder_of(mnemo: Mnemo) -> Path:
    return models_folder(mnemo.settings, mnemo.profile)


def _hardware(mnemo: Mnemo) -> Hardware:
    return hardware.detect(models_folder_of(mnemo))


def cmd_models_list(mnemo: Mnemo, _args: argparse.Namespace) -> int:
    print(f"In use: {describe_model(mnemo)}")
    folder = models_folder_of(mnemo)
    catalog = load_catalog()
    files = sorted(folder.glob("*.gguf")) if folder.is_dir() else []
    configured = mnemo.settings.get("model.path")
    if configured and Path(configured).parent != folder and Path(configured).exists():
        files.append(Path(configured))
    helpers = {  # the re-ranker's and the embedder's files: read once, not for every file
        Path(chosen).expanduser(): f" (in use as the {ROLE_WORDS[kind]})"
        for kind in ("reranker", "embedding")
        if (chosen := str(mnemo.settings.get(ROLE_SETTING[kind])))
    }
    print(f"Downloaded models in {folder} (`mnemo models use NAME`):")
    for path in files:
        entry = find_entry(path.name, catalog)
        size = f"{path.stat().st_size / 2**20:.0f} MB"
        shown = f"{entry.id}  ({path.name}, {size})" if entry else f"{path.name}  ({size})"
        in_use = " (in use)" if configured and Path(configured) == path else ""
        print(f"  {shown}{helpers.get(path, in_use)}")
    if not files:
        print("  none yet: `mnemo models catalog` lists models to download")
    for part in sorted(folder.glob("*.gguf.part")) if folder.is_dir() else []:
        file_name = part.name.removesuffix(".part")
        state = partial_download(folder, file_name)
        if state is not None:
            done, total = state
            share = f"{done / total:.0%} of {total / 2**20:.0f} MB" if total else f"{done} bytes"
            entry = find_entry(file_name, catalog)
            name = entry.id if entry is not None else file_name
            print(f"  {name}: paused at {share} (`mnemo models download {name}` resumes)")
    bundled = bundled_model_path()
    print(f"  default  (bundled {bundled.name}, {bundled.stat().st_size / 2**20:.0f} MB)")
    print(
        "API models: `mnemo models use openai:MODEL [--base-url URL]` or "
        "`mnemo models use anthropic:MODEL`."
    )
    return 0


MODE_WORDS = {"self": "manages its own memory", "assisted": "Mnemo recalls for it"}


def cmd_models_catalog(mnemo: Mnemo, args: argparse.Namespace) -> int:
    machine = _hardware(mnemo)
    catalog = load_catalog()
    fits = [assess(entry, machine) for entry in catalog]
    if args.json:
        rows = [entry_as_dict(entry, fit) for entry, fit in zip(catalog, fits, strict=True)]
        print(json.dumps({"computer": dataclasses.asdict(machine), "models": rows}, indent=2))
        return 0
    print(f"This computer: {machine.summary()}.")
    best = best_chat_entry(catalog, machine)
    for entry, fit in zip(catalog, fits, strict=True):
        star = "  <- try this one first" if entry is best else ""
        print(
            f"\n{entry.id} [{entry.role}]: {entry.name}, {entry.family} ({entry.released}), "
            f"{parameters_text(entry.parameters)} parameters, {entry.quantization}{star}"
        )
        print(f"  {entry.description}")
        print(
            f"  {entry.size_bytes / 1e9:.1f} GB download, "
            f"{gib(entry.ram_bytes(entry.working_context))} memory at "
            f"{entry.working_context} tokens, context up to {entry.context_length} tokens; "
            f"licence {entry.license_name} ({entry.license_url})"
        )
        if entry.memory_mode:
            mode = MODE_WORDS[entry.memory_mode]
            print(f"  Memory: {mode} under `auto`; evidence: {entry.evidence}.")
        print(f"  Pinned: {entry.url}, SHA-256 {entry.sha256}")
        print(f"  Here: {fit.status}: {fit.reason}.")
    print("\nDownload one with `mnemo models download ID`; nothing is downloaded until you ask.")
    return 0


class _ProgressLine:
    """A progress line on standard error, redrawn in place on a terminal."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.width = 0

    def __call__(self, progress: DownloadProgress) -> None:
        if not self.tty:
            return
        fraction = progress.fraction
        bar = ""
        if fraction is not None:
            filled = int(fraction * 30)
            bar = f"[{'#' * filled}{'.' * (30 - filled)}] {fraction:4.0%} "
        line = bar + progress.describe()
        print("\r" + line.ljust(self.width), end="", file=sys.stderr, flush=True)
        self.width = len(line)

    def end(self) -> None:
        if self.tty and self.width:
            print(file=sys.stderr)


def cmd_models_download(mnemo: Mnemo, args: argparse.Namespace) -> int:
    source = resolve_source(args.model, args.file)
    folder = models_folder_of(mnemo)
    already = partial_download(folder, source.file_name)
    verb = "Resuming" if already else "Downloading"
    print(f"{verb} {source.label} into {folder} (Ctrl-C pauses).", file=sys.stderr)
    stop = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda *_: stop.set())
    progress = _ProgressLine()
    try:
        path = download(source, folder, stop=stop, on_progress=progress)
    except DownloadPaused as paused:
        progress.end()
        print(f"{paused} Run the same command to resume.", file=sys.stderr)
        return 130
    except DownloadError:
        progress.end()
        raise
    finally:
        signal.signal(signal.SIGINT, previous)
    progress.end()
    print(f"Ready: {path} ({path.stat().st_size / 2**20:.0f} MB, checked).")
    if args.use:
        return _use_local(mnemo, path, None, None)
    name = source.entry.id if source.entry is not None else path.name
    print(f"Use it with `mnemo models use {name}`.")
    return 0


def local_model_path(mnemo: Mnemo, spec: str) -> Path:
    """A catalogue id or file name in the models folder, or a path."""
    folder = models_folder_of(mnemo)
    entry = find_entry(spec)
    for candidate in [
        *([folder / entry.file_name] if entry is not None else []),
        folder / spec,
    ]:
        if candidate.suffix == ".gguf" and candidate.is_file():
            return candidate
    if entry is not None:
        raise MnemoError(
            f"{entry.name} is not downloaded yet; `mnemo models download {entry.id}` fetches it."
        )
    return Path(spec).expanduser().resolve()


def _use_local(
    mnemo: Mnemo, path: Path, context: int | None, gpu_layers: int | None, *, yes: bool = False
) -> int:
    """A chat model becomes the model in use; a re-ranker orders search hits from the next chat
    on; an embedder re-embeds memory (asked first, unless ``yes``)."""
    check_model_file(path)
    role = role_of_file(path)
    if role == "re-ranker":
        from engine.llm.rerank import choose_reranker

        choose_reranker(mnemo.settings, path)
        print(
            f"Search hits are ordered again by {path.name} from the next chat on; a search "
            "waits at most a second for it. `mnemo settings models.reranker ''` turns it off."
        )
        return 0
    if role == "embedder":
        return switch_embedder(mnemo, str(path), yes=yes)
    fit = use_local_model(
        mnemo.settings, path, _hardware(mnemo), context=context, gpu_layers=gpu_layers
    )
    print(f"Now using {describe_model(mnemo)}.")
    if context is None or gpu_layers is None:
        print(f"For this computer: {fit.status}, {fit.reason}.")
    return 0


def cmd_models_use(mnemo: Mnemo, args: argparse.Namespace) -> int:
    spec: str = args.model
    settings = mnemo.settings
    backend, _, name = spec.partition(":")
    if backend in ("openai", "anthropic") and name:
        settings.set("model.backend", backend)
        settings.set("model.name", name)
        settings.set("model.base_url", args.base_url or "")
        if args.context is None:  # a local model's size is not the server's: ask it, or assume
            settings.reset("model.context_length")
    elif args.base_url:
        raise MnemoError("--base-url is for API models (openai:MODEL or anthropic:MODEL).")
    elif spec != "default":
        path = local_model_path(mnemo, spec)
        return _use_local(mnemo, path, args.context, args.gpu_layers, yes=args.yes)
    else:
        settings.set("model.backend", "local")
        settings.set("model.path", "")
    if args.context is not None:
        settings.set("model.context_length", args.context)
    if args.gpu_layers is not None:
        settings.set("model.gpu_layers", args.gpu_layers)
    print(f"Now using {describe_model(mnemo)}.")
    return 0


def cmd_models_remove(mnemo: Mnemo, args: argparse.Namespace) -> int:
    folder = models_folder_of(mnemo)
    entry = find_entry(args.model)
    file_name = entry.file_name if entry is not None else Path(args.model).name
    path = folder / file_name
    removed_part = partial_download(folder, file_name) is not None
    if path.is_file():
        in_use = mnemo.settings.get("model.path")
        if in_use and Path(in_use).resolve() == path.resolve():
            raise MnemoError(
                f"{file_name} is the model in use; choose another first "
                "(`mnemo models use default`)."
            )
        path.unlink()
        print(f"Removed {file_name} ({folder}).")
    elif not removed_part:
        raise MnemoError(f"There is no downloaded model named {args.model} in {folder}.")
    if removed_part:
        discard_partial(folder, file_name)
        print(f"Discarded the paused download of {file_name}.")
    return 0


def switch_embedder(mnemo: Mnemo, path: str, *, yes: bool) -> int:
    """Make the embedding GGUF at ``path`` ("": the bundled MiniLM) the embedder, re-embedding
    what is stored (asked first, unless ``yes``); a file that cannot be loaded changes nothing."""
    chosen = embedder_for(path, strict=True)
    if chosen is mnemo.embedder and not mnemo.embedder_mismatch:
        print(f"Memory already uses {chosen.name}; nothing to do.")
        return 0
    return reembed(mnemo, path, f" with {chosen.name}", yes=yes)


def reembed(mnemo: Mnemo, path: str | None, with_what: str, *, yes: bool) -> int:
    if not yes:
        total = mnemo.archival.count() + mnemo.recall.count()
        if not confirmed(
            f"Re-embed up to {total} passages and messages{with_what} now? A snapshot is taken "
            "first, so that it can be undone."
        ):
            print("Nothing changed.")
            return 1
    count = mnemo.reembed(
        lambda name, done, total: print(f"\r{name}: {done}/{total}", end=""), embedder_path=path
    )
    print(f"\nRe-embedded {count} items{with_what}.")
    return 0
