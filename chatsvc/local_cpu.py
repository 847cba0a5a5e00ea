"""Which CPU path the bundled llama.cpp model takes: fast (weights repacked for the
CPU's best kernels) or safe (no repacking), from CHATSVC_LOCAL_LLM_CPU and a probe.

llama.cpp's "extra buffer types" repack the weights at load time for the fastest
kernels the CPU has: on an Intel CPU with AMX, its AMX tile kernels. Linux hands a
process AMX's tile state only on request (arch_prctl ARCH_REQ_XCOMP_PERM). A kernel
or hypervisor that advertises AMX but does not grant it (a Firecracker VM on Sapphire
Rapids) makes the first tile instruction fault: the model server died with a general
protection fault on its first completion. The safe path loads the model without
extra buffer types (llama.cpp's `use_extra_bufts = false`), at some speed
(evals/results/local_llm_cpu.md).
"""

from __future__ import annotations

import ctypes
import platform
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

CPU_MODES = ("auto", "safe", "fast")

# Linux x86-64 (arch/x86/include/uapi/asm/prctl.h, asm/unistd_64.h).
SYS_ARCH_PRCTL = 158
ARCH_GET_XCOMP_PERM = 0x1022
ARCH_REQ_XCOMP_PERM = 0x1023
XFEATURE_XTILEDATA = 18


@dataclass(frozen=True)
class CpuPath:
    safe: bool
    reason: str  # why this path, for the log and /health

    @property
    def name(self) -> str:
        return "safe" if self.safe else "fast"


def cpu_flags(cpuinfo: str) -> set[str]:
    """The feature flags of /proc/cpuinfo's text (x86 `flags`, arm64 `Features`)."""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return set(value.split())
    return set()


def tile_state_granted() -> bool:
    """Whether the Linux kernel lets this process use AMX tiles: it asks for them, as
    llama.cpp does before its AMX kernels run, then reads back what it was granted."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        return False
    syscall = ctypes.CDLL(None, use_errno=True).syscall
    syscall.restype = ctypes.c_long
    syscall(SYS_ARCH_PRCTL, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)  # refused: checked below
    granted = ctypes.c_uint64(0)
    if syscall(SYS_ARCH_PRCTL, ARCH_GET_XCOMP_PERM, ctypes.byref(granted)) != 0:
        return False  # a kernel before 5.16: no AMX support at all
    return bool(granted.value & (1 << XFEATURE_XTILEDATA))


def amx_problem(cpuinfo: str | None = None,
                granted: Callable[[], bool] = tile_state_granted) -> str | None:
    """Why the fast path would crash here, None when nothing stands against it."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:  # not Linux: no AMX kernels to trip over
            return None
    if not any(flag.startswith("amx") for flag in cpu_flags(cpuinfo)):
        return None
    if granted():
        return None
    return "the CPU advertises AMX but the kernel does not grant its tile state"


def choose_cpu_path(mode: str, problem: Callable[[], str | None] = amx_problem) -> CpuPath:
    """`mode` is CHATSVC_LOCAL_LLM_CPU's value; `problem` the probe `auto` asks."""
    if mode != "auto":
        return CpuPath(mode == "safe", f"CHATSVC_LOCAL_LLM_CPU={mode}")
    why = problem()
    if why:
        return CpuPath(True, why)
    return CpuPath(False, "no unusable AMX found")

