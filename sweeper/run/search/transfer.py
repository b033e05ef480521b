"""A new study's first trials learned from earlier sweeps of the same model on other tasks
(`sampler.transfer`): the field's way for a new task with a small budget (a portfolio of earlier
tasks' best configurations, Wistuba et al. 2015; Syne Tune's `ZeroShotTransfer`).

For every other task the study database holds a finished study of the model on, its best trial
of its own (no warm start's, none interrupted) is carried over by position: each searched value's
place within its range (through the logarithm on a log scale), which holds where the tasks'
ranges differ (a quarter-sized config's hidden sizes, another task's learning rates), and each
choice by its value. The new study asks for these first, after the papers' points, one per task,
the best task's first; a value the source did not search is drawn as usual. Each such trial
names its source (`TRANSFER_ATTR`, the `sweeper.transferred_from` tag in MLflow) and the study
lists them all with what each source study spent in its workers, the earlier sweeps' cost that
`summarize` states beside the new sweep's own; a study with nothing earlier starts as it would
without.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import optuna
from optuna.trial import FrozenTrial, TrialState

from sweeper.spec.space import UnitTrial, grid_of, suggest_params, unit_position
from sweeper.spec.sweep import SweepSpec
from sweeper.store.database import Store
from sweeper.store.trial_record import TRANSFER_ATTR, TRANSFERRED_ATTR, counts_toward_budget, worker_seconds


@dataclass(frozen=True)
class Source:
    """An earlier study of the model on another task."""

    task: str
    label: str  # the sweep and its name, e.g. "copying-1"
    study: optuna.Study


class TransferPoint(NamedTuple):
    """A configuration carried over from another task's study, and what that study cost."""

    label: str  # e.g. "copying-1 trial 7 (copying)"
    params: dict[str, Any]
    worker_hours: float  # the source study's own trials in their workers


def best_own(study: optuna.Study) -> FrozenTrial | None:
    """The study's best complete trial that ran in its own sweep."""
    own = [
        t
        for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        if counts_toward_budget(t) and t.value is not None
    ]
    if not own:
        return None
    pick = min if study.direction == optuna.study.StudyDirection.MINIMIZE else max
    return pick(own, key=lambda t: t.value)  # type: ignore[arg-type, return-value]


def carried(spec: SweepSpec, model: str, source: FrozenTrial) -> dict[str, Any]:
    """`source`'s values carried into this study's space by position (see the module's
    docstring): only the names both searched."""
    units = {
        name: position
        for name, value in source.params.items()
        if (position := unit_position(source.distributions[name], value)) is not None
    }
    chosen = {
        name: value
        for name, value in source.params.items()
        if isinstance(source.distributions[name], optuna.distributions.CategoricalDistribution)
    }
    probe = UnitTrial(units, chosen)
    params = suggest_params(probe, spec, model)  # type: ignore[arg-type]
    return {name: value for name, value in params.items() if name in units or name in chosen}


def transferred_points(spec: SweepSpec, model: str, sources: Iterable[Source]) -> list[TransferPoint]:
    """Each source task's best configuration of its own (the best over that task's studies), in
    the order the tasks first come among `sources`; none from a task whose study searched none of
    this study's parameters, and none into a grid, which runs its own points alone."""
    if grid_of(spec.space(model)) is not None:
        return []
    best: dict[str, tuple[Source, FrozenTrial]] = {}
    for source in sources:
        trial = best_own(source.study)
        if trial is None:
            continue
        held = best.get(source.task)
        better = held is None or (
            trial.value < held[1].value  # type: ignore[operator]
            if source.study.direction == optuna.study.StudyDirection.MINIMIZE
            else trial.value > held[1].value  # type: ignore[operator]
        )
        if better:
            best[source.task] = (source, trial)
    points = [
        TransferPoint(
            f"{source.label} trial {trial.number} ({task})",
            carried(spec, model, trial),
            _spent_hours(source.study),
        )
        for task, (source, trial) in best.items()
    ]
    return [p for p in points if p.params]  # a source that searched none of these carries nothing


def _spent_hours(study: optuna.Study) -> float:
    """What the study's own trials spent in their workers: the earlier sweep's cost a transfer reuses."""
    return worker_seconds([t for t in study.get_trials(deepcopy=False) if counts_toward_budget(t)]) / 3600


def enqueue_transferred(study: optuna.Study, points: Sequence[TransferPoint]) -> None:
    """Ask `study` for the transferred points first (after whatever it was asked for before),
    each naming its source, and list the sources and their cost on the study. A point the study
    was already asked for (a papers' point that was another task's best) is not asked twice, nor
    listed."""
    asked = []
    trials = len(study.get_trials(deepcopy=False))
    for point in points:
        study.enqueue_trial(point.params, user_attrs={TRANSFER_ATTR: point.label}, skip_if_exists=True)
        now = len(study.get_trials(deepcopy=False))
        if now > trials:
            asked.append({"source": point.label, "worker_hours": point.worker_hours})
        trials = now
    if asked:
        study.set_user_attr(TRANSFERRED_ATTR, asked)


def sources_in_store(store: Store, spec: SweepSpec, model: str, sweep: str) -> list[Source]:
    """The studies of `model` on tasks other than `spec`'s in every other sweep the database
    holds, newest sweep first."""
    found = []
    for record in sorted(store.list_sweeps(), key=lambda r: r.created_at, reverse=True):
        if record.name == sweep:
            continue
        for study_record in record.studies:
            if study_record.model == model and study_record.task != spec.task.name:
                study = optuna.load_study(study_name=study_record.study_name, storage=store.optuna)
                found.append(Source(study_record.task, record.name, study))
    return found
