"""A first sweep's portfolio: where the database holds no other task to transfer from, each study
asks for the recorded tables' configurations of its model, carried by position into its own
ranges, and names them; the user's own sweeps of other tasks come first, and a spec turns it off."""

from __future__ import annotations

import math
from pathlib import Path

import optuna
import yaml

from sweeper.run.search.portfolio import first_trials_text, opening_points, portfolio_points, shipped
from sweeper.run.search.transfer import Source
from sweeper.spec.loading import parse_spec
from sweeper.store.trial_record import PORTFOLIO_SOURCE
from tests.helpers import tiny_spec

optuna.logging.set_verbosity(optuna.logging.WARNING)
ENTRIES = [{"units": {"lr": 0.5, "hidden_size": 0.0}}, {"units": {"lr": 1.0 - 1e-12}}]


def spec_of(portfolio: bool = True, **params: object):
    raw = tiny_spec(models=("gru",), sampler={"name": "tpe", "transfer": True, "portfolio": portfolio})
    raw["params"].update(params)
    return parse_spec(yaml.safe_dump(raw), "t.yaml")


def test_each_entry_keeps_its_position_in_a_range_that_differs_from_the_tables() -> None:
    spec = spec_of(lr={"float": [1e-4, 1e-2], "log": True}, hidden_size={"int": [16, 64]})
    first, second = portfolio_points(spec, "gru", ENTRIES)
    assert math.isclose(first.params["lr"], 1e-3) and first.params["hidden_size"] == 16
    assert math.isclose(second.params["lr"], 1e-2) and "hidden_size" not in second.params
    assert first.label == f"{PORTFOLIO_SOURCE} 1 of 2" and first.worker_hours == 0.0


def test_the_shipped_portfolio_covers_the_tables_models_in_their_order() -> None:
    spec = spec_of(lr={"float": [1e-4, 1e-2], "log": True})
    for model in ("gru", "lstm", "goru", "scornn", "ncgru", "eurnn"):
        assert len(shipped()[model]) == 4
    points = portfolio_points(spec, "gru")
    assert [p.label for p in points] == [f"{PORTFOLIO_SOURCE} {k} of 4" for k in range(1, 5)]
    assert all(1e-4 <= p.params["lr"] <= 1e-2 for p in points)


def test_other_tasks_sweeps_come_first_and_a_spec_turns_the_portfolio_off() -> None:
    spec = spec_of(lr={"float": [1e-4, 1e-2], "log": True})
    assert opening_points(spec, "gru", [], 4)[0].label.startswith(PORTFOLIO_SOURCE)
    assert len(opening_points(spec, "gru", [], 2)) == 2  # no more than the budget leaves room for
    earlier = optuna.create_study()
    earlier.enqueue_trial({"lr": 1e-3})
    earlier.optimize(lambda t: t.suggest_float("lr", 1e-4, 1e-2, log=True), n_trials=1)
    transferred = opening_points(spec, "gru", [Source("copying", "copying-1", earlier)], 4)
    assert [p.label for p in transferred] == ["copying-1 trial 0 (copying)"]
    assert opening_points(spec_of(portfolio=False), "gru", [], 4) == []
    grid = spec_of(lr={"grid": [1e-3, 1e-2]}, hidden_size=16)
    assert portfolio_points(grid, "gru", ENTRIES) == []


def test_a_dry_run_says_where_each_studys_first_trials_come_from(tmp_path: Path) -> None:
    """A dry run opens no database that is not there (and makes none)."""
    url = f"sqlite:///{tmp_path / 'none.db'}"
    text = first_trials_text(spec_of(lr={"float": [1e-4, 1e-2], "log": True}), url)
    assert "gru: the recorded tables' portfolio, 4 configurations" in text
    assert "gru: none to transfer" in first_trials_text(spec_of(portfolio=False), url)
    assert not (tmp_path / "none.db").exists()
    unreachable = first_trials_text(spec_of(), "postgresql+psycopg2://nobody@127.0.0.1:9/none")
    assert unreachable.startswith("  first trials: unknown until the study database can be read")


def test_a_first_sweep_asks_for_the_portfolio_names_it_and_summarises_it_apart(tmp_path: Path) -> None:
    """An empty database: the study asks for the shipped portfolio's four configurations, each
    named as from it, and the summary says so (not "transferred from other tasks' sweeps")."""
    from sweeper.results.summaries import search_notes, study_summaries
    from sweeper.run.launch import create_sweep
    from sweeper.store.database import Store
    from sweeper.store.trial_record import TRANSFER_ATTR

    store = Store(f"sqlite:///{tmp_path / 'sweeper.db'}")
    two = parse_spec(
        yaml.safe_dump({**yaml.safe_load(spec_of().to_yaml()), "name": "two", "budget": {"trials": 2}}),
        "t.yaml",
    )
    (short,) = create_sweep(
        two, store, f"sqlite:///{tmp_path / 'mlflow.db'}", None, None, home=tmp_path
    ).studies
    kept = optuna.load_study(study_name=short.study_name, storage=store.optuna).get_trials()
    assert len(kept) == 2  # a budget of two asks for two: none left waiting when the study ends
    spec = spec_of(lr={"float": [1e-4, 1e-2], "log": True})
    record = create_sweep(spec, store, f"sqlite:///{tmp_path / 'mlflow.db'}", None, None, home=tmp_path)
    (study_record,) = record.studies
    study = optuna.load_study(study_name=study_record.study_name, storage=store.optuna)
    asked = study.get_trials()
    assert [t.user_attrs[TRANSFER_ATTR] for t in asked] == [
        f"{PORTFOLIO_SOURCE} {k} of 4" for k in range(1, 5)
    ]
    study.tell(study.ask(), 0.04)
    [summary] = study_summaries(store, store.get_sweep(record.name))
    (line,) = search_notes(summary, "min")
    assert line.startswith("started from the portfolio learned from the project's recorded search tables")
    assert f"trial 0, from {PORTFOLIO_SOURCE} 1 of 4, reached 0.04" in line
    store.dispose()
