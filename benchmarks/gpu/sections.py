"""The measurements `gpu_acceptance.py` takes, one function per section of its JSON.

Each takes the run's `Setup` (device, shapes, sizes; tiny ones under `--cpu-check`) and returns
plain data. Timings wait for the device (CUDA events on a GPU) and are medians of repeated runs
after a warm-up, so compilation and first-use costs stay out of them.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from trainables.models.base import OrthogonalModel
from trainables.models.orthogonal import orthogonality_error
from trainables.models.scans.plan import GPU, H100, PRECISIONS, gpu_of, plan_reset_after, plan_reset_before
from trainables.registry import MODELS

ROOT = Path(__file__).resolve().parents[2]
INPUT_SIZE = 10
# name → (registered model, settings): every orthogonal cell the kernels serve
CELLS = {
    "eurnn": ("eurnn", {}),
    "scornn": ("scornn", {}),
    "goru": ("goru", {}),
    "goru_noreset": ("goru_noreset", {}),
    "goru_noupdate": ("goru_noupdate", {}),
    "ncgru": ("ncgru", {}),
    "ncgru after": ("ncgru", {"reset": "after"}),
}
WIDE_ONLY = ("eurnn",)  # the only model the papers run at 2048 units (PTB)
ONE_PROCESS = ("-p", "no:xdist", "-o", "addopts=")  # this script splits the tests over processes itself
SMALL_GPU = GPU("4 SMs, 24 KiB of shared memory per program", 4, 24 * 1024)


@dataclass
class Setup:
    device: torch.device
    shapes: list[tuple[int, int, int]]  # (B, T, n) of the cell timings; the last is EURNN's alone
    reps: int
    precision_steps: int  # T of the orthogonality drift and of the precisions' training run
    copying_iterations: int
    precision_task: str  # the precisions' training run: copying (T + 20 steps), adding (T) when tiny
    trial_iterations: int
    trial_task: str  # the `sweeper train` trials' and the packing's task
    trial_T: int
    packing_iterations: int
    packings: tuple[int, ...]
    paper_hidden: dict[str, dict[str, int]]
    tests_filter: str
    tiny: bool
    notes: list[str] = field(default_factory=list)

    @property
    def cuda(self) -> bool:
        return self.device.type == "cuda"


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def median_ms(run: Callable[[], None], setup: Setup) -> float:
    """Median milliseconds of `run` over `setup.reps` runs after warming up, device work included
    (tiny runs, in Triton's interpreter, have nothing to warm: their times only check the plan)."""
    for _ in range(0 if setup.tiny else 2):
        run()
    synchronize(setup.device)
    times = []
    for _ in range(setup.reps):
        if setup.cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            run()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        else:
            started = time.perf_counter()
            run()
            times.append(1000 * (time.perf_counter() - started))
    return statistics.median(times)


def forward_backward(model: torch.nn.Module, x: torch.Tensor) -> Callable[[], None]:
    def run() -> None:
        model.zero_grad(set_to_none=True)
        out, _ = model(x)
        out.square().mean().backward()

    return run


def forward_only(model: torch.nn.Module, x: torch.Tensor) -> Callable[[], None]:
    def run() -> None:
        with torch.no_grad():
            model(x)

    return run


def cell(name: str, n: int, setup: Setup, precision: str = "ieee") -> OrthogonalModel:
    registered, settings = CELLS[name]
    torch.manual_seed(0)
    model = MODELS.get(registered).create(
        INPUT_SIZE, n, kernel="fused", kernel_precision=precision, **settings
    )
    return model.to(setup.device)


def cells_at(shape: tuple[int, int, int], setup: Setup) -> list[str]:
    return list(WIDE_ONLY) if shape == setup.shapes[-1] else list(CELLS)


def peak_mib(run: Callable[[], None], device: torch.device) -> float | None:
    """Device memory a run allocates beyond what was held before it, at its peak."""
    if device.type != "cuda":
        return None
    synchronize(device)
    held = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    run()
    synchronize(device)
    return (torch.cuda.max_memory_allocated(device) - held) / 2**20


def gru_times(setup: Setup) -> dict[str, float]:
    """nn.GRU (cuDNN on a GPU) forward+backward at every shape, in this process's TF32 setting."""
    times = {}
    for B, T, n in setup.shapes:
        torch.manual_seed(0)
        gru = torch.nn.GRU(INPUT_SIZE, n).to(setup.device)
        x = torch.randn(T, B, INPUT_SIZE, device=setup.device)
        times[f"{B},{T},{n}"] = median_ms(forward_backward(gru, x), setup)
    return times


def strict_gru_times(setup: Setup, command: list[str]) -> dict[str, float]:
    """The same in a process with NVIDIA_TF32_OVERRIDE=0: cuDNN without TF32, set before CUDA starts."""
    env = {**os.environ, "NVIDIA_TF32_OVERRIDE": "0"}
    done = subprocess.run(
        [*command, "--gru-times"], capture_output=True, text=True, env=env, cwd=ROOT, check=False
    )
    if done.returncode != 0:
        setup.notes.append(f"strict GRU timing failed: {done.stderr.strip()[-500:]}")
        return {}
    return json.loads(done.stdout.strip().splitlines()[-1])


def errors(setup: Setup) -> list[dict]:
    """Largest relative error of each path and precision against the float64 loop, outputs and gradients."""
    from trainables.models.scans import fused, loop

    B, T = (3, 4) if setup.tiny else (16, 50)
    rows = []
    for precision in PRECISIONS:
        for n, widths, givens in ((24 if setup.tiny else 100, 3, False), (16 if setup.tiny else 128, 3, True), (40 if setup.tiny else 200, 1, False)):  # fmt: skip
            generator = torch.Generator().manual_seed(0)
            projected = torch.randn(T, B, widths * n, dtype=torch.float64, generator=generator)
            h0 = torch.randn(B, n, dtype=torch.float64, generator=generator) * 0.5
            M = torch.randn(n, widths * n, dtype=torch.float64, generator=generator) * n**-0.5
            bias = torch.randn(n, dtype=torch.float64, generator=generator) * 0.3
            tables = None
            if givens:
                from trainables.models.orthogonal import GivensRotations

                rotations = GivensRotations(n, "fft", 0).double()
                M[:, :n] = rotations.matrix().detach()
                tables = tuple(t.to(setup.device) for t in rotations.float().tables())
            reset, update = (True, "keeps") if widths == 3 else (False, None)
            inputs = [projected, h0, M, bias]

            def run(scan, dtype, *, inputs=inputs, reset=reset, update=update, **options):
                leaves = [t.to(setup.device, dtype).clone().requires_grad_() for t in inputs]
                out, last = scan(*leaves, 0.0, reset, update, **options)
                (out.square().sum() + last.sum()).backward()
                return [out.detach().double().cpu(), *(leaf.grad.double().cpu() for leaf in leaves)]

            want = run(loop.reset_after_scan, torch.float64)
            # the device's own plan; tiny sizes would all fit one program, so the last one is planned
            # for a device of 4 SMs, which splits it
            gpu = SMALL_GPU if setup.tiny and not givens and widths == 1 else gpu_of(setup.device)
            plan = plan_reset_after(n, B, 2 if widths == 3 else 0, givens, precision, gpu)
            got = run(fused.reset_after_scan, torch.float32, givens=tables, plan=plan)
            relative = [float((g - w).norm() / w.norm()) for g, w in zip(got, want, strict=True)]
            rows.append({"path": plan.path, "n": n, "batch": B, "T": T, "precision": precision, "outputs": relative[0], "gradients": max(relative[1:])})  # fmt: skip
    return rows


def steps(setup: Setup) -> list[dict]:
    """µs per step of each scan, forward and forward+backward: (time at 2T − time at T) / T."""
    rows = []
    for B, T, n in setup.shapes:
        for name in cells_at((B, T, n), setup):
            model = cell(name, n, setup)
            timings = {}
            for length in (T, 2 * T):
                x = torch.randn(length, B, INPUT_SIZE, device=setup.device)
                timings[length] = (
                    median_ms(forward_only(model, x), setup),
                    median_ms(forward_backward(model, x), setup),
                )
            forward = 1000 * (timings[2 * T][0] - timings[T][0]) / T
            both = 1000 * (timings[2 * T][1] - timings[T][1]) / T
            rows.append({"model": name, "shape": [B, T, n], "path": model.kernel_record.path, "us_per_step_forward": forward, "us_per_step_fwd_bwd": both})  # fmt: skip
    return rows


def cells(setup: Setup, gru_default: dict[str, float], gru_strict: dict[str, float]) -> list[dict]:
    """Each cell's forward+backward against nn.GRU of the same shape, every precision, and its peak memory."""
    rows = []
    for index, (B, T, n) in enumerate(setup.shapes):
        key = f"{B},{T},{n}"
        target = 1.0 if index == 0 else 1.5
        x = torch.randn(T, B, INPUT_SIZE, device=setup.device)
        for name in cells_at((B, T, n), setup):
            for precision in PRECISIONS:
                model = cell(name, n, setup, precision)
                run = forward_backward(model, x)
                ms = median_ms(run, setup)
                ratio = ms / gru_default[key]
                strict = gru_strict.get(key)
                rows.append({
                    "model": name, "shape": [B, T, n], "precision": precision, "path": model.kernel_record.path,
                    "fwd_bwd_ms": ms, "peak_mib": peak_mib(run, setup.device), "gru_ms": gru_default[key],
                    "gru_strict_ms": strict, "times_gru": ratio, "times_gru_strict": None if strict is None else ms / strict,
                    "target": target, "met": ratio <= target,
                })  # fmt: skip
    return rows


def precision_effects(setup: Setup) -> list[dict]:
    """Per precision: how orthogonal the product the kernel applies is, how far a state's norm drifts
    over many steps of it, and a copying run's losses (same seed, so only the precision differs)."""
    from trainables.train import train

    rows = []
    n = 16 if setup.tiny else 190
    T = setup.precision_steps
    for name in ("scornn", "eurnn"):
        for precision in PRECISIONS:
            model = cell(name, n, setup, precision)
            with torch.no_grad():
                model.activation.bias.zero_()  # modReLU with b = 0 is the identity: h_t = h_{t−1} U
                eye = torch.eye(n, device=setup.device)
                U_applied, _ = model(torch.zeros(1, n, INPUT_SIZE, device=setup.device), eye)
                h0 = torch.nn.functional.normalize(torch.randn(8, n, device=setup.device), dim=1)
                outputs, _ = model(torch.zeros(T, 8, INPUT_SIZE, device=setup.device), h0)
                drift = float((outputs[-1].norm(dim=1) - 1).abs().max())
            rows.append({"model": name, "precision": precision, "n": n, "ortho_error_applied": orthogonality_error(U_applied[0].double()), f"norm_drift_T{T}": drift})  # fmt: skip
    for name, hidden in (("scornn", {"hidden_size": 16 if setup.tiny else 190, "rho": 8 if setup.tiny else 95}), ("goru", {"hidden_size": 16 if setup.tiny else 128})):  # fmt: skip
        for precision in PRECISIONS:
            config = {
                "task": setup.precision_task, "model": name, "device": str(setup.device), "seed": 0,
                "task_settings": {"T": T, "valid_size": 4 if setup.tiny else 256, "test_size": 4 if setup.tiny else 256},
                "iterations": setup.copying_iterations, "eval_every": setup.copying_iterations,
                "batch_size": 4 if setup.tiny else 20, "lr": 1e-3, "optimizer": "rmsprop",
                "kernel": "fused", "kernel_precision": precision, **hidden,
            }  # fmt: skip
            started = time.perf_counter()
            metrics = train(config, lambda step, m: None)
            rows.append({"model": name, "precision": precision, "task": f"{setup.precision_task} T={T}", "iterations": setup.copying_iterations, "train_loss": metrics["train_loss"], "valid_loss": metrics["valid_loss"], "seconds": time.perf_counter() - started})  # fmt: skip
    return rows


def grids(setup: Setup) -> list[dict]:
    """The programs each scan launches at the papers' shapes, planned for a 132-SM H100."""
    rows = []
    for B, T, n in [(128, 200, 128), (50, 1000, 190), (32, 100, 512), (32, 50, 2048), (128, 200, 118)]:
        for precision in PRECISIONS:
            plans = {
                "givens (eurnn)": plan_reset_after(n, B, 0, True, precision, H100),
                "givens (goru)": plan_reset_after(n, B, 2, True, precision, H100),
                "dense (scornn)": plan_reset_after(n, B, 0, False, precision, H100),
                "dense (ncgru after)": plan_reset_after(n, B, 2, False, precision, H100),
                "reset before (ncgru)": plan_reset_before(n, B, precision, H100),
            }
            for scan, plan in plans.items():
                rows.append({**plan.grid_record(), "scan": scan, "shape": [B, T, n], "precision": precision})
    return rows


KERNEL_TEST_FILES = [
    "tests/trainables/models/scans/test_fused.py",
    "tests/trainables/models/scans/test_givens_matrix.py",
    "tests/trainables/models/scans/test_cayley_matrix.py",
    "tests/trainables/models/scans/test_plan.py",
    "tests/trainables/test_gpu_memory.py",
    "tests/trainables/test_capture.py",
]


def pytest_summary(output: str) -> str:
    """What failed and why, from a pytest run's output: its `E ` lines, `FAILED`/`ERROR` lines and
    counts. The tracebacks around them name the machine's own paths, which the JSON must not hold."""
    kept = [
        line
        for line in output.splitlines()
        if line.startswith(("E ", "FAILED ", "ERROR "))
        or re.search(r"\b\d+ (passed|failed|errors?)\b.* in [\d.]+s", line)
    ]
    return "\n".join(kept[-40:])


def _junit_totals(report: Path) -> dict[str, int]:
    import xml.etree.ElementTree as ElementTree

    suite = ElementTree.parse(report).getroot().find("testsuite")
    report.unlink()
    return {key: int(suite.get(key, 0)) for key in ("tests", "failures", "errors", "skipped")}


def kernel_tests(setup: Setup, out: Path) -> dict:
    """The kernel tests on this device (SWEEPER_TEST_DEVICE): split over parallel pytest processes
    on a GPU, in this process (`pytest.main`) in the interpreter."""
    selection = ["-k", setup.tests_filter] if setup.tests_filter else []
    if not setup.cuda:
        import pytest

        started = time.perf_counter()
        report = out / "tests.xml"
        code = pytest.main([*ONE_PROCESS, "-q", "-p", "no:cacheprovider", f"--junitxml={report}", *selection, *KERNEL_TEST_FILES])  # fmt: skip
        totals = _junit_totals(report)
        return {
            "device": str(setup.device), "collected": totals["tests"], "processes": 0, **totals,
            "passed": totals["tests"] - totals["failures"] - totals["errors"] - totals["skipped"],
            "seconds": time.perf_counter() - started, "failure_output": [] if code == 0 else [f"pytest exit {code}"],
        }  # fmt: skip
    env = {**os.environ, "SWEEPER_TEST_DEVICE": str(setup.device)}
    files = KERNEL_TEST_FILES
    listed = subprocess.run([sys.executable, "-m", "pytest", *ONE_PROCESS, "--collect-only", "-q", *selection, *files], capture_output=True, text=True, cwd=ROOT, env=env, check=False)  # fmt: skip
    ids = [line for line in listed.stdout.splitlines() if "::" in line]
    workers = max(1, min(len(ids), (os.cpu_count() or 2) // 2, 8)) if setup.cuda else 1
    started = time.perf_counter()
    runs = []
    for index in range(workers):
        report = out / f"tests-{index}.xml"
        chunk = ids[index::workers]
        command = [
            sys.executable,
            "-m",
            "pytest",
            *ONE_PROCESS,
            "-q",
            "-p",
            "no:cacheprovider",
            f"--junitxml={report}",
            *chunk,
        ]
        runs.append((subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True), report))  # fmt: skip
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    failed_output = []
    for process, report in runs:
        output, _ = process.communicate()
        if report.exists():
            for key, value in _junit_totals(report).items():
                totals[key] += value
        if process.returncode != 0:
            failed_output.append(pytest_summary(output))
    return {
        "device": str(setup.device), "collected": len(ids), "processes": workers, **totals,
        "passed": totals["tests"] - totals["failures"] - totals["errors"] - totals["skipped"],
        "seconds": time.perf_counter() - started, "failure_output": failed_output,
    }  # fmt: skip
