"""Start-up of the read-side commands: `sweeper --help`, `status`, `list`, `summarize`, against
`python -c "import click"` (the floor of any Click program) measured in the same run, and the
machine's pace (10^7 empty loop iterations).

Each command runs as a new process, as a user runs it, against a study database holding one
finished sweep of two studies (written here, without Ray). `--before DIR` times a second
checkout of the project (for example `git worktree add DIR <commit>`) in the same run, so a
change's effect is read as a ratio of ratios.

    python -m benchmarks.overheads.startup
    python -m benchmarks.overheads.startup --before ../sweeper-before --runs 7
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import figures_file

ROOT = Path(__file__).resolve().parents[2]
SPEC = """\
name: startup
task: {name: denoise, settings: {T: 6, valid_size: 16}}
models: [gru, goru]
params: {iterations: 20, hidden_size: 8, lr: {float: [0.001, 0.01], log: true}}
budget: {trials: 3}
"""


def write_database(folder: Path) -> str:
    """One finished sweep of two studies with three complete trials each, as launch leaves it."""
    import optuna

    from sweeper.spec.loading import parse_spec
    from sweeper.store.database import Store, StudyRecord, SweepRecord

    url = f"sqlite:///{folder / 'sweeper.db'}"
    store = Store(url)
    spec = parse_spec(SPEC, "startup.yaml")
    record = SweepRecord(
        name="startup-1",
        spec_name="startup",
        spec_yaml=spec.to_yaml(),
        spec_hash=spec.digest(),
        status="finished",
        ray_address="local",
    )
    distributions = {"lr": optuna.distributions.FloatDistribution(0.001, 0.01, log=True)}
    for model in spec.models:
        name = f"startup-1/denoise/{model}"
        study = optuna.create_study(study_name=name, storage=store.optuna)
        for number in range(3):
            study.add_trial(
                optuna.trial.create_trial(
                    params={"lr": 0.001 * (number + 1)},
                    distributions=distributions,
                    value=1.0 / (number + 1),
                    intermediate_values={10: 2.0, 20: 1.0 / (number + 1)},
                    user_attrs={"seed": number},
                )
            )
        record.studies.append(StudyRecord(study_name=name, task="denoise", model=model))
    store.add_sweep(record)
    store.dispose()
    return url


def timed(command: list[str], checkout: Path, cwd: Path, runs: int) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(checkout), "COLUMNS": "200"}
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - started)
        if done.returncode != 0:
            sys.exit(f"{' '.join(command)} in {checkout} failed:\n{done.stdout}\n{done.stderr}")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--before", type=Path, help="another checkout to time in the same run")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    checkouts = {"now": ROOT, **({"before": args.before.resolve()} if args.before else {})}
    with tempfile.TemporaryDirectory(prefix="sweeper-startup-") as tmp:
        folder = Path(tmp)
        url = write_database(folder)
        cli = [sys.executable, "-m", "sweeper.cli"]
        commands = {
            "import click": [sys.executable, "-c", "import click"],
            "--help": [*cli, "--help"],
            "status": [*cli, "status", "--storage", url],
            "list": [*cli, "list", "--storage", url],
            "summarize": [*cli, "summarize", "startup-1", "--storage", url],
        }
        figures = []
        print(f"{'checkout':<9}{'command':<14}{'median s':>10}{'min s':>8}{'× import click':>16}")
        for label, checkout in checkouts.items():
            floor = None
            for name, command in commands.items():
                times = timed(command, checkout, folder, args.runs)
                median = statistics.median(times)
                floor = floor or median
                figures.append(
                    {
                        "checkout": label,
                        "command": name,
                        "median_s": median,
                        "min_s": min(times),
                        "ratio": median / floor,
                    }
                )
                print(
                    f"{label:<9}{name:<14}{median:>10.2f}{min(times):>8.2f}{median / floor:>16.1f}",
                    flush=True,
                )
    if args.before:
        for name in list(commands)[1:]:
            now, before = (
                next(f for f in figures if f["checkout"] == c and f["command"] == name)
                for c in ("now", "before")
            )
            print(f"{name}: {before['median_s'] / now['median_s']:.2f}x faster than before")
    loop = figures_file.loop_seconds(args.runs)
    print(f"10^7 empty loop iterations: {loop:.2f} s")
    figures.append({"checkout": "machine", "command": "10^7 empty loop iterations", "median_s": loop})
    figures_file.write("startup", "cpu", figures)


if __name__ == "__main__":
    main()
