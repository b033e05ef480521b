"""Compile every fused-scan variant the models launch for an H100 (sm_90), without a GPU.

Triton's compiler and the ptxas it ships run on any machine: this catches what the interpreter
cannot (constexpr misuse, types that only the compiler checks, register spills) where CI has no
GPU. Run in a process of its own, since `TRITON_INTERPRET=1` replaces the kernels by their
interpreted form. Prints one JSON object: variant → ptxas's resource line.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile

import triton
from triton.backends.compiler import GPUTarget
from triton.backends.nvidia.compiler import get_ptxas
from triton.compiler import ASTSource

from trainables.models import triton_scans

HOPPER = GPUTarget("cuda", 90, 32)
VARIANTS = [
    *(
        (
            f"reset_after_forward reset={r} update={u} save={s}",
            triton_scans._reset_after_forward,
            {"RESET": r, "UPDATE": u, "SAVE": s},
        )
        for r, u in ((False, 0), (True, 1), (False, 1), (True, 0), (True, 2))
        for s in (False, True)
    ),
    *(
        (
            f"reset_after_backward reset={r} update={u}",
            triton_scans._reset_after_backward,
            {"RESET": r, "UPDATE": u},
        )
        for r, u in ((False, 0), (True, 1), (False, 1), (True, 0), (True, 2))
    ),
    ("reset_before_forward", triton_scans._reset_before_forward, {}),
    ("reset_before_backward", triton_scans._reset_before_backward, {}),
]


def resources(kernel: triton.runtime.JITFunction, constants: dict[str, object], block: int) -> str:
    constants = {**constants, "BLOCK_B": triton_scans.BLOCK_B, "BLOCK": block}
    signature = {
        name: "*fp32" if name.endswith("_ptr") else "constexpr" if name in constants else "i32"
        for name in kernel.arg_names
    }
    source = ASTSource(
        fn=kernel,
        signature=signature,
        constexprs={(kernel.arg_names.index(k),): v for k, v in constants.items()},
    )
    compiled = triton.compile(source, target=HOPPER, options={"num_warps": triton_scans.warps(block)})
    with tempfile.TemporaryDirectory() as folder:
        ptx = os.path.join(folder, "kernel.ptx")
        with open(ptx, "w") as file:
            file.write(compiled.asm["ptx"])
        report = subprocess.run(
            [get_ptxas(90).path, "-v", "--gpu-name", "sm_90a", ptx, "-o", os.devnull],
            capture_output=True,
            text=True,
            check=True,
        ).stderr
    return " ".join(line.split(":", 2)[-1].strip() for line in report.splitlines() if "spill" in line)


def main() -> None:
    blocks = sorted({triton_scans.tile_width(n) for n in (8, 2048)})
    report = {
        f"{name} block={block}": resources(kernel, constants, block)
        for name, kernel, constants in VARIANTS
        for block in blocks
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
