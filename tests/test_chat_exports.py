"""ChatGPT and Claude exports into recall: branches, order, dates, titles, bad input, streaming."""

from __future__ import annotations

import io
import json
import re
import tracemalloc
import zipfile

import pytest
from sqlalchemy import text

from engine import Mnemo
from engine.cli import main
from engine.exchange import import_file
from engine.exchange.archive import ArchiveError
from engine.exchange.chat_exports import iter_json_array
from engine.profile import BULK_NICENESS

T0 = 1_700_000_000.0  # 14 November 2023


def node(node_id, parent, role, body, when, children=(), **extra):
    message = None
    if role:
        message = {
            "id": node_id,
            "author": {"role": role},
            "create_time": when,
            "content": {"content_type": "text", "parts": [body]},
            "recipient": extra.pop("recipient", "all"),
            "metadata": extra.pop("metadata", {}),
        }
    return node_id, {
        "id": node_id,
        "message": message,
        "parent": parent,
        "children": list(children),
    }


def chatgpt_export() -> list[dict]:
    """One conversation whose answer was regenerated (the second branch is the one shown),
    with a hidden system message and a tool call to leave out."""
    mapping = dict(
        [
            node("root", None, None, "", None, ["sys"]),
            node(
                "sys",
                "root",
                "system",
                "You are ChatGPT.",
                T0,
                ["u1"],
                metadata={"is_visually_hidden_from_conversation": True},
            ),
            node("u1", "sys", "user", "Plan a trip to Kyoto.", T0 + 10, ["a1", "a2"]),
            node("a1", "u1", "assistant", "First draft: temples.", T0 + 20),
            node("a2", "u1", "assistant", "Regenerated: temples and gardens.", T0 + 30, ["c1"]),
            node("c1", "a2", "assistant", "search('kyoto')", T0 + 35, ["t1"], recipient="browser"),
            node("t1", "c1", "tool", "results...", T0 + 36, ["u2"]),
            node("u2", "t1", "user", "Add a tea ceremony.", T0 + 40, ["a3"]),
            node("a3", "u2", "assistant", "Added a tea ceremony on day two.", T0 + 50),
        ]
    )
    return [
        {
            "title": "Kyoto trip",
            "create_time": T0,
            "update_time": T0 + 50,
            "mapping": mapping,
            "current_node": "a3",
            "conversation_id": "abc-123",
        }
    ]


def claude_export() -> list[dict]:
    return [
        {
            "uuid": "c-1",
            "name": "Sourdough",
            "created_at": "2024-03-01T09:00:00Z",
            "chat_messages": [
                {
                    "sender": "human",
                    "text": "My starter smells of acetone.",
                    "created_at": "2024-03-01T09:00:05Z",
                },
                {
                    "sender": "assistant",
                    "text": "",
                    "content": [{"type": "text", "text": "Feed it more often."}],
                    "created_at": "2024-03-01T09:00:15Z",
                },
            ],
        }
    ]


def conversation(mnemo, conversation_id):
    return [
        (h.role, h.text, h.created_at.timestamp()) for h in mnemo.recall.recent(50, conversation_id)
    ]


def test_a_chatgpt_tree_imports_its_shown_branch_in_order_with_dates_and_title(mnemo, tmp_path):
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(chatgpt_export()), encoding="utf-8")
    report = import_file(mnemo, path)
    assert report.added["messages"] == 4 and report.added["conversations"] == 1
    assert conversation(mnemo, "chatgpt:abc-123") == [
        ("user", "Plan a trip to Kyoto.", T0 + 10),
        ("assistant", "Regenerated: temples and gardens.", T0 + 30),
        ("user", "Add a tea ceremony.", T0 + 40),
        ("assistant", "Added a tea ceremony on day two.", T0 + 50),
    ]
    with mnemo.database.connect() as connection:
        title = connection.execute(text("SELECT title, origin FROM conversation")).one()
    assert tuple(title) == ("Kyoto trip", "ChatGPT")
    found = {hit.text for hit in mnemo.recall.search("tea ceremony", limit=2)}  # searchable now
    assert found == {"Add a tea ceremony.", "Added a tea ceremony on day two."}

    again = import_file(mnemo, path)  # a second import adds nothing
    assert again.added["messages"] == 0 and again.skipped["messages"] == 4


def test_a_lone_surrogate_in_an_export_is_replaced_and_the_rest_imports(mnemo, tmp_path):
    path = tmp_path / "conversations.json"
    raw = json.dumps(chatgpt_export()).replace(
        "Plan a trip to Kyoto.", "Plan a trip \\ud83d to Kyoto."
    )
    assert "\\ud83d" in raw  # an emoji cut in half, as exports have them
    path.write_text(raw, encoding="utf-8")
    report = import_file(mnemo, path)
    assert report.added["messages"] == 4
    assert conversation(mnemo, "chatgpt:abc-123")[0][1] == "Plan a trip \ufffd to Kyoto."


def test_a_claude_export_in_its_zip_imports_and_duplicate_ids_store_once(mnemo, tmp_path):
    path = tmp_path / "data-2024.zip"
    items = claude_export() * 2  # the same conversation twice in one file
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("data-2024/conversations.json", json.dumps(items))
        archive.writestr("data-2024/users.json", "[]")
    report = import_file(mnemo, path)
    assert report.added["messages"] == 2 and report.skipped["messages"] == 2
    start = 1709283600.0  # 2024-03-01 09:00 UTC
    assert conversation(mnemo, "claude:c-1") == [
        ("user", "My starter smells of acetone.", start + 5),
        ("assistant", "Feed it more often.", start + 15),
    ]


def test_bad_exports_are_refused_in_words_and_nothing_is_kept(mnemo, tmp_path):
    mnemo.recall.add("user", "Already here.")
    cut = tmp_path / "cut.json"
    whole = json.dumps(claude_export() + chatgpt_export())
    cut.write_text(whole[: len(whole) - 40], encoding="utf-8")
    with pytest.raises(ArchiveError, match="cut short|damaged"):
        import_file(mnemo, cut)
    assert [h.text for h in mnemo.recall.recent(10)] == ["Already here."]  # the Claude part too

    other = tmp_path / "other.json"
    other.write_text(json.dumps([{"name": "not a conversation"}]), encoding="utf-8")
    with pytest.raises(ArchiveError, match="neither a ChatGPT nor a Claude export"):
        import_file(mnemo, other)
    broken = tmp_path / "broken.json"
    broken.write_text('[{"uuid": "x", "chat_messages": []}, {"uuid": oops}]', encoding="utf-8")
    with pytest.raises(ArchiveError, match="damaged near character"):
        import_file(mnemo, broken)
    assert mnemo.recall.count() == 1


class Generated(io.RawIOBase):
    """A conversations.json of ``count`` conversations, written as it is read (never whole)."""

    def __init__(self, count: int) -> None:
        self.pieces = self._pieces(count)
        self.pending = b""
        self.size = 0

    def _pieces(self, count: int):
        yield b"["
        item = claude_export()[0]
        for i in range(count):
            item["uuid"] = f"c-{i}"
            item["chat_messages"][0]["text"] = f"Message {i}: " + "lorem ipsum " * 300
            yield (b"," if i else b"") + json.dumps(item).encode()
        yield b"]"

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while len(self.pending) < len(buffer):
            piece = next(self.pieces, None)
            if piece is None:
                break
            self.pending += piece
        size = min(len(buffer), len(self.pending))
        buffer[:size] = self.pending[:size]
        self.pending = self.pending[size:]
        self.size += size
        return size


def test_a_large_export_is_read_as_a_stream_in_bounded_memory():
    stream = Generated(20_000)  # ~75 MB of JSON
    tracemalloc.start()
    count = sum(1 for _ in iter_json_array(io.BufferedReader(stream), "conversations.json"))
    _current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert count == 20_000 and stream.size > 70 * 2**20
    assert peak < 12 * 2**20  # a few read buffers, never the file


def test_mnemo_import_reads_a_chatgpt_export(tmp_path, capsys):
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(chatgpt_export()), encoding="utf-8")
    assert main(["--profile", str(tmp_path / "p"), "import", str(path)]) == 0
    said = capsys.readouterr()
    assert "messages: 4 added" in said.out and "conversations: 1 added" in said.out
    assert "From ChatGPT" in said.out
    # Its output is no terminal (a log, a pipe): progress comes as lines, the last one too.
    assert said.err.splitlines()[-1] == "messages: 4 of 4"


def test_mnemo_import_stands_back_for_the_cpu_so_a_turn_elsewhere_comes_first(
    tmp_path, monkeypatch
):
    asked: list[int] = []
    monkeypatch.setattr("os.nice", asked.append)  # the test process keeps its priority
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(chatgpt_export()), encoding="utf-8")
    assert main(["--profile", str(tmp_path / "p"), "import", str(path)]) == 0
    assert asked == [BULK_NICENESS]


# Shapes from real exports: ChatGPT's voice mode (2025: a transcription part beside the audio
# and video pointers, the custom instructions as a hidden user message, an image with its
# attachment, a tool's output) and Claude's messages whose "text" runs the hidden thinking into
# the answer while the "content" parts keep them apart.


def voice_export(current_node: str | None = "a2") -> list[dict]:
    def message(role, parts, when, content_type="multimodal_text", **extra):
        return {
            "author": {"role": role},
            "create_time": when,
            "content": {"content_type": content_type, "parts": parts},
            "recipient": "all",
            **extra,
        }

    spoken = {"content_type": "audio_transcription", "direction": "in", "text": "Find the part."}
    answer = {"content_type": "audio_transcription", "direction": "out", "text": "It's on top."}
    audio = {
        "content_type": "real_time_user_audio_video_asset_pointer",
        "frames_asset_pointers": [],
    }
    photo = {"content_type": "image_asset_pointer", "asset_pointer": "sediment://file_1"}
    instructions = message("user", [], T0, "user_editable_context")
    instructions["metadata"] = {"is_visually_hidden_from_conversation": True}
    mapping = {
        "root": {"id": "root", "message": None, "parent": None, "children": ["ctx"]},
        "ctx": {"id": "ctx", "message": instructions, "parent": "root", "children": ["u1"]},
        "u1": {
            "id": "u1",
            "message": message(
                "user",
                [photo, "What does this plug go into?"],
                T0 + 1,
                metadata={"attachments": [{"mime_type": "image/jpeg"}]},
            ),
            "parent": "ctx",
            "children": ["t1"],
        },
        "t1": {
            "id": "t1",
            "message": {
                "author": {"role": "tool", "name": "python"},
                "create_time": T0 + 2,
                "content": {"content_type": "execution_output", "text": "<image>"},
            },
            "parent": "u1",
            "children": ["a1"],
        },
        "a1": {
            "id": "a1",
            "message": message("assistant", ["The knock sensor."], T0 + 3, "text"),
            "parent": "t1",
            "children": ["u2"],
        },
        "u2": {
            "id": "u2",
            "message": message("user", [spoken, audio], T0 + 4),
            "parent": "a1",
            "children": ["a2"],
        },
        "a2": {
            "id": "a2",
            "message": message(
                "assistant", [answer, {"content_type": "audio_asset_pointer"}], T0 + 5
            ),
            "parent": "u2",
            "children": [],
        },
    }
    item = {"title": "Knock sensor", "create_time": T0, "mapping": mapping, "id": "v-1"}
    if current_node:
        item["current_node"] = current_node
    return [item]


def test_chatgpt_voice_messages_are_imported_and_what_is_not_is_counted(mnemo, tmp_path):
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(voice_export()), encoding="utf-8")
    report = import_file(mnemo, path)
    assert [(role, said) for role, said, _ in conversation(mnemo, "chatgpt:v-1")] == [
        ("user", "What does this plug go into?"),
        ("assistant", "The knock sensor."),
        ("user", "Find the part."),
        ("assistant", "It's on top."),
    ]
    (note,) = [note for note in report.notes if note.startswith("Not imported")]
    for said in ("1 attachments", "2 audio recordings", "1 custom instructions", "1 images"):
        assert said in note
    assert "1 tool outputs" in note


def test_a_chatgpt_conversation_without_current_node_follows_its_newest_leaf(mnemo, tmp_path):
    export = chatgpt_export()
    del export[0]["current_node"]  # the newest leaf is a3, on the regenerated branch
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(export), encoding="utf-8")
    assert import_file(mnemo, path).added["messages"] == 4
    assert conversation(mnemo, "chatgpt:abc-123")[1][1] == "Regenerated: temples and gardens."


def test_a_split_chatgpt_export_imports_as_one_from_its_zip_or_its_folder(mnemo, tmp_path):
    folder = tmp_path / "export"
    folder.mkdir()
    (folder / "conversations-000.json").write_text(json.dumps(chatgpt_export()), "utf-8")
    (folder / "conversations-001.json").write_text(json.dumps(voice_export()), "utf-8")
    (folder / "user.json").write_text("{}", "utf-8")
    report = import_file(mnemo, folder)
    assert report.added["conversations"] == 2 and report.added["messages"] == 8
    assert "in 2 files" in report.notes[0]
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for part in sorted(folder.iterdir()):
            zipped.write(part, f"export/{part.name}")
    with Mnemo.open(tmp_path / "other", embedder=mnemo.embedder) as other:
        assert import_file(other, archive).added["messages"] == 8


def test_claude_thinking_is_left_out_of_the_reply_and_counted(mnemo, tmp_path):
    export = claude_export()
    reply = export[0]["chat_messages"][1]
    reply["text"] = "The user worries about smell. Let me think... Feed it more often."
    reply["content"] = [
        {"type": "thinking", "thinking": "The user worries about smell. Let me think..."},
        {"type": "text", "text": "Feed it more often."},
        {"type": "tool_use", "name": "web_search", "input": {"query": "acetone starter"}},
        {"type": "tool_result", "content": [{"type": "text", "text": "results"}]},
    ]
    export[0]["chat_messages"][0]["attachments"] = [{"file_name": "photo.txt"}]
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(export), encoding="utf-8")
    report = import_file(mnemo, path)
    assert conversation(mnemo, "claude:c-1")[1][1] == "Feed it more often."
    (note,) = [note for note in report.notes if note.startswith("Not imported")]
    assert "1 hidden reasoning" in note and "2 tool calls and outputs" in note
    assert "1 attachments" in note


def test_claude_shows_the_last_messages_branch_and_leaves_the_services_notes_out(mnemo, tmp_path):
    """Today's export keeps edits and retries in the list, linked by ``parent_message_uuid``;
    the last message is the current leaf. The person's message can carry text the service
    added (a memory snapshot), and an upload is listed under both ``attachments`` and
    ``files``."""
    root = "00000000-0000-4000-8000-000000000000"

    def said(uuid, parent, sender, *parts, at):
        return {
            "uuid": uuid,
            "parent_message_uuid": parent,
            "sender": sender,
            "text": "lossy copy",
            "content": list(parts),
            "created_at": f"2026-09-21T14:00:{at:02d}.000000Z",
            "attachments": [],
            "files": [],
        }

    def words(text):
        return {"type": "text", "text": text, "citations": [], "flags": None}

    memory = {"type": "injected_prompt_block", "prompt": "Avery leads the brand team."}
    first = said("m1", root, "human", words("Name my cat?"), memory, at=1)
    first["attachments"] = [{"file_name": "cats.txt", "extracted_content": "Tom, Felix"}]
    first["files"] = [{"file_uuid": "f1", "file_name": "cats.txt"}, {"file_name": "cat.png"}]
    messages = [
        first,
        said("m2", "m1", "assistant", words("How about Miso?"), at=2),
        said("m3", "m1", "assistant", {"type": "token_budget"}, words("How about Pixel?"), at=3),
        said("m4", "m3", "human", words("Pixel it is."), at=4),
    ]
    export = [{"uuid": "c-9", "name": "Cat", "chat_messages": messages}]
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(export), encoding="utf-8")
    report = import_file(mnemo, path)
    assert [(role, text) for role, text, _ in conversation(mnemo, "claude:c-9")] == [
        ("user", "Name my cat?"),
        ("assistant", "How about Pixel?"),
        ("user", "Pixel it is."),
    ]
    (note,) = [note for note in report.notes if note.startswith("Not imported")]
    assert "1 messages on branches not shown (edits and retries)" in note
    assert "1 notes the service added to messages" in note
    assert "1 attachments" in note and "1 files" in note  # cats.txt once, cat.png
    assert "token_budget" not in note


def test_an_old_claude_export_without_parents_is_the_list_in_order(mnemo, tmp_path):
    export = claude_export()
    export[0]["chat_messages"].append(
        {"sender": "human", "text": "Thanks!", "created_at": "2024-03-01T09:01:00Z"}
    )
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(export), encoding="utf-8")
    import_file(mnemo, path)
    assert [text for _, text, _ in conversation(mnemo, "claude:c-1")] == [
        "My starter smells of acetone.",
        "Feed it more often.",
        "Thanks!",
    ]


def test_an_image_a_tool_made_is_counted_as_an_image_and_the_reply_is_kept(mnemo, tmp_path):
    """The shape of a DALL·E turn in a real export: the call, the picture, the tool's note."""
    picture = {"content_type": "image_asset_pointer", "asset_pointer": "sediment://file_9"}
    made = dict(
        [
            node("root", None, None, "", T0, ["u1"]),
            node("u1", "root", "user", "Draw a map of India.", T0 + 1, ["c1"]),
            node("c1", "u1", "assistant", '{"prompt": "a map"}', T0 + 2, ["i1"], recipient="t2i"),
            node("i1", "c1", "tool", "", T0 + 3, ["n1"]),
            node("n1", "i1", "tool", "DALL·E displayed 1 images.", T0 + 4, ["a1"]),
            node("a1", "n1", "assistant", "Here is the map you asked for.", T0 + 5),
        ]
    )
    made["i1"]["message"]["content"] = {"content_type": "multimodal_text", "parts": [picture]}
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([{"title": "Map", "mapping": made, "id": "m-1"}]), "utf-8")
    report = import_file(mnemo, path)
    assert [said for _, said, _ in conversation(mnemo, "chatgpt:m-1")] == [
        "Draw a map of India.",
        "Here is the map you asked for.",
    ]
    (note,) = [note for note in report.notes if note.startswith("Not imported")]
    assert "1 images" in note and "1 tool calls" in note and "1 tool outputs" in note


def test_a_real_export_cut_at_every_position_around_each_escape_reads_the_same(real_files):
    """A real claude.ai export was refused as damaged: a \\uXXXX escape cut by the end of a
    read fails a few characters before it, and was taken for damage. Each kind of escape in a
    real ChatGPT shard, cut at every position around it, reads as ``json.load`` reads it."""
    data = (real_files / "chatgpt_2026" / "conversations-002.json").read_bytes()
    whole = json.loads(data)
    kinds = {
        "\\uXXXX": re.search(rb"\\u00[0-9a-f]{2}", data),
        "surrogate pair": re.search(rb"\\ud[89ab][0-9a-f]{2}\\ud[c-f][0-9a-f]{2}", data),
        "backslash": re.search(rb"\\\\", data),  # \\ in the file
        "quote": re.search(rb'\\"', data),  # \" in the file
    }
    for kind, found in kinds.items():
        assert found is not None, kind
        for cut in range(found.start() - 2, found.end() + 3):
            read = list(iter_json_array(io.BytesIO(data), "conversations-002.json", cut))
            assert read == whole, (kind, cut)


def test_real_exports_say_what_they_leave_out_and_which_shards_are_missing(mnemo, real_files):
    """claude_example.json (85 conversations, most messages blanked by their owner) reported
    "messages: 10 added, conversations: 1 added" and nothing of the 547 empty messages or the 84
    conversations left out; a partial ChatGPT export's missing shards were not said."""
    report = import_file(mnemo, real_files / "claude" / "claude_example.json")
    assert report.added["messages"] == 10
    assert (
        "Not imported: 84 conversations without a message with text, 547 messages without text."
        in report.lines()
    )
    shards = mnemo.profile.root.parent / "chatgpt"
    shards.mkdir()
    real = real_files / "chatgpt_2026"
    (shards / "export_manifest.json").write_bytes((real / "export_manifest.json").read_bytes())
    first = json.loads((real / "conversations-004.json").read_bytes())[:2]  # (quicker)
    (shards / "conversations-004.json").write_text(json.dumps(first), encoding="utf-8")
    report = import_file(mnemo, shards)
    missing = [line for line in report.lines() if line.startswith("Not in this copy")]
    assert missing == [
        "Not in this copy of the export, though its manifest lists them: conversations-000.json, "
        "conversations-001.json, conversations-002.json, conversations-003.json, "
        "conversations-005.json."
    ]


def test_the_bytes_parsed_are_counted_item_by_item_not_the_read_ahead(real_files):
    """The import's estimate of its total is the messages seen times the file's size over the
    bytes parsed: counting the 1 MB read ahead instead said "8 of about 55 messages" for a real
    export of 2,625. Each item counts its own bytes, whatever the read size."""
    data = (real_files / "chatgpt_2026" / "conversations-002.json").read_bytes()
    whole = json.loads(data)
    for read_chars in (1 << 20, 4096):
        sizes: list[int] = []
        stream = io.BytesIO(data)
        items = iter_json_array(stream, "conversations-002.json", read_chars, sizes.append)
        assert next(items) == whole[0]
        text = data.decode()
        start = text.index("{")
        _first, end = json.JSONDecoder().raw_decode(text, start)
        assert sizes == [len(text[start:end].encode())]  # its own bytes, none read ahead
        rest = list(items)
        assert len(rest) == len(whole) - 1
        # Everything but the brackets, commas and spaces between the items, counted once.
        assert 0.999 * len(data) <= sum(sizes) <= len(data)
