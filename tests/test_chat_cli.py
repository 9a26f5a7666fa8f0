"""`mnemo chat` with the scripted model, and the proposal and settings commands."""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterator

import pytest
from agent_helpers import call, say

from engine.agent import Agent
from engine.cli import main
from engine.cli.chat import chat
from engine.llm import ScriptedModel, ScriptedStep


def answers(*lines: str):
    feed: Iterator[str] = iter(lines)

    def ask(_prompt: str) -> str:
        try:
            return next(feed)
        except StopIteration:
            raise EOFError from None

    return ask


def propose(model: ScriptedModel, content: str = "Name: Sam.") -> None:
    model.enqueue(
        [
            call("core_memory_append", label="human", content=content, request_heartbeat=True),
            say("Nice to meet you, Sam."),
        ]
    )


def test_chat_streams_the_reply_and_asks_about_proposals_inline(mnemo):
    model = ScriptedModel()
    propose(model)
    out = io.StringIO()
    status = chat(mnemo, model, ask=answers("I'm Sam", "a", "/context", "/quit"), out=out)
    text = out.getvalue()
    assert status == 0
    assert "mnemo › Nice to meet you, Sam." in text
    assert "· proposed adding to human: 'Name: Sam.' → proposal 1 waits for approval" in text
    assert "Proposal 1: add to human: 'Name: Sam.'" in text
    assert "approved; the human block updated." in text
    assert "Context:" in text and "usable tokens" in text
    assert mnemo.core.get("human").endswith("Name: Sam.")


def test_chat_edit_and_later(mnemo):
    model = ScriptedModel()
    propose(model, "Name: Sma.")
    propose(model, "Likes tea.")
    out = io.StringIO()
    chat(mnemo, model, ask=answers("I'm Sam", "e", "Name: Sam.", "I like tea", "l"), out=out)
    assert mnemo.core.get("human").endswith("Name: Sam.")
    (waiting,) = mnemo.proposals.pending()
    assert waiting.new_content == "Likes tea."
    assert "left pending" in out.getvalue()


def test_one_message_prints_the_reply_and_lists_waiting_proposals(mnemo):
    model = ScriptedModel()
    propose(model)
    out, err = io.StringIO(), io.StringIO()
    assert chat(mnemo, model, message="I'm Sam", out=out, err=err) == 0
    assert out.getvalue() == "Nice to meet you, Sam.\n"
    assert "Proposal 1 waits for you" in err.getvalue()
    assert "mnemo memory approve 1" in err.getvalue()
    assert model.states_kept == 1  # the next process in this conversation starts from here


def test_chat_resumes_an_interrupted_turn_first(mnemo):
    mnemo.recall.add("user", "Are you there?")
    model = ScriptedModel()
    model.enqueue([say("Yes, still here.")])
    out = io.StringIO()
    chat(mnemo, model, ask=answers("/quit"), out=out)
    assert "Continuing the turn that was interrupted." in out.getvalue()
    assert "mnemo › Yes, still here." in out.getvalue()


def test_proposal_commands(mnemo, profile_dir, capsys):
    model = ScriptedModel()
    propose(model)
    propose(model, "Likes tea.")
    chat(mnemo, model, message="I'm Sam", out=io.StringIO(), err=io.StringIO())
    chat(mnemo, model, message="I like tea", out=io.StringIO(), err=io.StringIO())
    mnemo.close()
    profile = ["--profile", str(profile_dir)]

    assert main([*profile, "memory", "proposals"]) == 0
    listed = capsys.readouterr().out
    assert "Proposal 1: add to human: 'Name: Sam.'" in listed and "Proposal 2" in listed
    assert "the human block after:" in listed
    assert main([*profile, "memory", "approve", "1", "--text", "Name: Samuel."]) == 0
    assert main([*profile, "memory", "reject", "2"]) == 0
    assert main([*profile, "memory", "reject", "2"]) == 1
    assert "already rejected" in capsys.readouterr().err
    assert main([*profile, "memory", "show"]) == 0
    shown = capsys.readouterr().out
    assert "Name: Samuel." in shown and "Likes tea." not in shown
    assert main([*profile, "memory", "proposals"]) == 0
    assert "No memory changes are waiting" in capsys.readouterr().out


def test_settings_command(profile_dir, capsys):
    profile = ["--profile", str(profile_dir)]
    assert main([*profile, "settings", "memory.core_write_policy", "auto"]) == 0
    assert main([*profile, "settings", "memory.core_write_policy"]) == 0
    assert capsys.readouterr().out.strip().endswith('"auto"')
    assert main([*profile, "settings", "memory.core_write_policy", "sometimes"]) == 1
    assert "either 'ask' or 'auto'" in capsys.readouterr().err
    assert main([*profile, "settings", "agent.step_limit", "many"]) == 1
    assert "whole number" in capsys.readouterr().err
    assert main([*profile, "settings", "no.such.key", "1"]) == 1
    assert main([*profile, "settings"]) == 0
    assert "agent.step_limit = 10" in capsys.readouterr().out


def test_the_chat_keeps_watched_folders_in_sync(profile_dir, tmp_path, monkeypatch, capsys):
    """`mnemo chat` runs the folder watcher while it is open, as the user guide promises."""
    import time

    from engine.cli import chat as cli_chat
    from engine.cli import main

    folder = tmp_path / "notes"
    folder.mkdir()
    assert main(["--profile", str(profile_dir), "watch", "add", str(folder)]) == 0

    def fake_chat(mnemo, model, message=None, **_):
        (folder / "new.md").write_text("# New\n\nWritten while chatting.")
        deadline = time.monotonic() + 15
        while not mnemo.archival.list_by_source(str(folder / "new.md")):
            assert time.monotonic() < deadline, "the watcher did not index the new file"
            time.sleep(0.1)
        return 0

    monkeypatch.setattr(cli_chat, "chat", fake_chat)
    monkeypatch.setattr("engine.llm.load_model", lambda *args, **kwargs: ScriptedModel())
    assert main(["--profile", str(profile_dir), "chat"]) == 0
    assert "document done:" in capsys.readouterr().err


def test_a_new_conversation_starts_empty_keeps_memory_and_the_old_one_reopens(mnemo):
    model = ScriptedModel(parameter_count=135_000_000)  # assisted, as with the bundled model
    model.enqueue(["Noted, peanuts.", "Hello again!", "Back to the first one."])
    out = io.StringIO()
    chat(
        mnemo,
        model,
        # "l": the allergy, proposed for the human block, is left for later.
        ask=answers(
            "I'm allergic to peanuts.", "l", "/new", "Hi there", "/list", "/open 2", "And now?"
        ),
        out=out,
    )
    text = out.getvalue()
    assert "New conversation. Mnemo still remembers" in text
    listed = text[text.index("*  1  ") : text.index("Continuing:")]
    assert "Hi there" in listed.splitlines()[0]  # the newest, and the current one
    assert "I'm allergic to peanuts." in listed.splitlines()[1]
    assert "Continuing: I'm allergic to peanuts." in text
    first, second = [info.id for info in mnemo.conversations.all()]  # the newest activity first
    assert first == "default"
    assert [h.text for h in mnemo.recall.recent(10, second) if h.role == "user"] == ["Hi there"]
    assert [h.text for h in mnemo.recall.recent(10, first) if h.role == "user"][-1] == "And now?"
    # The new conversation started empty, with the memory of the first in view.
    hello = model.prompts[1]
    assert [m.content for m in hello.messages if m.role == "user"] == ["Hi there"]
    assert [f.sentence() for f in mnemo.knowledge.facts("user")] == ["User is allergic to peanuts"]
    assert mnemo.conversations.current() == first  # where the person left off


def test_mnemo_chat_new_and_list(profile_dir, capsys, monkeypatch):
    from engine import Mnemo

    with Mnemo.open(profile_dir) as mnemo:
        mnemo.recall.add("user", "An old question")
    with pytest.raises(SystemExit):  # one or the other
        main(["--profile", str(profile_dir), "chat", "--new", "--list"])
    capsys.readouterr()
    monkeypatch.setattr("engine.cli.chat._chat_holding", lambda mnemo, args: 0)
    assert main(["--profile", str(profile_dir), "chat", "--new"]) == 0
    with Mnemo.open(profile_dir) as mnemo:
        new = mnemo.conversations.current()
        assert new != "default" and mnemo.conversations.exists(new)
    assert main(["--profile", str(profile_dir), "chat", "--list"]) == 0
    listed = capsys.readouterr().out
    assert "An old question" in listed and f"[{new}]" in listed and "New conversation" in listed
    assert main(["--profile", str(profile_dir), "chat", "--open", "default"]) == 0
    assert main(["--profile", str(profile_dir), "chat", "--open", "nope"]) != 0
    assert "There is no conversation 'nope'" in capsys.readouterr().err


def test_a_fact_proposal_is_said_to_the_person_as_you(mnemo):
    mnemo.knowledge.add("user", "lives_in", "Porto")
    model = ScriptedModel(parameter_count=135_000_000)  # assisted: the move is kept by rule
    model.enqueue(["Noted, Lyon."])
    out = io.StringIO()
    # Said without a change ("moved", "now"), it contradicts what is known: it waits.
    chat(mnemo, model, ask=answers("I live in Lyon.", "l", "l", "/quit"), out=out)
    text = out.getvalue()
    assert "You live in Lyon, instead of: you live in Porto" in text
    assert "noted from your message: 'You live in Lyon'" in text
    assert "facts about you now:   You live in Porto" in text
    assert "User lives" not in text  # the model's form never reaches the person


def test_one_message_leaves_the_fold_and_the_chat_makes_it_at_its_start(mnemo):
    """`mnemo chat -m` ends with its reply, however full the window is; `mnemo chat` folds what
    was left while the person types, before their message is answered."""
    model = ScriptedModel(context_length=1500, max_step_tokens=40, parameter_count=135_000_000)
    long = "I keep notes about the garden, the roses and the tomatoes " * 3
    for number in range(24):  # distinct replies: a copy of an earlier one would be written anew
        # In letters: a number the person never said would be an invented value.
        digest = hashlib.sha256(bytes([number])).hexdigest()
        model.enqueue([f"Noted {digest.translate(str.maketrans('0123456789', 'ghijklmnop'))}."])
        said = f"{long} ({number})"
        assert chat(mnemo, model, message=said, out=io.StringIO(), err=io.StringIO()) == 0
        if Agent(mnemo, model).context_stats().fraction >= 0.7:  # past the pressure line
            break
    assert not model.summary_requests, "a one-shot turn folded the window"
    model.enqueue(["Hello again."])
    folds_before_the_reply: list[int] = []
    step = model.step
    model.step = lambda *a, **k: (
        folds_before_the_reply.append(len(model.summary_requests)) or step(*a, **k)
    )
    out = io.StringIO()
    kept_before = model.states_kept
    chat(mnemo, model, ask=answers("Hi", "/context", "/quit"), out=out)
    assert model.states_kept == kept_before + 1  # kept as the chat ended
    assert folds_before_the_reply and folds_before_the_reply[0] > 0
    assert "Hello again." in out.getvalue()
    assert "0 summarised" not in out.getvalue()


def test_a_reply_that_has_not_started_says_what_is_happening(mnemo, monkeypatch):
    monkeypatch.setattr("engine.cli.chat.WAITING_WORD_S", 0.2)
    model = ScriptedModel(parameter_count=135_000_000)
    model.enqueue([ScriptedStep("Here you are.", delay_s=1.0)])
    out, err = io.StringIO(), io.StringIO()
    assert chat(mnemo, model, message="Tell me something cheerful.", out=out, err=err) == 0
    assert "· writing the reply… (Ctrl-C stops it)" in err.getvalue()
    assert out.getvalue() == "Here you are.\n"
    model.enqueue(["At once."])  # a reply that starts in time gets no word
    err = io.StringIO()
    chat(mnemo, model, message="And another?", out=io.StringIO(), err=err)
    assert "writing the reply" not in err.getvalue()
