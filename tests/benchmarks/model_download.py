"""What a model download costs beyond moving its bytes: resume bookkeeping, the part file, the
SHA-256 and llama.cpp's reading of the header.

The bundled model (98 MB) is served from 127.0.0.1 the way Hugging Face serves a file (a redirect
stating its SHA-256, then the bytes). In the same run, the bare transfer (httpx streaming the
same address into a file, nothing checked) is the baseline. Reported: medians of ``--runs``, the
download's throughput against the baseline's, and the seconds spent checking the finished file.
On a real connection the transfer dominates; on loopback the checks show at their largest.

    uv run python tests/benchmarks/model_download.py [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
from _common import emit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from fake_servers import ModelFileServer  # noqa: E402

from engine.llm.download import download, resolve_source  # noqa: E402
from engine.llm.gguf_file import bundled_model_path  # noqa: E402


def bare_transfer(url: str, target: Path) -> float:
    started = time.perf_counter()
    with (
        httpx.Client(follow_redirects=True) as client,
        client.stream("GET", url) as response,
        target.open("wb") as out,
    ):
        for chunk in response.iter_bytes():
            out.write(chunk)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    body = bundled_model_path().read_bytes()
    bare, whole, checking = [], [], []
    with ModelFileServer(body, "tiny.gguf") as server, tempfile.TemporaryDirectory() as folder:
        url = server.resolve_url()
        for run in range(args.runs):
            bare.append(bare_transfer(url, Path(folder) / f"bare-{run}.gguf"))
            check_started: list[float] = []

            def note(progress, check_started=check_started):
                if progress.checking and not check_started:
                    check_started.append(time.perf_counter())

            started = time.perf_counter()
            download(resolve_source(url), Path(folder) / f"run-{run}", on_progress=note)
            ended = time.perf_counter()
            whole.append(ended - started)
            checking.append(ended - check_started[0])
    mb = len(body) / 1e6
    emit(
        {
            "benchmark": "model_download",
            "megabytes": round(mb, 1),
            "runs": args.runs,
            "bare_mb_per_s": round(mb / statistics.median(bare), 1),
            "download_mb_per_s": round(mb / statistics.median(whole), 1),
            "download_vs_bare": round(statistics.median(bare) / statistics.median(whole), 2),
            "checking_s": round(statistics.median(checking), 2),
        }
    )


if __name__ == "__main__":
    main()
