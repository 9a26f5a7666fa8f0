"""API back-ends: Anthropic against a local server that checks every request's shape, error
handling against misbehaving servers, and the OpenAI back-end against a real llama.cpp server."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import pytest
from agent_helpers import Recorder
from fake_servers import FakeServer, Reply, check_messages_request, recorded

from engine import Mnemo
from engine.agent import Agent
from engine.cli import main
from engine.errors import ContextOverflowError, ModelError
from engine.events import Notice, TextStreamed
from engine.functions import function_schemas
from engine.llm import ChatMessage, Prompt, model_settings
from engine.llm.anthropic_api import AnthropicModel
from engine.llm.openai_api import OpenAIModel


@pytest.fixture
def anthropic_server() -> Iterator[FakeServer]:
    server = FakeServer(check=check_messages_request)
    yield server
    server.close()


@pytest.fixture
def plain_server() -> Iterator[FakeServer]:
    server = FakeServer()
    yield server
    server.close()


def anthropic(server: FakeServer, **options) -> AnthropicModel:
    return AnthropicModel(
        "claude-sonnet-4-5", api_key="test-key", base_url=server.url, backoff_s=0.01, **options
    )


def test_anthropic_turn_with_a_tool_call_and_a_streamed_reply(mnemo, anthropic_server):
    mnemo.archival.insert("The spare key is under the blue flowerpot.")
    anthropic_server.replies += [
        recorded("anthropic/search_then_text.sse"),
        recorded("anthropic/send_message.sse"),
    ]
    events = Recorder()
    result = Agent(mnemo, anthropic(anthropic_server)).send(
        "Where is my spare key?", on_event=events
    )
    assert anthropic_server.problems == []
    assert result.reply == 'The spare key is under the blue "lucky" flowerpot.'
    streamed = "".join(e.text for e in events.of(TextStreamed))
    assert streamed.endswith(result.reply)
    first, second = [r.body for r in anthropic_server.received]
    assert first["stream"] is True and first["tool_choice"] == {"type": "auto"}
    assert first["system"][0]["cache_control"] == {"type": "ephemeral"}  # the stable prefix
    assert first["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert {t["name"] for t in first["tools"]} >= {"send_message", "conversation_search_date"}
    # The second request carries the tool call and its result, as the API requires.
    use = second["messages"][-2]["content"][0]
    result_block = second["messages"][-1]["content"][0]
    assert use["type"] == "tool_use" and use["name"] == "archival_memory_search"
    assert result_block["tool_use_id"] == use["id"]
    assert "blue flowerpot" in result_block["content"]


def test_anthropic_final_step_forces_send_message_and_history_alternates(mnemo, anthropic_server):
    mnemo.settings.set("agent.step_limit", 1)
    anthropic_server.replies += [
        recorded("anthropic/plain_text.sse"),
        recorded("anthropic/send_message.sse"),
    ]
    agent = Agent(mnemo, anthropic(anthropic_server))
    assert agent.send("hello").reply == "Hello! How can I help?"  # plain text is the reply
    assert agent.send("and the key?").reply.startswith("The spare key")
    assert anthropic_server.problems == []
    last = anthropic_server.received[-1].body
    assert last["tool_choice"] == {"type": "tool", "name": "send_message"}
    assert [m["role"] for m in last["messages"]] == ["user", "assistant", "user"]


def test_anthropic_stream_error_is_a_sentence(mnemo, anthropic_server):
    anthropic_server.replies.append(recorded("anthropic/overloaded.sse"))
    events = Recorder()
    result = Agent(mnemo, anthropic(anthropic_server)).send("hello", on_event=events)
    assert result.reason == "error"
    assert "overloaded" in events.of(Notice)[0].text and "try again" in events.of(Notice)[0].text


def test_anthropic_history_with_a_malformed_call_stays_valid(anthropic_server):
    """A result whose call could not be parsed is sent as text, never as an orphan tool_result."""
    model = anthropic(anthropic_server)
    prompt = Prompt(
        "Be brief.",
        function_schemas(["human"]),
        "",
        [
            ChatMessage("assistant", "{not json"),
            ChatMessage("tool", "Error: not valid JSON", call_id=None, name=None),
            ChatMessage("user", "hello"),
        ],
    )
    body = model.request_body(prompt)
    assert (
        check_messages_request(
            "POST",
            "/v1/messages",
            {"x-api-key": "test-key", "anthropic-version": "x", "content-type": "application/json"},
            body,
        )
        == []
    )


# -- errors a user can fix ---------------------------------------------------------------------


def prompt() -> Prompt:
    return Prompt("Be brief.", function_schemas(["human"]), "", [ChatMessage("user", "hi")])


def openai_at(url: str, **options) -> OpenAIModel:
    return OpenAIModel("gpt-test", base_url=url, api_key="sk-test", backoff_s=0.01, **options)


def test_a_refused_key_says_how_to_fix_it(plain_server):
    plain_server.replies.append(Reply(401, json.dumps({"error": {"message": "Invalid API key"}})))
    with pytest.raises(
        ModelError, match=r"refused the API key \(401: Invalid API key\).*mnemo keys set openai"
    ):
        openai_at(plain_server.url).step(prompt())
    assert len(plain_server.received) == 1  # not retried


def test_rate_limits_and_server_errors_are_retried(plain_server):
    plain_server.replies += [
        Reply(429, '{"error": {"message": "slow down"}}', {"retry-after": "0"}),
        Reply(503, "busy"),
        recorded("openai/send_message.sse"),
    ]
    step = openai_at(plain_server.url).step(prompt())
    assert step.call.arguments == {"message": "Hi there, nice to meet you!"}
    assert len(plain_server.received) == 3
    assert plain_server.received[0].headers["authorization"] == "Bearer sk-test"


def test_reported_prompt_tokens_calibrate_the_estimate(plain_server):
    plain_server.replies.append(recorded("openai/send_message.sse"))
    model = openai_at(plain_server.url)
    before = model.count_prompt(prompt())
    step = model.step(prompt())
    assert step.stats.evaluated_tokens == 1204  # the server's own count
    after = model.count_prompt(prompt())
    assert abs(after - 1204) < abs(before - 1204)
    assert plain_server.received[0].body["stream_options"] == {"include_usage": True}


def test_a_server_that_refuses_stream_options_is_asked_again_without(plain_server):
    plain_server.replies += [
        Reply(400, '{"error": {"message": "Unknown parameter: stream_options"}}'),
        recorded("openai/send_message.sse"),
    ]
    step = openai_at(plain_server.url).step(prompt())
    assert step.call is not None
    assert "stream_options" not in plain_server.received[1].body


def test_a_rate_limit_that_persists_reads_as_one_sentence(plain_server):
    plain_server.replies += [Reply(429, '{"error": {"message": "quota"}}')] * 4
    with pytest.raises(ModelError, match="rate limit: quota.*wait a minute"):
        openai_at(plain_server.url, retries=3).step(prompt())
    assert len(plain_server.received) == 4


def test_an_unreachable_server_is_named(plain_server):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(
        ModelError, match=f"Cannot reach the openai server at http://127.0.0.1:{port}"
    ):
        openai_at(f"http://127.0.0.1:{port}", retries=1).step(prompt())


def test_a_hung_server_times_out(plain_server):
    plain_server.replies += [Reply(delay_s=3), Reply(delay_s=3)]
    started = time.monotonic()
    with pytest.raises(ModelError, match="did not answer within 1 s"):
        openai_at(plain_server.url, timeout_s=1, retries=1).step(prompt())
    assert time.monotonic() - started < 5


def test_a_wrong_base_url_says_404(plain_server):
    plain_server.replies.append(Reply(404, "Not Found"))
    with pytest.raises(ModelError, match="answered 404.*base URL and the model name"):
        openai_at(plain_server.url).step(prompt())


# -- the OpenAI back-end against a real llama.cpp server ---------------------------------------


def test_openai_backend_against_llama_cpp_server(mnemo, llama_server):
    # The 135M model behind the server samples (temperature 0.3) and, offered the eleven memory
    # functions, left every unforced reply empty (4 steps of 6 turns out of 6); the last step
    # forces send_message, which replied 8 times in 8. Two steps: one free, one forced.
    mnemo.settings.set("agent.step_limit", 2)
    model = OpenAIModel("smollm2", base_url=llama_server, context_length=8192)
    assert model.check().startswith("reachable")
    events = Recorder()
    result = Agent(mnemo, model).send("hello", on_event=events)
    assert result.reply, result
    assert "".join(e.text for e in events.of(TextStreamed)).endswith(result.reply)


def test_openai_native_tool_call_streams_send_message(llama_server):
    model = OpenAIModel("smollm2", base_url=llama_server, context_length=8192)
    pieces: list[str] = []
    forced = prompt()
    forced.allowed = frozenset({"send_message"})
    step = model.step(forced, on_text=pieces.append)
    assert step.call is not None and step.call.name == "send_message"
    assert len(pieces) > 1 and "".join(pieces) == step.call.arguments["message"]
    assert model.complete("Summarize.", "Sam likes tea.", max_tokens=20)


# -- the server's context size -----------------------------------------------------------------


def test_a_servers_context_size_is_read_from_it(plain_server):
    props = {"default_generation_settings": {"n_ctx": 2048}}  # llama.cpp's llama-server
    listed = {"data": [{"id": "gpt-test", "meta": {"n_ctx_train": 8192}}]}
    plain_server.replies += [Reply(body=json.dumps(props)), Reply(body=json.dumps(listed))]
    assert openai_at(plain_server.url, context_length=None).context_length == 2048
    assert [r.path for r in plain_server.received] == ["/props", "/models"]
    vllm = {"data": [{"id": "gpt-test", "max_model_len": 4096}]}
    plain_server.replies += [Reply(404, "{}"), Reply(body=json.dumps(vllm))]
    assert openai_at(plain_server.url, context_length=None).context_length == 4096
    plain_server.replies += [Reply(404, "{}"), Reply(body=json.dumps({"data": []}))]
    assert openai_at(plain_server.url, context_length=None).context_length == 32768  # unsaid
    assert openai_at(plain_server.url, context_length=1000).context_length == 1000  # chosen


def test_auto_reads_what_a_server_says_of_its_model_before_it_picks_a_mode(plain_server):
    """A server whose context size is left automatic is asked what it serves (llama.cpp's
    names the file and its size): a catalogue file gets the catalogue's mode, a small one
    Mnemo's recall; one on this computer that says nothing gets recall too, with the reason. A
    server elsewhere (an API) manages its own memory."""
    from engine.llm.base import mode_for
    from engine.llm.catalog import find_entry
    from engine.llm.openai_api import server_on_this_computer

    served = find_entry("qwen3-4b-instruct-2507")
    assert served is not None
    props = {"model_path": f"/models/{served.file_name}", "default_generation_settings": {}}
    plain_server.replies += [Reply(body=json.dumps(props)), Reply(404, "{}")]
    chosen = mode_for("auto", openai_at(plain_server.url, context_length=None))
    assert chosen.mode == "self" and "catalogue" in chosen.reason
    tiny = {"data": [{"id": "gpt-test", "meta": {"n_params": 135_000_000}}]}
    plain_server.replies += [Reply(404, "{}"), Reply(body=json.dumps(tiny))]
    chosen = mode_for("auto", openai_at(plain_server.url, context_length=None))
    assert chosen.mode == "assisted" and "135M" in chosen.reason
    plain_server.replies += [Reply(404, "{}"), Reply(body=json.dumps({"data": []}))]
    model = openai_at(plain_server.url, context_length=None)
    chosen = mode_for("auto", model)
    assert chosen.mode == "assisted" and "does not say how large" in chosen.reason
    mode_for("auto", model)
    assert len(plain_server.received) == 6  # asked once per model, when it was made
    assert mode_for("self", model).mode == "self"
    # A context size chosen: the server is still asked what it serves, for the mode only.
    plain_server.replies += [Reply(404, "{}"), Reply(body=json.dumps({"data": []}))]
    sized = openai_at(plain_server.url, context_length=8192, ask_server=True)
    assert sized.context_length == 8192 and mode_for("auto", sized).mode == "assisted"
    assert len(plain_server.received) == 8
    assert not server_on_this_computer("https://api.openai.com/v1")
    assert server_on_this_computer("http://192.168.1.20:11434/v1")


def test_a_tiny_model_on_llama_cpp_pythons_server_gets_recall(llama_server):
    """The case that went wrong: a 135M model behind a local server was given self-managed
    memory, and every turn made ten requests and ended in nonsense."""
    from engine.llm.base import mode_for

    model = OpenAIModel("smollm2", base_url=llama_server, context_length=None)  # as set up
    chosen = mode_for("auto", model)
    assert chosen.mode == "assisted", chosen.reason


def test_a_server_that_refuses_a_long_prompt_gives_its_size_and_the_next_one_fits(llama_server):
    """llama-cpp-python's server says its size nowhere but in the refusal (it ran with 2,048
    while Mnemo assumed 32,768)."""
    model = OpenAIModel("smollm2", base_url=llama_server, context_length=None)
    assert model.context_length == 32768  # nothing to read: assumed
    long = Prompt("Be brief.", [], "", [ChatMessage("user", "tomato soup recipes " * 4000)])
    with pytest.raises(ContextOverflowError, match="context window is 8,192 tokens") as refused:
        model.step(long)
    assert refused.value.context_length == 8192 and model.context_length == 8192


def test_choosing_a_server_model_forgets_a_local_models_context_size(tmp_path, plain_server):
    profile = str(tmp_path / "p")
    assert main(["--profile", profile, "settings", "model.context_length", "4096"]) == 0
    use = ["--profile", profile, "models", "use", "openai:gpt-test", "--base-url", plain_server.url]
    assert main(use) == 0
    with Mnemo.open(tmp_path / "p") as mnemo:
        config = model_settings(mnemo.settings)
        assert not config.context_chosen and config.context_length == 32768
    assert main([*use, "--context", "2048"]) == 0
    with Mnemo.open(tmp_path / "p") as mnemo:
        assert model_settings(mnemo.settings).context_length == 2048
