"""Reading a finished sweep back: export round trip, parameter importances, the MLflow UI's REST API."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request

import optuna
import pandas as pd
import psutil
import pytest
from mlflow.tracking import MlflowClient

from sweeper.store.database import Store
from tests.helpers import cli_env, free_port, run_cli, wait_until_healthy

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_export_round_trips_what_optuna_stores(finished_sweep, tmp_path, fmt):
    out = tmp_path / "export"
    result = run_cli(
        [
            "export",
            finished_sweep.name,
            "--storage",
            finished_sweep.storage,
            "--out",
            str(out),
            "--format",
            fmt,
        ],
        finished_sweep.cwd,
    )
    assert result.returncode == 0, result.stderr
    folder = out / finished_sweep.name
    read = pd.read_csv if fmt == "csv" else pd.read_parquet
    trials = read(folder / f"trials.{fmt}")
    steps = read(folder / f"intermediate_values.{fmt}")
    assert "name: e2e" in (folder / "spec.yaml").read_text()

    store = Store(finished_sweep.storage)
    record = store.get_sweep(finished_sweep.name)
    expected_trials = 0
    for study_record in record.studies:
        study = optuna.load_study(study_name=study_record.study_name, storage=store.optuna)
        for trial in study.get_trials():
            expected_trials += 1
            (row,) = trials[
                (trials.study == study_record.study_name) & (trials.number == trial.number)
            ].to_dict("records")
            assert row["state"] == trial.state.name
            assert row["model"] == study_record.model
            assert row["seed"] == trial.user_attrs["seed"]
            assert json.loads(row["params"]) == pytest.approx(trial.params)
            if trial.value is None:
                assert pd.isna(row["value"])
            else:
                assert row["value"] == pytest.approx(trial.value)
            assert row["duration_s"] == pytest.approx(trial.duration.total_seconds())
            mine = steps[(steps.study == study_record.study_name) & (steps.number == trial.number)]
            assert dict(zip(mine.step, mine.value, strict=True)) == pytest.approx(trial.intermediate_values)
    assert len(trials) == expected_trials == 8
    store.dispose()


def test_summarize_reports_importances(finished_sweep):
    result = run_cli(
        [
            "summarize",
            finished_sweep.name,
            "--storage",
            finished_sweep.storage,
            "--format",
            "json",
            "--importance",
        ],
        finished_sweep.cwd,
    )
    assert result.returncode == 0, result.stderr
    weights = json.loads(result.stdout)["importances"]
    assert set(weights) == {"lstm", "gru"}
    for value in weights.values():
        if isinstance(value, dict):
            assert set(value) <= {"hidden_size", "lr"}
            assert sum(value.values()) == pytest.approx(1.0)


def get_json(url: str, body: dict | None = None) -> dict:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def test_ui_serves_the_experiment_parents_and_nested_trials(finished_sweep):
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sweeper.cli",
            "ui",
            finished_sweep.name,
            "--storage",
            finished_sweep.storage,
            "--port",
            str(port),
        ],
        cwd=finished_sweep.cwd,
        env=cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(base, process, process.stdout.read)
        experiment = get_json(
            f"{base}/api/2.0/mlflow/experiments/get-by-name?experiment_name={finished_sweep.name}"
        )
        experiment_id = experiment["experiment"]["experiment_id"]
        runs = get_json(
            f"{base}/api/2.0/mlflow/runs/search", {"experiment_ids": [experiment_id], "max_results": 100}
        )["runs"]
        tags = [{t["key"]: t["value"] for t in run["data"].get("tags", [])} for run in runs]
        parents = [run for run, tag in zip(runs, tags, strict=True) if tag.get("sweeper.role") == "study"]
        children = [tag for tag in tags if tag.get("sweeper.role") == "trial"]
        assert len(parents) == 2 and len(children) == 8
        parent_ids = {run["info"]["run_id"] for run in parents}
        assert all(child["mlflow.parentRunId"] in parent_ids for child in children)
        for parent in parents:
            assert "best_objective" in {m["key"] for m in parent["data"]["metrics"]}
        servers = psutil.Process(process.pid).children(recursive=True)
        assert servers, "the MLflow server runs in processes of its own"
        idle_jobs = [p.cmdline() for p in servers if "huey_consumer" in " ".join(p.cmdline())]
        assert not idle_jobs, f"MLflow's job consumers run beside the UI: {idle_jobs}"
    finally:
        process.terminate()  # as a process manager stops it: SIGTERM
        process.wait(timeout=30)
    _, alive = psutil.wait_procs(servers, timeout=30)
    assert not alive, f"servers outlived `sweeper ui`: {[p.cmdline() for p in alive]}"


def test_report_writes_files_and_logs_them_to_mlflow(finished_sweep, tmp_path):
    out = tmp_path / "report"
    args = [
        "report",
        finished_sweep.name,
        "--storage",
        finished_sweep.storage,
        "--out",
        str(out),
        "--format",
        "json",
    ]
    result = run_cli(args, finished_sweep.cwd)
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)["rows"]
    assert {r["model"] for r in rows} == {"lstm", "gru"}  # T=6: no published number, still one row per model
    written = {p.name for p in out.iterdir()}
    assert {"report.md", "report.json", "report.csv", "learning-curves.png", "history-gru.png"} <= written
    client = MlflowClient(finished_sweep.tracking)
    (experiment,) = [e for e in client.search_experiments() if e.name == finished_sweep.name]
    (run,) = client.search_runs([experiment.experiment_id], filter_string="tags.`sweeper.role` = 'report'")
    logged = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"report.md", "learning-curves.png"} <= logged
