"""Several assistants: each one a profile of its own; nothing crosses between them."""

from __future__ import annotations

import pytest

from engine import Mnemo
from engine.assistants import Assistants
from engine.cli import main
from engine.errors import InputError
from engine.profile import default_profile_dir


@pytest.fixture
def data(tmp_path, monkeypatch):
    monkeypatch.delenv("MNEMO_HOME")  # the assistant in use decides which profile opens
    return Assistants(tmp_path / "mnemo-data")


def test_two_assistants_with_look_alike_memories_never_cross(data, embedder):
    work = data.create("work", "I help with work.")
    home = data.create("home", "I help at home.")
    with Mnemo.open(work, embedder=embedder) as w, Mnemo.open(home, embedder=embedder) as h:
        w.recall.add("user", "The project deadline is Friday.")
        h.recall.add("user", "The plumber comes on Friday.")
        w.archival.insert("Work wifi password: office-42.")
        h.archival.insert("Home wifi password: tulip-42.")
        w.knowledge.add("user", "works_at", "Acme")
        h.knowledge.add("user", "lives_in", "Porto")
        with w.recall.transaction() as tx:
            w.proposals.create_in(
                tx.session,
                conversation_id="default",
                label="human",
                action="append",
                new_content="Works at Acme.",
            )
        w.wait_for_background_work()
        h.wait_for_background_work()
        assert [x.text for x in w.recall.search("what happens on Friday")] == [
            "The project deadline is Friday."
        ]
        assert [x.text for x in h.recall.search("what happens on Friday")] == [
            "The plumber comes on Friday."
        ]
        assert [p.text for p in w.archival.search("wifi password")] == [
            "Work wifi password: office-42."
        ]
        assert [p.text for p in h.archival.search("wifi password")] == [
            "Home wifi password: tulip-42."
        ]
        assert [f.predicate for f in w.knowledge.facts("user")] == ["works_at"]
        assert [f.predicate for f in h.knowledge.facts("user")] == ["lives_in"]
        assert len(w.proposals.pending()) == 1 and h.proposals.pending() == []
        assert (w.core.get("persona"), h.core.get("persona")) == (
            "I help with work.",
            "I help at home.",
        )


def test_use_rename_duplicate_and_delete(data, embedder):
    data.create("work")
    data.create("home")
    data.use("home")
    assert default_profile_dir() == data.folder / "home"
    assert [(a.name, a.current) for a in data.all()] == [("home", True), ("work", False)]
    with Mnemo.open(data.path("home"), embedder=embedder) as home:
        home.recall.add("user", "The bike is in the hallway.")
        home.core.set("persona", "I help at home.")
    copy = data.duplicate("home", "home copy")
    with Mnemo.open(copy, embedder=embedder) as twin:
        assert twin.recall.recent(1)[0].text == "The bike is in the hallway."
    persona = data.duplicate("home", "fresh home", memory=False)
    with Mnemo.open(persona, embedder=embedder) as fresh:
        assert fresh.recall.count() == 0 and fresh.core.get("persona") == "I help at home."
    data.rename("home", "house")
    assert data.current() == "house" and (data.folder / "house" / "mnemo.sqlite").is_file()
    with pytest.raises(InputError, match="in use; switch to another one first"):
        data.delete("house")
    trash = data.delete("work")
    assert trash.parent.name == ".trash" and (trash / "mnemo.sqlite").is_file()
    assert [a.name for a in data.all()] == ["fresh home", "home copy", "house"]


@pytest.mark.parametrize("name", ["../escape", "a/b", "..", "", "x" * 61, "back\\\\slash"])
def test_a_name_with_path_characters_is_refused(data, name):
    with pytest.raises(InputError, match="cannot name an assistant"):
        data.create(name)


def test_the_assistants_commands(data, capsys):
    assert main(["assistants", "create", "work", "--persona", "I help with work."]) == 0
    assert main(["assistants", "use", "work"]) == 0
    capsys.readouterr()
    assert main(["assistants", "list"]) == 0
    assert "* work" in capsys.readouterr().out
    assert main(["memory", "show"]) == 0  # opens the assistant in use
    assert "I help with work." in capsys.readouterr().out
    assert main(["assistants", "delete", "work", "--yes"]) == 1
    assert "switch to another one first" in capsys.readouterr().err
    assert main(["assistants", "create", "../x"]) == 1
    assert "cannot name an assistant" in capsys.readouterr().err


def test_duplicating_while_an_ingest_writes_gives_a_consistent_copy(data, embedder, tmp_path):
    import threading

    from engine.ingest.ingestor import Ingestor

    folder = tmp_path / "notes"
    folder.mkdir()
    for i in range(30):
        (folder / f"note{i:02}.txt").write_text(
            "\n\n".join(f"Note {i}, part {j}: the plumber came on day {j}." for j in range(5)),
            encoding="utf-8",
        )
    source = data.create("source")
    with Mnemo.open(source, embedder=embedder) as m:
        ingest = threading.Thread(target=lambda: Ingestor(m).ingest([folder]))
        ingest.start()
        while m.archival.count() == 0:
            pass
        copy = data.duplicate("source", "copy")
        ingest.join()
    with Mnemo.open(copy, embedder=embedder) as twin:
        done = [row for row in Ingestor(twin).index.all() if row.status == "done"]
        assert done
        for row in done:  # what the copy says is indexed is there, exactly
            assert len(twin.archival.list_by_source(row.path)) == row.chunk_count
