"""How each study draws its trials: its sampler (seeded, after its papers' points and random
startup trials), how the launch log says it, and the trials its budget holds.
"""

from __future__ import annotations

import warnings
from typing import Any

import optuna
from optuna.trial import FrozenTrial

from sweeper.spec.space import grid_of, study_budget
from sweeper.spec.sweep import SweepSpec
from sweeper.store.trial_record import PAPER_POINT_ATTR


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


def make_sampler(spec: SweepSpec, model: str, offset: int, papers: int = 0) -> optuna.samplers.BaseSampler:
    """Seeded from the spec, shifted by the trials already asked so a resume does not replay draws;
    a study whose searched values are grids walks its grid.

    TPE models each searched value on its own by default: on the recorded tables it found a
    winner that rests on one narrow configuration where TPE modelling the values jointly never did
    (benchmarks/README.md, the default's choice). `sampler.multivariate: true` models them jointly,
    in the groups that appear together (`group`: ρ bounded by the hidden size drawn, Neumann
    settings only for NC-GRU). `gp` is Optuna's Gaussian-process sampler, for studies of a few
    dozen trials. Both start after the study's `papers` points and `startup_trials` random draws: a
    published point is one setting, often tuned for another scale, not a look at the space, and
    NC-GRU's two would leave a 6-trial study one random draw."""
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
        joint = spec.sampler.multivariate
        return optuna.samplers.TPESampler(
            seed=seed, n_startup_trials=startup, multivariate=joint, group=joint, constant_liar=True
        )


def sampler_text(spec: SweepSpec, model: str, papers: int = 0) -> str:
    """How `make_sampler` draws a study's trials, as its `sampler` attribute and the launch log say it."""
    if grid_of(spec.space(model)) is not None:
        return "grid"
    first = f"{papers} papers' point{'s' * (papers > 1)} and " if papers else ""
    first += f"{startup_trials(spec, model)} random trials"
    if spec.sampler.name == "tpe":
        joint = "multivariate, grouped" if spec.sampler.multivariate else "independent"
        return f"TPE ({joint}, constant liar) after {first}"
    if spec.sampler.name == "gp":
        return f"Gaussian process after {first}"
    return {"random": "random", "cmaes": "CMA-ES"}[spec.sampler.name]


def paper_point_count(trials: list[FrozenTrial]) -> int:
    """The papers' points among a study's trials, each counted once however often it was asked."""
    return len({t.user_attrs[PAPER_POINT_ATTR] for t in trials if PAPER_POINT_ATTR in t.user_attrs})
