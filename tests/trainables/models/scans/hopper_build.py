"""Compile the fused-scan kernels the models launch at the papers' sizes for an H100 (sm_90), without
a GPU, and report each one's registers, spills and shared memory; and the kernels that build the
orthogonal matrices (`givens_kernels` at the Givens models' sizes, `cayley_kernels`).

Triton's compiler and the ptxas it ships run on any machine: this catches what the interpreter
cannot (constexpr misuse, types only the compiler checks, register spills, a plan whose matrices
do not fit the shared memory it assumed). Run in a process of its own, since `TRITON_INTERPRET=1`
replaces the kernels by their interpreted form. Prints one JSON object: variant → figures.

    python -m tests.trainables.models.scans.hopper_build [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
from pathlib import Path

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource, CompiledKernel
from triton.runtime.cache import get_cache_manager

from trainables.models.scans import cayley_kernels, givens_kernels, reset_after_kernels, reset_before_kernels
from trainables.models.scans.cayley_matrix import BLOCK, BLOCK_K
from trainables.models.scans.fused import UPDATE_CODES, compile_options
from trainables.models.scans.givens_matrix import REDUCE_BLOCK, plan_givens
from trainables.models.scans.plan import H100, ScanPlan, plan_reset_after, plan_reset_before

HOPPER = GPUTarget("cuda", 90, 32)
INT_POINTERS = {"partner_ptr", "sync_ptr", "flag_ptr"}
AFTER_CELLS = {  # (reset, update) of each model with the reset-after cell
    "eurnn": (False, None),
    "scornn": (False, None),
    "goru": (True, "keeps"),
    "goru_noreset": (False, "keeps"),
    "goru_noupdate": (True, None),
    "ncgru after": (True, "admits"),
}
# (model, hidden size, batch): the papers' sizes (synthetic tasks, copying T = 1000, PTB)
SIZES = [
    ("eurnn", 128, 128),
    ("eurnn", 512, 32),
    ("eurnn", 2048, 32),
    ("scornn", 128, 128),
    ("scornn", 190, 50),
    ("goru", 128, 128),
    ("goru_noreset", 128, 128),
    ("goru_noupdate", 128, 128),
    ("goru", 512, 32),
    ("ncgru after", 118, 128),
    ("ncgru", 118, 128),
    ("ncgru", 256, 32),
]
QUICK = [("eurnn", 512, 32), ("goru", 128, 128), ("scornn", 190, 50), ("ncgru", 118, 128)]
# hidden sizes of the Givens models (EURNN and GORU 128 and 512, EURNN 2048 on PTB) and the dtypes
GIVENS_SIZES = [(128, "fp32"), (128, "fp64"), (512, "fp32"), (2048, "fp32")]
QUICK_GIVENS = [(512, "fp32"), (2048, "fp32")]
GIVENS_INDEX_POINTERS = ("partner_ptr", "cos_index_ptr", "sin_index_ptr")  # the module's int64 buffers
CAYLEY_DTYPES = ("fp32", "fp64")  # one binary for every n
PTXAS_REPORT = "ptxas-report.txt"  # beside each kernel in Triton's cache


def plans(model: str, n: int, batch: int, precisions: tuple[str, ...]) -> list[tuple[ScanPlan, dict]]:
    """The plan of each precision, and the kernel flags of the model's cell."""
    found = []
    for precision in precisions:
        if model == "ncgru":
            found.append((plan_reset_before(n, batch, precision, H100), {}))
            continue
        reset, update = AFTER_CELLS[model]
        gates = int(reset) + (update is not None)
        plan = plan_reset_after(n, batch, gates, model.startswith(("eurnn", "goru")), precision, H100)
        flags = {"RESET": reset, "UPDATE": UPDATE_CODES[update], "GIVENS": plan.path == "givens"}
        found.append((plan, {**flags, "IN_MEMORY": plan.in_memory}))
    return found


def build_reported(source: ASTSource, options: dict) -> tuple[CompiledKernel, str]:
    """The kernel and the report (`-v`) of the ptxas run that built it, with the flags Triton gives
    ptxas: Triton prints it while it builds, and it is kept beside the kernel in Triton's cache for
    the runs that load the kernel from there (one that finds none there builds it again)."""
    for always in (False, True):
        log = io.StringIO()
        with triton.knobs.compilation.scope(), triton.knobs.nvidia.scope(), contextlib.redirect_stdout(log):
            triton.knobs.compilation.always_compile = always
            triton.knobs.nvidia.dump_ptxas_log = True
            compiled = triton.compile(source, target=HOPPER, options=options)
        cache = get_cache_manager(compiled.hash)
        if log.getvalue():
            cache.put(log.getvalue(), PTXAS_REPORT, binary=False)
            return compiled, log.getvalue()
        if kept := cache.get_file(PTXAS_REPORT):
            return compiled, Path(kept).read_text()
    raise RuntimeError(f"Triton built {compiled.name} without printing its ptxas report")


def compile_kernel(
    kernel: triton.runtime.JITFunction, constants: dict[str, object], pointers: dict[str, str] | None = None
) -> dict[str, object]:
    """`pointers`: the element type of pointer arguments that are not the scans' float32 or int32."""
    options = {k: constants.pop(k) for k in ("num_warps", "launch_cooperative_grid") if k in constants}
    signature = {
        name: (pointers or {}).get(name, "*i32" if name in INT_POINTERS else "*fp32")
        if name.endswith("_ptr")
        else "constexpr"
        if name in constants
        else "i32"
        for name in kernel.arg_names
    }
    source = ASTSource(
        fn=kernel,
        signature=signature,
        constexprs={(kernel.arg_names.index(k),): v for k, v in constants.items()},
    )
    compiled, report = build_reported(source, options)
    registers = int(re.search(r"Used (\d+) registers", report).group(1))
    spilled = int(re.search(r"(\d+) bytes spill stores", report).group(1))
    return {"registers": registers, "spill_bytes": spilled, "shared_bytes": compiled.metadata.shared}


def build(model: str, n: int, batch: int, plan: ScanPlan, flags: dict) -> dict[str, dict[str, object]]:
    base = compile_options(plan)
    name = f"{model.replace(' ', '_')} n={n} B={batch} {plan.path} {plan.precision}"
    if plan.scan == "reset_before":
        forward, backward = (
            reset_before_kernels.reset_before_forward,
            reset_before_kernels.reset_before_backward,
        )
        forward_flags, backward_flags = {"SAVE": True, "PHASE": -1}, {"PHASE": -1}
    else:
        forward, backward = reset_after_kernels.reset_after_forward, reset_after_kernels.reset_after_backward
        forward_flags, backward_flags = {**flags, "SAVE": True}, {**flags, "PHASE": -1}
    return {
        f"{name} forward": compile_kernel(forward, {**base, **forward_flags}),
        f"{name} backward": compile_kernel(backward, {**base, **backward_flags}),
    }


def build_givens_matrix(n: int, dtype: str) -> dict[str, dict[str, object]]:
    """The Givens matrix's forward, backward and angle-gradient kernels as `plan_givens` launches them."""
    launch = plan_givens(n, H100)
    options = dict(
        ROWS=launch.rows, BLOCK_N=launch.block_n, IN_MEMORY=launch.in_memory, num_warps=launch.warps
    )
    floats = ("angles_ptr", "m_ptr", "grad_ptr", "share_ptr", "scratch_ptr")
    pointers = {name: "*i64" for name in GIVENS_INDEX_POINTERS} | {name: f"*{dtype}" for name in floats}
    name = f"givens_matrix n={n} {dtype} rows={launch.rows} programs={launch.programs}"
    return {
        f"{name} forward": compile_kernel(givens_kernels.givens_matrix_forward, dict(options), pointers),
        f"{name} backward": compile_kernel(givens_kernels.givens_matrix_backward, dict(options), pointers),
        f"{name} angle gradient": compile_kernel(
            givens_kernels.givens_angle_gradient, {"BLOCK": REDUCE_BLOCK}, pointers
        ),
    }


def build_cayley_matrix(dtype: str) -> dict[str, dict[str, object]]:
    """The scaled Cayley matrix's kernel as `cayley_matrix` launches it."""
    constants = dict(BLOCK=BLOCK, BLOCK_K=BLOCK_K, PRECISION="ieee")
    pointers = {name: f"*{dtype}" for name in ("upper_ptr", "inverse_ptr", "d_ptr", "w_ptr")}
    return {
        f"cayley_matrix {dtype} forward": compile_kernel(
            cayley_kernels.cayley_matrix_forward, constants, pointers
        )
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="one size per path, IEEE only")
    args = parser.parse_args()
    sizes = QUICK if args.quick else SIZES
    precisions = ("ieee",) if args.quick else ("ieee", "tf32x3", "tf32")
    report: dict[str, dict[str, object]] = {}
    for model, n, batch in sizes:
        for plan, flags in plans(model, n, batch, precisions):
            figures = build(model, n, batch, plan, flags)
            for figure in figures.values():
                figure["planned_resident"] = plan.resident
            report.update(figures)
    for n, dtype in QUICK_GIVENS if args.quick else GIVENS_SIZES:
        report.update(build_givens_matrix(n, dtype))
    for dtype in CAYLEY_DTYPES:
        report.update(build_cayley_matrix(dtype))
    print(json.dumps(report))


if __name__ == "__main__":
    main()
