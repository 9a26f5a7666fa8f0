import pytest

from engine import Mnemo
from engine.errors import CoreMemoryError, NotFoundError


@pytest.fixture
def mnemo(mnemo_on_each_backend):
    """The tests that take ``mnemo`` run on SQLite and on PostgreSQL (``database_url``)."""
    return mnemo_on_each_backend


def test_default_blocks_exist_with_descriptions(mnemo):
    labels = [block.label for block in mnemo.core.blocks()]
    assert labels[:2] == ["persona", "human"]
    assert "Mnemo" in mnemo.core.get("persona")
    assert all(block.description for block in mnemo.core.blocks())


def test_set_append_replace_round_trip(mnemo):
    mnemo.core.set("human", "Name: Ada")
    mnemo.core.append("human", "Likes hiking")
    mnemo.core.replace("human", "hiking", "climbing")
    assert mnemo.core.get("human") == "Name: Ada\nLikes climbing"


def test_write_over_the_limit_is_refused_with_room_left_and_block_unchanged(mnemo):
    mnemo.core.add_block("todo", "buy milk", char_limit=20)
    with pytest.raises(CoreMemoryError, match="has 12 left"):
        mnemo.core.append("todo", "and a very long list of other things")
    assert mnemo.core.get("todo") == "buy milk"
    with pytest.raises(CoreMemoryError, match="at most 20 characters"):
        mnemo.core.set("todo", "x" * 21)
    assert mnemo.core.get("todo") == "buy milk"
    assert [v.action for v in mnemo.core.history("todo")] == ["create"]


def test_read_only_block_refuses_edits_until_made_editable(mnemo):
    mnemo.core.add_block("rules", "Never share my address", read_only=True)
    for edit in (
        lambda: mnemo.core.set("rules", "share everything", author="model"),
        lambda: mnemo.core.append("rules", "more"),
        lambda: mnemo.core.replace("rules", "Never", "Always"),
    ):
        with pytest.raises(CoreMemoryError, match="read-only"):
            edit()
    assert mnemo.core.get("rules") == "Never share my address"
    mnemo.core.configure("rules", read_only=False)
    mnemo.core.set("rules", "Never share my phone number")
    assert mnemo.core.get("rules") == "Never share my phone number"


def test_replace_of_missing_text_is_refused(mnemo):
    mnemo.core.set("human", "Name: Ada")
    with pytest.raises(CoreMemoryError, match="does not contain"):
        mnemo.core.replace("human", "Name: Bob", "Name: Carl")
    assert mnemo.core.get("human") == "Name: Ada"


def test_history_records_provenance(mnemo):
    message_id = mnemo.recall.add("user", "Call me Ada")
    mnemo.core.set(
        "human", "Name: Ada", author="model", cause_kind="message", cause_ref=str(message_id)
    )
    mnemo.core.append("human", "Reads a lot", author="user")
    history = mnemo.core.history("human")
    assert [(v.action, v.author) for v in history] == [
        ("create", "system"),
        ("set", "model"),
        ("append", "user"),
    ]
    assert (history[1].cause_kind, history[1].cause_ref) == ("message", str(message_id))
    assert history[1].old_value == "Nothing is known about the user yet."
    assert history[2].new_value == "Name: Ada\nReads a lot"


def test_undo_latest_then_undo_the_undo(mnemo):
    mnemo.core.set("human", "v1")
    mnemo.core.set("human", "v2")
    assert mnemo.core.undo("human").value == "v1"
    assert mnemo.core.undo("human").value == "v2"
    assert mnemo.core.history("human")[-1].action == "undo"


def test_undo_a_specific_older_edit(mnemo):
    mnemo.core.set("human", "v1")
    first_edit = mnemo.core.history("human")[-1].id
    mnemo.core.set("human", "v2")
    mnemo.core.set("human", "v3")
    assert mnemo.core.undo("human", first_edit).value == "Nothing is known about the user yet."
    with pytest.raises(NotFoundError):
        mnemo.core.undo("human", 999_999)


def test_custom_blocks_can_be_added_and_removed_but_defaults_cannot(mnemo):
    mnemo.core.add_block("projects", "Mnemo", description="What the user is working on")
    assert [b.label for b in mnemo.core.blocks()][-1] == "projects"
    with pytest.raises(CoreMemoryError, match="already a block"):
        mnemo.core.add_block("projects")
    mnemo.core.remove_block("projects")
    assert "projects" not in [b.label for b in mnemo.core.blocks()]
    assert [v.action for v in mnemo.core.history("projects")] == ["create", "remove"]
    with pytest.raises(CoreMemoryError, match="built in"):
        mnemo.core.remove_block("human")
    with pytest.raises(CoreMemoryError, match="cannot be a block label"):
        mnemo.core.add_block("bad label!")


def test_lowering_a_limit_below_the_current_text_is_refused(mnemo):
    mnemo.core.set("human", "x" * 100)
    with pytest.raises(CoreMemoryError, match="shorten it"):
        mnemo.core.configure("human", char_limit=50)
    assert mnemo.core.block("human").char_limit == 2000


def test_unknown_block_is_a_clear_error(mnemo):
    with pytest.raises(NotFoundError, match="no core memory block named 'nope'"):
        mnemo.core.get("nope")


def test_core_memory_survives_reopen(profile_dir, embedder):
    with Mnemo.open(profile_dir, embedder=embedder) as m:
        m.core.add_block("pets", "Biscuit the dog", char_limit=300, read_only=True)
    with Mnemo.open(profile_dir, embedder=embedder) as m:
        block = m.core.block("pets")
        assert (block.value, block.char_limit, block.read_only) == ("Biscuit the dog", 300, True)
