"""The replay without Optuna's unread deep copies: `tell` still stores the trial and returns it,
and replayed sweeps are identical with and without the change."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import optuna
import pytest
from optuna.search_space import group_decomposed

from benchmarks.search_tables import uncopied
from benchmarks.search_tables.tpe_speed import comparable_traces
from tests.benchmarks.search_tables.synthetic import synthetic_table


@pytest.fixture
def plain() -> Iterator[None]:
    """Optuna as it ships before and after each test, whatever the test installed."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    uncopied.uninstall()
    yield
    uncopied.uninstall()


def test_install_swaps_both_and_uninstall_restores_optunas(plain: None) -> None:
    uncopied.install()
    assert optuna.Study.tell is uncopied.tell
    assert group_decomposed._GroupDecomposedSearchSpace.calculate is uncopied.calculate
    uncopied.uninstall()
    assert optuna.Study.tell is uncopied.PLAIN["tell"]
    assert group_decomposed._GroupDecomposedSearchSpace.calculate is uncopied.PLAIN["calculate"]


def test_another_optunas_functions_are_refused_by_name_before_anything_is_replaced(
    plain: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An Optuna whose `Study.tell` is not the one the copy was written from: refused, naming it,
    and Optuna left as it ships."""
    monkeypatch.setitem(uncopied.REPLACED, "tell", "0" * 16)
    with pytest.raises(RuntimeError, match="this Optuna's tell are not the ones"):
        uncopied.install()
    assert optuna.Study.tell is uncopied.PLAIN["tell"]
    assert group_decomposed._GroupDecomposedSearchSpace.calculate is uncopied.PLAIN["calculate"]


def test_tell_stores_the_trial_and_returns_it_as_stored(plain: None) -> None:
    uncopied.install()
    study = optuna.create_study()
    trial = study.ask({"x": optuna.distributions.FloatDistribution(0, 1)})
    told = study.tell(trial, 0.5)
    assert told.state == optuna.trial.TrialState.COMPLETE and told.value == 0.5
    assert study.trials[0].value == 0.5 and study.trials[0].params == told.params
    pruned = study.tell(study.ask(), state=optuna.trial.TrialState.PRUNED)
    assert pruned.state == optuna.trial.TrialState.PRUNED
    assert study.tell(1, state=optuna.trial.TrialState.PRUNED, skip_if_finished=True).number == 1


def test_the_group_decomposition_is_optunas(plain: None) -> None:
    """The same groups as Optuna's, and an earlier answer unchanged by a later computation."""
    study = optuna.create_study()
    float_ = optuna.distributions.FloatDistribution(0, 1)
    for names in (("a", "b"), ("a", "c"), ("a", "b", "c"), ("d",)):
        study.tell(study.ask({name: float_ for name in names}), 1.0)
    plain_space = group_decomposed._GroupDecomposedSearchSpace()
    expected = plain_space.calculate(study).search_spaces
    uncopied.install()
    space = group_decomposed._GroupDecomposedSearchSpace()
    first = space.calculate(study)
    assert first.search_spaces == expected
    earlier = [dict(s) for s in first.search_spaces]
    study.tell(study.ask({"e": float_, "a": float_}), 1.0)
    later = space.calculate(study)
    assert first.search_spaces == earlier
    assert later.search_spaces == plain_space.calculate(study).search_spaces != earlier


def test_replayed_sweeps_are_identical_with_it(plain: None, tmp_path: Path) -> None:
    table = synthetic_table(tmp_path / "table")
    jobs = [(t, s, 2, 0) for t in table.curves for s in ("default", "top2", "old", "all")]
    reference = comparable_traces(table, jobs, 12)
    uncopied.install()
    for ref, got in zip(reference, comparable_traces(table, jobs, 12), strict=True):
        assert got == ref, (ref["task"], ref["strategy"], ref["workers"], ref["seed"])
