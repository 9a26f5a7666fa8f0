"""Shared fixtures: a fresh profile per test, real SQLite (and PostgreSQL), real LanceDB, the real
embedder."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import keyring
import keyring.errors
import pytest
from keyring.backend import KeyringBackend

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# A transaction that reads and then writes fails at once under another writer: every test says so
# (engine.db.writing), and so does every `mnemo` process a test starts (it inherits this).
os.environ.setdefault("MNEMO_STRICT_WRITES", "1")

from engine import Mnemo  # noqa: E402
from engine.embed import default_embedder  # noqa: E402
from engine.llm.gguf_file import bundled_model_path  # noqa: E402
from engine.memory.archival import Source  # noqa: E402
from engine.profile import forget_prompt_states  # noqa: E402
from tests.s3_server import S3Server, running_s3_server  # noqa: E402


@pytest.fixture(scope="session")
def embedder():
    return default_embedder()


@pytest.fixture(scope="session")
def real_files() -> Path:
    """``../shared/data/real``: files other software wrote (exports, agent files), with their
    licences; read there, never copied into the project."""
    found = Path(__file__).resolve().parents[2] / "shared" / "data" / "real"
    if not found.is_dir():
        pytest.skip(f"the real files are not beside this checkout ({found})")
    return found


@pytest.fixture
def profile_dir(tmp_path: Path) -> Path:
    return tmp_path / "profile"


@pytest.fixture
def mnemo(profile_dir: Path, embedder) -> Iterator[Mnemo]:
    m = Mnemo.open(profile_dir, embedder=embedder)
    yield m
    m.close()


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real PostgreSQL 16 with pgvector (the binaries of the ``pgserver`` package), on a Unix
    socket of its own, stopped after the tests; yields its address."""
    import pgserver

    server = pgserver.get_server(tmp_path_factory.mktemp("postgres"), cleanup_mode="stop")
    yield server.get_uri()
    server.cleanup()


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest) -> str | None:
    """Each store test runs on both relational back-ends: None (the profile's SQLite file) and
    a PostgreSQL server (each profile gets a schema of its own there)."""
    return request.getfixturevalue("postgres_server") if request.param == "postgresql" else None


@pytest.fixture
def mnemo_on_each_backend(profile_dir: Path, embedder, database_url) -> Iterator[Mnemo]:
    m = Mnemo.open(profile_dir, embedder=embedder, database_url=database_url)
    yield m
    m.close()


@pytest.fixture(autouse=True, scope="session")
def _no_prompt_states_from_before() -> None:
    """The bundled model's replies in a run do not depend on states kept by earlier runs
    (``engine.llm.prompt_states``): where a step starts from changes how its prompt is batched."""
    forget_prompt_states()


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test may touch the real user's profile."""
    monkeypatch.setenv("MNEMO_HOME", str(tmp_path / "mnemo-home"))
    monkeypatch.setenv("MNEMO_DATA", str(tmp_path / "mnemo-data"))  # the assistants' folder
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # the app's window settings


@pytest.fixture(autouse=True)
def _priority_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bulk command run in the test process (`main(["import", ...])`) would lower the
    priority of every test after it, and of the servers they start (``behind_turns``); its
    own tests run it in a child process or record the call."""
    monkeypatch.setattr("os.nice", lambda _increment: 0)


class MemoryKeyring(KeyringBackend):
    """A keyring for tests: secure as far as Mnemo can tell, gone when the test ends."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.store: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.store.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.store[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        if (service, username) not in self.store:
            raise keyring.errors.PasswordDeleteError("no such key")
        del self.store[(service, username)]


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(previous)


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    with running_s3_server(tmp_path_factory.mktemp("seaweedfs")) as server:
        yield server


@pytest.fixture
def s3_profile(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch, request) -> str:
    """Credentials in the environment and an archival URL of this test's own, on the server."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_server.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_server.secret_key)
    prefix = f"{request.node.name}-{time.monotonic_ns()}"
    return f"s3://{s3_server.bucket}/{prefix}?endpoint={s3_server.endpoint}"


@pytest.fixture(scope="session")
def llama_server() -> Iterator[str]:
    """A real OpenAI-compatible server (llama-cpp-python's) with the bundled model, on 127.0.0.1."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # The server's process keeps llama.cpp off AMX as Mnemo's own loaders do (its kernels crash
    # on such CPUs: engine.hardware.keep_llama_off_amx), then runs as `python -m llama_cpp.server`.
    launch = (
        "import runpy, sys; from engine.hardware import keep_llama_off_amx; "
        "keep_llama_off_amx(); sys.argv[0] = 'llama_cpp.server'; "
        "runpy.run_module('llama_cpp.server', run_name='__main__')"
    )
    server = subprocess.Popen(
        [
            sys.executable,
            "-c",
            launch,
            "--model",
            str(bundled_model_path()),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            # The server's chatml-function-calling template writes the eleven memory functions
            # out at length: with 4,096 tokens, a turn's third step no longer fit.
            "8192",
            "--chat_format",
            "chatml-function-calling",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/models", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert server.poll() is None, "the llama.cpp server exited"
            assert time.monotonic() < deadline, "the llama.cpp server did not start"
            time.sleep(0.2)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:  # still generating for a request it was sent
            server.kill()
            server.wait()


@pytest.fixture
def boiler_manual(mnemo: Mnemo, tmp_path: Path) -> Path:
    """A document passage (page 4 of a PDF on disk), for replies that should cite it."""
    manual = tmp_path / "boiler-manual.pdf"
    manual.write_bytes(b"%PDF-1.4")
    mnemo.archival.insert(
        "The boiler service code is 7731 and the plumber is Ana Ruiz.",
        source=Source(path=str(manual), section="page 4"),
        origin="document",
    )
    return manual
