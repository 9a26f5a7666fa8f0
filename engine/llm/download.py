"""Downloading a model file: resumable, checked, and never half-written where Mnemo looks.

A download writes ``NAME.part`` beside a small ``NAME.part.json`` (the address, the server's
ETag, its length and SHA-256). Stopping keeps both, so a later run, after a dropped connection or
a restart, asks only for the missing bytes (HTTP Range, with If-Range so a changed file starts
over). The finished file is checked (its length, the GGUF magic, the SHA-256 the catalogue pins
or the server states, and llama.cpp's own reading of its header) before it is renamed to
``NAME``; a file that fails is deleted with one sentence saying why.

Nothing here runs unless the user asks for a download: Mnemo makes no other network call.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote, urlsplit

from filelock import FileLock, Timeout

from engine import __version__
from engine.errors import MnemoError, ModelError
from engine.llm.catalog import CatalogEntry, find_entry, hugging_face_endpoint

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("mnemo.download")

PROGRESS_INTERVAL_S = 0.25
# Attempts in a row that may fail without receiving a byte before the download gives up.
ATTEMPTS_WITHOUT_PROGRESS = 4
# Left free on the disk after a download, so that the profile's database can still grow.
DISK_RESERVE_BYTES = 100 * 2**20
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
SHA256 = re.compile(r"[0-9a-f]{64}")

FreeBytes = Callable[[Path], int]


class DownloadError(MnemoError):
    """A download failed; the message says why and whether what was fetched is kept."""


class DownloadPaused(MnemoError):
    """The download was paused; its part file is kept for the next run to resume."""


@dataclass(frozen=True)
class DownloadSource:
    url: str
    file_name: str
    sha256: str | None = None  # pinned by the catalogue; else the server's, when it states one
    size_bytes: int | None = None  # expected, to check the disk before asking the server
    entry: CatalogEntry | None = None

    @property
    def label(self) -> str:
        return self.entry.name if self.entry is not None else self.file_name


@dataclass(frozen=True)
class DownloadProgress:
    file_name: str
    done: int
    total: int | None
    bytes_per_second: float
    checking: bool = False  # the bytes are in; the file is being verified

    @property
    def fraction(self) -> float | None:
        return self.done / self.total if self.total else None

    @property
    def seconds_left(self) -> float | None:
        if not self.total or self.bytes_per_second <= 0:
            return None
        return max(self.total - self.done, 0) / self.bytes_per_second

    def describe(self) -> str:
        """Like "1.2 GB of 2.0 GB, 5.3 MB/s, about 3 min left"."""
        if self.checking:
            return f"Checking {self.file_name}…"
        done = _size(self.done)
        of = f" of {_size(self.total)}" if self.total else ""
        speed = f", {_size(self.bytes_per_second)}/s" if self.bytes_per_second > 0 else ""
        left = self.seconds_left
        remaining = f", about {duration(left)} left" if left is not None else ""
        return f"{done}{of}{speed}{remaining}"


def _size(value: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if value >= scale:
            return f"{value / scale:.1f} {unit}"
    return f"{value:.0f} bytes"


def duration(seconds: float) -> str:
    """A time left, said shortly: "40 s", "12 min", "1.5 h"."""
    if seconds < 90:
        return f"{max(seconds, 1):.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


# -- what to download ----------------------------------------------------------------------------


def _rebase(url: str) -> str:
    """A Hugging Face address on the mirror ``HF_ENDPOINT`` names, when one is set."""
    return url.replace("https://huggingface.co", hugging_face_endpoint(), 1)


def _checked_file_name(name: str, shown: str) -> str:
    name = unquote(name)
    if not name.lower().endswith(".gguf") or name.startswith(".") or set("/\\\0") & set(name):
        raise DownloadError(
            f"{shown} does not name a .gguf file; Mnemo runs GGUF models (the files llama.cpp "
            "uses). Pick the .gguf file's own address."
        )
    return name


def source_for_entry(entry: CatalogEntry) -> DownloadSource:
    url = _rebase(entry.url)
    return DownloadSource(url, entry.file_name, entry.sha256, entry.size_bytes, entry)


def resolve_source(spec: str, file: str | None = None) -> DownloadSource:
    """A catalogue entry (its id or name), a Hugging Face ``owner/repo`` with a file name (as
    ``owner/repo/FILE.gguf`` or ``owner/repo FILE.gguf``), or an https address of a .gguf file."""
    spec = spec.strip()
    entry = find_entry(spec) if file is None else None
    if entry is not None:
        return source_for_entry(entry)
    if re.match(r"^[a-z]+://", spec, re.IGNORECASE):
        parts = urlsplit(spec)
        if parts.scheme != "https" and not (
            parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS
        ):
            raise DownloadError(
                f"Mnemo downloads models over https only, and {spec} is not an https address."
            )
        url = spec.replace("/blob/", "/resolve/", 1) if "huggingface.co" in spec else spec
        return DownloadSource(url, _checked_file_name(parts.path.rsplit("/", 1)[-1], spec))
    parts_list = [part for part in spec.split("/") if part]
    if file:
        parts_list += [part for part in file.split("/") if part]
    if len(parts_list) >= 3:
        owner, repo, path = parts_list[0], parts_list[1], "/".join(parts_list[2:])
        name = _checked_file_name(parts_list[-1], spec if file is None else f"{spec} {file}")
        url = f"{hugging_face_endpoint()}/{owner}/{repo}/resolve/main/{quote(path)}"
        return DownloadSource(url, name)
    if len(parts_list) == 2:
        raise DownloadError(
            f"Name the file as well: `mnemo models download {spec} FILE.gguf` (a repository "
            "holds one file per quantisation; Q4_K_M is a good default)."
        )
    raise DownloadError(
        f"{spec!r} is not a model in the catalogue (`mnemo models catalog` lists them), a "
        "Hugging Face owner/repo with a .gguf file, or an https address."
    )


# -- partial downloads -----------------------------------------------------------------------


def part_path(folder: Path, file_name: str) -> Path:
    return folder / f"{file_name}.part"


def _meta_path(folder: Path, file_name: str) -> Path:
    return folder / f"{file_name}.part.json"


def partial_download(folder: Path, file_name: str) -> tuple[int, int | None] | None:
    """Bytes fetched so far and the whole length, for a download that was stopped; else None."""
    part = part_path(folder, file_name)
    if not part.exists():
        return None
    total = _read_meta(folder, file_name).get("total")
    return part.stat().st_size, total if isinstance(total, int) else None


def discard_partial(folder: Path, file_name: str) -> None:
    """Cancel: forget what was fetched."""
    part_path(folder, file_name).unlink(missing_ok=True)
    _meta_path(folder, file_name).unlink(missing_ok=True)


def _read_meta(folder: Path, file_name: str) -> dict[str, object]:
    try:
        meta = json.loads(_meta_path(folder, file_name).read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


# -- the transfer ----------------------------------------------------------------------------


def http_client(url: str) -> httpx.Client:
    """A client that goes through the system's proxy for ``url``, as a browser would.

    ``urllib.request.getproxies`` reads the environment (HTTPS_PROXY, ALL_PROXY...) and, on
    Windows and macOS, the system's own proxy settings; NO_PROXY and the system's exceptions are
    honoured through ``proxy_bypass``.
    """
    import httpx  # only for a download: the Models page opens without it (and its CLI's imports)

    parts = urlsplit(url)
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if proxy and parts.hostname and urllib.request.proxy_bypass(parts.hostname):
        proxy = None
    return httpx.Client(
        proxy=proxy or None,
        trust_env=False,
        follow_redirects=True,
        timeout=httpx.Timeout(30.0, read=60.0),
        headers={"User-Agent": f"mnemo/{__version__}"},
    )


def _disk_free(folder: Path) -> int:
    return shutil.disk_usage(folder).free


class _Incomplete(Exception):
    """The server ended the body before its stated length (a dropped connection)."""


@dataclass
class _Transfer:
    """One file's download, across attempts."""

    source: DownloadSource
    folder: Path
    stop: threading.Event
    on_progress: Callable[[DownloadProgress], None] | None
    free_bytes: FreeBytes
    total: int | None = None
    sha256: str | None = None
    fetched: int = 0  # bytes received over the network in this run (the resume tests count it)

    @property
    def part(self) -> Path:
        return part_path(self.folder, self.source.file_name)

    def check_disk(self, needed: int) -> None:
        free = self.free_bytes(self.folder)
        if needed + DISK_RESERVE_BYTES > free:
            raise DownloadError(
                f"There is not enough disk space for {self.source.label}: it needs "
                f"{_size(needed)} more and {_size(free)} is free in {self.folder}. Free some "
                "space, or choose another models folder in the settings."
            )

    def attempt(self) -> None:
        """Fetch what is missing; return when the body is complete."""
        offset = self.part.stat().st_size if self.part.exists() else 0
        meta = _read_meta(self.folder, self.source.file_name)
        headers = {}
        if offset:
            headers["Range"] = f"bytes={offset}-"
            if isinstance(meta.get("etag"), str):
                headers["If-Range"] = str(meta["etag"])
        with (
            http_client(self.source.url) as client,
            client.stream("GET", self.source.url, headers=headers) as response,
        ):
            if response.status_code == 416 and offset:  # the part is no prefix of this file
                discard_partial(self.folder, self.source.file_name)
                raise _Incomplete("the server refused the range; starting over")
            _raise_for_status(response, self.source)
            if response.status_code == 206:
                start, total = _content_range(response.headers.get("content-range", ""))
                if start != offset:
                    discard_partial(self.folder, self.source.file_name)
                    raise _Incomplete("the server resumed at another place; starting over")
            else:
                offset = 0  # a full answer: the file changed, or ranges are not served
                total = _int(response.headers.get("content-length"))
            linked_sha, linked_size = _linked(response)
            self.total = total or linked_size
            self._choose_sha256(linked_sha)
            if self.total is not None:
                self.check_disk(self.total - offset)
            self._write_meta(response)
            self._receive(response, offset)

    def _choose_sha256(self, stated: str | None) -> None:
        pinned = self.source.sha256
        if pinned and stated and pinned != stated:
            raise DownloadError(
                f"The server's {self.source.file_name} is not the file Mnemo's catalogue names "
                "(their SHA-256 differ), so nothing was downloaded; the model may have moved."
            )
        self.sha256 = pinned or stated

    def _write_meta(self, response: httpx.Response) -> None:
        meta = {
            "url": self.source.url,
            "etag": response.headers.get("etag"),
            "total": self.total,
            "sha256": self.sha256,
        }
        _meta_path(self.folder, self.source.file_name).write_text(json.dumps(meta), "utf-8")

    def _receive(self, response: httpx.Response, offset: int) -> None:
        done = offset
        started = last_report = time.monotonic()
        with self.part.open("ab" if offset else "wb") as out:
            for chunk in response.iter_bytes():  # as received: a drop loses nothing buffered
                out.write(chunk)
                done += len(chunk)
                self.fetched += len(chunk)
                now = time.monotonic()
                if now - last_report >= PROGRESS_INTERVAL_S:
                    last_report = now
                    self._report(done, (done - offset) / max(now - started, 1e-6))
                if self.stop.is_set():
                    raise DownloadPaused(
                        f"Paused {self.source.label} at {_size(done)}; it resumes from there."
                    )
            out.flush()
            os.fsync(out.fileno())
        self._report(done, 0.0)
        if self.total is not None and done < self.total:
            raise _Incomplete(f"the connection ended at {done} of {self.total} bytes")

    def _report(self, done: int, speed: float, checking: bool = False) -> None:
        if self.on_progress is not None:
            progress = DownloadProgress(self.source.file_name, done, self.total, speed, checking)
            self.on_progress(progress)

    def verify(self) -> None:
        """Length, magic, SHA-256 and llama.cpp's reading; delete the file if any fails."""
        from engine.llm.gguf_file import inspect_gguf  # llama.cpp only once there is a file

        size = self.part.stat().st_size
        self._report(size, 0.0, checking=True)
        problem = None
        if self.total is not None and size != self.total:
            problem = f"it has {size} bytes where the server stated {self.total}"
        else:
            with self.part.open("rb") as file:
                magic = file.read(4)
                file.seek(0)
                digest = hashlib.file_digest(file, "sha256").hexdigest() if self.sha256 else ""
            if magic != b"GGUF":
                problem = "it is not a GGUF model file (the server sent something else)"
            elif self.sha256 and digest != self.sha256:  # a plain server states none
                problem = "its SHA-256 is not the one the server states for it"
            else:
                try:
                    inspect_gguf(self.part)
                except ModelError as error:
                    problem = f"llama.cpp cannot read it ({error})"
        if problem:
            discard_partial(self.folder, self.source.file_name)
            raise DownloadError(
                f"The downloaded {self.source.file_name} is damaged: {problem}. Nothing was kept; "
                "download it again."
            )


def _int(value: str | None) -> int | None:
    return int(value) if value and value.isdigit() else None


def _content_range(value: str) -> tuple[int | None, int | None]:
    """ "bytes 100-199/2000" -> (100, 2000)."""
    match = re.match(r"bytes (\d+)-\d+/(\d+|\*)", value)
    if match is None:
        return None, None
    return int(match.group(1)), _int(match.group(2))


def _linked(response: httpx.Response) -> tuple[str | None, int | None]:
    """The SHA-256 and length Hugging Face states for an LFS file (``X-Linked-Etag`` and
    ``X-Linked-Size`` on the redirect to its storage), or an ETag that is itself a SHA-256."""
    for answer in [*response.history, response]:
        for header in ("x-linked-etag", "etag"):
            value = answer.headers.get(header, "").removeprefix("W/").strip('"').lower()
            if SHA256.fullmatch(value):
                return value, _int(answer.headers.get("x-linked-size"))
    return None, None


def _raise_for_status(response: httpx.Response, source: DownloadSource) -> None:
    code = response.status_code
    if code < 400:
        return
    if code == 404:
        raise DownloadError(
            f"There is no file at {source.url} (the server answered 404 Not Found); check the name."
        )
    if code in (401, 403):
        raise DownloadError(
            f"The server refused {source.file_name} (HTTP {code}): the model may need an account "
            "and an accepted licence. Download it in a browser, then choose the file in the "
            "settings."
        )
    raise DownloadError(
        f"The server could not send {source.file_name} (HTTP {code} {response.reason_phrase}); "
        "try again later. What was downloaded so far is kept."
    )


def download(
    source: DownloadSource,
    folder: Path,
    *,
    stop: threading.Event | None = None,
    on_progress: Callable[[DownloadProgress], None] | None = None,
    free_bytes: FreeBytes = _disk_free,
    retry_wait_s: float = 1.0,
) -> Path:
    """Download ``source`` into ``folder`` and return the verified file's path.

    Setting ``stop`` pauses: DownloadPaused is raised and the part is kept. A dropped connection
    is retried from where it stopped; after several attempts in a row that receive nothing,
    DownloadError says so and keeps the part for a later run.
    """
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise DownloadError(
            f"Cannot create the models folder {folder} ({error.strerror}); choose another in the "
            "settings."
        ) from error
    final = folder / source.file_name
    if final.exists():
        return final
    lock = FileLock(folder / ".locks" / f"{source.file_name}.lock", thread_local=False)
    try:
        (folder / ".locks").mkdir(exist_ok=True)
        lock.acquire(timeout=0)
    except Timeout:
        raise DownloadError(
            f"{source.label} is already being downloaded by another Mnemo (the window or "
            "`mnemo models download`); let that one finish."
        ) from None
    try:
        return _download_held(source, folder, final, stop, on_progress, free_bytes, retry_wait_s)
    finally:
        lock.release()


def _download_held(
    source: DownloadSource,
    folder: Path,
    final: Path,
    stop: threading.Event | None,
    on_progress: Callable[[DownloadProgress], None] | None,
    free_bytes: FreeBytes,
    retry_wait_s: float,
) -> Path:
    """``download`` while holding the file's lock: two writers would interleave the part."""
    import httpx

    if final.exists():
        return final  # the other holder finished it
    if _read_meta(folder, source.file_name).get("url") not in (None, source.url):
        discard_partial(folder, source.file_name)  # an older download of another file
    transfer = _Transfer(source, folder, stop or threading.Event(), on_progress, free_bytes)
    if source.size_bytes is not None:
        have = transfer.part.stat().st_size if transfer.part.exists() else 0
        transfer.check_disk(source.size_bytes - have)
    failures = 0
    while True:
        before = transfer.fetched
        try:
            transfer.attempt()
            break
        except (httpx.TransportError, _Incomplete) as error:
            failures = 0 if transfer.fetched > before else failures + 1
            log.info("download of %s interrupted: %s", source.file_name, error)
            if failures >= ATTEMPTS_WITHOUT_PROGRESS:
                host = urlsplit(source.url).hostname
                kept = partial_download(folder, source.file_name)
                so_far = f" The {_size(kept[0])} fetched so far are kept." if kept else ""
                raise DownloadError(
                    f"Cannot reach {host} ({error or type(error).__name__}); check the internet "
                    f"connection or proxy.{so_far} Trying again resumes where it stopped."
                ) from error
            if transfer.stop.wait(retry_wait_s * failures):
                raise DownloadPaused(f"Paused {source.label}; it resumes from there.") from None
    transfer.verify()
    os.replace(transfer.part, final)
    _meta_path(folder, source.file_name).unlink(missing_ok=True)
    log.info("downloaded %s (%d bytes fetched)", final, transfer.fetched)
    return final
