"""The model catalogue, hardware-aware recommendations, and downloads that resume and verify.

Downloads run against a real HTTP server on 127.0.0.1 that serves the bundled GGUF the way
Hugging Face does (a redirect stating the SHA-256, then the file with Range support).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from fake_servers import ModelFileServer
from filelock import FileLock

from engine import hardware
from engine.agent import Agent
from engine.cli import main
from engine.hardware import Gpu, Hardware
from engine.llm import load_model
from engine.llm.catalog import (
    assess,
    best_chat_entry,
    find_entry,
    load_catalog,
    use_local_model,
)
from engine.llm.download import (
    DownloadError,
    DownloadPaused,
    DownloadSource,
    download,
    partial_download,
    resolve_source,
)
from engine.llm.gguf_file import bundled_model_path
from engine.modes import choose_mode

GiB = 2**30


@pytest.fixture(scope="module")
def model_bytes() -> bytes:
    return bundled_model_path().read_bytes()


def source_for(server: ModelFileServer) -> DownloadSource:
    return resolve_source(server.resolve_url())


def files_in(folder: Path) -> list[str]:
    """What a person sees in the models folder (the lock folder is hidden)."""
    return sorted(p.name for p in folder.iterdir() if p.name != ".locks")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- the catalogue ---------------------------------------------------------------------------


def llama_cpp_architectures() -> bytes:
    """The bundled llama.cpp library, whose architecture table names every model it loads."""
    import llama_cpp

    libraries = (Path(llama_cpp.__file__).parent / "lib").glob("*llama.*")  # .so, .dylib, .dll
    return min(libraries, key=lambda path: len(path.name)).read_bytes()


def test_the_catalogue_offers_current_pinned_models_that_this_llama_cpp_loads():
    catalog = load_catalog()
    chat = [entry for entry in catalog if entry.kind == "chat"]
    current = [entry for entry in chat if entry.released >= "2025"]
    assert len({entry.family for entry in current}) >= 3  # Qwen3, Gemma 3, LFM2, SmolLM3
    sizes = [entry.parameters for entry in current]
    assert min(sizes) <= 0.6e9 and 7e9 <= max(sizes) <= 9e9
    assert len(chat) - len(current) <= 2  # the 2024 models that still win a size
    # One of each role Mnemo puts to use (models.reranker, models.embedder), in llama.cpp's own
    # conversions: its notes warn that community conversions of current re-rankers score wrong.
    helpers = [entry for entry in catalog if entry.kind != "chat"]
    assert sorted(entry.role for entry in helpers) == ["embedder", "re-ranker"]
    for entry in helpers:
        assert entry.url.startswith("https://huggingface.co/ggml-org/")
        assert entry.memory_mode is None and not entry.evidence
        laptop = Hardware(total_ram=8 * GiB, available_ram=6 * GiB, cpu_cores=2, disk_free=None)
        assert assess(entry, laptop).status == "recommended"
    library = llama_cpp_architectures()
    for entry in catalog:
        # A commit, not a branch: the pinned SHA-256 stays true of the file at that address.
        assert re.fullmatch(
            r"https://huggingface\.co/[^/]+/[^/]+/resolve/[0-9a-f]{40}/[^/]+\.gguf", entry.url
        ), entry.url
        assert re.fullmatch(r"[0-9a-f]{64}", entry.sha256)
        assert entry.license_name and entry.license_url.startswith("https://")
        assert entry.description and entry.size_bytes > 0 and entry.layers > 0
        assert entry.context_length >= entry.working_context
        assert find_entry(entry.id) == entry == find_entry(entry.file_name.upper())
        assert re.fullmatch(r"20\d\d-\d\d", entry.released)
        assert b"\x00" + entry.architecture.encode() + b"\x00" in library, entry.architecture
        assert entry.ram_bytes(8192) > entry.ram_bytes(4096) > entry.size_bytes
        if entry.kind != "chat":
            continue
        assert entry.context_length >= 8192
        # The mode written in the data is the one `auto` gives it, and says why.
        assert (
            entry.memory_mode
            == choose_mode("auto", entry.parameters, architecture=entry.architecture).mode
        )
        assert "BFCL" in entry.evidence or entry.evidence.startswith("none known")
    assert len({entry.id for entry in catalog}) == len(catalog)


def test_this_computer_is_detected():
    here = hardware.detect(Path("/nonexistent/models"))
    assert here.total_ram and here.total_ram > here.available_ram > 0
    assert here.cpu_cores == os.cpu_count()
    assert here.disk_free and here.disk_free > 0
    assert here.memory_read_bytes_per_s and here.memory_read_bytes_per_s > 1e8
    assert here.offload_supported is False  # the CPU build installed here
    assert "CPU cores" in here.summary()


def test_llama_cpp_is_kept_off_amx_where_the_cpu_has_it():
    """ggml's AMX kernels crash on the first matrix product (llama.cpp issue 20824); on such a
    CPU the loaders keep weights out of the AMX buffers, and the model still answers. Run in a
    process of its own, since the switch holds for the whole process."""
    script = """
from engine import hardware
from engine.llm.local import LlamaModel
import llama_cpp, llama_cpp.llama_cpp as library
before = library.llama_model_default_params().use_extra_bufts
hardware.cpu_has_amx = lambda: True  # as on a Sapphire Rapids Xeon
model = LlamaModel(None, context_length=512, seed=1)
print(before, library.llama_model_default_params().use_extra_bufts,
      llama_cpp.llama_model_default_params().use_extra_bufts)
print(model.complete("You are brief.", "Say hello.", max_tokens=8) != "")
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "False", "False", "True"]


def test_nvidia_smi_output_is_read():
    gpus = hardware.parse_nvidia_smi("NVIDIA GeForce RTX 3060, 12288, 11000\nnot a gpu\n")
    assert gpus == (Gpu("NVIDIA GeForce RTX 3060", "nvidia", 12288 * 2**20, 11000 * 2**20),)


def machine(ram_gib: float, cores: int = 8, gpu: Gpu | None = None, bandwidth: float = 40e9):
    return Hardware(
        total_ram=int(ram_gib * GiB),
        available_ram=int(ram_gib * GiB * 0.7),
        cpu_cores=cores,
        disk_free=500 * GiB,
        gpus=(gpu,) if gpu else (),
        offload_supported=gpu is not None,
        memory_read_bytes_per_s=bandwidth,
    )


def test_recommendations_follow_memory_speed_and_gpu():
    llama8 = find_entry("qwen3-8b")
    small = find_entry("qwen3-1.7b")
    assert llama8 is not None and small is not None

    tiny_laptop = machine(4, cores=4)
    fit = assess(llama8, tiny_laptop)
    assert fit.status == "too large" and "memory" in fit.reason
    assert assess(small, tiny_laptop).status == "recommended"

    two_cores = machine(32, cores=2)
    fit = assess(llama8, two_cores)
    assert fit.status == "slow" and "slower than you read" in fit.reason and fit.gpu_layers == 0

    gaming = machine(16, gpu=Gpu("RTX 3060", "nvidia", 12 * GiB, 11 * GiB))
    fit = assess(llama8, gaming)
    assert (fit.status, fit.gpu_layers, fit.context) == ("recommended", -1, 8192)

    small_gpu = machine(16, gpu=Gpu("GTX 1660", "nvidia", 6 * GiB, 4 * GiB))
    fit = assess(llama8, small_gpu)
    assert 0 < fit.gpu_layers < llama8.layers
    assert f"{fit.gpu_layers} of {llama8.layers} layers" in fit.reason

    mac = machine(8, gpu=Gpu("Apple Silicon (Metal)", "apple", 8 * GiB, 6 * GiB))
    assert assess(find_entry("smollm3-3b"), mac).gpu_layers == -1  # type: ignore[arg-type]
    old_mac = machine(4, gpu=Gpu("Apple Silicon (Metal)", "apple", 4 * GiB, 3 * GiB))
    assert assess(llama8, old_mac).status == "too large"

    full_disk = Hardware(32 * GiB, 20 * GiB, 8, 1 * GiB, (), False, 40e9)
    fit = assess(llama8, full_disk)
    assert fit.status == "too large" and "disk" in fit.reason

    # The model to try first is the largest recommended one.
    assert best_chat_entry(load_catalog(), gaming) == find_entry("qwen3-8b")
    best_here = best_chat_entry(load_catalog(), tiny_laptop)
    assert best_here is not None and best_here.parameters < 4e9


def test_catalog_command_lists_every_entry_with_its_fit(profile_dir, capsys):
    assert main(["--profile", str(profile_dir), "models", "catalog", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    rows = listed["models"]
    assert listed["computer"]["cpu_cores"] == os.cpu_count()
    assert [row["id"] for row in rows] == [entry.id for entry in load_catalog()]
    assert all(row["fit"]["status"] in ("recommended", "slow", "too large") for row in rows)
    assert all(row["ram_bytes_at_default_context"] > row["size_bytes"] for row in rows)
    assert main(["--profile", str(profile_dir), "models", "catalog"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("This computer: ") and "try this one first" in out
    assert out.count("\n  Here: ") == len(rows)
    assert "qwen3-reranker-0.6b [re-ranker]: " in out and "[embedder]: " in out
    assert out.count(" [chat]: ") == len(rows) - 2
    assert out.count("\n  Memory: ") == len(rows) - 2  # a mode and its evidence per chat model


# -- what to download ------------------------------------------------------------------------


def test_names_addresses_and_repositories_resolve(monkeypatch):
    entry = find_entry("smollm3-3b")
    assert entry is not None
    assert resolve_source("SmolLM3 3B") == DownloadSource(
        entry.url, entry.file_name, entry.sha256, entry.size_bytes, entry
    )
    repo = resolve_source("bartowski/Some-GGUF", "Some-Q4_K_M.gguf")
    assert repo.url == "https://huggingface.co/bartowski/Some-GGUF/resolve/main/Some-Q4_K_M.gguf"
    assert resolve_source("bartowski/Some-GGUF/Some-Q4_K_M.gguf") == repo
    pasted = resolve_source("https://huggingface.co/a/b/blob/main/m.gguf")
    assert pasted.url == "https://huggingface.co/a/b/resolve/main/m.gguf"
    monkeypatch.setenv("HF_ENDPOINT", "https://hf-mirror.example")
    assert resolve_source(entry.id).url.startswith("https://hf-mirror.example/ggml-org/")
    with pytest.raises(DownloadError, match="Name the file as well"):
        resolve_source("bartowski/Some-GGUF")
    with pytest.raises(DownloadError, match="over https only"):
        resolve_source("http://example.com/m.gguf")
    with pytest.raises(DownloadError, match="does not name a .gguf file"):
        resolve_source("https://example.com/model.safetensors")
    with pytest.raises(DownloadError, match="does not name a .gguf file"):
        resolve_source("https://example.com/x/a%2F..%2F..%2Frc.gguf")  # no way out of the folder
    with pytest.raises(DownloadError, match="is not a model in the catalogue"):
        resolve_source("no-such-model")


# -- downloads against a real local server ----------------------------------------------------


def test_a_download_completes_verified_and_the_model_replies(tmp_path, model_bytes, mnemo):
    folder = tmp_path / "models"
    reports = []
    with ModelFileServer(model_bytes, "tiny-Q4.gguf") as server:
        path = download(source_for(server), folder, on_progress=reports.append)
    assert path == folder / "tiny-Q4.gguf"
    assert sha256(path) == server.sha256
    assert files_in(folder) == ["tiny-Q4.gguf"]  # no part, no sidecar
    assert reports[-1].checking and reports[0].total == len(model_bytes)
    assert server.sent == len(model_bytes)

    # The normal path: choose it, load it, get a reply.
    fit = use_local_model(mnemo.settings, path, hardware.detect(folder))
    assert mnemo.settings.get("model.path") == str(path)
    assert mnemo.settings.get("model.context_length") == fit.context
    model = load_model(mnemo.settings)
    assert model.name == "tiny-Q4.gguf"
    result = Agent(mnemo, model).send("Hello! My name is Ines.")
    assert result.reason == "replied" and result.reply.strip()


def test_a_dropped_connection_resumes_with_the_missing_bytes_only(tmp_path, model_bytes):
    half = len(model_bytes) // 2
    with ModelFileServer(model_bytes, "tiny.gguf", drop_after=half) as server:
        path = download(source_for(server), tmp_path, retry_wait_s=0.01)
    ranges = [request.get("Range") for request in server.requests if "storage" in request["path"]]
    assert ranges[0] is None and ranges[1] == f"bytes={half}-"
    assert server.sent_per_answer == [half, len(model_bytes) - half]  # nothing twice
    assert sha256(path) == server.sha256


def test_a_paused_download_resumes_after_a_restart(tmp_path, model_bytes):
    stop = threading.Event()

    def pause_at_a_third(progress):
        if progress.done > len(model_bytes) / 3:
            stop.set()

    with ModelFileServer(model_bytes, "tiny.gguf", chunk_delay_s=0.002) as server:
        source = source_for(server)
        with pytest.raises(DownloadPaused):
            download(source, tmp_path, stop=stop, on_progress=pause_at_a_third)
        kept = partial_download(tmp_path, "tiny.gguf")
        assert kept is not None and 0 < kept[0] < len(model_bytes)
        assert kept[1] == len(model_bytes)
        assert not (tmp_path / "tiny.gguf").exists()
        path = download(source, tmp_path)  # a new run: the part and its sidecar are all it has
    assert server.requests[-1]["Range"] == f"bytes={kept[0]}-"
    assert server.sent_per_answer[1] == len(model_bytes) - kept[0]
    assert sha256(path) == server.sha256


def test_a_corrupted_file_is_refused_and_nothing_is_kept(tmp_path, model_bytes):
    with (
        ModelFileServer(model_bytes, "tiny.gguf", corrupt=True) as server,
        pytest.raises(DownloadError) as refused,
    ):
        download(source_for(server), tmp_path)
    message = str(refused.value)
    assert "is damaged" in message and "SHA-256" in message and message.count(". ") <= 1
    assert files_in(tmp_path) == []


def test_a_catalogue_hash_the_server_contradicts_stops_before_downloading(tmp_path, model_bytes):
    with ModelFileServer(model_bytes, "tiny.gguf") as server:
        source = DownloadSource(server.resolve_url(), "tiny.gguf", sha256="0" * 64)
        with pytest.raises(DownloadError, match="not the file Mnemo's catalogue names"):
            download(source, tmp_path)
    # The answer is dropped at its headers (what the server had pushed into the socket aside).
    assert server.sent < len(model_bytes) / 2 and files_in(tmp_path) == []


def test_not_enough_disk_and_a_missing_file_are_said_in_words(tmp_path, model_bytes):
    with ModelFileServer(model_bytes, "tiny.gguf") as server:
        with pytest.raises(DownloadError, match="not enough disk space") as full:
            download(source_for(server), tmp_path, free_bytes=lambda _folder: 50 * 2**20)
        assert "Free some space" in str(full.value)
        missing = DownloadSource(f"{server.url}/a/b/resolve/main/nope.gguf", "nope.gguf")
        with pytest.raises(DownloadError, match="404 Not Found"):
            download(missing, tmp_path)
    assert server.sent < len(model_bytes) / 2
    assert files_in(tmp_path) == []


def test_one_download_of_a_file_at_a_time(tmp_path, model_bytes):
    """The window and `mnemo models download` must not both write the same part."""
    (tmp_path / ".locks").mkdir()
    with (
        ModelFileServer(model_bytes, "tiny.gguf") as server,
        FileLock(tmp_path / ".locks" / "tiny.gguf.lock"),
        pytest.raises(DownloadError, match="already being downloaded by another Mnemo"),
    ):
        download(source_for(server), tmp_path)
    assert server.requests == []


def test_a_file_that_is_not_a_model_is_refused(tmp_path):
    with (
        ModelFileServer(b"<html>Sign in</html>" * 100, "page.gguf") as server,
        pytest.raises(DownloadError, match="not a GGUF model file"),
    ):
        download(source_for(server), tmp_path)
    assert files_in(tmp_path) == []


def test_downloads_go_through_the_proxy(tmp_path, model_bytes, monkeypatch):
    """The proxy from the environment (the system's, on Windows and macOS) carries the download;
    the address itself is a closed port, so only the proxy can have answered."""
    for name in ("no_proxy", "NO_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    with ModelFileServer(model_bytes, "tiny.gguf") as proxy:
        monkeypatch.setenv("http_proxy", proxy.url)
        source = resolve_source("http://127.0.0.1:9/o/r/resolve/main/tiny.gguf")
        path = download(source, tmp_path)
    assert proxy.proxied[0] == "http://127.0.0.1:9/o/r/resolve/main/tiny.gguf"
    assert sha256(path) == proxy.sha256


# -- the command line ------------------------------------------------------------------------


def test_cli_download_pauses_on_ctrl_c_resumes_lists_uses_and_removes(tmp_path, model_bytes):
    profile = tmp_path / "profile"
    env = {**os.environ, "MNEMO_HOME": str(profile), "HF_ENDPOINT": "http://127.0.0.1:1"}
    command = [sys.executable, "-m", "engine.cli", "models"]
    with ModelFileServer(model_bytes, "tiny.gguf", chunk_delay_s=0.01) as server:
        url = server.resolve_url()
        started = subprocess.Popen(
            [*command, "download", url], env=env, stderr=subprocess.PIPE, text=True
        )
        part = profile / "models" / "tiny.gguf.part"
        deadline = time.monotonic() + 60
        while (not part.exists() or part.stat().st_size < 2**20) and time.monotonic() < deadline:
            time.sleep(0.05)
        started.send_signal(signal.SIGINT)
        _, err = started.communicate(timeout=60)
        assert started.returncode == 130, err
        assert "Run the same command to resume" in err
        listed = subprocess.run([*command], env=env, capture_output=True, text=True)
        assert "tiny.gguf: paused at" in listed.stdout
        server.chunk_delay_s = 0
        done = subprocess.run(
            [*command, "download", url, "--use"], env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        assert "Resuming" in done.stderr and "Now using local tiny.gguf" in done.stdout
    assert server.requests[-1]["Range"].startswith("bytes=")
    assert sha256(profile / "models" / "tiny.gguf") == server.sha256
    listed = subprocess.run([*command, "list"], env=env, capture_output=True, text=True)
    assert re.search(r"  tiny\.gguf  \(94 MB\) \(in use\)\n", listed.stdout)
    refused = subprocess.run([*command, "remove", "tiny.gguf"], env=env, capture_output=True)
    assert refused.returncode == 1 and b"is the model in use" in refused.stderr
    subprocess.run([*command, "use", "default"], env=env, check=True, capture_output=True)
    removed = subprocess.run([*command, "remove", "tiny.gguf"], env=env, capture_output=True)
    assert removed.returncode == 0 and not (profile / "models" / "tiny.gguf").exists()


def test_a_re_ranker_and_an_embedder_download_verified_and_are_put_to_use(
    tmp_path, profile_dir, capsys
):
    """Each role from a local server, as from Hugging Face: verified, then "use" puts it to
    work: the re-ranker on the searches from the next chat, the embedder after a re-embed."""
    from tiny_gguf import bert_embedder, bert_reranker

    from engine.llm import ScriptedModel
    from engine.mnemo import Mnemo

    with Mnemo.open(profile_dir) as mnemo:
        mnemo.archival.insert("The boiler is serviced in October by Dana.")
    folder = profile_dir / "models"
    for built in (bert_reranker(tmp_path / "tiny-rerank.gguf"), bert_embedder(tmp_path / "e")):
        with ModelFileServer(built.read_bytes(), f"{built.stem}-Q8_0.gguf") as server:
            url = server.resolve_url()
            assert main(["--profile", str(profile_dir), "models", "download", url]) == 0
        assert sha256(folder / server.file_name) == server.sha256
    capsys.readouterr()
    use = ["--profile", str(profile_dir), "models", "use"]
    assert main([*use, "tiny-rerank-Q8_0.gguf"]) == 0
    assert "ordered again by tiny-rerank-Q8_0.gguf" in capsys.readouterr().out
    assert main([*use, "e-Q8_0.gguf", "--yes"]) == 0
    assert "Re-embedded 1 items with gguf:e-Q8_0" in capsys.readouterr().out
    assert main(["--profile", str(profile_dir), "models", "list"]) == 0
    listed = capsys.readouterr().out
    assert "tiny-rerank-Q8_0.gguf  (0 MB) (in use as the re-ranker)" in listed
    assert "e-Q8_0.gguf  (0 MB) (in use as the embedder)" in listed
    with Mnemo.open(profile_dir) as mnemo:
        assert mnemo.settings.get("models.reranker") == str(folder / "tiny-rerank-Q8_0.gguf")
        assert mnemo.embedder.name == "gguf:e-Q8_0" and mnemo.embedder_mismatch is None
        Agent(mnemo, ScriptedModel())  # a chat starts: the re-ranker is on the searches
        assert mnemo.archival.cross_encoder is not None
        assert mnemo.archival.search("boiler")[0].text.startswith("The boiler")
        assert mnemo.settings.get("model.path") == ""  # the chat model did not change
    broken = folder / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\0" * 64)
    assert main([*use, str(broken), "--yes"]) == 1
    assert "broken.gguf" in capsys.readouterr().err


def test_cli_names_an_unknown_model_in_one_sentence(profile_dir, capsys):
    assert main(["--profile", str(profile_dir), "models", "download", "nonsense"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("mnemo: 'nonsense' is not a model in the catalogue")
    assert main(["--profile", str(profile_dir), "models", "use", "smollm3-3b"]) == 1
    assert "is not downloaded yet; `mnemo models download smollm3-3b`" in (capsys.readouterr().err)


def test_a_plain_http_server_that_states_no_checksum_serves_a_model(profile_dir, tmp_path, capsys):
    """A person's own mirror, NAS or folder server states no SHA-256: the file was refused every
    time as "damaged" (an empty digest compared with None). Python's own file server, as is."""
    served = tmp_path / "served"
    served.mkdir()
    shutil.copyfile(bundled_model_path(), served / "tiny.gguf")
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(served))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/tiny.gguf"
        code = main(["--profile", str(profile_dir), "models", "download", url])
    finally:
        server.shutdown()
        server.server_close()
    assert code == 0, capsys.readouterr().err
    assert sha256(profile_dir / "models" / "tiny.gguf") == sha256(served / "tiny.gguf")
