"""Where the hand-off between two trials in one worker process goes, hook by hook.

A sweep of short `fixed_work` trials at concurrency 1 (one reused worker process); the driver's
searcher hooks are timed as Tune calls them. For each hand-off it prints the time from the
trial's last report to `on_trial_complete`, that hook (Optuna `tell` and the trial's
attributes), the time to `suggest`, that hook (Optuna `ask`, the sampler, the seed attribute),
and Tune's part from there to the next trial's first line (the reused actor's reset), and their
share of the whole gap. The first hand-off is left out: it includes the worker's first trial.

    python -m benchmarks.overheads.handoff              # 12 trials
    python -m benchmarks.overheads.handoff --trials 30
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.overheads.sweep_runs import fixed_work_spec, run_sweep_in_process, use_plugin

HOOKS = ("suggest", "on_trial_complete")


def timed_hooks(calls: list[tuple[str, float, float]]) -> None:
    """Record (hook, start, end) of every call of the searcher's `HOOKS`, in epoch seconds."""
    from sweeper.run.search.searcher import MultiStudySearcher

    for name in HOOKS:
        hook = getattr(MultiStudySearcher, name)

        def timed(self: Any, *args: Any, _hook: Any = hook, _name: str = name, **kwargs: Any) -> Any:
            started = time.time()
            try:
                return _hook(self, *args, **kwargs)
            finally:
                calls.append((_name, started, time.time()))

        setattr(MultiStudySearcher, name, timed)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trials", type=int, default=12)
    args = parser.parse_args()
    use_plugin()
    from sweeper.run.tune.runtime import quiet_environment, start_ray

    quiet_environment(verbose=False)
    start_ray(None, verbose=False)
    calls: list[tuple[str, float, float]] = []
    timed_hooks(calls)
    spec = fixed_work_spec(
        "handoff", ["gru"], args.trials, 1, {"kind": "sleep", "step_seconds": 0.01}, 10, 5, grace_period=10
    )
    with tempfile.TemporaryDirectory(prefix="sweeper-handoff-") as tmp:
        run = run_sweep_in_process(spec, f"sqlite:///{Path(tmp) / 's.db'}", Path(tmp), None)
    trials = sorted(run.trials, key=lambda t: t.started)
    parts: dict[str, list[float]] = {
        k: [] for k in ("to complete", "complete", "to suggest", "suggest", "Tune")
    }
    for before, after in itertools.pairwise(trials[1:]):  # the first hand-off follows a cold start
        complete = next(c for c in calls if c[0] == "on_trial_complete" and c[1] > before.reported)
        suggest = next(c for c in calls if c[0] == "suggest" and c[1] > complete[1])
        parts["to complete"].append(complete[1] - before.reported)
        parts["complete"].append(complete[2] - complete[1])
        parts["to suggest"].append(suggest[1] - complete[2])
        parts["suggest"].append(suggest[2] - suggest[1])
        parts["Tune"].append(after.started - suggest[2])
    total = sum(statistics.mean(v) for v in parts.values())
    print(f"{len(parts['Tune'])} hand-offs, mean gap {total * 1000:.0f} ms")
    for name, values in parts.items():
        mean = statistics.mean(values)
        print(
            f"  {name:<12} {mean * 1000:6.1f} ms (min {min(values) * 1000:.0f}, max {max(values) * 1000:.0f})"
            f"  {mean / total:5.1%} of the gap"
        )


if __name__ == "__main__":
    main()
