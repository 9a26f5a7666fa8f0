"""The house rules: ``engine`` never imports Qt or ``desktop``, its layers import downwards only,
the model back-ends do not reach into memory, and no package's modules import each other in a
circle (the contracts in pyproject.toml, checked by import-linter); and no import of the engine
lies on a cycle at all."""

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parent.parent / "engine"
FORBIDDEN = ("PySide6", "PyQt5", "PyQt6", "shiboken6", "desktop", "pytestqt")


def _imported_modules(path: Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module)
    return modules


def test_no_engine_file_imports_qt_or_desktop():
    offenders = {
        f"{path.relative_to(ENGINE.parent)}: {module}"
        for path in ENGINE.rglob("*.py")
        for module in _imported_modules(path)
        if module.split(".")[0] in FORBIDDEN
    }
    assert not offenders


def test_importing_every_engine_module_loads_no_qt():
    modules = [
        ".".join(path.relative_to(ENGINE.parent).with_suffix("").parts).removesuffix(".__init__")
        for path in ENGINE.rglob("*.py")
    ]
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        f"bad = [m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r}]\n"
        "print(bad); sys.exit(1 if bad else 0)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr


MAX_CLASS_LINES = 400  # a class longer than this holds more than one job (the front-door issue)


def test_no_engine_class_is_longer_than_the_limit():
    classes = [
        (path, node)
        for path in ENGINE.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text("utf-8")))
        if isinstance(node, ast.ClassDef)
    ]
    lines = {
        f"{path.relative_to(ENGINE.parent)}: {node.name}": (node.end_lineno or 0) - node.lineno + 1
        for path, node in classes
    }
    assert {name: count for name, count in lines.items() if count > MAX_CLASS_LINES} == {}


# -- the layers: import-linter's contracts in pyproject.toml ---------------------------------------


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` on the packages under ``root``, with this project's contracts."""
    return subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), "--no-cache"],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def later(statement: str) -> str:
    """``statement`` inside a function, as a lazy import is written (it counts all the same)."""
    return f"\n\ndef later():\n    {statement}\n"


def test_the_layer_contracts_are_kept():
    result = lint_imports(ENGINE.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "5 kept, 0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "planted", "broken"),
    [
        (  # a lazy import of a higher layer, in the form the old AST test missed
            "engine/memory/core.py",
            "\n\ndef later():\n    from engine import agent\n    return agent\n",
            "engine.memory is not allowed to import engine.agent",
        ),
        (
            "engine/server/app.py",
            "\nfrom engine.cli.output import print_json\n",
            "engine.server is not allowed to import engine.cli",
        ),
        ("engine/settings.py", "\nimport PySide6\n", "engine is not allowed to import PySide6"),
        (  # the stores' redaction reaching up to the open profile, if only for a type
            "engine/memory/redaction.py",
            "\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
            "    from engine.mnemo import Mnemo\n",
            "engine.memory is not allowed to import engine.mnemo",
        ),
        (  # the profile calling the person's forget (it calls only the stores' redaction)
            "engine/mnemo.py",
            later("from engine import forget"),
            "engine.mnemo is not allowed to import engine.forget",
        ),
        (  # reading a file's text needing ingestion, which the forget does not import
            "engine/loaders.py",
            later("from engine.ingest.chunking import chunk_sections"),
            "engine.loaders is not allowed to import engine.ingest",
        ),
        (  # forgetting and ingestion are siblings: neither imports the other
            "engine/forget.py",
            later("from engine.ingest.ingestor import Ingestor"),
            "engine.forget is not allowed to import engine.ingest",
        ),
        (  # the profile building an ingestor: ingestion takes the stores, the profile reads
            # the document index
            "engine/mnemo.py",
            later("from engine.ingest.ingestor import Ingestor"),
            "engine.mnemo is not allowed to import engine.ingest",
        ),
        (  # a model back-end reaching into the stores for the re-rank protocol
            "engine/llm/rerank.py",
            "\nfrom engine.memory.archival import SCHEMA\n",
            "engine.llm is not allowed to import engine.memory",
        ),
        (  # the local model and the catalogue, each importing the other
            "engine/llm/catalog.py",
            later("from engine.llm.local import LlamaModel"),
            "No cycles are allowed in engine.llm",
        ),
        (
            "engine/cli/models.py",
            later("from engine.cli import archival"),
            "No cycles are allowed in engine.cli",
        ),
        (  # a turn importing the agent that runs it
            "engine/agent/assisted_turn.py",
            later("from engine.agent.loop import Agent"),
            "No cycles are allowed in engine.agent",
        ),
        (
            "desktop/chat.py",
            "\nfrom engine.cli import chat\n",
            "desktop is not allowed to import engine.cli",
        ),
    ],
)
def test_a_planted_wrong_import_breaks_a_contract(tmp_path, module, planted, broken):
    for name in ("engine", "desktop"):
        shutil.copytree(ENGINE.parent / name, tmp_path / name, ignore=IGNORED)
    shutil.copy(ENGINE.parent / "pyproject.toml", tmp_path)
    with (tmp_path / module).open("a", encoding="utf-8") as source:
        source.write(planted)
    result = lint_imports(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert broken in " ".join(result.stdout.split()), result.stdout


IGNORED = shutil.ignore_patterns("__pycache__")


# -- no cycles at all: the contracts see siblings; this sees a package and its own modules too ----

CYCLES = """
import grimp
graph = grimp.build_graph("engine", exclude_type_checking_imports=False, cache_dir=None)
for importer in sorted(graph.modules):
    for imported in sorted(graph.find_modules_directly_imported_by(importer)):
        if graph.chain_exists(importer=imported, imported=importer):  # (engine modules only)
            print(importer, "->", imported)
"""


def import_cycles(root: Path) -> list[str]:
    """Each import of the engine at ``root`` that lies on a cycle, type-hint imports included."""
    result = subprocess.run(
        [sys.executable, "-c", CYCLES],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_no_engine_module_is_on_an_import_cycle():
    assert import_cycles(ENGINE.parent) == []


def test_a_planted_cycle_between_a_package_and_its_own_module_is_found(tmp_path):
    """The vector table builds its upkeep; upkeep takes the table as a protocol, not its type."""
    shutil.copytree(ENGINE, tmp_path / "engine", ignore=IGNORED)
    with (tmp_path / "engine/memory/vectors/upkeep.py").open("a", encoding="utf-8") as source:
        source.write(
            "\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
            "    from engine.memory.vectors import VectorTable\n"
        )
    assert import_cycles(tmp_path) == [
        "engine.memory.vectors -> engine.memory.vectors.upkeep",
        "engine.memory.vectors -> engine.memory.vectors.versions",
        "engine.memory.vectors.upkeep -> engine.memory.vectors",
        "engine.memory.vectors.versions -> engine.memory.vectors.upkeep",
    ]


# -- the schema ----------------------------------------------------------------------------------


def test_the_table_classes_match_the_migrated_schema(tmp_path):
    """Every table class has exactly its table's columns, keys and NOT NULLs."""
    from sqlmodel import SQLModel

    from engine.db import open_database

    engine, _problem = open_database(tmp_path / "mnemo.sqlite")
    with engine.connect() as connection:
        for table in SQLModel.metadata.sorted_tables:
            rows = connection.exec_driver_sql(f"PRAGMA table_info({table.name})").all()
            assert rows, f"no migration creates the table {table.name}"
            migrated = {row[1]: (bool(row[3]) or bool(row[5]), bool(row[5])) for row in rows}
            declared = {
                column.name: (not column.nullable or column.primary_key, column.primary_key)
                for column in table.columns
            }
            assert declared == migrated, table.name
    engine.dispose()


def test_the_postgresql_schema_matches_sqlites_column_by_column(tmp_path, postgres_server):
    """Each migration is written once and translated for PostgreSQL (``Migration.for_postgres``):
    every table must come out with the same columns, of the same kind, with the same NOT NULLs,
    keys and defaults. Only each one's keyword index differs."""
    from sqlalchemy import inspect, text

    from engine.db import open_database
    from engine.db.postgres import new_schema, open_postgres

    kinds = {"INTEGER": "integer", "BIGINT": "integer", "REAL": "real", "DOUBLE": "real"}
    kinds |= {"DOUBLE PRECISION": "real", "TEXT": "text", "BLOB": "bytes", "BYTEA": "bytes"}

    def columns(engine, schema=None) -> dict[str, dict[str, tuple]]:
        tables = {}
        inspector = inspect(engine)
        for table in inspector.get_table_names(schema=schema):
            keys = set(inspector.get_pk_constraint(table, schema=schema)["constrained_columns"])
            tables[table] = {
                column["name"]: (
                    kinds.get(str(column["type"]), str(column["type"])),
                    column["nullable"]
                    and column["name"] not in keys,  # SQLite says a key may be NULL
                    column["name"] in keys,
                    None
                    if column["name"] in keys  # PostgreSQL's key counts from a sequence
                    else (column.get("default") or "").split("::")[0] or None,
                )
                for column in inspector.get_columns(table, schema=schema)
            }
        return tables

    sqlite, _problem = open_database(tmp_path / "mnemo.sqlite")
    postgres = open_postgres(postgres_server, new_schema())
    with postgres.connect() as connection:
        schema = connection.execute(text("SELECT current_schema()")).scalar()
    on_sqlite, on_postgres = columns(sqlite), columns(postgres, schema)
    keyword_index = {name for name in on_sqlite if name.startswith("message_fts")}
    assert set(on_sqlite) - keyword_index == set(on_postgres) - {"mnemo_schema"}
    on_postgres["message"].pop("search_vector")  # PostgreSQL's keyword index is a column
    for table in set(on_sqlite) - keyword_index:
        assert on_sqlite[table] == on_postgres[table], table
    sqlite.dispose()
    postgres.dispose()


def test_the_window_and_a_chat_start_without_what_they_do_not_use():
    """The window's modules and `mnemo chat`'s load no HTTP client (httpx pulls in its own
    command line, click and rich: a third of a second) unless a server or a download needs it."""
    code = (
        "import sys, desktop.main_window, engine.cli.chat, engine.cli.model_ahead\n"
        "print(sorted(m for m in ('httpx', 'click', 'rich') if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
