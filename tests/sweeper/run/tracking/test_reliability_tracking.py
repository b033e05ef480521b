"""Tracking outages: trials go on and land in the study; `sync-mlflow` makes MLflow complete."""

from __future__ import annotations

import shutil
from pathlib import Path

import optuna
import pytest
from mlflow.tracking import MlflowClient

from sweeper.run.tracking.sync import sync_mlflow
from sweeper.run.tracking.tracker import Tracker
from sweeper.store.database import Store
from tests.helpers import FinishedSweep, run_cli, tiny_spec


def mlflow_contents(uri: str, name: str) -> tuple[list, list]:
    client = MlflowClient(uri)
    (experiment,) = [e for e in client.search_experiments() if e.name == name]
    runs = client.search_runs([experiment.experiment_id], max_results=1000)
    parents = [r for r in runs if r.data.tags.get("sweeper.role") == "study"]
    children = [r for r in runs if r.data.tags.get("sweeper.role") == "trial"]
    return parents, children


@pytest.mark.slow
def test_tracking_outage_then_sync(outage_sweep: FinishedSweep, tmp_path: Path) -> None:
    """The session's sweep launched while its MLflow server was down; synced here in a copy of its
    folder, since the secrets test reads the sweep as the launch left it."""
    launch = outage_sweep.launch
    assert "sweep outage-1: finished" in launch.stdout
    assert "sync-mlflow outage-1" in launch.stderr  # the automatic catch-up failed and says what to run

    shutil.copytree(outage_sweep.cwd, tmp_path, dirs_exist_ok=True)
    storage = f"sqlite:///{tmp_path / 'sweeps' / 'sweeper.db'}"
    store = Store(storage)
    record = store.get_sweep("outage-1")
    trials = {
        s.study_name: optuna.load_study(study_name=s.study_name, storage=store.optuna).get_trials()
        for s in record.studies
    }
    assert sum(len(t) for t in trials.values()) == 4 and all(
        t.state.is_finished() for ts in trials.values() for t in ts
    )
    store.dispose()

    live = f"sqlite:///{tmp_path / 'mlflow.db'}"
    synced = run_cli(["sync-mlflow", "outage-1", "--tracking-uri", live], tmp_path)
    assert synced.returncode == 0, synced.stderr
    assert "4 trial runs created" in synced.stdout
    parents, children = mlflow_contents(live, "outage-1")
    assert len(parents) == 2 and len(children) == 4
    client = MlflowClient(live)
    for child in children:
        study = child.data.tags["sweeper.study"]
        (trial,) = [t for t in trials[study] if t.number == int(child.data.tags["optuna.trial_number"])]
        assert child.data.tags["state"] == trial.state.name
        history = {m.step: m.value for m in client.get_metric_history(child.info.run_id, "valid_loss")}
        assert history == pytest.approx(trial.intermediate_values)
    again = run_cli(["sync-mlflow", "outage-1"], tmp_path)  # the record now points at the live store
    assert again.returncode == 0 and "0 trial runs created" in again.stdout


def test_sync_completes_runs_a_mid_sweep_outage_left_behind(tmp_path):
    from sweeper.run.launch import create_sweep
    from sweeper.spec.loading import parse_spec
    from sweeper.store.trial_record import FINAL_METRICS_ATTR
    from tests.helpers import dump_spec

    spec = parse_spec(dump_spec(tiny_spec(name="partial", models=["gru"])), "p.yaml")
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    record = create_sweep(spec, store, uri, None, None, home=tmp_path)
    (study_record,) = record.studies
    study = optuna.load_study(study_name=study_record.study_name, storage=store.optuna)
    distributions = {"hidden_size": optuna.distributions.IntDistribution(4, 16)}
    for number in range(2):
        study.add_trial(
            optuna.trial.create_trial(
                params={"hidden_size": 8},
                distributions=distributions,
                value=0.4,
                intermediate_values={10: 0.6, 20: 0.5, 30: 0.4},
                user_attrs={"seed": number, FINAL_METRICS_ATTR: {"valid_loss": 0.4, "valid_accuracy": 0.3}},
            )
        )
    tracker = Tracker(uri)
    # trial 0: the outage hit after its first point, so its run stayed RUNNING; trial 1: no run at all
    run_id = tracker.start_trial(
        record.mlflow_experiment_id,
        study_record.mlflow_parent_run_id,
        study_record.study_name,
        "denoise",
        "gru",
        0,
        {},
    )
    tracker.log_metrics(run_id, 10, {"valid_loss": 0.6})

    counts = sync_mlflow(store, store.get_sweep(record.name), Tracker(uri))
    assert (counts.created, counts.completed, counts.points) == (1, 2, 2 + 3)
    _, children = mlflow_contents(uri, record.name)
    assert sorted(c.data.tags["state"] for c in children) == ["COMPLETE", "COMPLETE"]
    client = MlflowClient(uri)
    for child in children:
        assert sorted(m.step for m in client.get_metric_history(child.info.run_id, "valid_loss")) == [
            10,
            20,
            30,
        ]
        assert child.data.metrics["valid_accuracy"] == 0.3
    store.dispose()
