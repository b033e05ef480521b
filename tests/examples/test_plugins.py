"""The worked plugin example runs as its README says: listed, trained, swept with its bound."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers import run_cli

EXAMPLE = Path(__file__).parents[2] / "examples" / "plugins"


@pytest.fixture
def env() -> dict[str, str]:
    return {
        **os.environ,
        "SWEEPER_PLUGINS": "my_models,my_tasks",
        "PYTHONPATH": os.pathsep.join([str(EXAMPLE), os.environ.get("PYTHONPATH", "")]),
        "COLUMNS": "200",
    }


@pytest.mark.slow
def test_the_plugins_are_listed_with_their_files(env: dict[str, str], tmp_path: Path) -> None:
    models = run_cli(["models"], tmp_path, env)
    assert models.returncode == 0, models.stderr
    assert "lowrank_rnn (examples/plugins/my_models.py)" in models.stdout
    assert "≤ hidden_size" in models.stdout
    tasks = run_cli(["tasks"], tmp_path, env)
    assert "running_mean (examples/plugins/my_tasks.py)" in tasks.stdout


@pytest.mark.slow
def test_the_plugin_model_trains_on_the_plugin_task(env: dict[str, str], tmp_path: Path) -> None:
    settings = [
        "hidden_size=16",
        "rank=4",
        "lr=0.01",
        "iterations=40",
        "eval_every=20",
        "T=10",
        "valid_size=64",
    ]
    args = ["train", "--task", "running_mean", "--model", "lowrank_rnn"]
    trained = run_cli([*args, *(a for s in settings for a in ("--set", s))], tmp_path, env)
    assert trained.returncode == 0, trained.stdout + trained.stderr
    losses = [
        float(part.split("=")[1])
        for line in trained.stdout.splitlines()
        for part in line.split()
        if part.startswith("valid_loss=")
    ]
    assert len(losses) == 2 and losses[-1] < losses[0]


def test_a_rank_above_the_hidden_size_is_refused_naming_both(env: dict[str, str], tmp_path: Path) -> None:
    args = [
        "train",
        "--task",
        "running_mean",
        "--model",
        "lowrank_rnn",
        "--set",
        "hidden_size=8",
        "--set",
        "rank=20",
    ]
    refused = run_cli(args, tmp_path, env)
    assert refused.returncode == 2
    assert "rank: 20 exceeds hidden_size 8" in refused.stderr


@pytest.mark.slow
def test_the_example_sweep_searches_rank_as_a_fraction(env: dict[str, str], tmp_path: Path) -> None:
    planned = run_cli(["launch", str(EXAMPLE / "sweep.yaml"), "--dry-run"], tmp_path, env)
    assert planned.returncode == 0, planned.stderr
    assert "rank: fraction [0.1, 0.5] of hidden_size" in planned.stdout
