"""The spec's sections besides its task, models and spaces: how a study samples (`sampler`),
stops trials early (`scheduler`), spends its budget across models (`budget`), what each trial
reserves (`resources`), and which published table a reproduction runs (`reproduces`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from sweeper.spec.values import Strict, parse_duration


class Named(Strict):
    """A section that may be written as just its name (`sampler: random`)."""

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        return {"name": value} if isinstance(value, str) else value


class Sampler(Named):
    """tpe (independent, or multivariate and grouped), gp (Gaussian process), random or cmaes; the
    papers' points first."""

    name: Literal["tpe", "gp", "random", "cmaes"] = "tpe"
    seed: int | None = Field(None, ge=0, description="defaults to the sweep's seed")
    paper_points: bool = Field(True, description="start from the papers' published configurations")
    transfer: bool = Field(
        True,
        description="start each study, after the papers' points, from the same model's best "
        "configuration on every other task the study database holds a sweep of (not a grid's)",
    )
    portfolio: bool = Field(
        True,
        description="where transfer finds no other task in the study database, start each study "
        "from the portfolio learned from the project's recorded search tables instead",
    )
    multivariate: bool = Field(
        False,
        description="TPE models each searched value on its own (Optuna's independent TPE); true "
        "models them jointly, in the groups that appear together",
    )
    startup_trials: int | None = Field(
        None, ge=0, le=1_000_000, description="random trials before TPE or GP; default budget / 3, 3 to 10"
    )


class Scheduler(Named):
    """Early stopping: Ray Tune's ASHA, Optuna's median or Hyperband pruner, or none."""

    name: Literal["asha", "median", "hyperband", "none"] = "asha"
    grace_period: int | None = Field(None, ge=1, description="steps before a trial may be stopped")
    reduction_factor: float = Field(3.0, gt=1)
    judge_paper_points: bool = Field(
        False,
        description="stop a papers' point that trails its study's trials at a rung, as ASHA stops a "
        "later trial (ASHA goes on with a study's first trials, its papers' points, whatever they show)",
    )


WITHDRAWN_ALLOCATIONS = {  # still read from stored sweeps, which run on as equal; refused in a new spec
    "curves": "on the search tables' replays it was never 90% right sooner than equal: its drops came "
    "at a trial's last iteration, after the spend",
}


class Budget(Strict):
    trials: int = Field(20, ge=1, le=1_000_000, description="trials per (task, model) study")
    iterations: int | None = Field(
        None, ge=1, le=10**12, description="training steps per study, summed over its trials"
    )
    time: float | None = Field(None, description="wall-clock budget of the whole sweep, e.g. 2h")
    trial_time: float | None = Field(None, description="a trial running longer fails, e.g. 20m")
    study_time: float | None = Field(
        None,
        description="per study, its finished trials' own time in their workers, summed (a wait for a "
        "worker not counted), e.g. 2h",
    )
    max_concurrent: int | None = Field(None, ge=1, le=100_000)
    retries: int = Field(
        2, ge=0, le=100, description="restarts of a trial whose worker died, from its checkpoint"
    )
    allocate: Literal["equal", "race", "curves"] = Field(
        "equal",
        description="race: successive halving across models on complete trials; curves: withdrawn, "
        "stored sweeps only (they resume as equal); new specs are refused",
    )
    race_rung: int | None = Field(
        None, ge=1, le=1_000_000, description="race: the first rung's trials per model"
    )
    drop_below: float = Field(
        0.03,
        gt=0,
        lt=0.5,
        description="the withdrawn curves allocation's threshold: stored sweeps only; a new spec that "
        "changes it is refused",
    )
    race_exempt: list[str] = Field(
        default_factory=list,
        description="race: models never raced out (the user must see them complete)",
    )

    @field_validator("time", "trial_time", "study_time", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> float | None:
        return None if value is None else parse_duration(value)


class ModelResources(Strict):
    """One model's exceptions to the sweep's resources; what it leaves out it shares."""

    cpus: float | None = Field(None, gt=0, le=1024)
    gpus: float | None = Field(None, ge=0, le=64)
    memory_gb: float | None = Field(None, gt=0, le=4096)


class Resources(Strict):
    """What one trial reserves; `per_model` for models that need more (EURNN at 512 units) or less
    (several small GRU trials share one GPU)."""

    cpus: float = Field(1.0, gt=0, le=1024)
    gpus: float = Field(0.0, ge=0, le=64, description="a fraction packs several trials per GPU")
    memory_gb: float | None = Field(None, gt=0, le=4096, description="memory Ray reserves per trial")
    per_model: dict[str, ModelResources] = Field(default_factory=dict)

    def for_model(self, model: str) -> dict[str, float]:
        own = self.per_model.get(model, ModelResources())
        reserved = {
            "cpu": self.cpus if own.cpus is None else own.cpus,
            "gpu": self.gpus if own.gpus is None else own.gpus,
        }
        memory_gb = self.memory_gb if own.memory_gb is None else own.memory_gb
        if memory_gb is not None:
            reserved["memory"] = memory_gb * 2**30
        return reserved


class Reproduces(Strict):
    """The published table a `sweeper reproduce` sweep runs (its rows are confirmation runs)."""

    paper: str
    table: str
    seeds: int = Field(ge=1, le=1000)
    rows: dict[int, int] = Field(
        default_factory=dict,
        description="the table's rows this sweep runs, each mapped to the row whose runs it reads",
    )
