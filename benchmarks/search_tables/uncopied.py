"""Optuna's defensive deep copies that nothing in a replayed sweep reads, skipped in the replay.

`Study.tell` returns a deep copy of the finished trial (the searcher discards it), and the
group-decomposed search space that TPE's `group=True` recomputes before every suggestion is
handed back deep-copied although TPE only reads it, and each recomputation builds a new list of
new dictionaries, so what an earlier call returned is never changed by a later one. Together about
a tenth of a replayed TPE sweep's CPU (`tests/benchmarks/search_tables/test_uncopied.py` replays
sweeps with and without this and compares every trial). The service's sweeps, whose time is
training, keep Optuna as it ships.
"""

from __future__ import annotations

import copy
import hashlib
import inspect
from typing import Any

from optuna.search_space import group_decomposed
from optuna.study import Study
from optuna.study._tell import _get_frozen_trial, _tell_with_warning
from optuna.trial import TrialState

PLAIN = {
    "tell": Study.tell,
    "calculate": group_decomposed._GroupDecomposedSearchSpace.calculate,
}
# the source of the functions this replaces, as Optuna 5.1 wrote them (SHA-256, 16 digits): the
# copies below are theirs but for the deep copy, and another Optuna's may do more
REPLACED = {"tell": "b70ef2245a800479", "calculate": "5bd872c66283a589"}


def digest(function: Any) -> str:
    return hashlib.sha256(inspect.getsource(function).encode()).hexdigest()[:16]


def tell(
    self: Study,
    trial: Any,
    values: Any = None,
    state: Any = None,
    skip_if_finished: bool = False,
) -> Any:
    """`Study.tell`, returning the stored trial itself."""
    _tell_with_warning(
        study=self, trial=trial, value_or_values=values, state=state, skip_if_finished=skip_if_finished
    )
    return _get_frozen_trial(self, trial)


def calculate(self: Any, study: Study, use_cache: bool = False) -> Any:
    """Optuna's `_GroupDecomposedSearchSpace.calculate`, returning a shallow copy: a
    recomputation replaces the group's list and dictionaries instead of changing them, and the
    distributions are never changed."""
    if self._study_id is None:
        self._study_id = study._study_id
    elif self._study_id != study._study_id:
        raise ValueError("`_GroupDecomposedSearchSpace` cannot handle multiple studies.")
    states = (TrialState.COMPLETE, TrialState.PRUNED) if self._include_pruned else (TrialState.COMPLETE,)
    for trial in study._get_trials(deepcopy=False, states=states, use_cache=use_cache):
        self._search_space.add_distributions(trial.distributions)
    return copy.copy(self._search_space)


def install() -> None:
    """Replace the two functions, once each is the one its copy was written from: another
    Optuna's is refused by name, before anything is replayed."""
    changed = [name for name, function in PLAIN.items() if digest(function) != REPLACED[name]]
    if changed:
        raise RuntimeError(
            f"this Optuna's {' and '.join(changed)} are not the ones benchmarks/search_tables/uncopied.py "
            "copies: compare them, update the copies and `REPLACED`, or replay without it"
        )
    Study.tell = tell  # type: ignore[method-assign]
    group_decomposed._GroupDecomposedSearchSpace.calculate = calculate  # type: ignore[method-assign]


def uninstall() -> None:
    Study.tell = PLAIN["tell"]  # type: ignore[method-assign]
    group_decomposed._GroupDecomposedSearchSpace.calculate = PLAIN["calculate"]  # type: ignore[method-assign]
