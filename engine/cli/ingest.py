"""`mnemo ingest`, `mnemo watch` and `mnemo sources`: documents into archival memory."""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from engine.ingest.ingestor import FileResult, Ingestor, IngestProgress, canonical_path
from engine.ingest.watch import FolderWatcher, WatchedFolders
from engine.interrupt import run_interruptibly

if TYPE_CHECKING:
    from engine.mnemo import Mnemo

BAR_WIDTH = 28


class ProgressBar:
    """A one-line progress bar on stderr (plain lines when stderr is not a terminal)."""

    def __init__(self) -> None:
        self._tty = sys.stderr.isatty()
        self._last = 0.0

    def __call__(self, progress: IngestProgress) -> None:
        if not self._tty:
            return
        now = time.monotonic()
        if progress.current is not None and now - self._last < 0.1:
            return
        self._last = now
        total = max(progress.files_total, 1)
        filled = int(BAR_WIDTH * progress.files_done / total)
        name = (progress.current or "").rsplit("/", 1)[-1][:30]
        sys.stderr.write(
            f"\r[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {progress.files_done}/"
            f"{progress.files_total} files, {progress.chunks} passages, {progress.errors} errors "
            f"{name:<30}"
        )
        sys.stderr.flush()

    def done(self) -> None:
        if self._tty:
            sys.stderr.write("\n")


def _ingestor(mnemo: Mnemo) -> Ingestor:
    def waiting() -> None:
        print(
            "Another Mnemo is indexing documents in this profile; waiting for it to finish...",
            file=sys.stderr,
            flush=True,
        )

    return Ingestor(mnemo, on_wait=waiting)


def _print_problems(results: list[FileResult]) -> None:
    for result in results:
        if result.outcome in ("error", "skipped"):
            print(f"  {result.outcome}: {result.path}: {result.error}")


def _summary(progress: IngestProgress) -> str:
    counts: dict[str, int] = {}
    for result in progress.results:
        counts[result.outcome] = counts.get(result.outcome, 0) + 1
    parts = [f"{count} {outcome}" for outcome, count in sorted(counts.items())]
    return f"{progress.files_total} files: {', '.join(parts) or 'nothing to do'}; " + (
        f"{progress.chunks} passages"
    )


def _run_with_cancel(work: Callable[[threading.Event], IngestProgress]) -> IngestProgress:
    """Ctrl-C stops ingestion between files (what is done stays done)."""
    return run_interruptibly(
        work,
        lambda: sys.stderr.write("\nStopping after the current file; run again to continue.\n"),
    )


def cmd_ingest(mnemo: Mnemo, args: argparse.Namespace) -> int:
    ingestor = _ingestor(mnemo)
    bar = ProgressBar()
    leftover = ingestor.resume  # files a crash or a Ctrl-C left unfinished come first
    resumed = _run_with_cancel(lambda cancel: leftover(bar, cancel))
    progress = _run_with_cancel(
        lambda cancel: ingestor.ingest(
            args.paths,
            progress=bar,
            cancel=cancel,
            include=args.include or (),
            **({"exclude": args.exclude} if args.exclude else {}),
        )
    )
    bar.done()
    if resumed.files_total:
        print(f"Finished {resumed.files_total} files left from an earlier run.")
    print(_summary(progress))
    _print_problems(progress.results)
    return 1 if progress.errors else 0


def cmd_watch_list(mnemo: Mnemo, _args: argparse.Namespace) -> int:
    folders = WatchedFolders(mnemo).all()
    if not folders:
        print("No watched folders; add one with `mnemo watch add PATH`.")
    for folder in folders:
        include = f" (only {', '.join(folder.include)})" if folder.include else ""
        print(f"{folder.path}{include}")
    return 0


def cmd_watch_add(mnemo: Mnemo, args: argparse.Namespace) -> int:
    folder = WatchedFolders(mnemo).add(args.path, args.include or (), args.exclude)
    print(f"Watching {folder.path}; indexing what is there now...")
    bar = ProgressBar()
    progress = _run_with_cancel(
        lambda cancel: _ingestor(mnemo).reconcile(
            folder.path, folder.include, folder.exclude, bar, cancel
        )
    )
    bar.done()
    print(_summary(progress))
    _print_problems(progress.results)
    print("It stays in sync while Mnemo runs (`mnemo watch run` watches from the terminal).")
    return 0


def cmd_watch_remove(mnemo: Mnemo, args: argparse.Namespace) -> int:
    WatchedFolders(mnemo).remove(args.path)
    if args.keep:
        print(f"Stopped watching {args.path}; its passages stay in archival memory.")
    else:
        removed = _ingestor(mnemo).remove(str(canonical_path(args.path)))
        print(f"Stopped watching {args.path} and removed its {removed} passages.")
    return 0


def cmd_watch_run(mnemo: Mnemo, _args: argparse.Namespace) -> int:
    if not WatchedFolders(mnemo).all():
        print("No watched folders; add one with `mnemo watch add PATH`.")
        return 1

    def show(result: FileResult) -> None:
        if result.outcome != "unchanged":
            detail = f": {result.error}" if result.error else f" ({result.chunks} passages)"
            print(f"{result.outcome}: {result.path}{detail}", flush=True)

    watcher = FolderWatcher(mnemo, on_result=show)
    watcher.start()
    print("Watching; Ctrl-C stops.", flush=True)
    try:
        while True:
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        watcher.stop()
    return 0


def cmd_sources(mnemo: Mnemo, args: argparse.Namespace) -> int:
    rows = _ingestor(mnemo).documents()
    if args.errors:
        rows = [row for row in rows if row.status in ("error", "skipped")]
    if args.json:
        print(json.dumps([row.model_dump() for row in rows], ensure_ascii=False, indent=2))
        return 0
    if not rows:
        print("No documents yet; `mnemo ingest PATH` or `mnemo watch add FOLDER` adds some.")
    for row in rows:
        detail = f"{row.chunk_count} passages" if row.status == "done" else (row.error or "")
        print(f"{row.status:<8} {row.path}  {detail}")
    return 0
