"""Archival memory (passages and message vectors) in the profile's folder and on a real
S3-compatible server (SeaweedFS on 127.0.0.1): the same engine code, the same behaviour."""

from __future__ import annotations

import pytest

from engine import Mnemo
from engine.errors import ProfileError


@pytest.fixture(params=["local", "s3"])
def archival_url(request) -> str | None:
    if request.param == "local":
        return None
    return request.getfixturevalue("s3_profile")


def test_archival_memory_behaves_the_same_on_both_backends(profile_dir, embedder, archival_url):
    with Mnemo.open(profile_dir, embedder=embedder, archival_url=archival_url) as m:
        key = m.archival.insert("The spare key is under the blue pot.", tags=["home"])  # its id
        m.archival.insert("The boiler is serviced every October by Dana.")
        m.recall.add("user", "My sister Ana moved to Porto last spring.")
        taken = m.snapshots.create("before changes")
        m.archival.update(key, "The spare key is now in the shed.")
        m.archival.insert("A third note, after the snapshot.")

    # On S3 nothing of archival memory is in the profile's folder.
    assert (profile_dir / "archival.lance").exists() == (archival_url is None)

    with Mnemo.open(profile_dir, embedder=embedder) as m:  # the profile remembers where
        assert m.archival.count() == 3
        assert m.archival.search("where is the spare key")[0].text.endswith("in the shed.")
        assert m.archival.search("October", mode="keyword")[0].text.startswith("The boiler")
        assert [h.id for h in m.archival.search("spare key", tags=["home"]).hits] == [key]
        assert m.recall.search("where does my sister live", mode="semantic")[0].text.startswith(
            "My sister Ana"
        )
        m.snapshots.restore(taken.id)

    with Mnemo.open(profile_dir, embedder=embedder) as m:
        assert m.archival.count() == 2
        assert m.archival.get(key).text == "The spare key is under the blue pot."
        m.archival.delete(key)
        assert m.archival.count() == 1


def test_object_storage_without_credentials_or_with_a_bad_url_says_so(
    profile_dir, embedder, s3_profile, monkeypatch
):
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    with pytest.raises(ProfileError, match="its credentials are not set: save them with"):
        Mnemo.open(profile_dir, embedder=embedder, archival_url=s3_profile)
    with pytest.raises(ProfileError, match="s3://bucket/prefix"):
        Mnemo.open(profile_dir / "other", embedder=embedder, archival_url="ftp://example/x")


def test_where_archival_memory_lives_is_chosen_once_and_not_exported(
    profile_dir, embedder, s3_profile, tmp_path
):
    from engine.exchange.archive import export_archive, import_archive
    from engine.settings import SettingError

    with Mnemo.open(profile_dir, embedder=embedder, archival_url=s3_profile) as m:
        m.archival.insert("The spare key is under the blue pot.")
        with pytest.raises(SettingError, match="chosen when an assistant is created"):
            m.settings.set("storage.archival_url", "")
        export_archive(m, tmp_path / "memory.mnemo")
    with Mnemo.open(tmp_path / "copy", embedder=embedder) as copy:
        import_archive(copy, tmp_path / "memory.mnemo")
    with Mnemo.open(tmp_path / "copy", embedder=embedder) as copy:
        assert copy.settings.get("storage.archival_url") == ""  # its own folder
        assert copy.archival.search("spare key")[0].text.startswith("The spare key")
    local = tmp_path / "local"
    Mnemo.open(local, embedder=embedder).close()
    with pytest.raises(ProfileError, match="already in"):
        Mnemo.open(local, embedder=embedder, archival_url=s3_profile)


def test_object_storage_credentials_can_live_in_the_keyring(
    profile_dir, embedder, s3_server, s3_profile, memory_keyring, monkeypatch
):
    from engine import keys

    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    keys.save_key("s3-key-id", s3_server.access_key)
    keys.save_key("s3-secret", s3_server.secret_key)
    with Mnemo.open(profile_dir, embedder=embedder, archival_url=s3_profile) as m:
        m.archival.insert("The spare key is under the blue pot.")
        assert m.archival.count() == 1
    assert s3_server.secret_key not in (profile_dir / "mnemo.sqlite").read_bytes().decode("latin-1")
