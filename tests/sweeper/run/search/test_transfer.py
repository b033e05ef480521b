"""Transfer from earlier sweeps of other tasks: each other task's best configuration of the same
model carried by its position in each range into the new study's, asked for first, naming its
source; a study with nothing earlier starts as without."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
import yaml
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

from sweeper.results.json_outputs import sweep_status
from sweeper.results.summaries import search_notes, study_summaries
from sweeper.run.launch import create_sweep
from sweeper.run.search.searcher import origin_tags
from sweeper.run.search.transfer import Source, carried, transferred_points
from sweeper.spec.loading import parse_spec
from sweeper.store.database import Store
from sweeper.store.trial_record import (
    FINAL_METRICS_ATTR,
    PORTFOLIO_SOURCE,
    TRANSFER_ATTR,
    TRANSFERRED_ATTR,
    WALL_TIME_METRIC,
    WARM_START_ATTR,
)
from tests.helpers import tiny_spec

optuna.logging.set_verbosity(optuna.logging.WARNING)


def spec_of(task: str = "denoise", transfer: bool = False, **params: object):
    raw = tiny_spec(models=("gru",), name=f"t-{task}", sampler={"name": "tpe", "transfer": transfer})
    raw["task"] = {"name": task, "settings": {"T": 6, "valid_size": 32}}
    raw["params"].update(params)
    return parse_spec(yaml.safe_dump(raw), "t.yaml")


def source_trial(
    lr: float, hidden: int, optimizer: str, value: float, **attrs: object
) -> optuna.trial.FrozenTrial:
    return optuna.trial.create_trial(
        value=value,
        params={"lr": lr, "hidden_size": hidden, "optimizer": optimizer},
        distributions={
            "lr": FloatDistribution(1e-4, 1e-2, log=True),
            "hidden_size": IntDistribution(8, 32, log=True),
            "optimizer": CategoricalDistribution(["adam", "rmsprop_tf"]),
        },
        user_attrs=attrs,
    )


def test_a_configuration_carries_by_its_position_in_each_range_and_a_choice_by_its_value() -> None:
    spec = spec_of(
        lr={"float": [1e-3, 1e-1], "log": True},
        hidden_size={"int": [16, 64], "log": True},
        optimizer={"choice": ["rmsprop_tf", "adam"]},
    )
    params = carried(spec, "gru", source_trial(1e-3, 16, "adam", 0.1))
    assert params["lr"] == pytest.approx(1e-2)  # the middle of its log range, in the new one
    assert 30 <= params["hidden_size"] <= 34  # 16 of 8-32 is about the middle: about 32 of 16-64
    assert params["optimizer"] == "adam"


def test_each_other_tasks_best_of_its_own_is_asked_for_first_naming_its_source() -> None:
    spec = spec_of(lr={"float": [1e-3, 1e-1], "log": True}, optimizer={"choice": ["adam", "rmsprop_tf"]})
    copying_1, copying_2, adding = (optuna.create_study() for _ in range(3))
    copying_1.add_trial(source_trial(1e-3, 16, "adam", 0.2))
    copying_1.add_trial(source_trial(1e-2, 16, "adam", 0.01, **{WARM_START_ATTR: "earlier"}))  # not its own
    copying_2.add_trial(source_trial(1e-4, 8, "rmsprop_tf", 0.1))  # the better run of copying
    adding.add_trial(source_trial(1e-2, 32, "adam", 0.05))
    unshared = optuna.create_study()  # searched nothing this study searches: carries nothing
    unshared.add_trial(
        optuna.trial.create_trial(
            value=0.0, params={"momentum": 0.5}, distributions={"momentum": FloatDistribution(0, 1)}
        )
    )
    points = transferred_points(
        spec,
        "gru",
        [
            Source("copying", "copying-1", copying_1),
            Source("copying", "copying-2", copying_2),
            Source("adding", "adding-1", adding),
            Source("parenthesis", "parenthesis-1", optuna.create_study()),  # nothing finished
            Source("ptb_char", "ptb_char-1", unshared),
        ],
    )
    assert [p.label for p in points] == ["copying-2 trial 0 (copying)", "adding-1 trial 0 (adding)"]
    assert points[0].params["optimizer"] == "rmsprop_tf" and points[0].params["lr"] == pytest.approx(1e-3)


def test_a_sweep_with_transfer_starts_from_the_other_tasks_studies_in_its_database(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'sweeper.db'}")
    tracking = f"sqlite:///{tmp_path / 'mlflow.db'}"
    earlier = create_sweep(spec_of("copying"), store, tracking, None, None, home=tmp_path)
    (study_record,) = earlier.studies
    study = optuna.load_study(study_name=study_record.study_name, storage=store.optuna)
    study.add_trial(source_trial(1e-3, 16, "adam", 0.1, **{FINAL_METRICS_ATTR: {WALL_TIME_METRIC: 5400.0}}))
    study.add_trial(source_trial(1e-2, 16, "adam", 0.3, **{FINAL_METRICS_ATTR: {WALL_TIME_METRIC: 1800.0}}))
    alone = create_sweep(spec_of("copying", transfer=True), store, tracking, None, None, home=tmp_path)
    (same_task,) = alone.studies  # another sweep of copying itself: nothing of another task,
    fresh = optuna.load_study(study_name=same_task.study_name, storage=store.optuna)
    sources = [t.user_attrs[TRANSFER_ATTR] for t in fresh.get_trials()]  # so the portfolio instead
    assert sources and all(s.startswith(PORTFOLIO_SOURCE) for s in sources)
    record = create_sweep(spec_of("denoise", transfer=True), store, tracking, None, None, home=tmp_path)
    (new,) = record.studies
    new_study = optuna.load_study(study_name=new.study_name, storage=store.optuna)
    (asked,) = new_study.get_trials()
    assert asked.user_attrs[TRANSFER_ATTR] == f"{earlier.name} trial 0 (copying)"
    source = asked.user_attrs[TRANSFER_ATTR]
    assert new_study.user_attrs[TRANSFERRED_ATTR] == [{"source": source, "worker_hours": 2.0}]
    assert origin_tags(asked.user_attrs) == {"sweeper.transferred_from": source}
    grid = create_sweep(
        spec_of("denoise", transfer=True, lr={"grid": [1e-3, 1e-2]}, hidden_size=8),
        store,
        tracking,
        None,
        None,
        home=tmp_path,
    )  # a grid runs its own points alone
    assert not optuna.load_study(study_name=grid.studies[0].study_name, storage=store.optuna).get_trials()

    new_study.tell(new_study.ask(), 0.04)  # the transferred trial, run as the searcher runs it
    [summary] = study_summaries(store, store.get_sweep(record.name))
    assert search_notes(summary, "min") == [
        "transferred from other tasks' sweeps, whose studies of this model spent 2 worker-hours "
        f"(not counted here): trial 0, from {source}, reached 0.04"
    ]
    [study_out] = sweep_status(store.get_sweep(record.name), [summary], "summarize").studies
    assert [t.model_dump() for t in study_out.transferred] == [
        {"source": source, "trial": 0, "state": "COMPLETE", "value": 0.04}
    ]
    assert study_out.transfer_worker_hours == 2.0

    new_study.set_user_attr(TRANSFERRED_ATTR, [source])  # sources listed as labels alone, no cost
    [summary] = study_summaries(store, store.get_sweep(record.name))
    assert summary.transfer_worker_hours == 0 and [t.source for t in summary.transferred] == [source]
    store.dispose()
