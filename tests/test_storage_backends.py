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


# -- the relational tables on PostgreSQL (pgvector for message vectors) ------------------------


def test_a_newer_schema_is_refused_untouched_on_both(profile_dir, embedder, database_url):
    import sqlite3

    from sqlalchemy import text

    from engine.db import SCHEMA_VERSION
    from engine.errors import ProfileTooNewError

    with Mnemo.open(profile_dir, embedder=embedder, database_url=database_url) as m:
        m.recall.add("user", "Remember the blue pot.")
        if database_url:
            with m.database.begin() as connection:
                connection.execute(text("UPDATE mnemo_schema SET version = version + 1"))
    if not database_url:
        with sqlite3.connect(profile_dir / "mnemo.sqlite") as connection:
            connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(ProfileTooNewError, match="newer version of Mnemo"):
        Mnemo.open(profile_dir, embedder=embedder)


def test_assistants_on_one_server_see_only_their_own_memory(tmp_path, embedder, postgres_server):
    first = Mnemo.open(tmp_path / "ana", embedder=embedder, database_url=postgres_server)
    second = Mnemo.open(tmp_path / "bo", embedder=embedder, database_url=postgres_server)
    with first, second:
        first.recall.add("user", "My locker code is 4417.")
        first.core.set("human", "Name: Ana")
        first.wait_for_background_work()
        assert second.recall.count() == 0
        assert second.recall.search("locker code").total == 0
        assert "Ana" not in second.core.get("human")
        assert first.recall.search("locker code")[0].text == "My locker code is 4417."


def test_a_profile_on_postgres_and_s3_keeps_nothing_but_where_it_is(
    profile_dir, embedder, postgres_server, s3_profile
):
    with Mnemo.open(
        profile_dir, embedder=embedder, database_url=postgres_server, archival_url=s3_profile
    ) as m:
        m.archival.insert("The boiler is serviced every October by Dana.")
        m.recall.add("user", "My sister Ana moved to Porto last spring.")
        m.wait_for_background_work()
        assert m.recall_vectors.count() == 1  # in pgvector
    assert not (profile_dir / "mnemo.sqlite").exists()
    assert not (profile_dir / "archival.lance").exists()
    with Mnemo.open(profile_dir, embedder=embedder) as m:  # the profile remembers where
        assert m.recall.search("where does my sister live", mode="semantic")[0].text.startswith(
            "My sister Ana"
        )
        assert m.archival.search("who services the boiler")[0].text.endswith("by Dana.")
        assert m.snapshot_before("anything") is None  # the server's backups cover it
        with pytest.raises(Exception, match="PostgreSQL, whose own backups"):
            m.snapshots.create("mine")


def test_a_database_address_with_a_password_or_an_unreachable_server_is_refused_in_words(
    tmp_path, embedder
):
    from engine.errors import InputError

    with pytest.raises(InputError, match="Leave the password out"):
        Mnemo.open(tmp_path / "a", embedder=embedder, database_url="postgresql://u:pw@h/db")
    down = f"postgresql://postgres@/postgres?host={tmp_path}/no-server"
    with pytest.raises(ProfileError, match="check that the server is running"):
        Mnemo.open(tmp_path / "b", embedder=embedder, database_url=down)
    assert list((tmp_path / "b").iterdir()) == []  # no assistant half made


def test_an_archive_moves_a_memory_between_sqlite_and_postgres(tmp_path, embedder, postgres_server):
    from engine.exchange.archive import export_archive, import_archive

    with Mnemo.open(tmp_path / "local", embedder=embedder) as local:
        local.recall.add_many(
            [
                {"role": "user", "text": "I planted tomatoes by the south fence."},
                {"role": "assistant", "text": "Tomatoes love that sun."},
            ]
        )
        local.core.set("human", "Name: Ana")
        export_archive(local, tmp_path / "memory.mnemo")
    with Mnemo.open(tmp_path / "pg", embedder=embedder, database_url=postgres_server) as pg:
        import_archive(pg, tmp_path / "memory.mnemo")
    with Mnemo.open(tmp_path / "pg", embedder=embedder) as pg:
        assert pg.core.get("human") == "Name: Ana"
        assert pg.recall.count() == 2
        new_id = pg.recall.add("user", "And basil beside them.")  # the id sequence moved on
        assert new_id == 3
        pg.wait_for_background_work()
        assert pg.recall.search("what did I plant by the fence")[0].text.startswith("I planted")


def test_a_large_import_builds_the_vector_index_once_at_the_end(
    profile_dir, embedder, postgres_server, monkeypatch
):
    from sqlalchemy import text

    from engine.memory.vectors import postgres as pg_vectors

    monkeypatch.setattr(pg_vectors, "BULK_ROWS", 40)
    with Mnemo.open(profile_dir, embedder=embedder, database_url=postgres_server) as m:
        built: list[str] = []
        create = pg_vectors.PgVectorTable._create_index
        monkeypatch.setattr(
            pg_vectors.PgVectorTable,
            "_create_index",
            lambda self, connection: (built.append("index"), create(self, connection)),
        )
        m.recall.add_many(
            [{"role": "user", "text": f"Note {i}: the key is in drawer {i}."} for i in range(60)]
            + [{"role": "user", "text": "My sister Ana moved to Porto last spring."}]
        )
        assert built == ["index"]  # once, after the 61 rows, not grown row by row
        with m.database.connect() as connection:
            names = connection.execute(text("SELECT indexname FROM pg_indexes")).scalars().all()
        assert "recall_vectors_hnsw" in names
        m.recall.add("user", "And one more, a small add: the index grows by itself.")
        assert built == ["index"]
        found = m.recall.search("where does my sister live", mode="semantic")
        assert found[0].text.startswith("My sister Ana")


def test_an_older_postgres_schema_is_migrated_on_open(profile_dir, embedder, postgres_server):
    from sqlalchemy import text

    from engine.db import SCHEMA_VERSION
    from engine.db.schema import MIGRATIONS

    before_expiry = [migration.name for migration in MIGRATIONS].index("fact_expiry")
    aside = (
        "Any tips for a reusable water bottle for long hikes? "
        "By the way, I just cancelled my Forbes magazine subscription."
    )
    with Mnemo.open(profile_dir, embedder=embedder, database_url=postgres_server) as m:
        m.knowledge.add("user", "lives_in", "Lisbon")
        message_id = m.recall.add("user", aside)
        with m.database.begin() as connection:  # as the version before fact expiry left it
            connection.execute(text("ALTER TABLE relation DROP COLUMN expires_at"))
            connection.execute(text("DROP TABLE message_sentences_pending"))
            connection.execute(text("DROP TABLE import_batch"))
            connection.execute(text("DELETE FROM recall_vectors WHERE part > 0"))
            connection.execute(
                text(
                    "ALTER TABLE recall_vectors DROP CONSTRAINT recall_vectors_pkey, "
                    "DROP COLUMN part, ADD PRIMARY KEY (id)"
                )
            )
            connection.execute(text(f"UPDATE mnemo_schema SET version = {before_expiry}"))
    with Mnemo.open(profile_dir, embedder=embedder) as m:
        with m.database.connect() as connection:
            assert connection.execute(text("SELECT version FROM mnemo_schema")).scalar() == (
                SCHEMA_VERSION
            )
        assert m.knowledge.holds("user", "lives_in", "Lisbon")
        m.knowledge.set_expiry(m.knowledge.facts("user")[0].id, "2030-01-01")  # the new column
        m.wait_for_background_work()  # the message's sentences get their vectors
        parts = m.recall_vectors.rows(f"id = {message_id}", ["part"])
        assert sorted(row["part"] for row in parts) == [0, 1, 2]
