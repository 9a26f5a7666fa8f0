"""`mnemo kg ...`: knowledge memory from the terminal (the user's own facts need no review)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from engine.cli.output import print_json, when
from engine.errors import NotFoundError
from engine.memory.knowledge import Conflict, Entity, Fact

if TYPE_CHECKING:
    from engine.mnemo import Mnemo


def _line(fact: Fact) -> str:
    status = "" if fact.status == "current" else f"  [{fact.status}]"
    until = f" until {fact.valid_to:%Y-%m-%d}" if fact.valid_to else ""
    source = f", from {fact.source_kind} {fact.source_ref}" if fact.source_ref else ""
    return (
        f"  #{fact.id} {fact.line()}{until}{status}"
        f"  (learned {when(fact.learned_at)}, said by {fact.asserted_by}{source})"
    )


def _entity_line(entity: Entity) -> str:
    aliases = f" (also: {', '.join(entity.aliases)})" if entity.aliases else ""
    return f"{entity.name} [{entity.kind}]{aliases}"


def cmd_kg_show(mnemo: Mnemo, args: argparse.Namespace) -> int:
    entity = mnemo.knowledge.resolve(args.entity)
    if entity is None:
        raise NotFoundError(
            f"Knowledge memory knows no one and nothing called {args.entity!r}; "
            f"`mnemo kg search {args.entity!r}` finds close names."
        )
    facts = list(mnemo.knowledge.facts(entity.name, limit=100))
    if args.json:
        print_json({"entity": entity, "facts": facts})
        return 0
    print(_entity_line(entity))
    for fact in facts:
        print(_line(fact))
    if not facts:
        print("  No current facts.")
    return 0


def cmd_kg_search(mnemo: Mnemo, args: argparse.Namespace) -> int:
    found = mnemo.knowledge.find(args.text)
    if args.json:
        print_json(found)
        return 0
    for entity in found:
        print(_entity_line(entity))
    if not found:
        print(f"No entity is called anything like {args.text!r}.")
    return 0


def cmd_kg_add(mnemo: Mnemo, args: argparse.Namespace) -> int:
    result = mnemo.knowledge.add(
        args.subject,
        args.relation,
        args.object,
        valid_from=args.since,
        source_kind="user",
        asserted_by="user",
        supersede=args.replace,
    )
    if isinstance(result, Conflict):
        if args.json:
            print_json({"conflict": result})
        else:
            print(f"{result.subject} — {result.predicate} holds one value, and it is now:")
            for fact in result.current:
                print(_line(fact))
            print("Nothing was changed. Add it again with --replace to supersede it.")
        return 1
    if args.json:
        print_json(result)
    else:
        print(f"Known: {result.line()} (#{result.id}).")
    return 0


def cmd_kg_history(mnemo: Mnemo, args: argparse.Namespace) -> int:
    facts = mnemo.knowledge.history(args.entity)
    if args.json:
        print_json(facts)
        return 0
    for fact in facts:
        print(_line(fact))
    return 0


def cmd_kg_merge(mnemo: Mnemo, args: argparse.Namespace) -> int:
    entity = mnemo.knowledge.merge(args.keep, args.other)
    print(f"Merged {args.other!r} into {_entity_line(entity)}.")
    return 0


def cmd_kg_retract(mnemo: Mnemo, args: argparse.Namespace) -> int:
    fact = mnemo.knowledge.retract(args.id)
    print(f"Retracted: {fact.line()} (#{fact.id}); it stays in `mnemo kg history`.")
    return 0


def cmd_kg_extract(mnemo: Mnemo, args: argparse.Namespace) -> int:
    from engine.ingest.facts import MAX_PROPOSALS, propose_facts_from

    proposals, skipped = propose_facts_from(mnemo, args.file)
    if args.json:
        print_json({"proposals": proposals, "not_proposed": skipped})
        return 0
    for proposal in proposals:
        print(f"Proposal {proposal.id}: {proposal.describe()}")
    if skipped:
        print(f"{skipped} more facts were found; only the first {MAX_PROPOSALS} were proposed.")
    if not proposals:
        print(f"No new facts about people, places or things were found in {args.file.name}.")
        return 0
    print(
        "They wait for you: `mnemo memory proposals` lists them, `mnemo memory approve ID` "
        "keeps one."
    )
    return 0
