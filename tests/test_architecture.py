"""The house rule: ``engine`` never imports Qt or ``desktop``."""

import ast
import subprocess
import sys
from pathlib import Path

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


# -- the engine's layers -------------------------------------------------------------------------

# Lower layers never import higher ones. A module belongs to the longest prefix that names it;
# "engine" alone is the package's own __init__ (it opens a Mnemo, so it sits with memory).
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "foundations",
        (
            "engine.errors",
            "engine.db",
            "engine.profile",
            "engine.embed",
            "engine.resources",
            "engine.settings",
            "engine.keys",
            "engine.hardware",
            "engine.interrupt",
            "engine.text",
        ),
    ),
    ("memory", ("engine", "engine.memory", "engine.mnemo", "engine.ingest")),
    ("llm", ("engine.llm", "engine.modes")),
    ("tools", ("engine.tools", "engine.assisted", "engine.transcript")),
    ("context", ("engine.context", "engine.events")),
    ("agent", ("engine.agent",)),
    ("cli", ("engine.cli", "engine.server")),
]


def layer_of(module: str) -> int:
    matches = [
        (len(prefix), index)
        for index, (_name, prefixes) in enumerate(LAYERS)
        for prefix in prefixes
        if module == prefix or module.startswith(prefix + ".")
    ]
    assert matches, f"{module} is in no layer; add it to LAYERS in {__file__}"
    return max(matches)[1]


def engine_imports(source: str) -> set[str]:
    """Modules of ``engine`` that ``source`` imports, at the top or inside a function (a lazy
    import is a dependency too); imports only for type checking do not count."""
    tree = ast.parse(source)
    type_only = {
        id(child)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
        for child in ast.walk(node)
    }
    found = set()
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "engine"}
        elif (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and (node.module or "").split(".")[0] == "engine"
        ):
            found.add(str(node.module))
    return found


def upward_imports(sources: dict[str, str]) -> list[str]:
    """``module -> imported`` for every import that climbs to a higher layer."""
    problems = []
    for module, source in sorted(sources.items()):
        for imported in sorted(engine_imports(source)):
            if layer_of(imported) > layer_of(module):
                problems.append(
                    f"{module} ({LAYERS[layer_of(module)][0]}) imports {imported} "
                    f"({LAYERS[layer_of(imported)][0]})"
                )
    return problems


def engine_sources() -> dict[str, str]:
    return {
        ".".join(path.relative_to(ENGINE.parent).with_suffix("").parts).removesuffix(
            ".__init__"
        ): path.read_text("utf-8")
        for path in ENGINE.rglob("*.py")
    }


def test_the_engine_imports_only_downwards():
    assert upward_imports(engine_sources()) == []


def test_an_upward_import_fails_the_contract():
    sources = engine_sources()
    sources["engine.memory.core"] += "\nfrom engine.agent import Agent\n"
    sources["engine.settings"] += "\ndef later():\n    import engine.llm.local\n"
    assert upward_imports(sources) == [
        "engine.memory.core (memory) imports engine.agent (agent)",
        "engine.settings (foundations) imports engine.llm.local (llm)",
    ]


def test_the_window_does_not_import_the_command_line():
    """Only the launcher, which hands `mnemo COMMAND` to the command line, may."""
    desktop = Path(__file__).resolve().parent.parent / "desktop"
    offenders = {
        f"{path.name}: {module}"
        for path in desktop.rglob("*.py")
        if path.name != "launcher.py"
        for module in _imported_modules(path)
        if module.startswith("engine.cli")
    }
    assert not offenders


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
