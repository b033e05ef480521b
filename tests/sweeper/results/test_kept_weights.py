"""`sweeper best`: each study's kept weights fetched into OUT/<model>, the study's best trial's
only, without importing Ray or torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import optuna
import pytest
import torch
import yaml
from mlflow.tracking import MlflowClient
from optuna.distributions import FloatDistribution

from sweeper.results.kept_weights import fetch_best, run_weights
from sweeper.run.launch import create_sweep
from sweeper.run.tracking.weights import WeightsDetails, log_weights
from sweeper.run.tune.trial import FINAL_FILE
from sweeper.spec.loading import parse_spec
from sweeper.spec.sweep import trial_config
from sweeper.store.database import Store
from sweeper.store.trial_record import CONFIG_ATTR
from tests.helpers import tiny_spec

pytestmark = pytest.mark.xdist_group("kept_weights")  # the module's sweep is built once, on one worker


@pytest.fixture(scope="module")
def kept(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str, dict[str, str]]:
    """Sweep `kept-1`: gru's best trial (1) kept its weights, goru's study has no finished trial."""
    folder = tmp_path_factory.mktemp("kept")
    spec = parse_spec(yaml.safe_dump(tiny_spec(name="kept", models=("gru", "goru"))), "kept.yaml")
    url, tracking = f"sqlite:///{folder / 'sweeper.db'}", f"sqlite:///{folder / 'mlflow.db'}"
    store = Store(url)
    record = create_sweep(spec, store, tracking, None, None, home=folder)
    gru = next(s for s in record.studies if s.model == "gru")
    study = optuna.load_study(study_name=gru.study_name, storage=store.optuna)
    for lr in (0.001, 0.01):
        study.add_trial(
            optuna.trial.create_trial(
                params={"lr": lr},
                distributions={"lr": FloatDistribution(1e-3, 3e-2, log=True)},
                value=0.5 - lr,
                user_attrs={CONFIG_ATTR: trial_config(spec, "gru", {"lr": lr}, 0)},
            )
        )
    client = MlflowClient(tracking)
    runs = {}
    for number, value in ((0, 0.499), (1, 0.49)):
        run = client.create_run(record.mlflow_experiment_id).info.run_id
        final = folder / f"final-{number}"
        final.mkdir()
        torch.save(torch.nn.GRU(3, 4), final / FINAL_FILE)
        details = WeightsDetails(
            gru.study_name,
            "gru",
            "denoise",
            {"lr": 0.01},
            {"task_settings": {"T": 6}},
            "valid_loss",
            value,
            number,
        )
        log_weights(client, record.mlflow_experiment_id, run, final, details)
        runs[str(number)] = run
    store.dispose()
    return folder, url, tracking, runs


@pytest.mark.slow
def test_best_fetches_the_best_trials_weights_without_ray_or_torch(kept) -> None:
    folder, url, _, runs = kept
    probe = textwrap.dedent(
        """
        import json, sys
        from sweeper.cli import main
        try:
            main(["best", "--out", "fetched"], standalone_mode=False)
        finally:
            print("PROBE", json.dumps([m for m in ("torch", "ray", "triton") if m in sys.modules]))
        """
    )
    env = {**os.environ, "SWEEPER_STORAGE": url}
    done = subprocess.run([sys.executable, "-c", probe], cwd=folder, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout.split("PROBE ")[-1]) == []
    assert f"gru: trial 1, 0.49, run {runs['1']} -> fetched/gru" in done.stdout
    assert "goru: no weights (no trial finished)" in done.stderr
    assert (folder / "fetched" / "gru" / "MLmodel").exists()
    assert not (folder / "fetched" / "goru").exists()
    assert [p.name for p in (folder / "fetched").iterdir()] == ["gru"]  # nothing half-written


def test_weights_that_are_not_the_best_trials_are_not_fetched(kept, tmp_path) -> None:
    _, _, tracking, _ = kept
    client = MlflowClient(tracking)
    experiment = client.get_experiment_by_name("kept-1").experiment_id
    study = "kept-1/denoise/gru"
    (fetched,) = fetch_best(client, tracking, experiment, [("gru", study, 0)], tmp_path)
    assert fetched.folder is None and fetched.missing == "the kept weights are trial 1's, not the best's"


def test_a_run_without_kept_weights_says_only_the_best_keep_them(kept, tmp_path) -> None:
    _, _, tracking, runs = kept
    client = MlflowClient(tracking)
    with pytest.raises(LookupError, match="only the best finished trial of each study keeps them"):
        run_weights(client, tracking, runs["0"], tmp_path)  # its weights were replaced by trial 1's
    assert (run_weights(client, tracking, runs["1"], tmp_path) / "MLmodel").exists()
