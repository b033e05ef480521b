"""`sweeper reproduce` end to end on a CPU: a smoke-sized NC-GRU Table 2 (T = 200) over two seeds
on the test worker's Ray head, with SQLite and a local MLflow store, then its report and a resume."""

from __future__ import annotations

import json

import pytest
from mlflow.tracking import MlflowClient

from sweeper.spec.loading import stored_spec
from sweeper.store.database import Store
from tests.helpers import cli_env, run_cli

pytestmark = pytest.mark.slow


def test_smoke_reproduction_of_ncgru_table_2(tmp_path, ray_head):
    """Planned here, run on the worker's Ray head."""
    dry = run_cli(
        ["reproduce", "ncgru", "Table 2", "--only", "T=200", "--profile", "smoke", "--dry-run"], tmp_path
    )
    assert dry.returncode == 0, dry.stderr
    assert "6 rows in 1 sweep(s), 2 seeds each: 12 runs" in dry.stdout
    assert "ncgru (orthogonal=rc): hidden_size=14, rho=6" in dry.stdout and "ms/step" in dry.stdout
    assert "preflight: ok" in dry.stdout
    assert not (tmp_path / "sweeps").exists()  # a dry run writes nothing

    joined = cli_env(ray_head.env)
    run = run_cli(
        ["reproduce", "ncgru", "2", "--only", "T=200", "--profile", "smoke", *ray_head.args], tmp_path, joined
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "sweep ncgru-table-2-T200-1: finished" in run.stdout
    assert "ncgru (orthogonal=c)" in run.stdout and "0.02258 ± 0.0027" in run.stdout
    assert "Reading of task.variant" in run.stdout and "Profile smoke" in run.stdout

    report = run_cli(["report", "ncgru-table-2-T200-1", "--format", "json"], tmp_path)
    assert report.returncode == 0, report.stderr
    rows = json.loads(report.stdout)["rows"]
    assert [r["row"] for r in rows] == [
        "lstm",
        "gru",
        "scornn",
        "goru",
        "ncgru (orthogonal=c)",
        "ncgru (orthogonal=rc)",
    ]
    for row in rows:
        assert len(row["ours"]) == 2 and row["ours_mean"] > 0 and row["ours_std"] is not None
        assert row["metric"] == "valid_loss"
        # theirs lies within two of our standard deviations, or not, as the report says
        assert row["within"] == (abs(row["theirs"] - row["ours_mean"]) <= 2 * row["ours_std"])

    store = Store(f"sqlite:///{tmp_path / 'sweeps' / 'sweeper.db'}")
    try:
        record = store.get_sweep("ncgru-table-2-T200-1")
        assert record.status == "finished" and stored_spec(record).reproduces.seeds == 2
    finally:
        store.dispose()
    client = MlflowClient(f"sqlite:///{tmp_path / 'sweeps' / 'mlflow.db'}")
    (experiment,) = [e for e in client.search_experiments() if e.name == "ncgru-table-2-T200-1"]
    runs = client.search_runs([experiment.experiment_id], "tags.`sweeper.role` = 'confirmation'")
    assert len(runs) == 12

    again = run_cli(["resume", "ncgru-table-2-T200-1", *ray_head.args], tmp_path, joined)
    assert again.returncode == 0 and "nothing is left to run" in again.stdout


def test_a_table_that_cannot_run_is_refused_with_its_reason(tmp_path):
    result = run_cli(["reproduce", "ncgru", "Table 7"], tmp_path)
    assert result.returncode == 2
    assert "cannot be run: the baselines' settings are not stated" in result.stderr
