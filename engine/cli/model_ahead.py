"""`mnemo chat`'s model, loading while the profile opens."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from engine.llm import LoadingAhead, model_settings

if TYPE_CHECKING:
    from engine.llm import ChatModel
    from engine.settings import Settings


def load_model_ahead(args: argparse.Namespace) -> Callable[[Settings], None]:
    """For ``Mnemo.open``'s ``on_settings``: a local model starts loading as soon as the settings
    can be read, while LanceDB is imported and the profile opens; ``args.model_ahead`` takes it.
    (An API model may need its key asked for: it waits for its turn.)"""

    def start(settings: Settings) -> None:
        if not args.list and model_settings(settings, path=args.model).backend == "local":
            args.model_ahead = LoadingAhead(settings, partial(load_chosen, args=args))

    return start


def load_chosen(settings: Settings, args: argparse.Namespace) -> ChatModel:
    """The model the settings and `mnemo chat`'s options name."""
    from engine.cli.keys import ask_key_for_this_run
    from engine.llm import load_model

    return load_model(
        settings,
        ask_key_for_this_run,
        path=args.model,
        context_length=args.context,
        gpu_layers=args.gpu_layers,
        threads=args.threads,
    )
