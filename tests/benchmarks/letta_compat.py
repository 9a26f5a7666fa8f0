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
``send_message`` calls each followed by its tool result. One JSON line per file.

With ``--database URI`` (a PostgreSQL with pgvector, e.g. pgserver's from Mnemo's own
environment: ``uv run python -c "import pgserver; print(pgserver.get_server('/tmp/letta-pg',
cleanup_mode=None).get_uri())"``), Letta's own import runs too: the tables are made from Letta's
models, its base tools are added as its server adds them, ``import_file`` stores each agent, and
the line gives what Letta then holds: each agent's name, model, blocks (length, limit), first
message in context and visible messages.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path
from typing import Any


def problems(path: Path) -> list[str]:
    from letta.schemas.agent_file import AgentFileSchema
    from letta.services.agent_serialization_manager import AgentSerializationManager

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


async def imported(paths: list[str]) -> dict[str, dict[str, Any]]:
    """Letta's ``import_file`` on each file, into the database of ``$LETTA_PG_URI``."""
    import letta.orm  # noqa: F401  (every table)
    from letta.orm.base import Base
    from letta.schemas.agent_file import AgentFileSchema
    from letta.server.db import engine
    from letta.server.server import SyncServer
    from sqlalchemy import text

    async with engine.begin() as connection:
        await connection.run_sync(Base.metadata.create_all)
        # What Letta's migrations add beyond its models: the messages' sequence.
        await connection.execute(text("CREATE SEQUENCE IF NOT EXISTS message_seq"))
        await connection.execute(
            text("ALTER TABLE messages ALTER COLUMN sequence_id SET DEFAULT nextval('message_seq')")
        )
    server = SyncServer(init_with_default_org_and_user=True)
    await server.organization_manager.create_default_organization_async()
    actor = await server.user_manager.get_default_actor_async()
    await server.tool_manager.upsert_base_tools_async(actor=actor)
    found: dict[str, dict[str, Any]] = {}
    for name in paths:
        data = json.loads(Path(name).read_text(encoding="utf-8"))
        while isinstance(data, str):
            data = json.loads(data)
        try:
            result = await server.agent_serialization_manager.import_file(
                AgentFileSchema.model_validate(data), actor, append_copy_suffix=True
            )
        except Exception as error:  # Letta refused the file: that is the answer
            found[name] = {"imported": False, "error": f"{type(error).__name__}: {error}"[:300]}
            continue
        agents = []
        for agent_id in result.imported_agent_ids or []:
            agent = await server.agent_manager.get_agent_by_id_async(agent_id, actor)
            context = await server.agent_manager.get_in_context_messages(
                agent_id=agent_id, actor=actor
            )
            listed = await server.message_manager.list_messages(
                agent_id=agent_id, actor=actor, limit=100_000
            )
            visible = 0
            for message in listed:
                calls = [call.function.name for call in message.tool_calls or []]
                visible += message.role == "user" or "send_message" in calls
            agents.append(
                {
                    "name": agent.name,
                    "model": f"{agent.llm_config.model_endpoint_type}:{agent.llm_config.model}",
                    "blocks": {b.label: [len(b.value), b.limit] for b in agent.memory.blocks},
                    "context_starts_with": context[0].role if context else None,
                    "visible_messages": visible,
                }
            )
        found[name] = {"imported": result.success, "agents": agents}
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--database", help="a PostgreSQL URI: run Letta's own import too")
    args = parser.parse_args()
    letta_import: dict[str, dict[str, Any]] = {}
    if args.database:  # Letta reads these when it is first imported
        os.environ["LETTA_PG_URI"] = args.database
        os.environ["LETTA_DISABLE_SQLALCHEMY_POOLING"] = "true"  # a local server, without TLS
        letta_import = asyncio.run(imported(args.files))
    for name in args.files:
        try:
            found = problems(Path(name))
        except Exception as error:  # Letta refused the file: that is the answer
            found = [f"{type(error).__name__}: {str(error)[:300]}"]
        line: dict[str, Any] = {"benchmark": "letta_compat", "file": name, "problems": found}
        if name in letta_import:
            line["letta_import"] = letta_import[name]
        print(json.dumps(line))


if __name__ == "__main__":
    main()
