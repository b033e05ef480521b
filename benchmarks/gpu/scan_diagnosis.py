"""Why the orthogonal scans' backward costs five times their forward: where one time step of each
fused scan kernel goes, on a GPU, before any rewrite.

Per scan (GORU, NC-GRU and scoRNN at the papers' denoise sizes, whose backward is the question;
EURNN at 512 units, whose forward is), the model's own scan at batch 128:
- the plan it runs (path, programs per SM, rows per program, matrices on chip or streamed) and
  each compiled kernel's resources (registers, spills, shared memory, warps), read from Triton;
- microseconds per time step of the forward and of the backward kernel (the slope between T and
  2T of the kernels' device time under the profiler: launches and the fixed part drop out), and
  the backward over the forward;
- the same for variants that each change one part of the plan: the products in TF32 (if the step
  gets much faster, the products' arithmetic holds it), the matrices streamed from L2 each step
  instead of kept on chip (what loading costs), one batch row per program and twice the rows
  (parallelism against each program's serial work), half and twice the warps, a batch of one
  program's rows (one row block: the dependent chain of a step alone) and half the hidden units
  (a quarter of the arithmetic and loads: a step bound by its chain barely moves);
- the arithmetic and the traffic a step must do, and what the measured step achieves of them;
- where Nsight Compute (`ncu`) is on the machine, its speed-of-light, occupancy, warp-state and
  launch sections for every scan kernel of one forward and backward, as CSV beside the JSON.

Everything goes to `--out` (`scan_diagnosis.json`, `ncu-<scan>.csv`); one call, a few minutes on a
GPU. `--cpu-check` runs the same plan at tiny shapes in Triton's interpreter (its times are the
interpreter's, never GPU figures), so the script is known to run before a GPU is lent.

    python -m benchmarks.gpu.scan_diagnosis --out DIR
    TRITON_INTERPRET=1 python -m benchmarks.gpu.scan_diagnosis --out DIR --cpu-check
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import torch

from benchmarks import figures_file
from trainables.catalog import load_all
from trainables.models.scans import fused, reset_after_kernels, reset_before_kernels
from trainables.models.scans.plan import ScanPlan
from trainables.registry import MODELS

ROOT = Path(__file__).resolve().parents[2]
INPUT_SIZE = 10  # denoise's symbols
# scan -> (model, hidden units, model settings, the direction the diagnosis is about)
SCANS: dict[str, tuple[str, int, dict[str, Any], str]] = {
    "goru": ("goru", 128, {}, "backward"),
    "ncgru": ("ncgru", 118, {"rho": 50}, "backward"),
    "scornn": ("scornn", 200, {}, "backward"),
    "eurnn": ("eurnn", 512, {}, "forward"),
}
TINY = {"goru": 16, "ncgru": 12, "scornn": 10, "eurnn": 16}  # --cpu-check's hidden sizes
KERNELS = {
    "reset_after_forward": reset_after_kernels.reset_after_forward,
    "reset_after_backward": reset_after_kernels.reset_after_backward,
    "reset_before_forward": reset_before_kernels.reset_before_forward,
    "reset_before_backward": reset_before_kernels.reset_before_backward,
}
Variant = Callable[[ScanPlan], ScanPlan | None]  # None: the change does not apply to this plan
VARIANTS: dict[str, Variant] = {
    "as planned": lambda p: p,
    "tf32 products": lambda p: replace(p, precision="tf32") if p.precision != "tf32" else None,
    "matrices streamed": lambda p: replace(p, resident=False) if p.resident and p.matrices else None,
    "one row per program": lambda p: replace(p, rows=1) if p.rows > 1 else None,
    "twice the rows": lambda p: replace(p, rows=2 * p.rows) if 2 * p.rows <= p.batch else None,
    "half the warps": lambda p: replace(p, warps=p.warps // 2) if p.warps > 1 else None,
    "twice the warps": lambda p: replace(p, warps=2 * p.warps) if p.warps < 16 else None,
}
SHAPES = ("one row block", "half the hidden units")  # the same plan's rule at another shape


class Planned:
    """The fused module's planners, each plan passed through `variant` and kept: the scan the
    model launches runs the variant, and the diagnosis knows which plan ran."""

    def __init__(self, variant: Variant) -> None:
        self.variant = variant
        self.plans: list[ScanPlan] = []
        self.skipped = False
        self.saved = (fused.plan_reset_after, fused.plan_reset_before)

    def _wrap(self, planner: Callable[..., ScanPlan]) -> Callable[..., ScanPlan]:
        def plan(*args: Any, **kwargs: Any) -> ScanPlan:
            chosen = planner(*args, **kwargs)
            changed = self.variant(chosen)
            if changed is None:
                self.skipped = True
                changed = chosen
            self.plans.append(changed)
            return changed

        return plan

    def __enter__(self) -> Planned:
        fused.plan_reset_after, fused.plan_reset_before = (self._wrap(p) for p in self.saved)
        return self

    def __exit__(self, *exc: object) -> None:
        fused.plan_reset_after, fused.plan_reset_before = self.saved


def build(scan: str, n: int, device: torch.device) -> torch.nn.Module:
    model, _, settings, _ = SCANS[scan]
    if "rho" in settings:
        settings = {**settings, "rho": max(1, round(settings["rho"] * n / SCANS[scan][1]))}
    return MODELS.get(model).create(INPUT_SIZE, n, kernel="fused", **settings).to(device)


def run(network: torch.nn.Module, T: int, batch: int, device: torch.device) -> None:
    """One forward and backward of the model's scan."""
    x = torch.randn(T, batch, INPUT_SIZE, device=device)
    hidden, _ = network(x)
    hidden.square().mean().backward()


def kernel_times(
    network: torch.nn.Module, T: int, batch: int, device: torch.device, reps: int
) -> dict[str, float]:
    """Device microseconds of each scan kernel per forward and backward (median over `reps`);
    on a CPU, the wall time of the forward and of the backward instead."""
    if device.type != "cuda":
        forward, backward = [], []
        for _ in range(reps):
            x = torch.randn(T, batch, INPUT_SIZE)
            started = time.perf_counter()
            hidden, _ = network(x)
            middle = time.perf_counter()
            hidden.square().mean().backward()
            forward.append(middle - started)
            backward.append(time.perf_counter() - middle)
        return {"forward": 1e6 * statistics.median(forward), "backward": 1e6 * statistics.median(backward)}
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    totals: dict[str, list[float]] = {}
    for _ in range(reps):
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            run(network, T, batch, device)
            torch.cuda.synchronize(device)
        found: dict[str, float] = {}
        for event in prof.events():
            if event.device_type != DeviceType.CUDA or event.is_user_annotation:
                continue
            for name in KERNELS:
                if event.name.startswith(name):
                    direction = "backward" if name.endswith("backward") else "forward"
                    found[direction] = found.get(direction, 0.0) + event.time_range.elapsed_us()
        for direction, us in found.items():
            totals.setdefault(direction, []).append(us)
    return {direction: statistics.median(values) for direction, values in totals.items()}


def per_step(
    network: torch.nn.Module, T: int, batch: int, device: torch.device, reps: int
) -> dict[str, float]:
    """Microseconds per time step of each direction: the slope between T and 2T steps."""
    once, twice = (kernel_times(network, steps, batch, device, reps) for steps in (T, 2 * T))
    return {direction: (twice[direction] - once[direction]) / T for direction in once if direction in twice}


def compiled_resources() -> list[dict[str, Any]]:
    """Every scan kernel Triton has compiled in this process: registers, spills, shared memory,
    warps and the constants that made it."""
    out = []
    for name, kernel in KERNELS.items():
        for device_cache in getattr(kernel, "device_caches", {}).values():  # none in the interpreter
            cache = device_cache[0] if isinstance(device_cache, tuple) else device_cache
            for compiled in cache.values():
                meta = compiled.metadata
                out.append(
                    {
                        "kernel": name,
                        "registers": getattr(compiled, "n_regs", None),
                        "spills": getattr(compiled, "n_spills", None),
                        "shared_bytes": getattr(meta, "shared", None),
                        "warps": getattr(meta, "num_warps", None),
                    }
                )
    return out


def work_per_step(plan: ScanPlan, direction: str) -> dict[str, float]:
    """The floating-point operations and the matrix bytes one step of the scan must move (the
    products with its n x n blocks, twice as many backward; the blocks from L2 each step unless
    kept on chip), and the state it reads and writes."""
    n, batch, blocks = plan.n, plan.batch, max(plan.matrices, 1)
    products = 2 if direction == "backward" else 1
    flops = 2.0 * batch * n * n * blocks * products
    matrix_bytes = 0.0 if plan.resident else 4.0 * n * n * blocks * products
    state_bytes = 4.0 * batch * n * (3 + blocks) * products
    return {"flops": flops, "matrix_bytes": matrix_bytes, "state_bytes": state_bytes}


def diagnose(scan: str, args: argparse.Namespace, device: torch.device) -> dict[str, Any]:
    _, paper_n, _, about = SCANS[scan]
    n = TINY[scan] if args.cpu_check else paper_n
    result: dict[str, Any] = {"hidden": n, "batch": args.batch, "about": about, "variants": {}}
    for name, variant in VARIANTS.items():
        result["variants"][name] = measure(scan, n, args.batch, variant, args, device)
    planned = result["variants"]["as planned"]
    if "plan" in planned:  # the same rule at other shapes
        result["variants"]["one row block"] = measure(
            scan, n, planned["plan"]["rows"], VARIANTS["as planned"], args, device
        )
    result["variants"]["half the hidden units"] = measure(
        scan, max(2, n // 2), args.batch, VARIANTS["as planned"], args, device
    )
    steps = planned.get("us_per_step", {})
    if steps.get("forward") and steps.get("backward"):
        result["backward_over_forward"] = steps["backward"] / steps["forward"]
    return result


def measure(
    scan: str, n: int, batch: int, variant: Variant, args: argparse.Namespace, device: torch.device
) -> dict[str, Any]:
    """One variant of a scan: the plan it ran, microseconds per step and what each step achieves
    of the work it must do, or why the variant could not run."""
    with Planned(variant) as planned:
        try:
            network = build(scan, n, device)
            run(network, args.T, batch, device)  # compiles, and plans
            if planned.skipped:
                return {"applies": False}
            steps = per_step(network, args.T, batch, device, args.reps)
        except Exception as exc:  # a variant the kernels or the device refuse is a finding too
            return {"applies": True, "failed": f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"}
    plan = planned.plans[-1]
    achieved = {}
    for direction, us in steps.items():
        work = work_per_step(plan, direction)
        seconds = max(us, 1e-9) * 1e-6
        achieved[direction] = {
            **work,
            "gflops": work["flops"] / seconds / 1e9,
            "gbytes_per_s": (work["matrix_bytes"] + work["state_bytes"]) / seconds / 1e9,
        }
    return {
        "applies": True,
        "plan": {k: v for k, v in asdict(plan).items() if k != "gpu"},
        "describe": plan.describe(),
        "us_per_step": steps,
        "work_and_achieved": achieved,
    }


def nsight(scan: str, args: argparse.Namespace) -> dict[str, Any]:
    """Nsight Compute's sections for the scan's kernels of one forward and backward (CSV)."""
    ncu = shutil.which("ncu")
    if ncu is None:
        return {"ncu": "not on this machine"}
    out = args.out / f"ncu-{scan}.csv"
    command = [
        ncu, "--csv", "--target-processes", "all", "--kernel-name", "regex:reset_(after|before)_",
        "--launch-count", "4", "--section", "SpeedOfLight", "--section", "Occupancy",
        "--section", "WarpStateStats", "--section", "LaunchStats", "--section", "MemoryWorkloadAnalysis",
        sys.executable, "-m", "benchmarks.gpu.scan_diagnosis", "--ncu-target", scan, "--out", str(args.out), "--T", "16",
    ]  # fmt: skip
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=args.ncu_timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"ncu": f"stopped after {args.ncu_timeout} s"}
    out.write_text(done.stdout)
    return {"ncu": out.name, "returncode": done.returncode, "stderr_tail": done.stderr[-2000:]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, required=True, help="the folder the results go to")
    parser.add_argument("--scans", nargs="+", choices=list(SCANS), default=list(SCANS))
    parser.add_argument("--T", type=int, help="time steps (200 on a GPU, 3 with --cpu-check)")
    parser.add_argument("--batch", type=int, help="batch (128 on a GPU, 4 with --cpu-check)")
    parser.add_argument("--reps", type=int, help="timed repetitions (5 on a GPU, 1 with --cpu-check)")
    parser.add_argument("--cpu-check", action="store_true", help="tiny shapes in Triton's interpreter")
    parser.add_argument("--ncu-timeout", type=int, default=120, help="seconds for each scan's Nsight run")
    parser.add_argument("--ncu-target", choices=list(SCANS), help=argparse.SUPPRESS)  # what ncu profiles
    args = parser.parse_args(argv)
    args.T = args.T or (3 if args.cpu_check else 200)
    args.batch = args.batch or (4 if args.cpu_check else 128)
    args.reps = args.reps or (1 if args.cpu_check else 5)
    device = torch.device("cpu" if args.cpu_check else "cuda")
    if device.type == "cuda" and not torch.cuda.is_available():
        print("error: no CUDA device (on a CPU, --cpu-check with TRITON_INTERPRET=1)", file=sys.stderr)
        return 2
    if args.cpu_check and os.environ.get("TRITON_INTERPRET") != "1":
        print("error: --cpu-check runs in Triton's interpreter: set TRITON_INTERPRET=1", file=sys.stderr)
        return 2
    load_all()
    torch.manual_seed(0)
    if args.ncu_target is not None:  # one forward and backward, for Nsight Compute to watch
        scan = args.ncu_target
        run(build(scan, SCANS[scan][1], device), args.T, args.batch, device)
        torch.cuda.synchronize(device)
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    result: dict[str, Any] = {
        "device": torch.cuda.get_device_name(device)
        if device.type == "cuda"
        else "cpu (Triton's interpreter)",
        "machine": figures_file.machine(str(device)),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "T": args.T,
        "batch": args.batch,
        "reps": args.reps,
        "scans": {},
    }
    for scan in args.scans:
        print(f"{scan}: diagnosing", flush=True)
        result["scans"][scan] = diagnose(scan, args, device)
        if device.type == "cuda":
            result["scans"][scan]["nsight"] = nsight(scan, args)
    result["compiled"] = compiled_resources()
    result["seconds"] = time.monotonic() - started
    (args.out / "scan_diagnosis.json").write_text(json.dumps(result, indent=1, default=str) + "\n")
    for scan, record in result["scans"].items():
        about = record["about"]
        print(f"\n{scan} (n = {record['hidden']}, B = {record['batch']}): µs per step, {about} / other")
        for name, variant in record["variants"].items():
            if not variant.get("applies", True):
                continue
            steps = variant.get("us_per_step", {})
            other = "forward" if about == "backward" else "backward"
            shown = (
                variant.get("failed")
                or f"{steps.get(about, float('nan')):.2f} / {steps.get(other, float('nan')):.2f}"
            )
            print(f"  {name:>22}: {shown}")
    print(f"\nwrote {args.out / 'scan_diagnosis.json'} in {result['seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
