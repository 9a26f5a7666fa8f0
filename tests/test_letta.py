"""Letta Agent Files: import (blocks, messages in order with times, what is left out) and export
in the field set of Letta's AgentFileSchema, read back by our own importer."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from engine import Mnemo
from engine.cli import main
from engine.exchange import import_file
from engine.exchange.archive import ArchiveError
from engine.exchange.letta import export_agent_file

GARDEN = Path(__file__).parent / "data" / "garden_helper.af"

# The fields Letta's agent file schema defines (letta/schemas/agent_file.py and the Create*
# models it builds on): what an export may write.
AGENT_FILE_FIELDS = {
    "agents",
    "groups",
    "blocks",
    "files",
    "sources",
    "tools",
    "mcp_servers",
    "metadata",
    "created_at",
}
AGENT_FIELDS = {
    "id",
    "in_context_message_ids",
    "messages",
    "files_agents",
    "group_ids",
    "name",
    "memory_blocks",
    "tools",
    "tool_ids",
    "source_ids",
    "block_ids",
    "tool_rules",
    "tags",
    "system",
    "agent_type",
    "llm_config",
    "embedding_config",
    "initial_message_sequence",
    "include_base_tools",
    "include_multi_agent_tools",
    "include_base_tool_rules",
    "include_default_source",
    "description",
    "metadata",
    "model",
    "embedding",
    "context_window_limit",
    "embedding_chunk_size",
    "max_tokens",
    "max_reasoning_tokens",
    "enable_reasoner",
    "from_template",
    "template",
    "project",
    "tool_exec_environment_variables",
    "memory_variables",
    "project_id",
    "template_id",
    "base_template_id",
    "identity_ids",
    "message_buffer_autoclear",
    "enable_sleeptime",
    "response_format",
    "timezone",
    "max_files_open",
    "per_file_view_window_char_limit",
}
MESSAGE_FIELDS = {
    "id",
    "role",
    "content",
    "name",
    "otid",
    "sender_id",
    "batch_item_id",
    "group_id",
    "model",
    "agent_id",
    "tool_calls",
    "tool_call_id",
    "tool_returns",
    "created_at",
    "approve",
    "approval_request_id",
    "denial_reason",
    "approvals",
}
BLOCK_FIELDS = {
    "id",
    "value",
    "limit",
    "project_id",
    "template_name",
    "is_template",
    "template_id",
    "base_template_id",
    "deployment_id",
    "entity_id",
    "preserve_on_migration",
    "label",
    "read_only",
    "description",
    "metadata",
    "hidden",
}


def stamp(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def test_an_agent_file_imports_blocks_and_the_conversation_in_order_with_times(mnemo):
    report = import_file(mnemo, GARDEN)
    assert mnemo.core.get("persona") == "I am a cheerful garden helper."
    assert mnemo.core.get("human") == "Name: Sam\nGrows tomatoes."
    garden = mnemo.core.block("garden")
    assert (garden.value, garden.char_limit, garden.read_only) == (
        "Greenhouse: 2 beds.",
        1000,
        True,
    )
    assert [(h.role, h.text, h.created_at.timestamp()) for h in mnemo.recall.recent(10)] == [
        ("user", "Hi, I'm Sam and I grow tomatoes.", stamp("2025-05-01T10:01:00")),
        ("assistant", "Nice to meet you, Sam! How are the tomatoes?", stamp("2025-05-01T10:01:10")),
        ("user", "They are ripening in the greenhouse.", stamp("2025-05-02T08:00:00")),
        ("assistant", "Lovely, enjoy the harvest.", stamp("2025-05-02T08:00:04")),
    ]
    notes = "\n".join(report.notes)
    assert (
        "5 messages were left out" in notes
    )  # system, login, a memory call, its result, a heartbeat
    assert "Not imported: 2 tools (send_message, web_search)" in notes
    assert "Not imported: 1 MCP servers (weather)" in notes
    assert "Not imported: 1 tool rules" in notes
    assert mnemo.recall.titles({"default"}) == {"default": "Letta: garden-helper"}

    again = import_file(mnemo, GARDEN)  # nothing twice, and the same blocks need no proposal
    assert again.skipped["messages"] == 4 and mnemo.recall.count() == 4
    assert not mnemo.proposals.pending()


def test_an_export_has_letta_s_fields_and_reads_back(mnemo, tmp_path, embedder):
    import_file(mnemo, GARDEN)
    path = tmp_path / "mnemo.af"
    assert export_agent_file(mnemo, path) == 4
    data = json.loads(path.read_text(encoding="utf-8"))
    assert set(data) == AGENT_FILE_FIELDS
    (agent,) = data["agents"]
    assert set(agent) <= AGENT_FIELDS and {"id", "name", "block_ids", "messages"} <= set(agent)
    assert all(set(message) <= MESSAGE_FIELDS for message in agent["messages"])
    assert all(
        set(block) <= BLOCK_FIELDS and {"label", "value"} <= set(block) for block in data["blocks"]
    )
    assert set(agent["block_ids"]) == {block["id"] for block in data["blocks"]}
    assert set(agent["in_context_message_ids"]) <= {m["id"] for m in agent["messages"]}
    # What Letta's code assumes beyond its schema (tests/benchmarks/letta_compat.py runs Letta
    # itself on an export): the model and embedder named, the system message first, replies
    # as send_message calls each with its result, and the assistant's own name.
    assert {"model", "model_endpoint_type", "context_window"} <= set(agent["llm_config"])
    assert agent["llm_config"]["model"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
    # Letta 0.16.8's import refuses endpoint types it has no model settings for (llamacpp):
    # a local GGUF is a llama.cpp server's model behind its OpenAI-compatible API.
    assert agent["llm_config"]["model_endpoint_type"] == "openai"
    assert agent["llm_config"]["model_endpoint"] == "http://localhost:8080/v1"
    assert agent["embedding_config"]["embedding_dim"] == 384
    assert agent["messages"][0]["role"] == "system"
    assert agent["in_context_message_ids"][0] == agent["messages"][0]["id"]
    roles = [m["role"] for m in agent["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "user", "assistant", "tool"]
    reply = agent["messages"][2]
    (call,) = reply["tool_calls"]
    assert call["function"]["name"] == "send_message"
    assert json.loads(call["function"]["arguments"])["message"] == mnemo.recall.recent(4)[1].text
    assert agent["messages"][3]["tool_call_id"] == call["id"]
    assert agent["name"] == mnemo.profile.root.name

    with Mnemo.open(tmp_path / "other", embedder=embedder) as other:
        import_file(other, path)
        assert [(h.role, h.text) for h in other.recall.recent(10)] == [
            (h.role, h.text) for h in mnemo.recall.recent(10)
        ]
        assert other.core.get("garden") == "Greenhouse: 2 beds."


def test_an_agent_file_into_a_profile_in_use_proposes_differing_blocks(mnemo):
    mnemo.recall.add("user", "I already talk to Mnemo.")
    mnemo.core.set("human", "Name: Samuel.")
    import_file(mnemo, GARDEN)
    proposals = {p.label: p for p in mnemo.proposals.pending()}
    assert set(proposals) == {"persona", "human", "garden"}  # both differ, and one is new
    assert proposals["human"].describe() == (
        "in human, replace 'Name: Samuel.' with 'Name: Sam\\nGrows tomatoes.'"
    )
    assert mnemo.core.get("human") == "Name: Samuel."
    # A new block waits too: it would be in every prompt from the next turn on.
    assert proposals["garden"].kind == "block" and not proposals["garden"].trusted
    assert "garden" not in {block.label for block in mnemo.core.blocks()}
    mnemo.proposals.approve(proposals["garden"].id)
    assert mnemo.core.block("garden").value == proposals["garden"].new_content
    assert len(mnemo.recall.recent(10, "letta:agent-0")) == 4


def test_an_agent_file_with_an_oversized_block_imports_the_rest_and_names_it(mnemo, tmp_path):
    data = json.loads(GARDEN.read_text(encoding="utf-8"))
    data["blocks"].append(
        {"id": "block-huge", "label": "huge", "value": "x" * 400_000, "limit": 10**9}
    )
    data["agents"][0]["block_ids"].append("block-huge")
    path = tmp_path / "huge.af"
    path.write_text(json.dumps(data), encoding="utf-8")
    report = import_file(mnemo, path)
    assert "huge" not in {block.label for block in mnemo.core.blocks()}  # never in a prompt
    assert "garden" in {block.label for block in mnemo.core.blocks()}
    (note,) = [note for note in report.notes if "'huge'" in note]
    assert "400,000 characters" in note and "20,000" in note and "archival memory" in note
    kept = [p for p in mnemo.archival.recent(50) if p.source.section == "block huge"]
    assert sum(len(p.text) for p in kept) == 400_000  # kept whole, and searchable
    assert all(not p.trusted for p in kept)


def test_an_agent_file_nested_100000_deep_is_refused_in_a_sentence(mnemo, tmp_path):
    path = tmp_path / "deep.af"
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(ArchiveError, match="nests too deep"):
        import_file(mnemo, path)


def test_not_an_agent_file_is_refused(mnemo, tmp_path):
    bad = tmp_path / "bad.af"
    bad.write_text('{"agents": []}', encoding="utf-8")
    with pytest.raises(ArchiveError, match="holds no agent"):
        import_file(mnemo, bad)
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ArchiveError, match="not a readable Agent File"):
        import_file(mnemo, bad)


def test_mnemo_export_format_af(tmp_path, capsys):
    profile = str(tmp_path / "p")
    assert main(["--profile", profile, "import", str(GARDEN)]) == 0
    assert main(["--profile", profile, "export", str(tmp_path / "out"), "--format", "af"]) == 0
    assert f"4 messages as a Letta Agent File: {tmp_path / 'out.af'}" in capsys.readouterr().out


def test_an_agent_file_of_an_unexpected_shape_is_one_sentence_not_a_traceback(tmp_path, capsys):
    path = tmp_path / "odd.af"
    path.write_text(json.dumps({"agents": ["not an agent object"]}), encoding="utf-8")
    assert main(["--profile", str(tmp_path / "p"), "import", str(path)]) != 0
    err = capsys.readouterr().err
    assert "odd.af could not be imported" in err and "Traceback" not in err


# The shapes below are those of the public agent files of letta-ai/agent-file and Letta's own
# tests (each named where it comes from); tests/benchmarks/letta_files.py imports the files
# themselves from a folder and counts what came through.


def garden(tmp_path: Path, change=lambda data: data, encode=json.dumps) -> Path:
    data = change(json.loads(GARDEN.read_text(encoding="utf-8")))
    path = tmp_path / "changed.af"
    path.write_text(encode(data), encoding="utf-8")
    return path


def test_an_agent_file_encoded_twice_is_read_again(mnemo, tmp_path):
    # customer_service.af and memgpt_agent.af: the JSON of a JSON string
    path = garden(tmp_path, encode=lambda data: json.dumps(json.dumps(data)))
    report = import_file(mnemo, path)
    assert report.added["core blocks"] == 3 and report.added["messages"] == 4


def test_each_block_keeps_its_path_label_limit_and_description(mnemo, tmp_path):
    persona = "I am Evie, " + "a patient guide to the garden. " * 170  # evie.af: 5,397
    blocks = [
        ("persona", persona, 20_000, "Who I am."),
        ("system/human/family", "Two kids, Ren and Yui.", 20_000, "Family."),  # lettabot.af
        ("/note_directory", "notes/ holds the plans.", 8_000, "Where notes live."),  # co-3.af
        ("tool_guidelines", "Check twice " * 10, 50, "Too small a limit for its text."),
        ("bad label!", "never", 100, ""),
    ]

    def change(data):
        data["blocks"] = [
            {"id": f"b{i}", "label": label, "value": value, "limit": limit, "description": d}
            for i, (label, value, limit, d) in enumerate(blocks)
        ]
        data["agents"][0]["block_ids"] = [f"b{i}" for i in range(len(blocks))]
        return data

    report = import_file(mnemo, garden(tmp_path, change))
    kept = {block.label: block for block in mnemo.core.blocks()}
    assert kept["persona"].value == persona and kept["persona"].char_limit == 20_000
    assert kept["persona"].description == "Who I am."
    assert kept["system/human/family"].value == "Two kids, Ren and Yui."
    assert kept["/note_directory"].char_limit == 8_000
    assert kept["tool_guidelines"].char_limit == len("Check twice " * 10)  # raised to its text
    assert "bad label!" not in kept
    assert any("'bad label!' was not imported" in note for note in report.notes)
    assert report.added["core blocks"] == 4 and report.added["messages"] == 4
    with Mnemo.open(tmp_path / "again", embedder=mnemo.embedder) as again:  # and back out
        export_agent_file(mnemo, tmp_path / "out.af")
        import_file(again, tmp_path / "out.af")
        assert {b.label for b in again.core.blocks()} == set(kept)


def test_the_earlier_agent_file_format_is_named_and_read(mnemo, tmp_path):
    # Letta's tests/test_agent_files (long_running_kylie.af, memgpt_agent_with_convo.af, ...):
    # one agent at the top, its blocks under core_memory, MemGPT's JSON-wrapped user messages.
    def wrapped(kind: str, message: str = "") -> str:
        return json.dumps({"type": kind, "message": message, "time": "2025-03-31 08:59 PM"})

    legacy = {
        "agent_type": "memgpt_agent",
        "name": "kylie",
        "core_memory": [
            {"label": "human", "value": "First name: Chad", "limit": 5000, "description": "H."},
            {"label": "research_plan", "value": "", "limit": 200_000, "description": "Plan."},
        ],
        "messages": [
            {"role": "system", "content": [{"type": "text", "text": "You are Kylie."}]},
            {"role": "user", "content": [{"type": "text", "text": wrapped("login")}]},
            {"role": "user", "content": [{"type": "text", "text": wrapped("user_message", "Hi!")}]},
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "Greet them."}],
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "send_message", "arguments": '{"message": "Hello!"}'},
                    }
                ],
            },
        ],
        "tools": [{"name": "send_message"}],
    }
    path = tmp_path / "kylie.af"
    path.write_text(json.dumps(legacy), encoding="utf-8")
    report = import_file(mnemo, path)
    assert "earlier Agent File format" in report.notes[0]
    assert mnemo.core.get("human") == "First name: Chad"
    assert mnemo.core.block("research_plan").char_limit == 20_000  # Mnemo's most, and said
    assert any("'research_plan' may hold 200,000" in note for note in report.notes)
    assert [(m.role, m.text) for m in mnemo.recall.recent(10)] == [
        ("user", "Hi!"),
        ("assistant", "Hello!"),
    ]


def test_system_reminders_are_not_the_persons_words(mnemo, tmp_path):
    # lettabot-builder.af: an 85,687-character user message around a 26-character question
    reminder = "<system-reminder>\n" + "Memory filesystem tree: ... " * 3000 + "</system-reminder>"

    def change(data):
        question = {
            "role": "user",
            "content": [
                {"type": "text", "text": reminder},
                {"type": "text", "text": "What do you know about me?"},
                {"type": "text", "text": "<system-reminder>Plan mode is off.</system-reminder>"},
            ],
            "created_at": "2026-01-20T10:00:00Z",
        }
        data["agents"][0]["messages"].append(question)
        return data

    report = import_file(mnemo, garden(tmp_path, change))
    assert mnemo.recall.recent(1)[0].text == "What do you know about me?"
    assert any("2 system reminders" in note for note in report.notes)
