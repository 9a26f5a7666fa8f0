import hashlib
import sqlite3

import pytest

from engine import Mnemo
from engine.db import SCHEMA_VERSION
from engine.errors import ProfileError, ProfileTooNewError
from engine.profile import Profile, default_profile_dir


def test_mnemo_home_overrides_the_platform_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("MNEMO_HOME", str(tmp_path / "home"))
    assert default_profile_dir() == tmp_path / "home"
    assert Profile.resolve().root == (tmp_path / "home").resolve()


def test_explicit_path_beats_mnemo_home(tmp_path, monkeypatch):
    monkeypatch.setenv("MNEMO_HOME", str(tmp_path / "home"))
    assert Profile.resolve(tmp_path / "explicit").root == (tmp_path / "explicit").resolve()


def test_without_mnemo_home_the_user_data_folder_is_used(monkeypatch):
    monkeypatch.delenv("MNEMO_HOME")
    monkeypatch.delenv("MNEMO_DATA")
    path = default_profile_dir()
    assert path.parts[-3:] == ("mnemo", "profiles", "default")  # the assistant in use


def test_open_creates_database_in_wal_mode_and_lance_folder(profile_dir, embedder):
    with Mnemo.open(profile_dir, embedder=embedder):
        pass
    assert (profile_dir / "archival.lance").is_dir()
    connection = sqlite3.connect(profile_dir / "mnemo.sqlite")
    assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert connection.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_profile_from_a_newer_mnemo_is_refused_and_left_untouched(profile_dir, embedder):
    with Mnemo.open(profile_dir, embedder=embedder) as m:
        m.core.set("human", "Name: Ada")
    database = profile_dir / "mnemo.sqlite"
    connection = sqlite3.connect(database)
    connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    connection.close()
    before = hashlib.sha256(database.read_bytes()).hexdigest()
    with pytest.raises(ProfileTooNewError, match="newer version of Mnemo"):
        Mnemo.open(profile_dir, embedder=embedder)
    assert hashlib.sha256(database.read_bytes()).hexdigest() == before


def test_a_file_in_place_of_the_profile_folder_is_a_clear_error(tmp_path, embedder):
    (tmp_path / "notadir").write_text("x")
    with pytest.raises(ProfileError, match="is a file, not a folder"):
        Mnemo.open(tmp_path / "notadir", embedder=embedder)


def test_a_damaged_database_is_a_clear_error(profile_dir, embedder):
    profile_dir.mkdir(parents=True)
    (profile_dir / "mnemo.sqlite").write_bytes(b"this is not a database" * 100)
    with pytest.raises(ProfileError, match="damaged or is not a Mnemo database"):
        Mnemo.open(profile_dir, embedder=embedder)


def test_close_and_reopen_keeps_every_tier(profile_dir, embedder):
    with Mnemo.open(profile_dir, embedder=embedder) as m:
        m.core.set("human", "Name: Ada")
        message_id = m.recall.add("user", "I grow tomatoes on my balcony")
        passage_id = m.archival.insert("Tomatoes need six hours of sun a day", tags=["garden"])
    with Mnemo.open(profile_dir, embedder=embedder) as m:
        assert m.core.get("human") == "Name: Ada"
        assert m.recall.get(message_id).text == "I grow tomatoes on my balcony"
        assert m.archival.get(passage_id).tags == ["garden"]
        assert m.recall.search("balcony tomatoes", mode="semantic")[0].id == message_id
        assert m.archival.search("sunlight for tomato plants")[0].id == passage_id
