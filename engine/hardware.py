"""What this computer can run: memory, cores, free disk, GPUs, and how fast it reads memory.

The model catalogue sizes its recommendations from this. Everything here is read from the
operating system, without extra packages, and nothing needs the network. A value that cannot be
read on some system is None, and the recommendation says so rather than guessing.
"""

from __future__ import annotations

import ctypes
import os
import platform
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

NVIDIA_SMI_TIMEOUT_S = 5


@dataclass(frozen=True)
class Gpu:
    name: str
    kind: str  # "nvidia" (its own memory) or "apple" (memory shared with the CPU)
    memory_total: int
    memory_free: int


@dataclass(frozen=True)
class Hardware:
    total_ram: int | None
    available_ram: int | None
    cpu_cores: int
    disk_free: int | None  # in the models folder
    gpus: tuple[Gpu, ...] = field(default=())
    offload_supported: bool = False  # whether this llama.cpp build can use a GPU at all
    memory_read_bytes_per_s: float | None = None

    @property
    def usable_gpu(self) -> Gpu | None:
        """The GPU llama.cpp would offload to: the one with most free memory, if this build can."""
        if not self.offload_supported or not self.gpus:
            return None
        return max(self.gpus, key=lambda gpu: gpu.memory_free)

    def summary(self) -> str:
        """One line for `mnemo models catalog` and the Models page."""
        parts = [f"{self.cpu_cores} CPU cores"]
        if self.total_ram is not None:
            free = f", {gib(self.available_ram)} free" if self.available_ram is not None else ""
            parts.append(f"{gib(self.total_ram)} memory{free}")
        if self.disk_free is not None:
            parts.append(f"{gib(self.disk_free)} free disk for models")
        for gpu in self.gpus:
            shared = " (shared with the CPU)" if gpu.kind == "apple" else ""
            parts.append(f"GPU {gpu.name}, {gib(gpu.memory_total)}{shared}")
        if not self.gpus:
            parts.append("no GPU found")
        elif not self.offload_supported:
            parts.append("this llama.cpp build cannot use the GPU (CPU only)")
        return "; ".join(parts)


def gib(value: int | float | None) -> str:
    return "unknown" if value is None else f"{value / 2**30:.1f} GB"


def _linux_memory() -> tuple[int | None, int | None]:
    fields: dict[str, int] = {}
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                name, _, rest = line.partition(":")
                fields[name] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return None, None
    # MemAvailable counts reclaimable page cache, which MemFree does not: it is what a new
    # program can take without swapping.
    return fields.get("MemTotal"), fields.get("MemAvailable", fields.get("MemFree"))


def _windows_memory() -> tuple[int | None, int | None]:
    class MemoryStatus(ctypes.Structure):
        _fields_ = [
            ("dwLength", ctypes.c_ulong),
            ("dwMemoryLoad", ctypes.c_ulong),
            ("ullTotalPhys", ctypes.c_ulonglong),
            ("ullAvailPhys", ctypes.c_ulonglong),
            ("ullTotalPageFile", ctypes.c_ulonglong),
            ("ullAvailPageFile", ctypes.c_ulonglong),
            ("ullTotalVirtual", ctypes.c_ulonglong),
            ("ullAvailVirtual", ctypes.c_ulonglong),
            ("ullAvailExtendedVirtual", ctypes.c_ulonglong),
        ]

    status = MemoryStatus()
    status.dwLength = ctypes.sizeof(MemoryStatus)
    if not ctypes.windll.kernel32.GlobalMemoryStatusEx(ctypes.byref(status)):  # type: ignore[attr-defined]
        return None, None
    return int(status.ullTotalPhys), int(status.ullAvailPhys)


def _posix_memory() -> tuple[int | None, int | None]:
    try:
        page = os.sysconf("SC_PAGE_SIZE")
        total = os.sysconf("SC_PHYS_PAGES") * page
    except (ValueError, OSError, AttributeError):
        return None, None
    try:
        available = os.sysconf("SC_AVPHYS_PAGES") * page
    except (ValueError, OSError):
        available = None  # macOS has no such value; its free memory is not a useful figure
    return total, available


def memory() -> tuple[int | None, int | None]:
    """Total and available memory in bytes."""
    system = platform.system()
    if system == "Linux":
        return _linux_memory()
    if system == "Windows":
        return _windows_memory()
    return _posix_memory()


def return_freed_memory() -> None:
    """Ask the C allocator to hand memory that was freed back to the system.

    glibc keeps freed memory for reuse, so after a large release (the embedder's working memory
    after an ingestion: ~130 MB) the process stays as large as before until this is called. A
    no-op where the C library has no ``malloc_trim`` (macOS, Windows, musl).
    """
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError, TypeError):  # TypeError: Windows has no CDLL(None)
        return
    trim(0)


def nvidia_gpus() -> tuple[Gpu, ...]:
    """NVIDIA GPUs as ``nvidia-smi`` reports them; none when it is missing or fails."""
    executable = shutil.which("nvidia-smi")
    if executable is None:
        return ()
    try:
        output = subprocess.run(
            [
                executable,
                "--query-gpu=name,memory.total,memory.free",
                "--format=csv,noheader,nounits",
            ],
            capture_output=True,
            text=True,
            timeout=NVIDIA_SMI_TIMEOUT_S,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    return parse_nvidia_smi(output)


def parse_nvidia_smi(output: str) -> tuple[Gpu, ...]:
    """Lines of "name, total MiB, free MiB" (a name may hold commas; the numbers never do)."""
    gpus = []
    for line in output.splitlines():
        try:
            name, total_mib, free_mib = line.rsplit(",", 2)
            total, free = int(total_mib) * 2**20, int(free_mib) * 2**20
        except ValueError:
            continue
        gpus.append(Gpu(name.strip(), "nvidia", total, free))
    return tuple(gpus)


def apple_gpu(total_ram: int | None, available_ram: int | None) -> tuple[Gpu, ...]:
    """Apple Silicon's GPU shares the computer's memory, so its memory is the computer's."""
    if platform.system() != "Darwin" or platform.machine() != "arm64" or total_ram is None:
        return ()
    return (Gpu("Apple Silicon (Metal)", "apple", total_ram, available_ram or total_ram),)


def offload_supported() -> bool:
    """Whether this llama-cpp-python was built with a GPU back-end (CUDA, Metal, Vulkan...)."""
    import llama_cpp  # only here: the catalogue itself does not need llama.cpp

    return bool(llama_cpp.llama_supports_gpu_offload())


def cpu_has_amx() -> bool:
    """Whether the CPU has Intel's AMX matrix units (Sapphire Rapids and later Xeons), as Linux
    reports them; False where it cannot tell."""
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return " amx_int8" in flags


def keep_llama_off_amx() -> None:
    """On a CPU with AMX, have llama.cpp load weights without its extra buffer types. ggml's
    AMX kernels crash in their first matrix product on such CPUs (llama.cpp issue 20824, open;
    here with the bundled model on every reply), and a build that detects the CPU compiles them
    in. Without the AMX buffer, the same build computes with AVX-512 instead. Once per process,
    before any model loads; the loaders call it."""
    import llama_cpp
    import llama_cpp.llama_cpp as llama_library

    default = llama_library.llama_model_default_params
    if getattr(default, "keeps_off_amx", False) or not cpu_has_amx():
        return

    def without_extra_buffers() -> llama_library.llama_model_params:
        params = default()
        params.use_extra_bufts = False
        return params

    without_extra_buffers.keeps_off_amx = True  # type: ignore[attr-defined]
    # Llama reads it from the library's module, direct callers from the package.
    llama_library.llama_model_default_params = without_extra_buffers
    llama_cpp.llama_model_default_params = without_extra_buffers


def memory_read_speed(size: int = 64 * 2**20) -> float | None:
    """Bytes per second one core reads from memory, best of three passes over ``size`` bytes.

    A local model writes each token by reading all its weights once, so on a CPU its speed in
    tokens per second is about this figure divided by the file's size. llama.cpp's threads read
    together faster than one core, but reach a fraction of that peak; the single-core figure is a
    fair, slightly cautious stand-in, measured in about a tenth of a second.
    """
    try:
        import numpy

        block = numpy.ones(size // 8, dtype=numpy.float64)
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            block.sum()
            best = min(best, time.perf_counter() - started)
    except MemoryError:
        return None
    return size / best if best > 0 else None


def detect(models_folder: Path, *, measure_speed: bool = True) -> Hardware:
    """This computer, as far as choosing a local model goes."""
    total, available = memory()
    folder = models_folder
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent  # the models folder may not exist before the first download
    try:
        disk_free: int | None = shutil.disk_usage(folder).free
    except OSError:
        disk_free = None
    return Hardware(
        total_ram=total,
        available_ram=available,
        cpu_cores=os.cpu_count() or 1,
        disk_free=disk_free,
        gpus=nvidia_gpus() + apple_gpu(total, available),
        offload_supported=offload_supported(),
        memory_read_bytes_per_s=memory_read_speed() if measure_speed else None,
    )
