"""The README's examples run as written: the quick ones here, in a folder left as the main command
leaves it (a finished `denoise-1`); the others are named with the test that covers them."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from sweeper.spec.loading import parse_spec
from sweeper.spec.preflight import local_gpus
from tests.helpers import recorded_sweep

ROOT = Path(__file__).parents[1]
README = (ROOT / "README.md").read_text()
QUICK = {  # run here: `sweeper <command> [first argument]` → exit code expected
    "status": 0,
    "summarize": 0,  # the latest sweep
    "summarize denoise-1": 0,
    "report": 0,
    "export": 0,
    "list": 0,
    "models": 0,
    "tasks": 0,
    "launch configs/denoise.yaml --dry-run": 0 if local_gpus() else 2,  # 2: it asks for GPUs here
}
ELSEWHERE = {  # not run here, and where they are covered
    "confirm denoise-1": "tests/sweeper/run/test_confirm.py (real Ray)",
    "ui denoise-1": "serves until Ctrl-C; tests/sweeper/cli/test_cli.py, tests/sweeper/results/test_dashboard.py",
    "launch configs/denoise.yaml": "a paper-scale sweep; tests/sweeper/run/test_sweep_end_to_end.py",
    "resume denoise-1": "tests/sweeper/run/test_sweep_end_to_end.py",
    "sync-mlflow denoise-1": "tests/sweeper/run/tracking/test_reliability_tracking.py",
    "data fetch": "the network; tests/trainables/tasks/test_data.py",
    "train": "test_the_readmes_training_run_learns, below; --init-from in tests/sweeper/run/test_sweep_end_to_end.py",
    "best": "needs kept weights: tests/sweeper/run/test_sweep_end_to_end.py, tests/sweeper/results/test_kept_weights.py",
    "reproduce ncgru": "tests/sweeper/papers/test_reproduce_end_to_end.py (dry run and smoke run)",
}


def examples() -> list[list[str]]:
    section = README[README.index("## Using it") : README.index("### A sweep spec")]
    lines = [
        line.split("#")[0].strip()
        for block in re.findall(r"```bash\n(.*?)```", section, re.S)
        for line in block.splitlines()
    ]
    return [shlex.split(line)[1:] for line in lines if line.startswith("sweeper ")]


def key(args: list[str]) -> str:
    """The command and its first argument, and for a launch whether it is a dry run."""
    named = len(args) > 1 and not args[1].startswith("-")  # a sweep, a config: else the latest
    words = args[:2] if named and args[0] not in ("models", "tasks", "list", "status") else args[:1]
    if args[0] == "launch" and "--dry-run" in args:
        words = [*words, "--dry-run"]
    if args[0] in ("data", "train"):
        words = words[:1] if args[0] == "train" else ["data", "fetch"]
    return " ".join(words)


def test_every_readme_example_is_run_here_or_covered_elsewhere() -> None:
    keys = {key(args) for args in examples()}
    assert keys <= set(QUICK) | set(ELSEWHERE), keys - set(QUICK) - set(ELSEWHERE)
    assert set(QUICK) <= keys


@pytest.fixture(scope="module")
def after_the_main_command(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding what the main command leaves (`tests.helpers.recorded_sweep`)."""
    return recorded_sweep(tmp_path_factory.mktemp("readme"))


def sweeper(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWEEPER_")} | {"COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "sweeper.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow
@pytest.mark.xdist_group("readme_examples")  # they share one recorded sweep, built on one worker
@pytest.mark.parametrize("args", [a for a in examples() if key(a) in QUICK], ids=" ".join)
def test_the_readmes_quick_examples_run_as_written(after_the_main_command: Path, args: list[str]) -> None:
    done = sweeper(args, after_the_main_command)
    assert done.returncode == QUICK[key(args)], done.stdout + done.stderr
    if done.returncode == 2:  # the dry run on a machine without GPUs says what to do instead
        assert "add --no-gpus" in done.stderr


@pytest.mark.slow
def test_the_readmes_training_run_learns(tmp_path: Path) -> None:
    """Only a task, a model and a learning rate in the papers' range, on the defaults: it learns.
    The run is stopped once it has (what it does after that is no part of this claim)."""
    (args,) = [a for a in examples() if a[0] == "train" and "--init-from" not in a]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWEEPER_")}
    process = subprocess.Popen(
        [sys.executable, "-m", "sweeper.cli", *args], cwd=tmp_path, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    deadline = threading.Timer(600, process.kill)  # a hung run fails here instead of stalling CI
    deadline.start()
    lines, losses, baseline = [], [], None
    try:
        for line in process.stdout:
            lines.append(line)
            if found := re.search(r"valid_loss=([0-9.e-]+).*baseline=([0-9.e-]+)", line):
                losses.append(float(found.group(1)))
                baseline = float(found.group(2))
                if losses[-1] < 0.25 * baseline:
                    break
    finally:
        deadline.cancel()
        process.kill()
        process.wait()
    output = "".join(lines)
    steps = [line for line in lines if line.startswith("step")]
    assert steps and steps[0].split()[:2] == ["step", "1"], output  # progress from the first step
    assert baseline is not None and losses[-1] < 0.25 * baseline, (losses, baseline, output)


def test_the_readmes_spec_is_a_valid_spec() -> None:
    (block,) = re.findall(r"### A sweep spec\n\n```yaml\n(.*?)```", README, re.S)
    spec = parse_spec(block, "README.md")
    assert spec.models and yaml.safe_load(block)["name"] == spec.name
