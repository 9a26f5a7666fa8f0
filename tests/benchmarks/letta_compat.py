"""Does Letta take an Agent File? Letta's own schema and its import's checks, run by Letta.

Run it with a Python that has Letta installed, in a throwaway environment kept out of Mnemo's
dependencies (Letta pins hundreds of packages):

    uv venv /tmp/letta-env && uv pip install --python /tmp/letta-env/bin/python \
        letta==0.16.8 asyncpg
    uv run mnemo export /tmp/out --format af
    /tmp/letta-env/bin/python tests/benchmarks/letta_compat.py /tmp/out.af [more.af ...]

For each file: ``AgentFileSchema.model_validate`` (what Letta parses a file into), the checks
its import runs before touching the database (``AgentSerializationManager._validate_schema``:
id formats, duplicate ids, references), and the three things Letta's code assumes of an agent
that the schema does not check: an ``llm_config`` (``create_agent_async`` raises "llm_config is
required") and an ``embedding_config``, the system message first, and replies as
``send_message`` calls each followed by its tool result. Letta's import itself needs its
PostgreSQL server. One JSON line per file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from letta.schemas.agent_file import AgentFileSchema
from letta.services.agent_serialization_manager import AgentSerializationManager


def problems(path: Path) -> list[str]:
    data = json.loads(path.read_text(encoding="utf-8"))
    while isinstance(data, str):
        data = json.loads(data)
    schema = AgentFileSchema.model_validate(data)
    checker = object.__new__(AgentSerializationManager)  # its checks use no database
    checker._validate_schema(schema)
    found = []
    for agent in schema.agents:
        if agent.llm_config is None:
            found.append(f"{agent.name}: no llm_config")
        if agent.embedding_config is None:
            found.append(f"{agent.name}: no embedding_config")
        messages = agent.messages or []
        if messages and messages[0].role != "system":
            found.append(f"{agent.name}: the first message is {messages[0].role}, not system")
        if agent.in_context_message_ids and agent.in_context_message_ids[0] != messages[0].id:
            found.append(f"{agent.name}: the context does not start with the system message")
        for index, message in enumerate(messages):
            if message.role != "assistant":
                continue
            calls = [call.function.name for call in message.tool_calls or []]
            if "send_message" not in calls:
                found.append(f"{agent.name}: reply {message.id} is not a send_message call")
            following = messages[index + 1] if index + 1 < len(messages) else None
            if following is None or following.role != "tool":
                found.append(f"{agent.name}: reply {message.id} has no tool result after it")
    return found


def main() -> None:
    for name in sys.argv[1:]:
        try:
            found = problems(Path(name))
        except Exception as error:  # Letta refused the file: that is the answer
            found = [f"{type(error).__name__}: {str(error)[:300]}"]
        print(json.dumps({"benchmark": "letta_compat", "file": name, "problems": found}))


if __name__ == "__main__":
    main()
