"""Sweep quality on the service's question, every trial trained for real: which of GORU, scoRNN,
NC-GRU and GRU wins copying and denoise, and how many training iterations each search strategy
spends to find out. Its few seeds of short trials cannot decide between strategies;
`benchmarks/search_tables/` replays the same strategies on recorded curves over fifty seeds, and its
`--against` checks these sweeps against the replayed distribution.

Every strategy runs the service's own search, one trial at a time in this process: the studies
`create_sweep` registers (with the papers' points when the strategy takes them), the searcher
`study_searcher` builds (sampler, pruner, race), `warm_start`, and the per-model ASHA of
`make_scheduler`, around `trainables.train.train`, the function every trial runs. It measures the
search, not Ray (overhead.py measures Ray). Strategies, in the order they run:

    random     random search without pruning: the baseline
    default    the spec's former defaults: multivariate, grouped TPE, the papers' points, ASHA per model
    old        independent TPE (constant liar) with ASHA per model, no papers' points
    all        default with the warm start and the race
    +points    old, each study first trying the papers' published configurations
    +race      old with `budget.allocate: race`
    +warm      old, warm-started from the random sweep of the next seed (same task; what it reuses
               is not counted)
    +tpe       old with multivariate, grouped TPE
    +gp        old with Optuna's Gaussian-process sampler
    +grace     default with ASHA's first rung at a third of a trial instead of the first report

`old` draws a study's first 10 trials at random (Optuna's default `n_startup_trials`), so below
11 trials per model it searches at random with ASHA; the service's TPE and GP start after the
papers' points and a third of the budget at random (`sampler.startup_trials`, 3 to 10).

For each task and strategy it prints the median over seeds of the iterations each model's study
trained until one of its reports first reached the target (the task's memoryless baseline x
--target), the iterations the sweep trained until it named the final winner (the model whose best
complete trial is lowest, once every model has completed a trial; named once it leads to the
end), the iterations until it matched random's answer (named the winner with a best trial at
least as good as the median of the random sweeps' bests), the iterations the whole sweep spent,
each as a ratio to random's, and in how
many seeds the sweep named the right winner: the model with the lowest complete trial of the
random sweeps, pooled over seeds (unpruned, and free of the strategies under test). Every report
of every trial is written with the settings to --out.

Each task runs in its own process and logs every finished sweep under --work; a rerun with the
same --work goes on from there, and --summarise reads what the logs hold without training.

    python -m benchmarks.search_tables.trained --out benchmarks/results/search-trained.json    # days on 2 cores
    python -m benchmarks.search_tables.trained --quick --out benchmarks/results/search-trained.json
    python -m benchmarks.search_tables.trained --quick --summarise --out benchmarks/results/search-trained.json
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import sys
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import optuna
import torch
from ray.tune.schedulers import TrialScheduler
from ray.tune.search import Searcher

from benchmarks import figures_file
from benchmarks.search_tables.strategies import STRATEGIES, Strategy
from benchmarks.search_tables.strategies import sweep_spec as benchmark_spec
from benchmarks.search_tables.table import MODELS, TASK_NAMES, Settings
from benchmarks.search_tables.trained_summary import Report, Sweep, finite, print_summary, summarise
from sweeper.papers.points import first_points
from sweeper.run.launch import create_sweep, study_searcher, task_baseline
from sweeper.run.search.pruning import make_scheduler
from sweeper.run.search.warm_start import warm_start
from sweeper.spec.sweep import SweepSpec
from sweeper.store.database import Store, SweepRecord
from trainables.train import train

LOG = "sweeps.jsonl"
SETTINGS = ("T", "trials", "iterations", "eval_every", "hidden", "batch_size", "valid_size")  # of a log


class _Stopped(Exception):
    """ASHA stopped the trial."""


@dataclass(frozen=True)
class _TuneTrial:
    trial_id: str
    config: dict[str, Any]


def sweep_spec(task: str, strategy: Strategy, seed: int, args: argparse.Namespace) -> SweepSpec:
    settings = Settings(
        args.T, args.hidden, args.batch_size, args.valid_size, args.iterations, args.eval_every
    )
    return benchmark_spec(task, strategy, seed, settings, args.trials, list(MODELS))


def run_sweep(
    store: Store, tracking_uri: str, home: Path, task: str, name: str, seed: int,
    args: argparse.Namespace, earlier: SweepRecord | None,
) -> tuple[Sweep, SweepRecord]:  # fmt: skip
    strategy = STRATEGIES[name]
    spec = sweep_spec(task, strategy, seed, args)
    first, _ = first_points(spec)
    record = create_sweep(spec, store, tracking_uri, None, None, home, first)
    sweep = Sweep(task, name, seed, paper_points=sum(len(points) for points in first.values()))
    if strategy.warm and earlier is not None:
        sweep.reused = sum(started.reused for started in warm_start(store, record, earlier))
    searcher = study_searcher(store, record, tracker=None)
    if strategy.sampler == "old":
        for offset, plan in enumerate(searcher.plans):
            plan.study.sampler = optuna.samplers.TPESampler(
                seed=seed + offset, constant_liar=True, multivariate=False
            )
    scheduler = make_scheduler(spec, searcher, task_baseline(spec))
    np.random.seed(seed)  # ASHA draws its bracket from numpy's global generator
    metric = spec.resolved_objective().metric
    trained = {model: 0 for model in MODELS}
    number = 0
    while (config := searcher.suggest(str(number))) not in (None, Searcher.FINISHED):
        run_trial(searcher, scheduler, sweep, trained, metric, str(number), config)
        number += 1
    if searcher.race is not None:
        sweep.race_stops = dict(searcher.race.stopped)
    return sweep, record


def run_trial(
    searcher: Any, scheduler: Any, sweep: Sweep, trained: dict[str, int], metric: str,
    trial_id: str, config: dict[str, Any],
) -> None:  # fmt: skip
    """One trial as Tune runs it: each report to the searcher and the study's ASHA, which may stop it."""
    tune_trial = _TuneTrial(trial_id, config)
    scheduler.on_trial_add(None, tune_trial)
    model, last = config["model"], {}
    spent = sweep.reports[-1].seconds if sweep.reports else 0.0
    started = time.process_time()

    def report(step: int, metrics: dict[str, float]) -> None:
        nonlocal last
        trained[model] += step - last.get("step", 0)
        last = {**metrics, "step": step}
        if math.isfinite(metrics[metric]):
            seconds = spent + time.process_time() - started
            sweep.reports.append(
                Report(sum(trained.values()), model, trained[model], metrics[metric], False, seconds)
            )
        searcher.on_trial_result(trial_id, last)
        if scheduler.on_trial_result(None, tune_trial, last) == TrialScheduler.STOP:
            raise _Stopped

    try:
        train(config, report)
    except _Stopped:
        pass
    except Exception as exc:  # the service records a trial's error as its failure
        last = {"fail_reason": f"{type(exc).__name__}: {exc}"}
    scheduler.on_trial_complete(None, tune_trial, last)
    plan = next(p for p in searcher.plans if p.model == model)
    progress, completed = searcher.progress_of(trial_id), plan.counts["COMPLETE"]
    searcher.on_trial_complete(trial_id, last)
    if plan.counts["COMPLETE"] > completed:  # told COMPLETE, with the best value it reported
        seconds = spent + time.process_time() - started
        sweep.reports.append(
            Report(sum(trained.values()), model, trained[model], progress.best, True, seconds)
        )


def run_task(task: str, args: argparse.Namespace) -> list[Sweep]:
    """Every strategy and seed of one task, in one store under --work: strategy by strategy in
    the order given (random first, for the warm starts to reuse), each seed in turn. Each
    finished sweep is appended to the task's log there, and a rerun skips what the log holds,
    so a run cut short goes on where it stopped and its finished sweeps can be summarised."""
    torch.set_num_threads(1)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.simplefilter("ignore")
    home = args.work / task
    home.mkdir(parents=True, exist_ok=True)
    settings = {name: getattr(args, name) for name in SETTINGS}
    recorded = home / "settings.json"
    if recorded.exists() and json.loads(recorded.read_text()) != settings:
        raise SystemExit(f"{home} holds sweeps run with {recorded.read_text()}; use another --work")
    recorded.write_text(json.dumps(settings))
    sweeps = read_log(home / LOG)
    store = Store(f"sqlite:///{home / 'optuna.db'}")
    tracking_uri = f"sqlite:///{home / 'mlflow.db'}"
    done = {(s.strategy, s.seed) for s in sweeps}
    randoms = {seed: store.get_sweep(name) for seed, name in _random_records(home / LOG).items()}
    for name in args.strategies:
        for seed in range(args.seeds):
            if (name, seed) in done:
                continue
            started = time.monotonic()
            earlier = randoms.get((seed + 1) % args.seeds)
            sweep, record = run_sweep(store, tracking_uri, home, task, name, seed, args, earlier)
            if name == "random":
                randoms[seed] = record
            sweeps.append(sweep)
            with (home / LOG).open("a") as log:
                log.write(json.dumps(finite({**asdict(sweep), "record": record.name})) + "\n")
            best = min((r.value for r in sweep.reports if r.complete), default=math.inf)
            print(
                f"{task} seed {seed} {name:>8}: {sweep.reports[-1].sweep_iterations if sweep.reports else 0}"
                f" iterations, best complete {best:.4f}, {time.monotonic() - started:.0f} s",
                flush=True,
            )
    store.dispose()
    return sweeps


def read_log(path: Path) -> list[Sweep]:
    """The sweeps a task's log holds."""
    if not path.exists():
        return []
    sweeps = []
    for line in path.read_text().splitlines():
        data = json.loads(line)
        data.pop("record")
        data["reports"] = [Report(**r) for r in data["reports"]]
        sweeps.append(Sweep(**data))
    return sweeps


def _random_records(path: Path) -> dict[int, str]:
    """The random sweeps' names in the store, by seed, for warm starts."""
    if not path.exists():
        return {}
    entries = [json.loads(line) for line in path.read_text().splitlines()]
    return {e["seed"]: e["record"] for e in entries if e["strategy"] == "random"}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="3 seeds, 6 trials of 600 iterations per model, target 0.9 (about two hours on 2 cores)",
    )
    parser.add_argument("--tasks", nargs="+", choices=TASK_NAMES, default=list(TASK_NAMES))
    parser.add_argument("--strategies", nargs="+", choices=list(STRATEGIES), default=list(STRATEGIES))
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--trials", type=int, default=20, help="trials per model and sweep")
    parser.add_argument("--iterations", type=int, default=2000, help="iterations of one full trial")
    parser.add_argument("--eval-every", type=int, default=100)
    parser.add_argument("--T", type=int, default=100)
    parser.add_argument("--hidden", type=int, default=32, help="every model's hidden size")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--valid-size", type=int, default=200)
    parser.add_argument("--target", type=float, default=0.5, help="the target as a fraction of the baseline")
    parser.add_argument("--jobs", type=int, default=2, help="tasks run in parallel, one process each")
    parser.add_argument("--out", type=Path, help="write the settings, summary and every report here")
    parser.add_argument(
        "--work",
        type=Path,
        default=Path(tempfile.gettempdir()) / "sweeper-search-benchmark",
        help="the studies and each task's log of finished sweeps: a rerun goes on from there",
    )
    parser.add_argument(
        "--summarise", action="store_true", help="only summarise the sweeps the logs under --work hold"
    )
    args = parser.parse_args()
    if args.quick:
        args.seeds, args.trials, args.iterations, args.target = 3, 6, 600, 0.9
    args.strategies = ["random", *[name for name in args.strategies if name != "random"]]
    if args.seeds < 2 and {"+warm", "all"} & set(args.strategies):
        parser.error("warm starts reuse another seed's random sweep: run at least 2 seeds")
    if args.summarise:
        sweeps = [sweep for task in args.tasks for sweep in read_log(args.work / task / LOG)]
    else:
        with multiprocessing.get_context("spawn").Pool(min(args.jobs, len(args.tasks))) as pool:
            per_task = pool.starmap(run_task, [(task, args) for task in args.tasks])
        sweeps = [sweep for sweeps in per_task for sweep in sweeps]
    tasks = summarise(sweeps, args)
    print_summary(tasks, args)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        # where the logs lay is this machine's business, not the figures'
        settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items() if k != "work"}
        argv = sys.argv[1:]
        if "--work" in argv:
            del argv[argv.index("--work") : argv.index("--work") + 2]
        data = {
            "command": "python -m benchmarks.search_tables.trained " + " ".join(argv),
            "settings": settings,
            "machine": figures_file.machine("cpu"),  # every trial trained here, on its CPU
            "torch_threads_per_task": 1,
            "tasks": tasks,
            "sweeps": [asdict(sweep) for sweep in sweeps],
        }
        args.out.write_text(json.dumps(finite(data), indent=1) + "\n")
        print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
