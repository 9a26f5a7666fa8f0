"""The command line's parser, for every command group, in one light module.

Building it imports nothing but argparse and the names it shows, so `mnemo --help` and
`mnemo --version` answer at once. Each command names its handler as "group:function"; the
group's module (``engine.cli.<group>``, with the engine behind it) is imported only when that
command runs (``engine.cli.main``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from engine import __version__, keys

if TYPE_CHECKING:
    Commands = argparse._SubParsersAction[argparse.ArgumentParser]


def _command(
    commands: Commands,
    name: str,
    handler: str,
    help: str | None = None,
    description: str | None = None,
    json: bool = False,
    **defaults: object,
) -> argparse.ArgumentParser:
    """A command (or an action of one) run by ``handler``, "group:function"; ``json`` gives it
    ``--json``, for scripts."""
    parser = commands.add_parser(name, help=help, description=description)
    parser.set_defaults(handler=handler, **defaults)
    if json:
        parser.add_argument("--json", action="store_true")
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mnemo", description="Mnemo: a local assistant that remembers."
    )
    parser.add_argument("--version", action="version", version=f"mnemo {__version__}")
    parser.add_argument(
        "--profile",
        metavar="PATH",
        help="profile folder (default: $MNEMO_HOME or your user data folder)",
    )
    parser.set_defaults(handler="memory:cmd_status")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    for group in (
        _memory,
        _chat,
        _models,
        _keys,
        _doctor,
        _ingest,
        _archival,
        _knowledge,
        _forget,
        _snapshots,
        _exchange,
        _check,
        _assistants,
        _server,
    ):
        group(commands)
    return parser


def _memory(commands: Commands) -> None:
    _command(commands, "status", "memory:cmd_status", "the profile in one glance")

    memory = _command(
        commands, "memory", "memory:cmd_memory_show", "show and edit core memory", json=False
    )
    memory_commands = memory.add_subparsers(metavar="ACTION")
    _command(memory_commands, "show", "memory:cmd_memory_show", "print every block", json=True)
    set_ = _command(memory_commands, "set", "memory:cmd_memory_set", "replace a block's text")
    set_.add_argument("label")
    set_.add_argument("text")
    append = _command(
        memory_commands, "append", "memory:cmd_memory_append", "add a line to a block"
    )
    append.add_argument("label")
    append.add_argument("text")
    history = _command(
        memory_commands,
        "history",
        "memory:cmd_memory_history",
        "list a block's changes",
        json=True,
    )
    history.add_argument("label")
    undo = _command(
        memory_commands,
        "undo",
        "memory:cmd_memory_undo",
        "undo a block's latest (or a given) change",
    )
    undo.add_argument("label")
    undo.add_argument("--version", type=int, help="the change to undo (from `history`)")
    add = _command(memory_commands, "add", "memory:cmd_memory_add", "add a custom block")
    add.add_argument("label")
    add.add_argument("text", nargs="?")
    add.add_argument("--description")
    add.add_argument(
        "--limit",
        type=int,
        help="character limit (default: as the persona and human blocks)",
    )
    add.add_argument("--read-only", action="store_true")
    remove = _command(
        memory_commands, "remove", "memory:cmd_memory_remove", "remove a custom block"
    )
    remove.add_argument("label")
    proposals = _command(
        memory_commands,
        "proposals",
        "memory:cmd_memory_proposals",
        "list the model's core-memory edits waiting for approval",
        json=True,
    )
    proposals.add_argument("--all", action="store_true", help="include decided ones")
    approve = _command(
        memory_commands, "approve", "memory:cmd_memory_approve", "apply a proposed edit"
    )
    approve.add_argument("id", type=int)
    approve.add_argument("--text", help="apply this text instead of the proposed one")
    reject = _command(
        memory_commands, "reject", "memory:cmd_memory_reject", "discard a proposed edit"
    )
    reject.add_argument("id", type=int)

    tidy = _command(
        commands,
        "tidy",
        "memory:cmd_tidy",
        "put memory in order: merge duplicate notes, keep outdated ones as history, remove "
        "musings, bring the human block up to date (as proposals you approve)",
    )
    tidy.add_argument(
        "--dry-run", action="store_true", help="say what would change; propose nothing"
    )
    tidy.add_argument("--approve", action="store_true", help="approve the newest tidy batch whole")
    tidy.add_argument("--undo", type=int, metavar="ID", help="undo one approved change of a batch")

    settings = _command(commands, "settings", "memory:cmd_settings", "show or change settings")
    settings.add_argument("key", nargs="?", help="e.g. memory.core_write_policy")
    settings.add_argument("value", nargs="?", help="the new value")


def _chat(commands: Commands) -> None:
    chat_parser = _command(commands, "chat", "chat:cmd_chat", "chat in the terminal")
    chat_parser.add_argument("--message", "-m", help="run one turn with this message and exit")
    chat_parser.add_argument("--model", metavar="GGUF", help="a local model file for this run")
    chat_parser.add_argument("--context", type=int, help="context size in tokens")
    chat_parser.add_argument("--gpu-layers", type=int, help="layers to offload to the GPU")
    chat_parser.add_argument("--threads", type=int, help="CPU threads (default: all cores)")
    which = chat_parser.add_mutually_exclusive_group()
    which.add_argument(
        "--new", action="store_true", help="start a new conversation (memory is shared)"
    )
    which.add_argument("--open", metavar="ID", help="continue an earlier conversation")
    which.add_argument(
        "--list", action="store_true", help="list the conversations, newest first, and exit"
    )


def _models(commands: Commands) -> None:
    models = _command(
        commands, "models", "models:cmd_models_list", "list the models or choose the one to use"
    )
    models_commands = models.add_subparsers(metavar="ACTION")
    _command(
        models_commands, "list", "models:cmd_models_list", "the model in use and local GGUF files"
    )
    _command(
        models_commands,
        "catalog",
        "models:cmd_models_catalog",
        "models to download, judged for this computer",
        json=True,
    )
    fetch = _command(
        models_commands,
        "download",
        "models:cmd_models_download",
        "a catalogue ID, a Hugging Face owner/repo with FILE, or an https URL",
    )
    fetch.add_argument("model")
    fetch.add_argument("file", nargs="?", help="the .gguf file in an owner/repo")
    fetch.add_argument("--use", action="store_true", help="use the model once it is ready")
    delete = _command(
        models_commands, "remove", "models:cmd_models_remove", "delete a downloaded model"
    )
    delete.add_argument("model")
    use = _command(
        models_commands,
        "use",
        "models:cmd_models_use",
        "default | ID | FILE.gguf | PATH.gguf | openai:MODEL | anthropic:MODEL",
    )
    use.add_argument("model")
    use.add_argument(
        "--base-url", help="an OpenAI-compatible server, e.g. http://localhost:11434/v1"
    )
    use.add_argument("--context", type=int, help="context size in tokens")
    use.add_argument("--gpu-layers", type=int, help="local models: layers to offload to the GPU")
    use.add_argument(
        "--yes", action="store_true", help="an embedder: re-embed memory without asking"
    )


def _keys(commands: Commands) -> None:
    keys_parser = _command(
        commands, "keys", "keys:cmd_keys_list", "API keys (kept in the OS keyring only)"
    )
    keys_commands = keys_parser.add_subparsers(metavar="ACTION")
    _command(keys_commands, "list", "keys:cmd_keys_list", "where each provider's key comes from")
    set_key = _command(keys_commands, "set", "keys:cmd_keys_set", "save a key in the keyring")
    set_key.add_argument("provider", choices=keys.PROVIDERS)
    set_key.add_argument("--stdin", action="store_true", help="read the key from standard input")
    remove = _command(keys_commands, "remove", "keys:cmd_keys_remove", "forget a key")
    remove.add_argument("provider", choices=keys.PROVIDERS)


def _doctor(commands: Commands) -> None:
    _command(
        commands, "doctor", "doctor:cmd_doctor", "check the model, keyring, profile and versions"
    )


def _ingest(commands: Commands) -> None:
    ingest = _command(
        commands, "ingest", "ingest:cmd_ingest", "read files and folders into archival memory"
    )
    ingest.add_argument("paths", nargs="+", metavar="PATH")
    ingest.add_argument("--include", action="append", metavar="GLOB", help="only matching files")
    ingest.add_argument("--exclude", action="append", metavar="GLOB", help="skip matching names")

    watch = _command(
        commands, "watch", "ingest:cmd_watch_list", "folders kept in sync with archival memory"
    )
    actions = watch.add_subparsers(metavar="ACTION")
    _command(actions, "list", "ingest:cmd_watch_list", "the watched folders")
    add = _command(actions, "add", "ingest:cmd_watch_add", "watch a folder (and index it now)")
    add.add_argument("path")
    add.add_argument("--include", action="append", metavar="GLOB")
    add.add_argument("--exclude", action="append", metavar="GLOB")
    remove = _command(actions, "remove", "ingest:cmd_watch_remove", "stop watching a folder")
    remove.add_argument("path")
    remove.add_argument("--keep", action="store_true", help="keep its passages")
    _command(actions, "run", "ingest:cmd_watch_run", "watch in the terminal until Ctrl-C")

    sources = _command(
        commands,
        "sources",
        "ingest:cmd_sources",
        "every ingested file with its status",
        json=True,
    )
    sources.add_argument("--errors", action="store_true", help="only files that failed")


def _archival(commands: Commands) -> None:
    search = _command(
        commands, "search", "archival:cmd_search", "search recall or archival memory", json=True
    )
    search.add_argument("store", choices=["recall", "archival"])
    search.add_argument("query")
    search.add_argument("--limit", type=int, default=10)
    search.add_argument("--page", type=int, default=1)
    search.add_argument("--mode", choices=["hybrid", "keyword", "semantic"], default="hybrid")
    search.add_argument("--since", metavar="DATE", help="only items from this date (YYYY-MM-DD)")
    search.add_argument("--until", metavar="DATE", help="only items up to this date")
    search.add_argument("--tag", action="append", help="archival: only passages with this tag")
    search.add_argument("--source", help="archival: only passages from this file or folder")
    search.add_argument(
        "--explain",
        action="store_true",
        help="show each hit's keyword and vector scores, ranks and fused score",
    )

    archival = commands.add_parser("archival", help="add, list and delete archival passages")
    archival_commands = archival.add_subparsers(metavar="ACTION", required=True)
    insert = _command(
        archival_commands, "insert", "archival:cmd_archival_insert", "store a passage"
    )
    insert.add_argument("text")
    insert.add_argument("--tag", action="append")
    insert.add_argument(
        "--expires", metavar="WHEN", help="leave search then (YYYY-MM-DD or 'YYYY-MM-DD HH:MM')"
    )
    expire = _command(
        archival_commands,
        "expire",
        "archival:cmd_archival_expire",
        "set when a passage leaves search ('never' keeps it, or brings it back)",
    )
    expire.add_argument("id")
    expire.add_argument("when", metavar="WHEN|never")
    _command(
        archival_commands,
        "expired",
        "archival:cmd_archival_expired",
        "passages that expired and are kept a week before they are purged",
        json=True,
    )
    delete = _command(
        archival_commands, "delete", "archival:cmd_archival_delete", "delete a passage by id"
    )
    delete.add_argument("id")
    list_ = _command(
        archival_commands,
        "list",
        "archival:cmd_archival_list",
        "list recent passages",
        json=True,
    )
    list_.add_argument("--limit", type=int, default=20)
    list_.add_argument("--source", help="list the passages of one file, in order")

    reembed = _command(
        commands,
        "reembed",
        "archival:cmd_reembed",
        "re-embed memory after a change of embedder, or with another one",
    )
    reembed.add_argument(
        "--embedder",
        metavar="ID|FILE.gguf|PATH|default",
        help="an embedding GGUF to use from now on (default: the bundled MiniLM)",
    )
    reembed.add_argument("--yes", action="store_true", help="do not ask for confirmation")


def _forget(commands: Commands) -> None:
    forget = _command(
        commands,
        "forget",
        "forget:cmd_forget",
        "remove a text, or one thing, from every store, for good",
        description="Show every place Mnemo holds a text (or a message, passage, fact, person "
        "or conversation), then forget it everywhere after a yes: messages, archival memory, "
        "knowledge, core memory and its history, summaries, logs and the snapshots that hold "
        "it. A tombstone (a keyed hash, never the text) keeps it from coming back.",
    )
    forget.add_argument("text", nargs="?", help="the text to forget, wherever it is")
    which = forget.add_mutually_exclusive_group()
    which.add_argument("--message", metavar="ID", help="one message, whole")
    which.add_argument("--passage", metavar="ID", help="one archival passage, whole")
    which.add_argument("--fact", metavar="ID", help="one fact")
    which.add_argument("--entity", metavar="NAME", help="everything about a person or thing")
    which.add_argument("--conversation", metavar="ID", help="one conversation, whole")
    which.add_argument("--list", action="store_true", help="the tombstones, newest first")
    which.add_argument("--lift", metavar="N", type=int, help="lift tombstone N: it may return")
    forget.add_argument("--dry-run", action="store_true", help="list, forget nothing")
    forget.add_argument("--yes", action="store_true", help="forget without asking")


def _knowledge(commands: Commands) -> None:
    kg = commands.add_parser("kg", help="knowledge memory: people, places and things")
    kg_commands = kg.add_subparsers(metavar="ACTION", required=True)
    show = _command(
        kg_commands, "show", "knowledge:cmd_kg_show", "an entity and its current facts", json=True
    )
    show.add_argument("entity")
    search = _command(
        kg_commands,
        "search",
        "knowledge:cmd_kg_search",
        "entities whose name holds the text",
        json=True,
    )
    search.add_argument("text")
    add = _command(
        kg_commands,
        "add",
        "knowledge:cmd_kg_add",
        "add a fact: SUBJECT RELATION OBJECT",
        json=True,
    )
    add.add_argument("subject")
    add.add_argument("relation", help="e.g. lives_in, works_at, birthday")
    add.add_argument("object")
    add.add_argument("--since", metavar="DATE", help="when it began to hold (YYYY-MM-DD)")
    add.add_argument(
        "--replace", action="store_true", help="supersede the current value it contradicts"
    )
    history = _command(
        kg_commands,
        "history",
        "knowledge:cmd_kg_history",
        "every fact ever held about an entity",
        json=True,
    )
    history.add_argument("entity")
    merge = _command(
        kg_commands, "merge", "knowledge:cmd_kg_merge", "fold OTHER into KEEP: one person or thing"
    )
    merge.add_argument("keep")
    merge.add_argument("other")
    retract = _command(
        kg_commands, "retract", "knowledge:cmd_kg_retract", "retract a wrong fact (kept in history)"
    )
    retract.add_argument("id", type=int, help="the fact's number, from `kg show`")
    extract = _command(
        kg_commands,
        "extract",
        "knowledge:cmd_kg_extract",
        "propose the facts a document states (you review them)",
        json=True,
    )
    extract.add_argument("file", type=Path)


def _snapshots(commands: Commands) -> None:
    snapshot = commands.add_parser("snapshot", help="snapshots of the whole memory, to roll back")
    actions = snapshot.add_subparsers(metavar="ACTION", required=True)
    create = _command(actions, "create", "snapshots:cmd_snapshot_create", "take a snapshot now")
    create.add_argument("--note", default="", help="what it is for")
    _command(
        actions,
        "list",
        "snapshots:cmd_snapshot_list",
        "every snapshot, newest first",
        json=True,
    )
    restore = _command(
        actions, "restore", "snapshots:cmd_snapshot_restore", "bring the memory back to a snapshot"
    )
    restore.add_argument("id")
    restore.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    delete = _command(actions, "delete", "snapshots:cmd_snapshot_delete", "delete a snapshot")
    delete.add_argument("id")


def _exchange(commands: Commands) -> None:
    export = _command(
        commands, "export", "exchange:cmd_export", "write the whole memory to one .mnemo archive"
    )
    export.add_argument("path", type=Path)
    export.add_argument(
        "--no-vectors", action="store_true", help="leave vectors out (smaller; re-embedded later)"
    )
    export.add_argument("--since", metavar="DATE", help="only messages and passages from DATE")
    export.add_argument(
        "--format",
        choices=("mnemo", "af"),
        default="mnemo",
        help="mnemo: everything (default); af: a Letta Agent File (core blocks and the chat)",
    )
    import_ = _command(
        commands,
        "import",
        "exchange:cmd_import",
        "bring in a .mnemo archive, or ChatGPT's or Claude's conversations.json (never twice)",
    )
    import_.add_argument("path", type=Path, nargs="?")
    import_.add_argument(
        "--undo",
        action="store_true",
        help="take out what an import stopped halfway had brought (import it again to finish it)",
    )


def _check(commands: Commands) -> None:
    check = _command(
        commands,
        "check",
        "check:cmd_check",
        "check that the database, its index and the vectors agree",
        json=True,
    )
    check.add_argument(
        "--repair", action="store_true", help="fix what can be fixed (after a snapshot)"
    )


def _assistants(commands: Commands) -> None:
    assistants = commands.add_parser(
        "assistants", help="several assistants, each with a memory of its own"
    )
    actions = assistants.add_subparsers(metavar="ACTION", required=True)
    _command(
        actions,
        "list",
        "assistants:cmd_list",
        "every assistant; * marks the one in use",
        json=True,
    )
    create = _command(
        actions, "create", "assistants:cmd_create", "a new assistant with an empty memory"
    )
    create.add_argument("name")
    create.add_argument("--persona", help="who it is (its persona block)")
    use = _command(actions, "use", "assistants:cmd_use", "make an assistant the one that opens")
    use.add_argument("name")
    rename = _command(actions, "rename", "assistants:cmd_rename", "rename an assistant")
    rename.add_argument("name")
    rename.add_argument("new")
    duplicate = _command(
        actions, "duplicate", "assistants:cmd_duplicate", "copy an assistant, memory included"
    )
    duplicate.add_argument("name")
    duplicate.add_argument("new")
    duplicate.add_argument(
        "--persona-only", action="store_true", help="copy who it is, not what it remembers"
    )
    delete = _command(
        actions, "delete", "assistants:cmd_delete", "move an assistant to the data folder's trash"
    )
    delete.add_argument("name")
    delete.add_argument("--yes", action="store_true", help="do not ask for confirmation")


def _server(commands: Commands) -> None:
    serve = _command(
        commands,
        "serve",
        "serve:cmd_serve",
        "serve assistants over HTTP to other devices",
        profileless=True,
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    serve.add_argument("--port", type=int, default=8765)
    serve.add_argument("--root", metavar="DIR", help="the server's folder (users and memory)")
    serve.add_argument("--rate", type=float, default=20.0, help="requests a second per token")
    serve.add_argument("--burst", type=int, default=60, help="requests at once per token")
    serve.add_argument(
        "--archival-url",
        metavar="URL",
        help="new assistants' archival memory in object storage: s3://bucket/prefix"
        "[?endpoint=URL] (credentials: `mnemo keys set s3-key-id`/`s3-secret`, or AWS_* variables)",
    )
    serve.add_argument(
        "--database-url",
        metavar="URL",
        help="new assistants' other tables on a PostgreSQL server with pgvector: "
        "postgresql://USER@HOST:PORT/DATABASE (password: `mnemo keys set postgres` or PGPASSWORD)",
    )
    serve.add_argument(
        "--model",
        default="default",
        help="the model every assistant answers with: default (the bundled one) | PATH.gguf | "
        "openai:MODEL | anthropic:MODEL; users cannot change it",
    )
    serve.add_argument("--base-url", help="the API model's server (an OpenAI-compatible one)")
    serve.add_argument("--context", type=int, help="context size in tokens")
    serve.add_argument("--gpu-layers", type=int, default=0, help="layers to offload to the GPU")
    serve.add_argument(
        "--local",
        action="store_true",
        help="serve your own assistants on 127.0.0.1 to programs on this computer (OpenAI's "
        "API and MCP), with a token made for this run",
    )
    mcp = _command(
        commands,
        "mcp",
        "serve:cmd_mcp",
        "this assistant's memory for other programs (Claude Desktop, LM Studio, Jan, "
        "Cursor): an MCP server on stdin/stdout",
        profileless=True,
    )
    mcp.add_argument("--assistant", metavar="NAME", help="another assistant than the current")
    users = commands.add_parser("server-users", help="who may use `mnemo serve`")
    users.add_argument("--root", metavar="DIR", help="the server's folder")
    actions = users.add_subparsers(metavar="ACTION", required=True)
    _command(actions, "list", "serve:cmd_users_list", "the users", profileless=True)
    add = _command(
        actions, "add", "serve:cmd_users_add", "add a user and print their token", profileless=True
    )
    add.add_argument("name")
    program = _command(
        actions,
        "program",
        "serve:cmd_users_program",
        "print a new token for a program of a user's (reads, searches, chats, proposes)",
        profileless=True,
    )
    program.add_argument("name")
    remove = _command(
        actions,
        "remove",
        "serve:cmd_users_remove",
        "take a user's token away (memory is kept)",
        profileless=True,
    )
    remove.add_argument("name")
