"""Study policy: how each study samples, prunes and is scheduled, what budget it gets, and how
a study left by a stopped driver is repaired before it runs again.
"""

from __future__ import annotations

import warnings
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from sweeper.run.schedulers import OptunaPrunerScheduler, PerStudyScheduler
from sweeper.spec.space import grid_of, grid_size
from sweeper.spec.sweep import SweepSpec
from sweeper.spec.values import IntRange
from sweeper.store.database import Store, SweepRecord
from sweeper.store.trial_record import FAIL_REASON_ATTR, INTERRUPTED_ATTR, PAPER_POINT_ATTR
from trainables.hyperparams import TRAINING


def _max_iterations(spec: SweepSpec) -> int:
    longest = 0
    for model in spec.models:
        value = spec.space(model).get("iterations", TRAINING["iterations"].default)
        longest = max(longest, value.int[1] if isinstance(value, IntRange) else int(value))
    return longest


def _first_report(spec: SweepSpec) -> int:
    value = spec.space(spec.models[0]).get("eval_every", TRAINING["eval_every"].default)
    return value.int[0] if isinstance(value, IntRange) else int(value)


class AskTellGridSampler(optuna.samplers.GridSampler):
    """Optuna's grid sampler without its `study.stop()` once the grid is walked.

    That call only works inside `study.optimize`; under ask-and-tell it raises before the last
    trial's state is saved. The study's budget is capped at the grid size instead.
    """

    def after_trial(self, study: optuna.Study, trial: Any, state: Any, values: Any) -> None:
        return None


def startup_trials(spec: SweepSpec, model: str) -> int:
    """Trials a study draws at random before TPE or GP model it: the spec's number, or a third of
    the study's budget between 3 and 10. Optuna's fixed 10 would leave most of a 12-trial study
    random. Warm-started trials count among them; the papers' points come on top (`make_sampler`)."""
    if spec.sampler.startup_trials is not None:
        return spec.sampler.startup_trials
    return max(3, min(10, study_budget(spec, model) // 3))


def race_rung(spec: SweepSpec, papers: int = 0) -> int:
    """A race's first rung, in trials per model: the spec's number, or a quarter of the budget but
    never fewer than a study's papers' points (at most `papers`) and random startup trials. Models
    are first compared on an unbiased sample of their spaces; a model cut on one or two draws is
    cut on luck."""
    if spec.budget.race_rung is not None:
        return spec.budget.race_rung
    startup = max(startup_trials(spec, model) for model in spec.models)
    return max(2, spec.budget.trials // 4, papers + startup)


def make_sampler(spec: SweepSpec, model: str, offset: int, papers: int = 0) -> optuna.samplers.BaseSampler:
    """Seeded from the spec, shifted by the trials already asked so a resume does not replay draws;
    a study whose searched values are grids walks its grid.

    TPE models the searched values jointly (`multivariate`), split into the groups that appear
    together (`group`): a model's space is conditional (ρ bounded by the hidden size drawn, Neumann
    settings only for NC-GRU), and independent TPE ignores how its values interact. `gp` is Optuna's
    Gaussian-process sampler, for studies of a few dozen trials. Both start after the study's
    `papers` points and `startup_trials` random draws: a published point is one setting, often
    tuned for another scale, not a look at the space, and NC-GRU's two would leave a 6-trial study
    one random draw."""
    seed = (spec.sampler.seed if spec.sampler.seed is not None else spec.seed) + offset
    grid = grid_of(spec.space(model))
    if grid is not None:
        return AskTellGridSampler(grid, seed=seed)
    if spec.sampler.name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    with warnings.catch_warnings():  # Optuna marks these options experimental
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        if spec.sampler.name == "cmaes":
            return optuna.samplers.CmaEsSampler(seed=seed)
        startup = papers + startup_trials(spec, model)
        if spec.sampler.name == "gp":
            return optuna.samplers.GPSampler(
                seed=seed, n_startup_trials=startup, warn_independent_sampling=False
            )
        return optuna.samplers.TPESampler(
            seed=seed, n_startup_trials=startup, multivariate=True, group=True, constant_liar=True
        )


def sampler_text(spec: SweepSpec, model: str, papers: int = 0) -> str:
    """How `make_sampler` draws a study's trials, as its `sampler` attribute and the launch log say it."""
    if grid_of(spec.space(model)) is not None:
        return "grid"
    first = f"{papers} papers' point{'s' * (papers > 1)} and " if papers else ""
    first += f"{startup_trials(spec, model)} random trials"
    if spec.sampler.name == "tpe":
        return f"TPE (multivariate, grouped, constant liar) after {first}"
    if spec.sampler.name == "gp":
        return f"Gaussian process after {first}"
    return {"random": "random", "cmaes": "CMA-ES"}[spec.sampler.name]


def paper_point_count(trials: list[FrozenTrial]) -> int:
    """The papers' points among a study's trials, each counted once however often it was asked."""
    return len({t.user_attrs[PAPER_POINT_ATTR] for t in trials if PAPER_POINT_ATTR in t.user_attrs})


def requeue_paper_points(study: optuna.Study) -> int:
    """Ask again for the papers' points that a stopped driver cut short (interrupted trials are
    rerun by `resume`, and these must be rerun with their own values); returns how many."""
    trials = study.get_trials(deepcopy=False)
    ran = {
        t.user_attrs[PAPER_POINT_ATTR]
        for t in trials
        if PAPER_POINT_ATTR in t.user_attrs and INTERRUPTED_ATTR not in t.user_attrs
    }
    requeued = 0
    for trial in trials:
        label = trial.user_attrs.get(PAPER_POINT_ATTR)
        if label is not None and label not in ran:
            study.enqueue_trial(trial.params, user_attrs={PAPER_POINT_ATTR: label})
            ran.add(label)
            requeued += 1
    return requeued


def study_budget(spec: SweepSpec, model: str) -> int:
    """Trials of one study: the spec's budget, or the grid's size when that is smaller."""
    grid = grid_of(spec.space(model))
    return spec.budget.trials if grid is None else min(spec.budget.trials, grid_size(grid))


def make_pruner(spec: SweepSpec) -> optuna.pruners.BasePruner:
    """The study's Optuna pruner: it acts only under the `median` and `hyperband` schedulers."""
    warmup = spec.scheduler.grace_period or _first_report(spec)
    if spec.scheduler.name == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=2, n_warmup_steps=warmup)
    if spec.scheduler.name == "hyperband":
        return optuna.pruners.HyperbandPruner(
            min_resource=warmup,
            max_resource=_max_iterations(spec),
            reduction_factor=max(2, round(spec.scheduler.reduction_factor)),
        )
    return optuna.pruners.NopPruner()


def make_scheduler(spec: SweepSpec, searcher: Any) -> Any:
    """Tune's scheduler for the sweep: ASHA per study, Optuna's pruner per study, or none."""
    from ray.tune.schedulers import ASHAScheduler, FIFOScheduler

    if spec.scheduler.name == "none":
        return FIFOScheduler()
    if spec.scheduler.name in ("median", "hyperband"):
        return OptunaPrunerScheduler(searcher)
    objective = spec.resolved_objective()
    max_t = _max_iterations(spec)
    grace = min(spec.scheduler.grace_period or _first_report(spec), max_t)
    return PerStudyScheduler(
        lambda: ASHAScheduler(
            time_attr="step",
            metric=objective.metric,
            mode=objective.mode,
            max_t=max_t,
            grace_period=grace,
            reduction_factor=spec.scheduler.reduction_factor,
        )
    )


def reconcile(store: Store, record: SweepRecord) -> int:
    """Mark trials left RUNNING by a driver that is gone as interrupted failures; return how many.

    Optuna's heartbeats act only inside `study.optimize`, not under ask-and-tell, so the
    service does this itself before any resume.
    """
    fixed = 0
    for study_record in record.studies:
        study = optuna.load_study(study_name=study_record.study_name, storage=store.optuna)
        for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING, TrialState.WAITING)):
            storage = store.optuna
            storage.set_trial_user_attr(trial._trial_id, INTERRUPTED_ATTR, True)
            storage.set_trial_user_attr(trial._trial_id, FAIL_REASON_ATTR, "the sweep's driver stopped")
            storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
            fixed += 1
    return fixed
