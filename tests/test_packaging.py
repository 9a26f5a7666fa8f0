"""The installer's rules (packaging/bundle.py): which libraries the bundle leaves to the desktop.

The full check, PyInstaller's analysis against what the app loads, is `packaging/build.py --check`
in .ci/run; the build itself is checked by packaging/smoke.sh.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "packaging"))
import bundle  # noqa: E402


def test_the_desktop_provides_its_own_libraries_and_the_wheels_are_always_bundled():
    system = "/lib/x86_64-linux-gnu"
    for name in ("libstdc++.so.6", "libX11.so.6", "libxcb-randr.so.0", "libglib-2.0.so.0"):
        assert bundle.from_the_desktop(f"{system}/{name}"), name
    # Not part of every desktop, so they travel with Mnemo.
    for name in ("libgomp.so.1", "libxcb-cursor.so.0", "libffi.so.8", "libsqlite3.so.0"):
        assert not bundle.from_the_desktop(f"{system}/{name}"), name
    wheel = "/venv/lib/python3.11/site-packages/PySide6/Qt/lib/libstdc++.so.6"
    assert not bundle.from_the_desktop(wheel)  # a wheel's own copy is what it was built with
