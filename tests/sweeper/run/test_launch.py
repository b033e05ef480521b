"""Launch helpers that need no Ray: budget overrides, the time-budget stopper, reconciliation."""

from __future__ import annotations

import time

import optuna
import yaml
from optuna.trial import TrialState

from sweeper.run.launch import create_sweep, with_budget, with_seed
from sweeper.run.search.repair import reconcile
from sweeper.run.search.samplers import make_sampler
from sweeper.run.tune.runtime import _BudgetStopper
from sweeper.spec.loading import parse_spec
from sweeper.spec.plan import plan_text
from sweeper.store.database import Store
from sweeper.store.trial_record import INTERRUPTED_ATTR
from tests.helpers import tiny_spec


def spec():
    return parse_spec(yaml.safe_dump(tiny_spec()), "t.yaml")


class FakeSearcher:
    stop_reason = None


def test_command_line_budgets_override_the_spec():
    changed = with_budget(spec(), 9, 120.0)
    assert (changed.budget.trials, changed.budget.time) == (9, 120.0)
    assert with_budget(spec(), None, None) == spec()


def test_the_command_lines_seed_seeds_the_samplers_and_the_trials():
    seeded = spec().model_copy(update={"sampler": spec().sampler.model_copy(update={"seed": 7})})
    other = with_seed(seeded, 3)
    assert other.seed == 3 and other.sampler.seed is None  # the sampler's follows the sweep's
    assert with_seed(seeded, None) == seeded

    def first_draw(sweep) -> float:
        return optuna.create_study(sampler=make_sampler(sweep, "gru", 0)).ask().suggest_float("x", 0, 1)

    assert first_draw(with_seed(spec(), 3)) == first_draw(other) != first_draw(seeded)


def test_stopper_ends_the_run_when_time_is_spent_or_a_stop_was_asked():
    searcher = FakeSearcher()
    assert not _BudgetStopper(searcher, time.monotonic() + 60).stop_all()
    assert not _BudgetStopper(searcher, None).stop_all()
    assert _BudgetStopper(searcher, time.monotonic() - 1).stop_all()
    assert searcher.stop_reason == "time budget exhausted"
    other = FakeSearcher()
    other.stop_reason = "interrupted by SIGTERM"
    assert _BudgetStopper(other, None).stop_all()


def test_reconcile_marks_trials_a_dead_driver_left_running(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    record = create_sweep(spec(), store, f"sqlite:///{tmp_path / 'mlflow.db'}", None, None, home=tmp_path)
    study = optuna.load_study(study_name=record.studies[0].study_name, storage=store.optuna)
    finished = study.ask()
    study.tell(finished, 0.5)
    study.ask()  # left RUNNING, as by a driver killed mid-trial
    assert reconcile(store, store.get_sweep(record.name)) == 1
    trials = study.get_trials()
    assert [t.state for t in trials] == [TrialState.COMPLETE, TrialState.FAIL]
    assert trials[1].user_attrs[INTERRUPTED_ATTR] is True
    assert reconcile(store, store.get_sweep(record.name)) == 0
    store.dispose()


def test_plan_hides_passwords():
    text = plan_text(spec(), "postgresql://u:pw@db/x", "http://mlflow:5000", "auto")
    assert "pw" not in text and "u:***@db" in text and "ray: auto" in text


def test_a_sweep_records_its_ray_job_and_the_image_its_driver_ran_in(tmp_path, monkeypatch):
    import json

    from sweeper.results.json_outputs import sweep_status
    from sweeper.results.summaries import study_summaries

    monkeypatch.setenv(
        "RAY_JOB_CONFIG_JSON_ENV_VAR", json.dumps({"metadata": {"job_submission_id": "sweep-job-7"}})
    )
    monkeypatch.setenv("SWEEPER_IMAGE", "registry.example.com/ml/sweeper-ray@sha256:" + "a" * 64)
    spec = parse_spec(yaml.safe_dump(tiny_spec(name="job")), "job.yaml")
    store = Store(f"sqlite:///{tmp_path / 'sweeper.db'}")
    record = create_sweep(spec, store, f"sqlite:///{tmp_path / 'mlflow.db'}", None, None, home=tmp_path)
    stored = store.get_sweep(record.name)
    assert stored.job_id == "sweep-job-7" and stored.image.endswith("a" * 64)
    status = sweep_status(stored, study_summaries(store, stored), "status")
    assert (status.job_id, status.image, status.spec_sha256) == (stored.job_id, stored.image, spec.digest())
    store.dispose()
