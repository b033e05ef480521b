"""Warm starts: a new sweep's studies begin with the finished trials of an earlier sweep of the
same task and model, so the sampler starts from what that sweep learned.

A trial is copied when every parameter the new study searches is among its parameters and lies
in the new range; it is added with the new study's distributions (so TPE and GP model it with
the trials to come), marked with where it came from, and spends none of the new budget nor
counts as the new sweep's best (`store.trial_record`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import optuna
from optuna.trial import FixedTrial, FrozenTrial, TrialState, create_trial

from sweeper.spec.loading import stored_spec
from sweeper.spec.space import suggest_params
from sweeper.spec.sweep import SweepSpec
from sweeper.store.database import Store, SweepRecord
from sweeper.store.trial_record import INTERRUPTED_ATTR, WARM_START_ATTR


@dataclass(frozen=True)
class WarmStart:
    """What one study took from the earlier sweep."""

    model: str
    reused: int
    unfit: int  # finished trials whose parameters lie outside the new space


def warm_start(store: Store, record: SweepRecord, earlier: SweepRecord) -> list[WarmStart]:
    """Copy `earlier`'s complete trials into `record`'s studies of the same task and model."""
    spec = stored_spec(record)
    if stored_spec(earlier).task != spec.task:
        raise ValueError(
            f"sweep {earlier.name} ran task {stored_spec(earlier).task.name} with other settings; "
            f"a warm start needs the same task and settings as {record.name}"
        )
    sources = {s.model: s.study_name for s in earlier.studies}
    started = []
    for study_record in record.studies:
        if study_record.model not in sources:
            continue
        old = optuna.load_study(study_name=sources[study_record.model], storage=store.optuna)
        new = optuna.load_study(study_name=study_record.study_name, storage=store.optuna)
        started.append(warm_start_study(old, new, spec, study_record.model, earlier.name))
    return started


def warm_start_study(
    old: optuna.Study, new: optuna.Study, spec: SweepSpec, model: str, origin: str
) -> WarmStart:
    """Copy `old`'s complete trials that fit `model`'s space in `spec` into `new`; `origin` names
    the sweep they came from."""
    copies, unfit = [], 0
    for trial in old.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        if INTERRUPTED_ATTR in trial.user_attrs or WARM_START_ATTR in trial.user_attrs:
            continue
        copy = _in_space(trial, spec, model, f"{origin} trial {trial.number}")
        if copy is None:
            unfit += 1
        else:
            copies.append(copy)
    new.add_trials(copies)
    return WarmStart(model, len(copies), unfit)


def _in_space(trial: FrozenTrial, spec: SweepSpec, model: str, origin: str) -> FrozenTrial | None:
    """The trial as one of the new study's, or None when its parameters do not fit the new space."""
    fixed = FixedTrial(trial.params)
    try:
        with warnings.catch_warnings():  # a value outside the new range is refused below
            warnings.simplefilter("ignore")
            params = suggest_params(fixed, spec, model)
    except ValueError:  # a searched parameter the earlier sweep did not search, or a choice it lacks
        return None
    distributions = fixed.distributions
    for name, value in params.items():
        if not distributions[name]._contains(distributions[name].to_internal_repr(value)):
            return None
    return create_trial(
        params=params,
        distributions=distributions,
        value=trial.value,
        intermediate_values=dict(trial.intermediate_values),
        user_attrs={**trial.user_attrs, WARM_START_ATTR: origin},
    )
