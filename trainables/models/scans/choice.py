"""The `kernel` setting of the orthogonal models: which implementation runs their time loop.

`loop` is the plain implementation (the module `loop`, and `modrelu.modrelu_scan` for EURNN and
scoRNN), the reference every fast path is tested against and the one a CPU runs. `fused` runs the
whole scan in Triton kernels (the module `fused`). `auto` takes `fused` on a CUDA device when
Triton imports, in float32, and `loop` otherwise, so a CPU keeps its code path and speed; on CUDA
it first checks each fused variant against the loop in the process (`self_check`) and keeps the
loop where the check fails. `kernel_precision` sets the operands of the fused kernels' products;
the loop computes in IEEE float32 whatever it says.

The same setting picks how the orthogonal matrices are built (`build_matrix`): `loop` the ATen
ops, the reference; `fused` the Triton builds (`givens_matrix`, `cayley_matrix`), which compute
in float32 and float64 (`BUILD_DTYPES`); `auto` those on CUDA once each has agreed with the ATen
build in the process.
"""

from __future__ import annotations

import importlib
import os
import tempfile
from collections.abc import Hashable, Sequence
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Literal

import torch

from trainables.models.scans import self_check
from trainables.models.scans.self_check import Build, KernelRecord

Kernel = Literal["fused", "loop"]
SCAN_DTYPES = (torch.float32,)
BUILD_DTYPES = (torch.float32, torch.float64)


@cache
def triton_problem() -> str | None:
    """Why Triton cannot be used in this process, or None when it can."""
    try:
        importlib.import_module("triton")
    except Exception as exc:  # an install broken in any way is the same as none
        return f"Triton does not import ({type(exc).__name__}: {exc})"
    return None


def interpreting() -> bool:
    """Triton's interpreter runs the kernels on CPU tensors (slowly): for tests on machines without a GPU."""
    return os.environ.get("TRITON_INTERPRET") == "1"


def fused_problem(
    device: torch.device, dtype: torch.dtype = torch.float32, dtypes: tuple[torch.dtype, ...] = SCAN_DTYPES
) -> str | None:
    """Why the fused kernels that compute in `dtypes` cannot run on `device` in `dtype`, or None
    when they can."""
    if device.type != "cuda" and not interpreting():
        return f"the device is {device.type}, and the fused kernels need CUDA"
    if dtype not in dtypes:
        names = " or ".join(str(d).removeprefix("torch.") for d in dtypes)
        return f"the dtype is {dtype}, and the fused kernels compute in {names}"
    return triton_problem()


def triton_cache_problem() -> str | None:
    """Why Triton could not keep the kernels it compiles, or None when it can. It writes each one
    into its cache directory at first use; on a read-only filesystem that fails deep in the
    compiler, so a trial checks the directory before its first step and names it."""
    from triton import knobs

    folder = Path(knobs.cache.dir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder):
            pass
    except OSError as exc:
        return (
            f"Triton's kernel cache {folder} is not writable ({exc.strerror or exc}): "
            "set TRITON_CACHE_DIR (or HOME) to a writable directory"
        )
    return None


def resolve_kernel(
    setting: str,
    device: torch.device,
    dtype: torch.dtype = torch.float32,
    dtypes: tuple[torch.dtype, ...] = SCAN_DTYPES,
) -> Kernel:
    """The implementation `setting` means on `device` for kernels that compute in `dtypes` (the
    scans', or `BUILD_DTYPES` for the matrix builds); `fused` where it cannot run is an error."""
    if setting == "loop":
        return "loop"
    if setting == "auto":
        return "fused" if device.type == "cuda" and fused_problem(device, dtype, dtypes) is None else "loop"
    problem = fused_problem(device, dtype, dtypes)
    if problem is not None:
        raise ValueError(f"kernel: 'fused' cannot run here: {problem}; use kernel: auto or loop")
    return "fused"


def build_matrix(
    setting: str,
    record: KernelRecord | None,
    key: Hashable,
    kernels: Build,
    aten: Build,
    inputs: Sequence[torch.Tensor],
) -> torch.Tensor:
    """An orthogonal matrix built from `inputs` (its parameter first) by `kernels` or by `aten`,
    chosen as the time loop's implementation is, so that `loop` runs the reference throughout and
    a CPU's numbers never depend on Triton: `fused` the kernels, an error where they cannot run;
    `auto` the kernels on CUDA once they agreed with the ATen build in this process
    (`self_check.build_verdict`, once per `key`), else the ATen ops, which `record` hears."""
    parameter = inputs[0]
    if resolve_kernel(setting, parameter.device, parameter.dtype, BUILD_DTYPES) == "loop":
        return aten(*inputs)
    if setting == "auto":
        problem = self_check.build_verdict(key, kernels, aten, inputs)
        if record is not None:
            record.hear_matrix(problem)
        if problem is not None:
            return aten(*inputs)
    return kernels(*inputs)


def fused_scans() -> ModuleType:
    """The module `fused`, imported on first use rather than with this module: it imports Triton,
    which a run of the loop never needs."""
    from trainables.models.scans import fused

    return fused
