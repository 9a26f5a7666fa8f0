"""API keys live only in the keyring (or in memory for one run); `mnemo keys|models|doctor`."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import keyring
import keyring.backends.fail
import pytest
from fake_servers import NO_CONTEXT_SIZE, FakeServer, Reply, recorded

from engine import keys
from engine.cli import main
from engine.errors import ModelError
from engine.llm import load_model

SECRET = "sk-mnemo-SECRET-4242-do-not-leak"


@pytest.fixture(autouse=True)
def _clean_keys(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    previous = keyring.get_keyring()
    keys._session_keys.clear()
    yield
    keys._session_keys.clear()
    keyring.set_keyring(previous)


@pytest.fixture
def no_keyring() -> None:
    keyring.set_keyring(keyring.backends.fail.Keyring())


def test_keys_are_saved_in_the_keyring(memory_keyring):
    keys.save_key("openai", f"  {SECRET}\n")
    assert memory_keyring.store[("mnemo", "openai")] == SECRET
    assert keys.get_key("openai") == SECRET
    assert keys.key_source("openai") == "saved in the keyring"
    assert keys.delete_key("openai") and keys.get_key("openai") is None


def test_without_a_keyring_a_key_is_kept_for_this_run_only(no_keyring):
    name, secure = keys.keyring_status()
    assert not secure and "fail" in name
    with pytest.raises(keys.KeyringUnavailableError, match="no secure keyring.*for this run only"):
        keys.save_key("anthropic", SECRET)
    keys.use_key_for_this_run("anthropic", SECRET)
    assert keys.get_key("anthropic") == SECRET
    assert keys.key_source("anthropic") == "given for this run"


def test_environment_keys_are_read(no_keyring, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    assert keys.get_key("anthropic") == SECRET
    assert keys.key_source("anthropic") == "from $ANTHROPIC_API_KEY"


def test_a_missing_key_is_asked_for_or_explained(mnemo, no_keyring):
    mnemo.settings.set("model.backend", "anthropic")
    mnemo.settings.set("model.name", "claude-sonnet-4-5")
    with pytest.raises(ModelError, match="no keyring to save one.*ANTHROPIC_API_KEY"):
        load_model(mnemo.settings)
    model = load_model(mnemo.settings, ask_key=lambda provider: SECRET)
    assert model.name == "anthropic:claude-sonnet-4-5"
    assert keys.get_key("anthropic") == SECRET
    assert model.context_length == 200_000


def test_the_key_never_reaches_the_profile_or_the_logs(tmp_path, memory_keyring):
    server = FakeServer()
    server.replies += [*NO_CONTEXT_SIZE, recorded("openai/send_message.sse")]
    profile = tmp_path / "profile"
    base = ["--profile", str(profile)]
    try:
        assert (
            main([*base, "models", "use", "openai:gpt-test", "--base-url", f"{server.url}/v1"]) == 0
        )
        keys.save_key("openai", SECRET)
        # The server says nothing of its model: a local one would get assisted memory; the
        # recorded reply is a function call, as a self-managed model's.
        assert main([*base, "settings", "agent.mode", "self"]) == 0
        assert main([*base, "chat", "--message", "hello"]) == 0
    finally:
        server.close()
    assert server.received[0].headers["authorization"] == f"Bearer {SECRET}"  # it was used
    log = profile / "logs" / "mnemo.log"
    assert log.exists() and "POST" in log.read_text()
    leaks = [
        path
        for path in profile.rglob("*")
        if path.is_file() and SECRET.encode() in path.read_bytes()
    ]
    assert leaks == []
    assert list(profile.rglob("*.sqlite*")), "the database was not where the test looked"


def test_keys_command(memory_keyring, profile_dir, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO(SECRET + "\n"))
    assert main(["--profile", str(profile_dir), "keys", "set", "openai", "--stdin"]) == 0
    assert keys.get_key("openai") == SECRET
    assert main(["--profile", str(profile_dir), "keys"]) == 0
    listed = capsys.readouterr().out
    assert "openai: saved in the keyring" in listed and SECRET not in listed
    assert main(["--profile", str(profile_dir), "keys", "remove", "openai"]) == 0
    assert keys.get_key("openai") is None


def test_keys_command_without_a_keyring(no_keyring, profile_dir, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO(SECRET + "\n"))
    assert main(["--profile", str(profile_dir), "keys", "set", "openai", "--stdin"]) == 1
    assert "no secure keyring" in capsys.readouterr().err


def test_models_command(profile_dir, tmp_path, capsys):
    base = ["--profile", str(profile_dir)]
    assert main([*base, "models"]) == 0
    assert "In use: local bundled SmolLM2-135M-Instruct" in capsys.readouterr().out
    bogus = tmp_path / "weights.gguf"
    bogus.write_text("nope")
    assert main([*base, "models", "use", str(bogus)]) == 1
    assert "is not a GGUF model file" in capsys.readouterr().err
    assert (
        main(
            [
                *base,
                "models",
                "use",
                "openai:llama3.1",
                "--base-url",
                "http://localhost:11434/v1",
                "--context",
                "8192",
            ]
        )
        == 0
    )
    assert "openai:llama3.1 at http://localhost:11434/v1, context 8192" in capsys.readouterr().out
    assert main([*base, "models", "use", "default"]) == 0
    assert "local bundled" in capsys.readouterr().out


def test_doctor(profile_dir, no_keyring, capsys):
    base = ["--profile", str(profile_dir)]
    assert main([*base, "doctor"]) == 0
    report = capsys.readouterr().out
    for expected in (
        "loads: yes",
        "GPU offload:",
        "Keyring: keyring.backends.fail.Keyring",
        "llama-cpp-python 0.3.36",
        str(Path(profile_dir).resolve()),
        "Everything works.",
    ):
        assert expected in report, expected
    assert main([*base, "models", "use", "anthropic:claude-sonnet-4-5"]) == 0
    assert main([*base, "doctor"]) == 1
    assert "loads: no. There is no API key for anthropic" in capsys.readouterr().out


def test_doctor_reaches_an_api_server(profile_dir, memory_keyring, capsys):
    server = FakeServer()
    server.replies += [*NO_CONTEXT_SIZE, Reply(body='{"data": [{"id": "gpt-test"}]}')]
    try:
        base = ["--profile", str(profile_dir)]
        main([*base, "models", "use", "openai:gpt-test", "--base-url", server.url])
        assert main([*base, "doctor"]) == 0
        assert "server: reachable" in capsys.readouterr().out
    finally:
        server.close()
