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
    status = commands.add_parser("status", help="the profile in one glance")
    status.set_defaults(handler="memory:cmd_status")

    memory = commands.add_parser("memory", help="show and edit core memory")
    memory.set_defaults(handler="memory:cmd_memory_show", json=False)
    memory_commands = memory.add_subparsers(metavar="ACTION")
    show = memory_commands.add_parser("show", help="print every block")
    show.add_argument("--json", action="store_true")
    show.set_defaults(handler="memory:cmd_memory_show")
    set_ = memory_commands.add_parser("set", help="replace a block's text")
    set_.add_argument("label")
    set_.add_argument("text")
    set_.set_defaults(handler="memory:cmd_memory_set")
    append = memory_commands.add_parser("append", help="add a line to a block")
    append.add_argument("label")
    append.add_argument("text")
    append.set_defaults(handler="memory:cmd_memory_append")
    history = memory_commands.add_parser("history", help="list a block's changes")
    history.add_argument("label")
    history.add_argument("--json", action="store_true")
    history.set_defaults(handler="memory:cmd_memory_history")
    undo = memory_commands.add_parser("undo", help="undo a block's latest (or a given) change")
    undo.add_argument("label")
    undo.add_argument("--version", type=int, help="the change to undo (from `history`)")
    undo.set_defaults(handler="memory:cmd_memory_undo")
    add = memory_commands.add_parser("add", help="add a custom block")
    add.add_argument("label")
    add.add_argument("text", nargs="?")
    add.add_argument("--description")
    add.add_argument(
        "--limit",
        type=int,
        help="character limit (default: as the persona and human blocks)",
    )
    add.add_argument("--read-only", action="store_true")
    add.set_defaults(handler="memory:cmd_memory_add")
    remove = memory_commands.add_parser("remove", help="remove a custom block")
    remove.add_argument("label")
    remove.set_defaults(handler="memory:cmd_memory_remove")
    proposals = memory_commands.add_parser(
        "proposals", help="list the model's core-memory edits waiting for approval"
    )
    proposals.add_argument("--all", action="store_true", help="include decided ones")
    proposals.add_argument("--json", action="store_true")
    proposals.set_defaults(handler="memory:cmd_memory_proposals")
    approve = memory_commands.add_parser("approve", help="apply a proposed edit")
    approve.add_argument("id", type=int)
    approve.add_argument("--text", help="apply this text instead of the proposed one")
    approve.set_defaults(handler="memory:cmd_memory_approve")
    reject = memory_commands.add_parser("reject", help="discard a proposed edit")
    reject.add_argument("id", type=int)
    reject.set_defaults(handler="memory:cmd_memory_reject")

    settings = commands.add_parser("settings", help="show or change settings")
    settings.add_argument("key", nargs="?", help="e.g. memory.core_write_policy")
    settings.add_argument("value", nargs="?", help="the new value")
    settings.set_defaults(handler="memory:cmd_settings")


def _chat(commands: Commands) -> None:
    chat_parser = commands.add_parser("chat", help="chat in the terminal")
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
    chat_parser.set_defaults(handler="chat:cmd_chat")


def _models(commands: Commands) -> None:
    models = commands.add_parser("models", help="list the models or choose the one to use")
    models.set_defaults(handler="models:cmd_models_list")
    models_commands = models.add_subparsers(metavar="ACTION")
    models_commands.add_parser("list", help="the model in use and local GGUF files").set_defaults(
        handler="models:cmd_models_list"
    )
    catalog = models_commands.add_parser(
        "catalog", help="models to download, judged for this computer"
    )
    catalog.add_argument("--json", action="store_true")
    catalog.set_defaults(handler="models:cmd_models_catalog")
    fetch = models_commands.add_parser(
        "download", help="a catalogue ID, a Hugging Face owner/repo with FILE, or an https URL"
    )
    fetch.add_argument("model")
    fetch.add_argument("file", nargs="?", help="the .gguf file in an owner/repo")
    fetch.add_argument("--use", action="store_true", help="use the model once it is ready")
    fetch.set_defaults(handler="models:cmd_models_download")
    delete = models_commands.add_parser("remove", help="delete a downloaded model")
    delete.add_argument("model")
    delete.set_defaults(handler="models:cmd_models_remove")
    use = models_commands.add_parser(
        "use", help="default | ID | FILE.gguf | PATH.gguf | openai:MODEL | anthropic:MODEL"
    )
    use.add_argument("model")
    use.add_argument(
        "--base-url", help="an OpenAI-compatible server, e.g. http://localhost:11434/v1"
    )
    use.add_argument("--context", type=int, help="context size in tokens")
    use.add_argument("--gpu-layers", type=int, help="local models: layers to offload to the GPU")
    use.set_defaults(handler="models:cmd_models_use")


def _keys(commands: Commands) -> None:
    keys_parser = commands.add_parser("keys", help="API keys (kept in the OS keyring only)")
    keys_parser.set_defaults(handler="keys:cmd_keys_list")
    keys_commands = keys_parser.add_subparsers(metavar="ACTION")
    keys_commands.add_parser("list", help="where each provider's key comes from").set_defaults(
        handler="keys:cmd_keys_list"
    )
    set_key = keys_commands.add_parser("set", help="save a key in the keyring")
    set_key.add_argument("provider", choices=keys.PROVIDERS)
    set_key.add_argument("--stdin", action="store_true", help="read the key from standard input")
    set_key.set_defaults(handler="keys:cmd_keys_set")
    remove = keys_commands.add_parser("remove", help="forget a key")
    remove.add_argument("provider", choices=keys.PROVIDERS)
    remove.set_defaults(handler="keys:cmd_keys_remove")


def _doctor(commands: Commands) -> None:
    doctor = commands.add_parser("doctor", help="check the model, keyring, profile and versions")
    doctor.set_defaults(handler="doctor:cmd_doctor")


def _ingest(commands: Commands) -> None:
    ingest = commands.add_parser("ingest", help="read files and folders into archival memory")
    ingest.add_argument("paths", nargs="+", metavar="PATH")
    ingest.add_argument("--include", action="append", metavar="GLOB", help="only matching files")
    ingest.add_argument("--exclude", action="append", metavar="GLOB", help="skip matching names")
    ingest.set_defaults(handler="ingest:cmd_ingest")

    watch = commands.add_parser("watch", help="folders kept in sync with archival memory")
    watch.set_defaults(handler="ingest:cmd_watch_list")
    actions = watch.add_subparsers(metavar="ACTION")
    actions.add_parser("list", help="the watched folders").set_defaults(
        handler="ingest:cmd_watch_list"
    )
    add = actions.add_parser("add", help="watch a folder (and index it now)")
    add.add_argument("path")
    add.add_argument("--include", action="append", metavar="GLOB")
    add.add_argument("--exclude", action="append", metavar="GLOB")
    add.set_defaults(handler="ingest:cmd_watch_add")
    remove = actions.add_parser("remove", help="stop watching a folder")
    remove.add_argument("path")
    remove.add_argument("--keep", action="store_true", help="keep its passages")
    remove.set_defaults(handler="ingest:cmd_watch_remove")
    actions.add_parser("run", help="watch in the terminal until Ctrl-C").set_defaults(
        handler="ingest:cmd_watch_run"
    )

    sources = commands.add_parser("sources", help="every ingested file with its status")
    sources.add_argument("--json", action="store_true")
    sources.add_argument("--errors", action="store_true", help="only files that failed")
    sources.set_defaults(handler="ingest:cmd_sources")


def _archival(commands: Commands) -> None:
    search = commands.add_parser("search", help="search recall or archival memory")
    search.add_argument("store", choices=["recall", "archival"])
    search.add_argument("query")
    search.add_argument("--json", action="store_true")
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
    search.set_defaults(handler="archival:cmd_search")

    archival = commands.add_parser("archival", help="add, list and delete archival passages")
    archival_commands = archival.add_subparsers(metavar="ACTION", required=True)
    insert = archival_commands.add_parser("insert", help="store a passage")
    insert.add_argument("text")
    insert.add_argument("--tag", action="append")
    insert.add_argument(
        "--expires", metavar="WHEN", help="leave search then (YYYY-MM-DD or 'YYYY-MM-DD HH:MM')"
    )
    insert.set_defaults(handler="archival:cmd_archival_insert")
    expire = archival_commands.add_parser(
        "expire", help="set when a passage leaves search ('never' keeps it, or brings it back)"
    )
    expire.add_argument("id")
    expire.add_argument("when", metavar="WHEN|never")
    expire.set_defaults(handler="archival:cmd_archival_expire")
    expired = archival_commands.add_parser(
        "expired", help="passages that expired and are kept a week before they are purged"
    )
    expired.add_argument("--json", action="store_true")
    expired.set_defaults(handler="archival:cmd_archival_expired")
    delete = archival_commands.add_parser("delete", help="delete a passage by id")
    delete.add_argument("id")
    delete.set_defaults(handler="archival:cmd_archival_delete")
    list_ = archival_commands.add_parser("list", help="list recent passages")
    list_.add_argument("--limit", type=int, default=20)
    list_.add_argument("--source", help="list the passages of one file, in order")
    list_.add_argument("--json", action="store_true")
    list_.set_defaults(handler="archival:cmd_archival_list")

    reembed = commands.add_parser("reembed", help="re-embed archival memory after a model change")
    reembed.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    reembed.set_defaults(handler="archival:cmd_reembed")


def _forget(commands: Commands) -> None:
    forget = commands.add_parser(
        "forget",
        help="remove a text, or one thing, from every store, for good",
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
    forget.set_defaults(handler="forget:cmd_forget")


def _knowledge(commands: Commands) -> None:
    kg = commands.add_parser("kg", help="knowledge memory: people, places and things")
    kg_commands = kg.add_subparsers(metavar="ACTION", required=True)
    show = kg_commands.add_parser("show", help="an entity and its current facts")
    show.add_argument("entity")
    show.add_argument("--json", action="store_true")
    show.set_defaults(handler="knowledge:cmd_kg_show")
    search = kg_commands.add_parser("search", help="entities whose name holds the text")
    search.add_argument("text")
    search.add_argument("--json", action="store_true")
    search.set_defaults(handler="knowledge:cmd_kg_search")
    add = kg_commands.add_parser("add", help="add a fact: SUBJECT RELATION OBJECT")
    add.add_argument("subject")
    add.add_argument("relation", help="e.g. lives_in, works_at, birthday")
    add.add_argument("object")
    add.add_argument("--since", metavar="DATE", help="when it began to hold (YYYY-MM-DD)")
    add.add_argument(
        "--replace", action="store_true", help="supersede the current value it contradicts"
    )
    add.add_argument("--json", action="store_true")
    add.set_defaults(handler="knowledge:cmd_kg_add")
    history = kg_commands.add_parser("history", help="every fact ever held about an entity")
    history.add_argument("entity")
    history.add_argument("--json", action="store_true")
    history.set_defaults(handler="knowledge:cmd_kg_history")
    merge = kg_commands.add_parser("merge", help="fold OTHER into KEEP: one person or thing")
    merge.add_argument("keep")
    merge.add_argument("other")
    merge.set_defaults(handler="knowledge:cmd_kg_merge")
    retract = kg_commands.add_parser("retract", help="retract a wrong fact (kept in history)")
    retract.add_argument("id", type=int, help="the fact's number, from `kg show`")
    retract.set_defaults(handler="knowledge:cmd_kg_retract")
    extract = kg_commands.add_parser(
        "extract", help="propose the facts a document states (you review them)"
    )
    extract.add_argument("file", type=Path)
    extract.add_argument("--json", action="store_true")
    extract.set_defaults(handler="knowledge:cmd_kg_extract")


def _snapshots(commands: Commands) -> None:
    snapshot = commands.add_parser("snapshot", help="snapshots of the whole memory, to roll back")
    actions = snapshot.add_subparsers(metavar="ACTION", required=True)
    create = actions.add_parser("create", help="take a snapshot now")
    create.add_argument("--note", default="", help="what it is for")
    create.set_defaults(handler="snapshots:cmd_snapshot_create")
    listing = actions.add_parser("list", help="every snapshot, newest first")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler="snapshots:cmd_snapshot_list")
    restore = actions.add_parser("restore", help="bring the memory back to a snapshot")
    restore.add_argument("id")
    restore.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    restore.set_defaults(handler="snapshots:cmd_snapshot_restore")
    delete = actions.add_parser("delete", help="delete a snapshot")
    delete.add_argument("id")
    delete.set_defaults(handler="snapshots:cmd_snapshot_delete")


def _exchange(commands: Commands) -> None:
    export = commands.add_parser("export", help="write the whole memory to one .mnemo archive")
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
    export.set_defaults(handler="exchange:cmd_export")
    import_ = commands.add_parser(
        "import",
        help="bring in a .mnemo archive, or ChatGPT's or Claude's conversations.json (never twice)",
    )
    import_.add_argument("path", type=Path)
    import_.set_defaults(handler="exchange:cmd_import")


def _check(commands: Commands) -> None:
    check = commands.add_parser(
        "check", help="check that the database, its index and the vectors agree"
    )
    check.add_argument(
        "--repair", action="store_true", help="fix what can be fixed (after a snapshot)"
    )
    check.add_argument("--json", action="store_true")
    check.set_defaults(handler="check:cmd_check")


def _assistants(commands: Commands) -> None:
    assistants = commands.add_parser(
        "assistants", help="several assistants, each with a memory of its own"
    )
    actions = assistants.add_subparsers(metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="every assistant; * marks the one in use")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler="assistants:cmd_list")
    create = actions.add_parser("create", help="a new assistant with an empty memory")
    create.add_argument("name")
    create.add_argument("--persona", help="who it is (its persona block)")
    create.set_defaults(handler="assistants:cmd_create")
    use = actions.add_parser("use", help="make an assistant the one that opens")
    use.add_argument("name")
    use.set_defaults(handler="assistants:cmd_use")
    rename = actions.add_parser("rename", help="rename an assistant")
    rename.add_argument("name")
    rename.add_argument("new")
    rename.set_defaults(handler="assistants:cmd_rename")
    duplicate = actions.add_parser("duplicate", help="copy an assistant, memory included")
    duplicate.add_argument("name")
    duplicate.add_argument("new")
    duplicate.add_argument(
        "--persona-only", action="store_true", help="copy who it is, not what it remembers"
    )
    duplicate.set_defaults(handler="assistants:cmd_duplicate")
    delete = actions.add_parser("delete", help="move an assistant to the data folder's trash")
    delete.add_argument("name")
    delete.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    delete.set_defaults(handler="assistants:cmd_delete")


def _server(commands: Commands) -> None:
    serve = commands.add_parser("serve", help="serve assistants over HTTP to other devices")
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
    serve.set_defaults(handler="serve:cmd_serve", profileless=True)
    mcp = commands.add_parser(
        "mcp",
        help="this assistant's memory for other programs (Claude Desktop, LM Studio, Jan, "
        "Cursor): an MCP server on stdin/stdout",
    )
    mcp.add_argument("--assistant", metavar="NAME", help="another assistant than the current")
    mcp.set_defaults(handler="serve:cmd_mcp", profileless=True)
    users = commands.add_parser("server-users", help="who may use `mnemo serve`")
    users.add_argument("--root", metavar="DIR", help="the server's folder")
    actions = users.add_subparsers(metavar="ACTION", required=True)
    actions.add_parser("list", help="the users").set_defaults(
        handler="serve:cmd_users_list", profileless=True
    )
    add = actions.add_parser("add", help="add a user and print their token")
    add.add_argument("name")
    add.set_defaults(handler="serve:cmd_users_add", profileless=True)
    remove = actions.add_parser("remove", help="take a user's token away (memory is kept)")
    remove.add_argument("name")
    remove.set_defaults(handler="serve:cmd_users_remove", profileless=True)
