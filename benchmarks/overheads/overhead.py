"""Per-trial overhead of a sweep: sweeper on a local Ray against a plain in-process Optuna loop.

Both run the same trials of the `fixed_work` plugin task (a fixed sleep or a fixed number of
matrix products per step, through `trainables.train.train`), at the same concurrency, in the
same run. Sweeper's side is the real path: `create_sweep` and `run_sweep`, so the multi-study
searcher, the per-study ASHA (its grace period is the whole trial, so no trial is cut and both
sides do the same work), the SQLite study database and MLflow tracking are all in the figures.

Per-trial overhead is (sweeper − Optuna) / trials, the measure the issue's baseline uses.
*warm* is the ratio without the start-up, i.e. once the trial processes have started and
imported torch and Ray Tune (which the in-process baseline did before it was timed). *vs
serial* is sweeper's wall time against the Optuna loop one trial at a time: what running
trials in parallel processes gains over the plain loop. The sweeper wall time is split by the
trials' own timestamps into start-up (until the first trial starts), the gaps between
consecutive trials in one worker process, and the tail. Every sweeper row runs in a process of
its own, after its baseline has run, as a launch does: it starts a new local Ray sized to the
sweep, then registers the sweep (imports of MLflow and the rest included), then runs it. Ray's
start and the registration are printed apart (a sweep pays them once), while the idle workers'
imports that go on after them (`sweeper.run.tune.workers`) are in the figures wherever registration did
not hide them; *launch s* is all three together, Ray's start to the sweep's end.

    python -m benchmarks.overheads.overhead                  # 20 trials of 0.1 s and of 1 s, concurrency 1 and 2
    python -m benchmarks.overheads.overhead --quick          # 8 and 4 trials
    python -m benchmarks.overheads.overhead --work compute   # matrix products instead of sleep
    python -m benchmarks.overheads.overhead --seconds 1 --concurrency 1   # one configuration
    python -m benchmarks.overheads.overhead --profile 15     # also the driver's 15 costliest functions
    python -m benchmarks.overheads.overhead --gpu-packing    # trials/hour at 1, 2, 4, 8 per GPU, GRU and GORU
    python -m benchmarks.overheads.overhead --gpu-packing --model ncgru   # the same for another model
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import math
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import optuna
import torch

from benchmarks import figures_file
from benchmarks.overheads.sweep_runs import (
    ROOT,
    fixed_work_spec,
    fresh_ray,
    handoff_gaps,
    run_sweep_in_process,
    use_plugin,
)

STEPS = 10  # each trial's work is split over 10 steps, reported twice (steps 5 and 10)
EVAL_EVERY = 5
PACKINGS = (1, 2, 4, 8)
ROW = "overhead-row: "  # how a sweeper row's child process hands back its figures


def calibrate_matmuls(seconds: float) -> int:
    """Matrix products per step that take `seconds` on one thread here (the work is then fixed)."""
    from sweeper_bench_plugin import busy_work

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        busy_work(20)
        started = time.perf_counter()
        busy_work(200)
        per_matmul = (time.perf_counter() - started) / 200
    finally:
        torch.set_num_threads(threads)
    return max(1, round(seconds / per_matmul))


def work_settings(kind: str, trial_seconds: float) -> dict[str, Any]:
    step = trial_seconds / STEPS
    if kind == "sleep":
        return {"kind": "sleep", "step_seconds": step}
    return {"kind": "compute", "step_matmuls": calibrate_matmuls(step)}


def optuna_loop(settings: dict[str, Any], trials: int, concurrency: int) -> float:
    """Seconds for a plain in-memory Optuna study to run the same trials, `concurrency` threads."""
    from trainables.train import train

    def objective(trial: optuna.Trial) -> float:
        config = {
            "task": "fixed_work",
            "task_settings": settings,
            "model": "gru",
            "seed": trial.number,
            "iterations": STEPS,
            "eval_every": EVAL_EVERY,
            "batch_size": 1,
            "hidden_size": 4,
            "lr": trial.suggest_float("lr", 1e-3, 1e-1, log=True),
        }
        best = math.inf

        def report(step: int, metrics: dict[str, float]) -> None:
            nonlocal best
            best = min(best, metrics["valid_loss"])
            trial.report(metrics["valid_loss"], step)

        train(config, report)
        return best

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as in a 1-CPU Ray worker
    try:
        study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=0, constant_liar=True))
        started = time.perf_counter()
        study.optimize(objective, n_trials=trials, n_jobs=concurrency)
        return time.perf_counter() - started
    finally:
        torch.set_num_threads(threads)


def sweeper_run(
    settings: dict[str, Any], trials: int, concurrency: int, profile: int
) -> tuple[float, dict[str, float]]:
    """Seconds `run_sweep` takes for the trials, and where the time went, measured in a new
    process started for it, as each `sweeper launch` is: registration imports MLflow and the
    rest as a launch does, and Ray starts anew."""
    job = {"settings": settings, "trials": trials, "concurrency": concurrency, "profile": profile}
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.overheads.overhead", "--row", json.dumps(job)],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    if result.returncode != 0:
        sys.exit(f"the sweeper row failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}")
    lines = result.stdout.splitlines()
    row = json.loads(next(line for line in reversed(lines) if line.startswith(ROW))[len(ROW) :])
    if profile:
        print("\n".join(line for line in lines if not line.startswith(ROW)))
    return row["wall"], row["parts"]


def sweeper_row(job: dict[str, Any]) -> None:
    """The child side of `sweeper_run`: start Ray, register and run the sweep, print the row."""
    from sweeper.run.tune.runtime import quiet_environment

    quiet_environment(verbose=False)
    trials = job["trials"]
    spec = fixed_work_spec(
        "overhead",
        ["gru"],
        trials,
        job["concurrency"],
        job["settings"],
        iterations=STEPS,
        eval_every=EVAL_EVERY,
        grace_period=STEPS,
    )
    ray_s = fresh_ray(spec)
    with tempfile.TemporaryDirectory(prefix="sweeper-overhead-") as tmp:
        directory = Path(tmp)
        storage = f"sqlite:///{directory / 'sweeper.db'}"
        profiler = cProfile.Profile() if job["profile"] else None
        if profiler is not None:
            profiler.enable()
        run = run_sweep_in_process(spec, storage, directory, address=None)
        if profiler is not None:
            profiler.disable()
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(job["profile"])
            print(text.getvalue())
    if run.status != "finished" or len(run.trials) != trials:
        sys.exit(f"the sweep ended {run.status} with {len(run.trials)} of {trials} trials")
    first = min(t.started for t in run.trials)
    last = max(t.reported for t in run.trials)
    gaps = handoff_gaps(run.trials)
    parts = {
        "ray": ray_s,
        "register": run.create_s,
        "startup": first - (run.started + run.create_s),
        "gap": statistics.mean(gaps) if gaps else math.nan,
        "tail": run.ended - last,
        "processes": len({t.pid for t in run.trials}),
    }
    print(ROW + json.dumps({"wall": run.run_s, "parts": parts}), flush=True)


def overhead(args: argparse.Namespace) -> None:
    from trainables.catalog import load_all

    load_all()  # a trial process imports the models and tasks once; so does the baseline, untimed
    print(
        f"machine: {os.cpu_count()} CPUs; each sweeper row runs in a new process with a new Ray, as a launch does"
    )
    counts = {0.1: 8, 1.0: 4} if args.quick else {0.1: args.trials, 1.0: args.trials}
    counts = {seconds: n for seconds, n in counts.items() if seconds in args.seconds}
    print(
        f"{'work':>6} {'conc':>4} {'trials':>6} {'optuna s':>9} {'sweeper s':>9} {'ratio':>6} {'warm':>5} "
        f"{'vs serial':>9} {'overhead/trial':>14} {'ray s':>5} {'register':>8} {'startup':>7} {'gap':>6} "
        f"{'tail':>5} {'procs':>5} {'launch s':>8}"
    )
    for seconds, trials in counts.items():
        settings = work_settings(args.work, seconds)
        serial = optuna_loop(settings, trials, 1)  # before Ray starts: nothing else runs
        for concurrency in args.concurrency:
            baseline = serial if concurrency == 1 else optuna_loop(settings, trials, concurrency)
            wall, parts = sweeper_run(settings, trials, concurrency, args.profile)
            launch = parts["ray"] + parts["register"] + wall
            print(
                f"{seconds:>5g}s {concurrency:>4} {trials:>6} {baseline:>9.2f} {wall:>9.2f} "
                f"{wall / baseline:>6.2f} {(wall - parts['startup']) / baseline:>5.2f} {wall / serial:>9.2f} "
                f"{(wall - baseline) / trials:>12.2f} s {parts['ray']:>5.2f} {parts['register']:>8.2f} "
                f"{parts['startup']:>7.2f} {parts['gap']:>6.2f} {parts['tail']:>5.2f} {parts['processes']:>5.0f} "
                f"{launch:>8.2f}",
                flush=True,
            )


def gpu_packing(args: argparse.Namespace) -> None:
    """Trials/hour of small denoise models at 1, 2, 4 and 8 trials per GPU (`resources.gpus` = 1/k)."""
    if not torch.cuda.is_available():
        sys.exit("--gpu-packing needs a CUDA GPU and none is visible here: nothing was run")
    import ray

    from sweeper.run.tune.runtime import quiet_environment, start_ray

    quiet_environment(verbose=False)
    start_ray(None, verbose=False)
    gpus = int(ray.cluster_resources().get("GPU", 0))
    cpus = ray.cluster_resources().get("CPU", 1)
    print(f"GPUs: {gpus} x {torch.cuda.get_device_name(0)}, {cpus:g} CPUs, models {', '.join(args.model)}")
    rows = []
    for model in args.model:
        base = None
        for per_gpu in PACKINGS:
            concurrency = per_gpu * gpus
            trials = max(args.trials, 4 * concurrency)  # at least four rounds of trials per slot
            iterations = 300 if args.quick else 1000
            spec = {
                "name": f"packing-{model}-{per_gpu}",
                "task": {"name": "denoise", "settings": {"T": 100, "valid_size": 256}},
                "models": [model],
                "params": {
                    "iterations": iterations,
                    "eval_every": 100,
                    "batch_size": 128,
                    "hidden_size": 128,
                    "lr": {"float": [1e-4, 1e-2], "log": True},
                },
                "scheduler": {"name": "none"},
                "budget": {"trials": trials, "max_concurrent": concurrency},
                "resources": {"cpus": min(1.0, cpus / concurrency), "gpus": 1 / per_gpu},
                "seed": 0,
            }
            fresh_ray(spec)
            with tempfile.TemporaryDirectory(prefix="sweeper-packing-") as tmp:
                run = run_sweep_in_process(spec, f"sqlite:///{Path(tmp) / 's.db'}", Path(tmp), None)
            rate = trials / run.run_s * 3600
            base = base or rate
            print(
                f"{model} {per_gpu} per GPU: {trials} trials in {run.run_s:.1f} s = {rate:.0f} trials/h "
                f"({rate / base:.2f}x 1 per GPU)",
                flush=True,
            )
            rows.append(
                {
                    "model": model,
                    "per_gpu": per_gpu,
                    "trials": trials,
                    "iterations": iterations,
                    "wall_s": run.run_s,
                    "trials_per_hour": rate,
                    "times_one_per_gpu": rate / base,
                }
            )
    ray.shutdown()
    figures_file.write(f"gpu_packing{'-quick' if args.quick else ''}", "cuda", rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer trials")
    parser.add_argument("--trials", type=int, default=20, help="trials per configuration")
    parser.add_argument("--work", choices=("sleep", "compute"), default="sleep")
    parser.add_argument(
        "--seconds",
        type=float,
        nargs="+",
        choices=(0.1, 1.0),
        default=[0.1, 1.0],
        help="trial lengths to run",
    )
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 2], help="trials at a time")
    parser.add_argument(
        "--profile", type=int, default=0, metavar="N", help="print the driver's N costliest functions"
    )
    parser.add_argument("--gpu-packing", action="store_true", help="trials/hour at 1, 2, 4, 8 trials per GPU")
    parser.add_argument(
        "--model", nargs="+", default=["gru", "goru"], help="models --gpu-packing trains (denoise, 128 units)"
    )
    parser.add_argument("--row", help=argparse.SUPPRESS)  # one sweeper row, in its own process
    args = parser.parse_args()
    use_plugin()
    if args.row:
        sweeper_row(json.loads(args.row))
    elif args.gpu_packing:
        gpu_packing(args)
    else:
        overhead(args)


if __name__ == "__main__":
    main()
