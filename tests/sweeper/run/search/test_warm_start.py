"""A warm start copies an earlier sweep's finished trials that fit the new space: the sampler
sees them, the new budget and the new best do not."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
from click.testing import CliRunner

from sweeper.cli import main
from sweeper.results.summaries import search_notes, study_summaries
from sweeper.run.launch import create_sweep
from sweeper.run.search.searcher import MultiStudySearcher, StudyPlan
from sweeper.run.search.warm_start import WarmStart, warm_start
from sweeper.spec.loading import parse_spec
from sweeper.store.database import Store
from sweeper.store.trial_record import WARM_START_ATTR, best_trial, counts_toward_budget
from tests.helpers import dump_spec, tiny_spec, write_spec

optuna.logging.set_verbosity(optuna.logging.WARNING)
WIDE = optuna.distributions.IntDistribution(4, 16, log=True)
LR = optuna.distributions.FloatDistribution(1e-3, 3e-2, log=True)


def spec_of(**params: object):
    base = tiny_spec(models=("gru",))
    base["params"] = {**base["params"], **params}
    return parse_spec(dump_spec(base), "s.yaml")


def earlier_sweep(store: Store, tmp_path: Path):
    record = create_sweep(spec_of(), store, f"sqlite:///{tmp_path / 'mlflow.db'}", None, None, home=tmp_path)
    study = optuna.load_study(study_name=record.studies[0].study_name, storage=store.optuna)
    for hidden, lr, value in ((4, 0.01, 0.3), (12, 0.005, 0.2)):
        study.add_trial(
            optuna.trial.create_trial(
                params={"hidden_size": hidden, "lr": lr},
                distributions={"hidden_size": WIDE, "lr": LR},
                value=value,
                intermediate_values={10: value + 0.1, 30: value},
            )
        )
    return record


def test_the_trials_that_fit_are_copied_and_spend_nothing(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'sweeper.db'}")
    earlier = earlier_sweep(store, tmp_path)
    record = create_sweep(
        spec_of(hidden_size={"int": [8, 16]}),
        store,
        f"sqlite:///{tmp_path / 'mlflow.db'}",
        None,
        None,
        home=tmp_path,
    )
    assert warm_start(store, record, earlier) == [WarmStart("gru", reused=1, unfit=1)]
    study = optuna.load_study(study_name=record.studies[0].study_name, storage=store.optuna)
    [copy] = study.get_trials()
    assert copy.params == {"hidden_size": 12, "lr": 0.005} and copy.value == 0.2
    assert copy.user_attrs[WARM_START_ATTR] == f"{earlier.name} trial 1"
    assert copy.distributions["hidden_size"] == optuna.distributions.IntDistribution(8, 16)
    assert not counts_toward_budget(copy) and best_trial(study) is None
    plan = StudyPlan(study, "gru", None, 4)
    MultiStudySearcher(spec_of(hidden_size={"int": [8, 16]}), [plan], None, None)
    assert plan.remaining == 4  # the copied trial spends none of the new budget
    [summary] = study_summaries(store, store.get_sweep(record.name))
    assert summary.warm_started == 1 and summary.counts["COMPLETE"] == 0 and summary.best_value is None
    assert search_notes(summary, "min") == ["started from 1 trials of an earlier sweep (not counted here)"]
    store.dispose()


def test_another_task_is_refused(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'sweeper.db'}")
    earlier = earlier_sweep(store, tmp_path)
    other = tiny_spec(models=("gru",), task={"name": "denoise", "settings": {"T": 8, "valid_size": 32}})
    record = create_sweep(
        parse_spec(dump_spec(other), "s.yaml"),
        store,
        f"sqlite:///{tmp_path / 'mlflow.db'}",
        None,
        None,
        home=tmp_path,
    )
    with pytest.raises(ValueError, match="same task and settings"):
        warm_start(store, record, earlier)
    store.dispose()


def test_launch_refuses_an_unknown_sweep_before_writing_anything(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    url = f"sqlite:///{tmp_path / 'sweeper.db'}"
    store = Store(url)
    earlier_sweep(store, tmp_path)
    store.dispose()
    config = write_spec(tmp_path, tiny_spec(models=("gru",)))
    result = CliRunner().invoke(main, ["launch", str(config), "--storage", url, "--warm-start", "nope-1"])
    assert result.exit_code == 2 and "nope-1" in result.output
    assert [r.name for r in Store(url).list_sweeps()] == ["tiny-1"]
