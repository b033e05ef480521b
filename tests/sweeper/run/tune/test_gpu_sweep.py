"""GPU workers under test on a host without a GPU: a local Ray that declares one
(`SWEEPER_DECLARED_GPUS`) runs sweeps whose trials ask for GPU shares, end to end through
`sweeper launch`. Ray packs at most 1/share trials of a model on the GPU, each trial records the
GPU Ray gave it, and `status` shows the packing. Trials train on the CPU only because the test says
so (`SWEEPER_GPU_TRIALS_ON_CPU`); without that, a trial given a GPU its process cannot use fails at
its start, naming the host and what is missing, and the sweep records it and goes on."""

from __future__ import annotations

import socket
from pathlib import Path

import optuna
import pytest
from mlflow.tracking import MlflowClient

from sweeper.run.tune.trial import GPU_TRIALS_ON_CPU_ENV
from sweeper.store.database import Store
from tests.helpers import GPU_PLUGINS, cli_env, gpu_sweep, run_cli, write_spec

pytestmark = pytest.mark.slow


def trials_of(storage: str, sweep: str) -> list[optuna.trial.FrozenTrial]:
    store = Store(storage)
    try:
        (study,) = store.get_sweep(sweep).studies
        return optuna.load_study(study_name=study.study_name, storage=store.optuna).get_trials()
    finally:
        store.dispose()


def met(trials: list[optuna.trial.FrozenTrial]) -> list[float]:
    """How many trials of its sweep each trial saw started before its first step."""
    return [t.user_attrs["final_metrics"]["met"] for t in trials]


def most_at_once(trials: list[optuna.trial.FrozenTrial]) -> int:
    """The most trials that ran at the same moment, from the times their processes reported."""
    spans = [
        (t.user_attrs["final_metrics"]["trial_started_at"], t.user_attrs["final_metrics"]["reported_at"])
        for t in trials
    ]
    return max(sum(start <= moment < end for start, end in spans) for moment, _ in spans)  # fmt: skip


def test_a_sweep_packs_trials_on_declared_gpus_and_each_records_its_gpu(tmp_path: Path) -> None:
    storage, tracking = f"sqlite:///{tmp_path / 'sweeper.db'}", f"sqlite:///{tmp_path / 'mlflow.db'}"
    orthogonal = write_spec(
        tmp_path,
        gpu_sweep("orthogonal", "scornn", {"gpus": 0.5}, 4, 3, tmp_path / "two", 2),
        "orthogonal.yaml",
    )
    gated = write_spec(
        tmp_path,
        gpu_sweep(
            "gated", "gru", {"gpus": 0.5, "per_model": {"gru": {"gpus": 0.125}}}, 4, 3, tmp_path / "three", 3
        ),
        "gated.yaml",
    )
    env = cli_env({**GPU_PLUGINS, GPU_TRIALS_ON_CPU_ENV: "1"})
    # unpriced: timing the task's steps would count as trials that met (and wait for the others)
    launched = run_cli(
        [
            "launch",
            str(orthogonal),
            str(gated),
            "--storage",
            storage,
            "--tracking-uri",
            tracking,
            "--no-price",
        ],
        tmp_path,
        env,
    )
    assert launched.returncode == 0, launched.stdout + launched.stderr
    assert launched.stdout.count("winner: ") == 2  # each sweep ends with its verdict

    scornn, gru = trials_of(storage, "orthogonal-1"), trials_of(storage, "gated-1")
    assert [t.state.name for t in scornn + gru] == ["COMPLETE"] * 8
    # 0.5 of the one GPU each: two ran at once (the first two met), never the third Tune allowed
    assert min(met(scornn)) >= 2 and most_at_once(scornn) == 2
    assert min(met(gru)) >= 3  # 0.125 each: three met, more at once than the 0.5 trials could
    for trial in scornn + gru:
        facts = trial.user_attrs["final_metrics"]
        assert facts["gpu_ids"] == "0" and facts["host"] == socket.gethostname()
    assert {t.user_attrs["final_metrics"]["gpu_share"] for t in scornn} == {0.5}  # the memory cap's share
    assert {t.user_attrs["final_metrics"]["gpu_share"] for t in gru} == {0.125}

    client = MlflowClient(tracking)
    (experiment,) = [e for e in client.search_experiments() if e.name == "gated-1"]
    runs = client.search_runs([experiment.experiment_id], "tags.`sweeper.role` = 'trial'")
    assert {run.data.tags["gpu_ids"] for run in runs} == {"0"} and len(runs) == 4

    status = run_cli(["status", "gated-1", "--storage", storage], tmp_path, env)
    assert "0.125 (8 per GPU) on 0" in status.stdout, status.stdout
    status = run_cli(["status", "orthogonal-1", "--storage", storage, "--json"], tmp_path, env)
    assert '"gpu_share": 0.5' in status.stdout and '"gpu_ids": [\n        "0"\n      ]' in status.stdout


def test_a_trial_given_a_gpu_it_cannot_use_fails_naming_the_host_and_what_is_missing(failing_launch) -> None:
    storage, launched = failing_launch
    assert launched.returncode == 1, launched.stdout + launched.stderr  # every trial failed
    trials = trials_of(storage, "nocuda-1")
    assert [t.state.name for t in trials] == ["FAIL", "FAIL"]  # the sweep went on after the first
    reason = trials[0].user_attrs["fail_reason"]
    assert reason.startswith(
        f"NoUsableGpu: Ray gave this trial GPU 0 on host {socket.gethostname()}, but torch"
    )
    assert "build without CUDA" in reason and "--no-gpus" in reason
