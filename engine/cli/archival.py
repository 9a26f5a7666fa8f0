"""`mnemo search`, `mnemo archival ...` and `mnemo reembed`."""

from __future__ import annotations

import argparse
from datetime import datetime
from typing import TYPE_CHECKING, Any

from engine.cli.output import print_json, when
from engine.errors import InputError
from engine.memory.archival import NewPassage
from engine.memory.search import hit_line
from engine.text import one_line

if TYPE_CHECKING:
    from engine.mnemo import Mnemo


def cmd_search(mnemo: Mnemo, args: argparse.Namespace) -> int:
    if args.store == "recall":
        page: Any = mnemo.recall.search(
            args.query, args.limit, args.page, mode=args.mode, start=args.since, end=args.until
        )
    else:
        page = mnemo.archival.search(
            args.query,
            args.limit,
            args.page,
            mode=args.mode,
            tags=args.tag or None,
            source=args.source,
            start=args.since,
            end=args.until,
        )
    explained = {hit.key: hit for hit in page.trace.hits} if args.explain and page.trace else {}
    if args.json:
        print_json(
            {
                "total": page.total,
                "page": page.page,
                "pages": page.pages,
                "notes": page.notes,
                "hits": page.hits,
                **({"explain": page.trace} if args.explain else {}),
            }
        )
        return 0
    for note in page.notes:
        print(f"note: {note}")
    print(page.describe())
    for hit in page:
        text = hit_line(hit.text, args.query, 100, hit.weak)
        if args.store == "recall":
            print(f"  [{hit.id}] {when(hit.created_at)} {hit.role}: {text}")
        else:
            print(f"  [{hit.id}] {text}")
            print(f"      from {hit.source.describe()}; tags: {', '.join(hit.tags) or '-'}")
        if str(hit.id) in explained:
            print(f"      {explained[str(hit.id)].line()}")
    return 0


def cmd_archival_insert(mnemo: Mnemo, args: argparse.Namespace) -> int:
    expires = _when(args.expires) if args.expires else None
    same = mnemo.archival.find_duplicate(args.text, "user")
    if same is not None:
        print(f"Already stored as passage {same.id}: {one_line(same.text, 100)}")
        return 0
    passage = NewPassage(args.text, tags=args.tag or [], origin="user", expires_at=expires)
    passage_id = mnemo.archival.insert_many([passage])[0]
    until = f"; it leaves search at {args.expires}" if expires else ""
    print(f"Stored passage {passage_id}{until}.")
    return 0


def _when(text: str) -> str:
    try:
        datetime.fromisoformat(text)
    except ValueError as error:
        raise InputError(
            f"Write the time as YYYY-MM-DD or 'YYYY-MM-DD HH:MM', not {text!r}."
        ) from error
    return text


def cmd_archival_expire(mnemo: Mnemo, args: argparse.Namespace) -> int:
    never = args.when.strip().lower() == "never"
    passage = mnemo.archival.set_expiry(args.id, None if never else _when(args.when))
    if passage.expires_at is None:
        print(f"Passage {passage.id} is kept for good.")
    else:
        print(f"Passage {passage.id} leaves search at {when(passage.expires_at)}.")
    return 0


def cmd_archival_expired(mnemo: Mnemo, args: argparse.Namespace) -> int:
    passages = mnemo.archival.expired()
    if args.json:
        print_json(passages)
        return 0
    for passage in passages:
        assert passage.expires_at is not None
        print(f"[{passage.id}] expired {when(passage.expires_at)}: {one_line(passage.text, 90)}")
    if passages:
        print("Bring one back with `mnemo archival expire ID never`; they are purged after a week.")
    else:
        print("No expired passages.")
    return 0


def cmd_archival_delete(mnemo: Mnemo, args: argparse.Namespace) -> int:
    mnemo.archival.delete(args.id)
    print(f"Deleted passage {args.id}.")
    return 0


def cmd_archival_list(mnemo: Mnemo, args: argparse.Namespace) -> int:
    passages = (
        mnemo.archival.list_by_source(args.source)
        if args.source
        else mnemo.archival.recent(args.limit)
    )
    if args.json:
        print_json(passages)
        return 0
    for passage in passages:
        print(f"[{passage.id}] {when(passage.created_at)} {one_line(passage.text, 100)}")
    return 0


def cmd_reembed(mnemo: Mnemo, args: argparse.Namespace) -> int:
    # The models' commands are read only for a re-embed (the downloads and the catalogue).
    from engine.cli.models import local_model_path, reembed, switch_embedder

    if args.embedder:
        spec: str = args.embedder
        path = "" if spec == "default" else str(local_model_path(mnemo, spec))
        return switch_embedder(mnemo, path, yes=args.yes)
    mismatch = mnemo.embedder_mismatch
    if not mismatch:
        print("Memory already uses the current embedder; nothing to do.")
        return 0
    print(mismatch)
    return reembed(mnemo, None, "", yes=args.yes)
