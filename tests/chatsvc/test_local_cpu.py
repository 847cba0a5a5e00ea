"""The bundled model's CPU path: what the AMX probe decides, and the setting over it.

Our machines have no AMX: the unusable-AMX case is an AMX CPU's /proc/cpuinfo text
with a kernel that refuses the tile state (the probe's `granted` answer forced)."""

from __future__ import annotations

import pytest

from chatsvc import Settings, SettingsError
from chatsvc.local_cpu import amx_problem, choose_cpu_path, cpu_flags

# /proc/cpuinfo's lines that matter, from a Sapphire Rapids guest and an arm64 host.
SAPPHIRE_RAPIDS = """processor\t: 0
model name\t: Intel(R) Xeon(R) Platinum 8488C
flags\t\t: fpu vme de avx512f avx512_bf16 amx_bf16 avx512_fp16 amx_tile amx_int8
"""
EPYC = """processor\t: 0
model name\t: AMD EPYC 9R14
flags\t\t: fpu vme de avx2 avx512f avx512_bf16
"""
ARM64 = """processor\t: 0
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp
"""


def never(reason: str):
    def refuse() -> bool:
        raise AssertionError(reason)
    return refuse


def test_flags_are_read_from_x86_and_arm64_cpuinfo():
    assert {"amx_tile", "amx_int8", "avx512f"} <= cpu_flags(SAPPHIRE_RAPIDS)
    assert "asimd" in cpu_flags(ARM64)
    assert cpu_flags("") == set()


def test_amx_that_the_kernel_does_not_grant_is_a_problem():
    problem = amx_problem(SAPPHIRE_RAPIDS, granted=lambda: False)
    assert problem == "the CPU advertises AMX but the kernel does not grant its tile state"


def test_amx_the_kernel_grants_is_no_problem():
    assert amx_problem(SAPPHIRE_RAPIDS, granted=lambda: True) is None


@pytest.mark.parametrize("cpuinfo", [EPYC, ARM64, ""], ids=["amd", "arm64", "unknown"])
def test_without_amx_the_kernel_is_not_even_asked(cpuinfo):
    assert amx_problem(cpuinfo, granted=never("asked for AMX tiles on a CPU without")) is None


def test_auto_takes_the_safe_path_when_the_probe_finds_unusable_amx():
    path = choose_cpu_path("auto", lambda: amx_problem(SAPPHIRE_RAPIDS, granted=lambda: False))
    assert path.safe and path.name == "safe"
    assert "does not grant its tile state" in path.reason


def test_auto_takes_the_fast_path_when_the_probe_finds_nothing():
    path = choose_cpu_path("auto", lambda: None)
    assert (path.safe, path.name) == (False, "fast")


@pytest.mark.parametrize("mode", ["safe", "fast"])
def test_a_forced_path_does_not_ask_the_probe(mode):
    path = choose_cpu_path(mode, never("probed although the path was forced"))
    assert path.name == mode and path.reason == f"CHATSVC_LOCAL_LLM_CPU={mode}"


def test_an_unknown_cpu_mode_is_refused_at_start_up():
    with pytest.raises(SettingsError, match="CHATSVC_LOCAL_LLM_CPU='turbo' is invalid: use "
                                            "one of auto, safe, fast"):
        Settings.from_env({"CHATSVC_LOCAL_LLM_CPU": "turbo"})
