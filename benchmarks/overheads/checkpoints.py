"""What a trial checkpoint costs a sweep: Tune's own pruning against sweeper's CheckpointPruner.

Tune keeps a trial's newest checkpoints itself with `CheckpointConfig(num_to_keep=k)`, but then
it forces a snapshot of the whole experiment (every trial's state, written and synced in the
driver's loop) each time a trial has made k checkpoints; the snapshot grows with the trials, so
a checkpoint costs more the longer the sweep. Sweeper leaves Tune's `num_to_keep` unset and
deletes superseded checkpoints in `sweeper.run.checkpoints.CheckpointPruner` instead.

Tune runs of the same trials, in one local Ray, as sweeper runs them (actors reused, two at a
time): reports without checkpoints (the baseline), a checkpoint with every report kept by
`num_to_keep=1`, and the same checkpoints kept by the pruner. After an untimed warm-up run, the
three alternate for `--rounds` rounds and each figure is its fastest round. Prints wall time, the
cost per checkpoint against the baseline, and the checkpoint folders left on disk.

    python -m benchmarks.overheads.checkpoints              # 200 trials of 5 checkpoints, 2 rounds
    python -m benchmarks.overheads.checkpoints --trials 500 --reports 4 --rounds 3
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

STATE_BYTES = 64 * 1024  # about what a small recurrent model and its optimizer state weigh


def trainable(config: dict[str, Any]) -> None:
    from ray import tune
    from ray.tune import Checkpoint

    for step in range(1, config["reports"] + 1):
        if not config["checkpoint"]:
            tune.report({"step": step})
            continue
        with tempfile.TemporaryDirectory() as folder:
            (Path(folder) / "state.pt").write_bytes(os.urandom(STATE_BYTES))
            tune.report({"step": step}, checkpoint=Checkpoint.from_directory(folder))


def run(
    mode: str, trials: int, reports: int, concurrency: int, storage: Path, name: str
) -> tuple[float, int]:
    """Wall seconds of one Tune run, and the checkpoint folders it left."""
    from ray import tune
    from ray.tune import CheckpointConfig

    from sweeper.run.tune.checkpoints import CheckpointPruner

    callbacks = [CheckpointPruner()] if mode == "sweeper" else []
    keep = 1 if mode == "tune" else None
    tuner = tune.Tuner(
        tune.with_resources(trainable, {"cpu": 1}),
        param_space={
            "reports": reports,
            "checkpoint": mode != "none",
            "i": tune.grid_search(list(range(trials))),
        },
        tune_config=tune.TuneConfig(max_concurrent_trials=concurrency, reuse_actors=True),
        run_config=tune.RunConfig(
            name=name,
            storage_path=str(storage),
            verbose=0,
            callbacks=callbacks,
            checkpoint_config=CheckpointConfig(num_to_keep=keep),
        ),
    )
    started = time.perf_counter()
    tuner.fit()
    wall = time.perf_counter() - started
    return wall, len(list((storage / name).glob("*/checkpoint_*")))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--reports", type=int, default=5, help="reports per trial, each with a checkpoint")
    parser.add_argument("--rounds", type=int, default=2, help="timed rounds (the fastest is shown)")
    parser.add_argument("--concurrency", type=int, default=2)
    args = parser.parse_args()

    import ray

    from sweeper.run.tune.runtime import quiet_environment, start_ray

    quiet_environment(verbose=False)
    start_ray(None, verbose=False)
    checkpoints = args.trials * args.reports
    modes = {"none": "(no checkpoints)", "tune": "Tune, num_to_keep=1", "sweeper": "sweeper's pruner"}
    print(
        f"{args.trials} trials x {args.reports} reports, {args.concurrency} at a time, {os.cpu_count()} CPUs"
    )
    walls: dict[str, float] = {}
    left: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="sweeper-checkpoints-") as tmp:
        run(
            "none", args.concurrency, 1, args.concurrency, Path(tmp), "warm-up"
        )  # start the actors' processes
        for round_ in range(args.rounds):
            for mode in modes:
                wall, left[mode] = run(
                    mode, args.trials, args.reports, args.concurrency, Path(tmp), f"{mode}-{round_}"
                )
                walls[mode] = min(wall, walls.get(mode, wall))
    print(f"{'checkpoints kept by':<22}{'wall s':>8}{'ms per checkpoint':>19}{'left on disk':>14}")
    for mode, label in modes.items():
        per = "-" if mode == "none" else f"{1000 * (walls[mode] - walls['none']) / checkpoints:.1f}"
        print(f"{label:<22}{walls[mode]:>8.2f}{per:>19}{left[mode] if mode != 'none' else '-':>14}")
    print(f"sweeper / Tune wall time: {walls['sweeper'] / walls['tune']:.2f}")
    ray.shutdown()


if __name__ == "__main__":
    main()
