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
