"""Where a paper-scale training step's time goes, model by model and kernel by kernel.

`paper_trial.py` says how many times GRU's step each model's step costs; this says why: each
model's uncaptured step (the trial's own `PlainStep`: the task's batch, forward, backward,
clipping, every optimizer and the models' after-step hooks) under the profiler, its kernels
summed by name. Beside the kernels' device time per step it prints the step's wall time (timed
without the profiler), so the gap between them is the time the device waits on the host
(launches), the part a captured step can remove; what is left is the kernels' own, the part
only faster kernels remove.

Denoise at T = 200, batch 128, the papers' hidden sizes (those of `paper_trial.py`):

    python -m benchmarks.gpu.step_profile --device cuda
    python -m benchmarks.gpu.step_profile --quick        # tiny, on a CPU: ATen ops instead of kernels
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

import torch
from torch.autograd import DeviceType
from torch.autograd.profiler_util import FunctionEvent
from torch.profiler import ProfilerActivity, profile

from benchmarks import figures_file
from benchmarks.gpu import paper_trial
from trainables.step import PlainStep, StepParts
from trainables.train import TrialConfig, build, build_optimizers, config_from_settings, kernel_facts

MODELS = ("gru", "lstm", "eurnn", "scornn", "goru", "ncgru")
TOP = 8  # kernels listed per model


def plain_step(model: str, hidden: dict[str, int], args: argparse.Namespace) -> PlainStep:
    """The step a trial of `model` takes (`train` builds it the same way), never captured: the
    profiler names each kernel launch, which a graph's replay would hide."""
    settings = {**hidden, "batch_size": args.batch, "lr": 1e-3, "optimizer": "adam", "T": args.T}
    trial = TrialConfig.from_mapping(config_from_settings("denoise", model, settings, device=args.device))
    task, network, rnns = build(trial, torch.device(args.device))
    optimizers = build_optimizers(rnns, network, trial)
    zero = torch.zeros((), device=args.device)
    clip = trial.training["grad_clip"] if trial.training["grad_clip"] > 0 else float("inf")
    return PlainStep(StepParts(task, network, optimizers, rnns, clip, zero, zero.clone()), "off")


def take(step: PlainStep, steps: int, device: torch.device) -> float:
    """Wall milliseconds per step over `steps` steps, the device's work included."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    started = time.perf_counter()
    for _ in range(steps):
        step.gradients()
        step.finish()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return 1000 * (time.perf_counter() - started) / steps


def kernels(events: Iterable[FunctionEvent], steps: int, cuda: bool) -> tuple[float, float, list[dict]]:
    """Busy milliseconds per step, launches per step and the kernels by time: on a GPU each
    device kernel (a `record_function` range drawn on the device, such as the optimizer's, spans
    kernels counted already); on a CPU each op's own time (no children), where a CPU step goes."""
    by_name: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for event in events:
        on_device = event.device_type == DeviceType.CUDA
        if on_device != cuda or (cuda and event.is_user_annotation):
            continue
        if not cuda and event.self_cpu_time_total <= 0:
            continue
        spent = event.time_range.elapsed_us() if cuda else event.self_cpu_time_total
        by_name[event.name][0] += spent / 1000
        by_name[event.name][1] += 1
    busy = sum(ms for ms, _ in by_name.values()) / steps
    launches = sum(count for _, count in by_name.values()) / steps
    ranked = sorted(by_name.items(), key=lambda item: -item[1][0])
    top = [
        {
            "kernel": name[:120],
            "ms_per_step": ms / steps,
            "per_step": count / steps,
            "share": ms / steps / busy,
        }
        for name, (ms, count) in ranked[:TOP]
    ]
    return busy, launches, top


def profile_model(model: str, args: argparse.Namespace) -> dict:
    """The step's wall time, fastest of three timings without the profiler (the profiler's own
    cost stays out of it), then its kernels over the same number of steps under the profiler."""
    device = torch.device(args.device)
    hidden = {"hidden_size": 12} if args.quick else paper_trial.PAPER_HIDDEN[model]
    step = plain_step(model, hidden, args)
    take(step, args.warmup, device)  # first-use self-checks, compilation, optimizer state
    wall = min(take(step, args.steps, device) for _ in range(3))
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities, acc_events=True) as profiler:  # one cycle: kept without a warning
        take(step, args.steps, device)
    busy, launches, top = kernels(profiler.events(), args.steps, device.type == "cuda")
    return {
        "model": model,
        **hidden,
        "path": kernel_facts(step.parts.rnns).get("kernel", "torch"),
        "wall_ms_per_step": wall,
        "busy_ms_per_step": busy,
        "launches_per_step": launches,
        "top": top,
    }


def main() -> None:
    """Profile each model in turn; a model that fails is named in the table and the rest still run."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(paper_trial.PAPER_HIDDEN))
    parser.add_argument("--T", type=int, default=200)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--steps", type=int, default=20, help="steps timed and profiled")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="T = 5, batch 4, 12 units, 2 steps")
    parser.add_argument(
        "--out", type=Path, help="figures file [default: benchmarks/results/step_profile-DEVICE.json]"
    )
    args = parser.parse_args()
    if args.quick:
        args.T, args.batch, args.steps, args.warmup = 5, 4, 2, 1
    rows = []
    for model in args.models:
        try:
            row = profile_model(model, args)
        except Exception as exc:  # one model's failure is a figure too; the others still run
            row = {"model": model, "error": f"{type(exc).__name__}: {exc}"}
        rows.append(row)
    gru = next((r for r in rows if r["model"] == "gru" and "error" not in r), None)
    print(f"denoise T={args.T}, batch {args.batch}, {args.steps} steps, on {args.device}")
    print(f"{'model':<8}{'path':>10}{'wall ms':>9}{'× gru':>7}{'busy ms':>9}{'idle %':>8}{'launches':>10}")
    for row in rows:
        if "error" in row:
            print(f"{row['model']:<8} failed: {row['error']}")
            continue
        times = row["wall_ms_per_step"] / gru["wall_ms_per_step"] if gru else float("nan")
        idle = 100 * max(0.0, 1 - row["busy_ms_per_step"] / row["wall_ms_per_step"])
        print(
            f"{row['model']:<8}{row['path']:>10}{row['wall_ms_per_step']:>9.2f}{times:>7.2f}"
            f"{row['busy_ms_per_step']:>9.2f}{idle:>8.0f}{row['launches_per_step']:>10.0f}"
        )
        for kernel in row["top"]:
            print(f"    {kernel['ms_per_step']:>7.3f} ms {100 * kernel['share']:>4.0f}% ×{kernel['per_step']:<4.0f} {kernel['kernel'][:70]}")  # fmt: skip
    name = f"step_profile-{args.device.split(':')[0]}{'-quick' if args.quick else ''}"
    figures = {"task": "denoise", "T": args.T, "batch": args.batch, "steps": args.steps, "rows": rows}
    figures_file.write(name, args.device, figures, args.out)


if __name__ == "__main__":
    main()
