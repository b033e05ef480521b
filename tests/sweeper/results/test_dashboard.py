"""`sweeper ui SWEEP`'s optuna-dashboard: that sweep's studies only, read-only, objective named."""

from __future__ import annotations

import io
import json
from pathlib import Path
from wsgiref.util import setup_testing_defaults

import optuna
import pytest
import yaml

from sweeper.results.dashboard import ReadOnlyStudies, SweepStudies, read_only
from sweeper.run.launch import create_sweep
from sweeper.spec.loading import parse_spec
from sweeper.store.database import Store
from tests.helpers import tiny_spec


@pytest.fixture(scope="module")
def optuna_dashboard():
    """Imported by the tests that use it, not at collection: it pulls in scikit-learn (seconds)."""
    return pytest.importorskip("optuna_dashboard")


@pytest.fixture
def two_sweeps(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'sweeper.db'}"
    store = Store(url)
    for name in ("first", "second"):
        spec = parse_spec(yaml.safe_dump(tiny_spec(name=name)), f"{name}.yaml")
        record = create_sweep(spec, store, f"sqlite:///{tmp_path / 'mlflow.db'}", None, None, home=tmp_path)
        for study_record in record.studies:
            study = optuna.load_study(study_name=study_record.study_name, storage=store.optuna)
            study.add_trial(optuna.trial.create_trial(value=0.5))
    store.dispose()
    return url


def call(app, method: str, path: str) -> tuple[str, bytes]:
    environ: dict = {"REQUEST_METHOD": method, "PATH_INFO": path, "wsgi.input": io.BytesIO()}
    setup_testing_defaults(environ)
    status: list[str] = []
    body = b"".join(app(environ, lambda s, headers, exc_info=None: status.append(s)))
    return status[0], body


def test_the_dashboard_lists_one_sweeps_studies_with_the_objective_named(
    two_sweeps: str, optuna_dashboard
) -> None:
    app = optuna_dashboard.wsgi(SweepStudies(two_sweeps, "second-1"))
    status, body = call(app, "GET", "/api/studies")
    assert status.startswith("200")
    studies = json.loads(body)["study_summaries"]
    assert sorted(s["study_name"] for s in studies) == ["second-1/denoise/gru", "second-1/denoise/lstm"]
    detail_status, detail = call(app, "GET", f"/api/studies/{studies[0]['study_id']}")
    assert detail_status.startswith("200")
    assert json.loads(detail)["objective_names"] == ["valid_loss"]


def test_the_dashboard_changes_nothing_and_says_why(two_sweeps: str, optuna_dashboard) -> None:
    storage = SweepStudies(two_sweeps, "second-1")
    app = read_only(optuna_dashboard.wsgi(storage), "second-1")
    study_id = storage.get_all_studies()[0]._study_id
    for method, path in (("DELETE", f"/api/studies/{study_id}"), ("POST", "/api/studies")):
        status, body = call(app, method, path)
        assert status.startswith("403") and "read-only" in json.loads(body)["reason"]
    assert call(app, "GET", "/api/studies")[0].startswith("200")
    with pytest.raises(ReadOnlyStudies):
        storage.delete_study(study_id)
    with pytest.raises(KeyError):
        storage.get_study_id_from_name("first-1/denoise/gru")
    assert len(Store(two_sweeps).list_sweeps()[1].studies) == 2
    assert len(optuna.get_all_study_names(two_sweeps)) == 4


def test_the_importance_panel_has_values_once_a_study_has_complete_trials(
    tmp_path: Path, optuna_dashboard
) -> None:
    url = f"sqlite:///{tmp_path / 'sweeper.db'}"
    store = Store(url)
    spec = parse_spec(yaml.safe_dump(tiny_spec(name="imp")), "imp.yaml")
    record = create_sweep(spec, store, f"sqlite:///{tmp_path / 'mlflow.db'}", None, None, home=tmp_path)
    study = optuna.load_study(study_name=record.studies[0].study_name, storage=store.optuna)
    space = {
        "lr": optuna.distributions.FloatDistribution(1e-3, 3e-2, log=True),
        "hidden_size": optuna.distributions.IntDistribution(4, 16),
    }
    for _ in range(6):
        trial = study.ask(space)
        study.tell(trial, 10 * trial.params["lr"] + 0.01 * trial.params["hidden_size"])
    storage = SweepStudies(url, "imp-1")
    app = read_only(optuna_dashboard.wsgi(storage), "imp-1")
    status, body = call(app, "GET", f"/api/studies/{study._study_id}/param_importances")
    assert status.startswith("200")
    (importances,) = json.loads(body)["param_importances"]
    assert {p["name"] for p in importances} == {"lr", "hidden_size"}
