"""Build Mnemo as a standalone app and its packages: `uv run python packaging/build.py`.

1. A portable llama-cpp-python wheel. The project's own venv compiles llama.cpp for the machine it
   runs on (here with AVX-512, which most laptops lack); the shipped build targets a baseline
   instead (``--variant``: cpu, AVX2 for x86-64-v3, Intel 2013+ and AMD 2015+; cuda; metal on
   macOS). Compiled once into build/wheels/VARIANT (about 4 minutes here).
2. A build environment, build/venv: the locked dependencies (uv.lock, no dev tools), that wheel,
   PyInstaller, and the project itself.
3. PyInstaller with packaging/mnemo.spec: dist/mnemo/, one folder with the `mnemo` executable
   (and dist/Mnemo.app on macOS).
4. Packages. Linux: dist/mnemo-VERSION-linux-x86_64.tar.gz (the folder, install.sh, the menu
   entry and the icon) and dist/mnemo_VERSION_amd64.deb (/opt/mnemo, /usr/bin/mnemo, the menu
   entry). macOS: a .dmg (hdiutil). Windows: a setup .exe (Inno Setup, packaging/windows).

`--check` (run by .ci/run) only runs PyInstaller's analysis in the project's venv and fails if a
shared library that llama_cpp, lancedb, onnxruntime or Qt load at run time is not collected.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bundle  # noqa: E402

ROOT = bundle.ROOT
BUILD = ROOT / "build"
DIST = ROOT / "dist"
SPEC = ROOT / "packaging" / "mnemo.spec"
LLAMA = "llama-cpp-python"
# llama.cpp as shipped: never tuned to the build machine's CPU (GGML_NATIVE); CMAKE_ARGS in the
# environment add to these. Metal's shaders are embedded in the library, which a frozen app needs.
X86_BASELINE = (
    "-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON "
    "-DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX512=OFF"
)
VARIANTS = {
    "cpu": X86_BASELINE,
    "cuda": X86_BASELINE + " -DGGML_CUDA=ON",
    "metal": "-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_METAL=ON -DGGML_METAL_EMBED_LIBRARY=ON",
}
WINDOWS = sys.platform == "win32"
DEB_DEPENDS = (
    # What the bundle loads from the system rather than carrying (glibc, GL, X11/Wayland and
    # fonts belong to the desktop); the rest of its libraries are inside it.
    "libc6 (>= 2.35), libstdc++6 (>= 12), libgcc-s1, zlib1g, libexpat1, libgl1, libegl1, "
    "libfontconfig1, libfreetype6, libx11-6, libx11-xcb1, libxcb1, libxcb-glx0, libxcb-randr0, "
    "libxcb-render0, libxcb-shape0, libxcb-shm0, libxcb-sync1, libxcb-xfixes0, libxcb-xkb1, "
    "libxkbcommon0, libxkbcommon-x11-0, libdbus-1-3, libglib2.0-0"
)


def version() -> str:
    text = (ROOT / "engine" / "__init__.py").read_text(encoding="utf-8")
    match = re.search(r'^__version__ = "([^"]+)"', text, re.MULTILINE)
    if not match:
        raise SystemExit("engine/__init__.py has no __version__")
    return match.group(1)


def run(*command: str | Path, env: dict[str, str] | None = None) -> None:
    print("+", " ".join(map(str, command)), flush=True)
    subprocess.run([str(part) for part in command], check=True, cwd=ROOT, env=env)


def locked_version(package: str) -> str:
    lock = (ROOT / "uv.lock").read_text(encoding="utf-8")
    match = re.search(rf'\[\[package\]\]\nname = "{package}"\nversion = "([^"]+)"', lock)
    if not match:
        raise SystemExit(f"uv.lock has no {package}")
    return match.group(1)


def portable_llama_wheel(variant: str) -> Path:
    wanted = locked_version(LLAMA)
    wheels = BUILD / "wheels" / variant
    found = sorted(wheels.glob(f"llama_cpp_python-{wanted}-*.whl"))
    if found:
        return found[-1]
    sdists = BUILD / "sdist"
    sdists.mkdir(parents=True, exist_ok=True)
    sdist = sdists / f"llama_cpp_python-{wanted}.tar.gz"
    if not sdist.exists():
        run("uvx", "pip", "download", f"{LLAMA}=={wanted}", "--no-deps", "--no-binary", ":all:",
            "-d", sdists)  # fmt: skip
    env = dict(os.environ)
    env["CMAKE_ARGS"] = f"{VARIANTS[variant]} {env.get('CMAKE_ARGS', '')}".strip()
    run("uv", "build", "--wheel", "--out-dir", wheels, sdist, env=env)
    return sorted(wheels.glob(f"llama_cpp_python-{wanted}-*.whl"))[-1]


def venv_python(venv: Path) -> Path:
    return venv / "Scripts" / "python.exe" if WINDOWS else venv / "bin" / "python"


def build_environment(llama_wheel: Path) -> Path:
    venv = BUILD / "venv"
    python = venv_python(venv)
    stamp = venv / "mnemo-build.json"
    wanted = {"lock": (ROOT / "uv.lock").stat().st_mtime, "llama": str(llama_wheel)}
    if not (stamp.exists() and json.loads(stamp.read_text()) == wanted):
        _install_dependencies(venv, llama_wheel)
        stamp.write_text(json.dumps(wanted))
    # The project itself, every build: the notices walk its dependency tree, the bundle its code.
    run(
        "uv",
        "pip",
        "install",
        "--python",
        python,
        "--no-deps",
        "--reinstall-package",
        "mnemo",
        ROOT,
    )
    return python


def _install_dependencies(venv: Path, llama_wheel: Path) -> None:
    python = venv_python(venv)
    requirements = BUILD / "requirements.txt"
    run("uv", "export", "--frozen", "--no-dev", "--no-hashes", "--no-emit-project",
        "--no-emit-package", LLAMA, "-o", requirements)  # fmt: skip
    run("uv", "venv", "--clear", "--python", f"{sys.version_info[0]}.{sys.version_info[1]}", venv)
    run("uv", "pip", "install", "--python", python, "-r", requirements, llama_wheel,
        f"pyinstaller=={locked_version('pyinstaller')}")  # fmt: skip


def write_notices(python: Path | str) -> Path:
    """The notices of the dependency tree installed in the build environment, by its Python."""
    notices = BUILD / "notices" / "THIRD_PARTY_NOTICES.txt"
    notices.parent.mkdir(parents=True, exist_ok=True)
    code = (
        "import sys; from engine.notices import collect, render; "
        "open(sys.argv[1], 'w', encoding='utf-8').write(render(collect()))"
    )
    run(python, "-c", code, notices)
    return notices


def pyinstaller(python: Path | str, notices: Path, report: Path | None = None) -> None:
    env = dict(os.environ, MNEMO_NOTICES=str(notices))
    if report is not None:
        env["MNEMO_SPEC_REPORT"] = str(report)
    run(python, "-m", "PyInstaller", "--noconfirm", "--clean", "--log-level", "WARN",
        "--distpath", DIST, "--workpath", BUILD / "pyinstaller", SPEC, env=env)  # fmt: skip


def check() -> int:
    """PyInstaller's analysis in the project's venv, against what the libraries load (read from
    /proc, so on Linux only; the other platforms' builds are checked by running them)."""
    if not sys.platform.startswith("linux"):
        print("--check reads /proc/self/maps and runs on Linux only.", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as scratch:
        notices = Path(scratch) / "THIRD_PARTY_NOTICES.txt"
        notices.write_text("checked, not built\n", encoding="utf-8")
        report = Path(scratch) / "collected.json"
        pyinstaller(sys.executable, notices, report)
        collected = json.loads(report.read_text())
    missing = bundle.missing_from(collected)
    for path in missing:
        print(f"not collected: {path}", file=sys.stderr)
    if missing:
        print(f"The build spec misses {len(missing)} libraries (above).", file=sys.stderr)
        return 1
    print(
        f"The build spec collects every native library loaded at run time ({len(collected)} files)."
    )
    return 0


def oldest_glibc(folder: Path) -> str:
    """The newest GLIBC_ symbol version a file in the bundle needs: the oldest glibc it runs on."""
    newest = (2, 0)
    for path in folder.rglob("*"):
        if not path.is_file() or path.is_symlink():
            continue
        with path.open("rb") as file:
            if file.read(4) != b"\x7fELF":
                continue
        symbols = subprocess.run(
            ["objdump", "-T", str(path)], capture_output=True, text=True
        ).stdout
        for major, minor in re.findall(r"GLIBC_(\d+)\.(\d+)", symbols):
            newest = max(newest, (int(major), int(minor)))
    return f"{newest[0]}.{newest[1]}"


def linux_packages(app: Path, number: str) -> list[Path]:
    machine = platform.machine()
    linux = ROOT / "packaging" / "linux"
    icons = ROOT / "resources" / "icons"

    name = f"mnemo-{number}-linux-{machine}"
    archive = DIST / f"{name}.tar.gz"
    with tarfile.open(archive, "w:gz", compresslevel=6) as tar:
        tar.add(app, f"{name}/mnemo")
        tar.add(linux / "install.sh", f"{name}/install.sh")
        tar.add(linux / "mnemo.desktop", f"{name}/mnemo.desktop")
        tar.add(icons / "mnemo.png", f"{name}/mnemo.png")
        tar.add(icons / "mnemo.svg", f"{name}/mnemo.svg")

    if shutil.which("dpkg-deb") is None:
        print("dpkg-deb is not installed: no .deb this time")
        return [archive]
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)
    root = BUILD / "deb"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(app, root / "opt" / "mnemo", symlinks=True)
    (root / "usr" / "bin").mkdir(parents=True)
    (root / "usr" / "bin" / "mnemo").symlink_to("/opt/mnemo/mnemo")
    for folder, source in (
        ("usr/share/applications", linux / "mnemo.desktop"),
        ("usr/share/icons/hicolor/256x256/apps", icons / "mnemo.png"),
        ("usr/share/icons/hicolor/scalable/apps", icons / "mnemo.svg"),
    ):
        (root / folder).mkdir(parents=True, exist_ok=True)
        shutil.copy(source, root / folder)
    size_kib = sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) // 1024
    (root / "DEBIAN").mkdir()
    (root / "DEBIAN" / "control").write_text(
        f"Package: mnemo\nVersion: {number}\nArchitecture: {arch}\n"
        "Maintainer: The Mnemo team <mnemo@localhost>\nSection: utils\nPriority: optional\n"
        f"Installed-Size: {size_kib}\nDepends: {DEB_DEPENDS}\n"
        "Description: personal assistant that remembers, on your own computer\n"
        " Mnemo is a local-first assistant whose memory works like MemGPT's: the model\n"
        " pages its own memory. It runs a small bundled model with no network.\n",
        encoding="utf-8",
    )
    deb = DIST / f"mnemo_{number}_{arch}.deb"
    run("fakeroot", "dpkg-deb", "-Zzstd", "-z9", "--build", root, deb)
    return [archive, deb]


def macos_packages(number: str) -> list[Path]:
    """A compressed disk image of Mnemo.app (signing and notarising come later, in CI)."""
    dmg = DIST / f"Mnemo-{number}-macos-{platform.machine()}.dmg"
    run("hdiutil", "create", "-volname", "Mnemo", "-srcfolder", DIST / "Mnemo.app", "-ov",
        "-format", "UDZO", dmg)  # fmt: skip
    return [dmg]


def windows_packages(number: str, variant: str) -> list[Path]:
    """A per-user setup program made by Inno Setup's compiler (iscc) from packaging/windows."""
    iscc = shutil.which("iscc") or r"C:\Program Files (x86)\Inno Setup 6\ISCC.exe"
    run(iscc, f"/DVersion={number}", f"/DVariant={variant}", f"/DRoot={ROOT}",
        ROOT / "packaging" / "windows" / "mnemo.iss")  # fmt: skip
    return [DIST / f"Mnemo-{number}-windows-x64-{variant}-setup.exe"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only check the spec (CI)")
    parser.add_argument("--no-packages", action="store_true", help="only the dist/mnemo folder")
    parser.add_argument(
        "--variant",
        choices=sorted(VARIANTS),
        default="metal" if sys.platform == "darwin" else "cpu",
        help="how llama.cpp is built for the installer",
    )
    args = parser.parse_args()
    if args.check:
        return check()

    started = time.monotonic()
    python = build_environment(portable_llama_wheel(args.variant))
    notices = write_notices(python)
    pyinstaller(python, notices)
    app = DIST / bundle.NAME
    size = sum(p.stat().st_size for p in app.rglob("*") if p.is_file() and not p.is_symlink())
    print(f"Built {app}: {size / 2**20:.0f} MiB in {time.monotonic() - started:.0f} s")
    if sys.platform.startswith("linux"):
        print(f"The bundle needs glibc {oldest_glibc(app)} or newer.")
    if args.no_packages:
        return 0
    if sys.platform == "darwin":
        packages = macos_packages(version())
    elif WINDOWS:
        packages = windows_packages(version(), args.variant)
    else:
        packages = linux_packages(app, version())
    for package in packages:
        print(f"Package: {package} ({package.stat().st_size / 2**20:.0f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
