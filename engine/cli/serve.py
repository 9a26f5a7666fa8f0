"""``mnemo serve`` and ``mnemo server-users``: run the HTTP server, and manage who may use it;
``mnemo mcp``: one assistant's memory over MCP on stdin/stdout.

None opens the profile the way other commands do: the server opens each user's assistants as
they are asked for, and ``mnemo mcp`` opens one assistant beside an open window, with stdout
kept for the protocol.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Any

from engine.errors import MnemoError
from engine.llm import API_CONTEXT, ModelConfig, load_config
from engine.server import default_root
from engine.server.accounts import Accounts


def _root(args: argparse.Namespace) -> Path:
    return Path(args.root).expanduser() if args.root else default_root()


def cmd_mcp(_mnemo: Any, args: argparse.Namespace) -> int:
    import anyio

    from engine.assistants import Assistants
    from engine.mnemo import Mnemo
    from engine.profile import data_folder, log_to_profile
    from engine.server.mcp_server import build_server, serve_stdio

    path = Assistants(data_folder()).path(args.assistant) if args.assistant else args.profile
    with Mnemo.open(path) as mnemo:
        log_to_profile(mnemo.profile)
        logging.getLogger().handlers = [  # stdout carries the protocol: nothing else goes there
            handler
            for handler in logging.getLogger().handlers
            if getattr(handler, "stream", None) is not sys.stdout
        ]
        anyio.run(serve_stdio, build_server(lambda _request: mnemo))
    return 0


def cmd_serve(_mnemo: Any, args: argparse.Namespace) -> int:
    import uvicorn

    from engine.server.app import Limits, create_app, server_config
    from engine.server.hub import Hub

    if args.local:
        return serve_local(args)
    root = _root(args)
    accounts = Accounts(root)
    if not accounts.names():
        print(
            f"mnemo: no users yet in {root}; add one with `mnemo server-users add NAME`.",
            file=sys.stderr,
        )
        return 1
    config = served_model(args)
    hub = Hub(
        accounts.folder,
        lambda: load_config(config),
        archival_url=args.archival_url,
        database_url=args.database_url,
    )
    app = create_app(accounts, hub, Limits(rate=args.rate, burst=args.burst))
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(
            f"mnemo: listening on {args.host}: anyone who can reach this machine can try tokens; "
            "put TLS in front of it (a reverse proxy) before using it across a network.",
            file=sys.stderr,
        )
    logging.getLogger("mnemo").setLevel(logging.INFO)
    print(
        f"Mnemo server for {len(accounts.names())} users on http://{args.host}:{args.port}, "
        f"answering with {config.describe()}"
    )
    try:
        uvicorn.Server(server_config(app, args.host, args.port)).run()
    finally:
        hub.close()
    return 0


def serve_local(args: argparse.Namespace) -> int:
    """`mnemo serve --local`: the person's own assistants (those of the window, or the one
    profile that ``--profile`` or ``$MNEMO_HOME`` chooses, as for every command) on 127.0.0.1,
    for programs on this computer, like Jupyter: a token made for this run, printed with the
    addresses. They answer with the current assistant's model settings; a turn waits for a window or
    `mnemo chat` that holds the same assistant (409)."""
    import shutil
    import signal
    import tempfile

    import uvicorn

    from engine.llm import load_model
    from engine.profile import current_assistant, data_folder
    from engine.server.app import Limits, create_app, server_config
    from engine.server.hub import Hub

    accounts = Accounts(Path(tempfile.mkdtemp(prefix="mnemo-local-")))
    accounts.add(LOCAL_USER)  # the person's own token is never shown: they have the window
    token = accounts.add_program(LOCAL_USER)
    # The profile the other commands use: one chosen by path (--profile, $MNEMO_HOME) is served
    # alone; else every assistant of the data folder.
    chosen = args.profile or os.environ.get("MNEMO_HOME")
    if chosen:
        profile = Path(chosen).expanduser().resolve()
        folder, only = profile.parent, profile.name
    else:
        folder, only = data_folder(), None

    def model() -> Any:  # the current assistant's model settings (the first one's, if none)
        names = [assistant.name for assistant in hub.assistants(LOCAL_USER).all()]
        name = current_assistant() if current_assistant() in names else names[0]
        return load_model(hub.get(LOCAL_USER, name).mnemo.settings)

    hub = Hub(lambda _user: folder, model, program="mnemo serve --local", only=only)
    app = create_app(accounts, hub, Limits(rate=args.rate, burst=args.burst))
    address = f"http://127.0.0.1:{args.port}"
    names = ", ".join(f"mnemo:{a.name}" for a in hub.assistants(LOCAL_USER).all()) or "none yet"
    print(
        f"Mnemo serves your assistants at {address} (this computer only).\n"
        f"  OpenAI-compatible: base URL {address}/v1, API key {token}\n"
        f"    models: {names}\n"
        f"  MCP: {address}/mcp?assistant=NAME, header 'Authorization: Bearer {token}'\n"
        "The token works until this server stops. It reads, searches, chats and proposes; "
        "approving, editing core memory, settings and forgetting stay with you, in Mnemo's "
        "window or the mnemo command. The window answers for an assistant it has open.",
        flush=True,
    )
    # uvicorn stops on SIGTERM and then raises it again, which would end the process before
    # the folder below is removed: here it ends the process by ``SystemExit`` instead.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        uvicorn.Server(server_config(app, "127.0.0.1", args.port)).run()
    finally:
        hub.close()
        shutil.rmtree(accounts.root, ignore_errors=True)  # this run's token dies with it
    return 0


LOCAL_USER = "you"


def served_model(args: argparse.Namespace) -> ModelConfig:
    """The operator's model from `mnemo serve`'s options: ``--model`` default | PATH.gguf |
    openai:NAME | anthropic:NAME, with ``--base-url``, ``--context`` and ``--gpu-layers``."""
    spec: str = args.model
    backend, _, name = spec.partition(":")
    if backend not in ("openai", "anthropic") or not name:
        if args.base_url:
            raise MnemoError("--base-url is for API models (openai:MODEL or anthropic:MODEL).")
        backend, name = "local", ""
        path = "" if spec == "default" else str(Path(spec).expanduser().resolve())
        if path:
            from engine.llm.gguf_file import check_model_file  # llama.cpp only for a local model

            check_model_file(Path(path), check_memory=False)
    else:
        path = ""
    context = args.context or API_CONTEXT.get(backend, 4096)
    return ModelConfig(
        backend,
        path,
        name,
        args.base_url or "",
        context,
        args.gpu_layers,
        0,
        context_chosen=bool(args.context),  # else a server of the operator's is asked
    )


def cmd_users_list(_mnemo: Any, args: argparse.Namespace) -> int:
    for name in Accounts(_root(args)).names():
        print(name)
    return 0


def cmd_users_add(_mnemo: Any, args: argparse.Namespace) -> int:
    token = Accounts(_root(args)).add(args.name)
    print(
        f"Added {args.name}. Their own token, for their Mnemo window (shown this once; keep it "
        f"secret; give programs one of `mnemo server-users program {args.name}`):\n{token}"
    )
    return 0


def cmd_users_program(_mnemo: Any, args: argparse.Namespace) -> int:
    token = Accounts(_root(args)).add_program(args.name)
    print(
        f"A program token of {args.name} (shown this once): it reads, searches, chats and "
        f"proposes; only {args.name}'s own token approves, edits core memory, changes "
        f"settings or forgets:\n{token}"
    )
    return 0


def cmd_users_remove(_mnemo: Any, args: argparse.Namespace) -> int:
    accounts = Accounts(_root(args))
    accounts.remove(args.name)
    print(f"Removed {args.name}'s token; their memory stays in {accounts.folder(args.name)}.")
    return 0
