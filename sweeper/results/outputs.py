"""What `--json` prints: one typed schema per command, so scripts can rely on it.

Each output names its `kind` and schema `version`; a field is added with a new version, never
renamed. Every definition says what it is (its docstring) and every field what it holds
(`described`), with the version that added it where that came after its definition, so the
schemas are their own documentation: `sweeper.results.json_docs` renders them as docs/json.md and
refuses a definition or field that says nothing. `sweeper.results.json_outputs` builds each
document from what the results layer reads.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic_core import PydanticUndefined

VERSION = 1
STATUS_VERSION = 7  # status and summarize share one schema, and its versions
REPORT_VERSION = 5


def described(meaning: str, default: Any = PydanticUndefined, **added: int) -> Any:
    """A field that says what it holds (`meaning`, one line) and, where it came after its
    definition, the version of each output kind that added it (`status=4, report=3`: the kinds
    are the commands that name a schema first in `SCHEMAS`). docs/json.md states both."""
    return Field(default, description=meaning, json_schema_extra={"added": added} if added else None)


class Output(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Objective(Output):
    """What the sweep optimizes."""

    metric: str = described("the metric the sweep optimizes, as the task reports it")
    mode: Literal["min", "max"] = described("whether lower (`min`) or higher (`max`) is better")


class PaperPoint(Output):
    """A trial that started from a paper's published configuration."""

    label: str = described('the paper, table and row it came from, e.g. "ncgru Table 2, gru"')
    trial: int = described("the trial's number in its study")
    state: str = described("the trial's state, in Optuna's words (COMPLETE, PRUNED, FAIL, RUNNING)")
    value: float | None = described("its objective value; null where it has none")


class Transferred(Output):
    """A trial that started from another task's best configuration (`sampler.transfer`)."""

    source: str = described('the earlier sweep, its trial and task, e.g. "copying-1 trial 7 (copying)"')
    trial: int = described("the trial's number in its study")
    state: str = described("the trial's state, in Optuna's words (COMPLETE, PRUNED, FAIL, RUNNING)")
    value: float | None = described("its objective value; null where it has none")


class Failure(Output):
    """A reason trials failed with, and how often."""

    reason: str = described("why the trials failed, as the trial reported it")
    times: int = described("how many of the study's trials failed with it")


class Study(Output):
    """One model's study: its trials by state, its best complete trial, and why trials failed."""

    study: str = described("the Optuna study's name in the study database")
    task: str = described("the task its trials train on")
    model: str = described("the model it searches")
    best: float | None = described("the best complete trial's objective value; null before one completes")
    best_trial: int | None = described("that trial's number; null before one completes")
    best_params: dict[str, Any] = described("that trial's searched values, by name")
    parameters: int | None = described("that trial's network's parameter count; null where none is known")
    complete: int = described("trials that ran to their last step")
    pruned: int = described("trials the scheduler stopped early")
    failed: int = described("trials that failed (`last_failure` and `common_failure` say why)")
    running: int = described("trials running now")
    interrupted: int = described("trials a stop cut short; they do not count, and `resume` runs them again")
    budget: int = described("the trials it may run: the spec's budget, or in a race its share now")
    steps: int = described("the training steps of the trials that count toward the budget")
    seconds: float = described(
        "those trials' time from the searcher's suggestion, a wait for a free worker included"
    )
    sampler: str | None = described("how it draws its trials, in words; null where not recorded")
    paper_points: list[PaperPoint] = described("its trials started from the papers' configurations")
    warm_started: int = described(
        "trials copied from an earlier sweep (`launch --warm-start`), off the budget"
    )
    race_stopped: str | None = described("why the race stopped this model; null where none did")
    last_failure: str | None = described("the reason the latest failed trial gave; null with none failed")
    common_failure: Failure | None = described("the most common failure reason; null with none failed")
    gpu_share: float = described("the share of a GPU each trial reserves (1 / the trials that fit one)", 0.0)
    predicted_worker_hours: list[float] | None = described(
        "the worker-hours priced at launch, [low, high]; null where it was not priced", None, status=4
    )
    worker_seconds: float | None = described(
        "the counted trials' own time in their workers, what `predicted_worker_hours` prices", None, status=3
    )
    gpu_ids: list[str] = described("the GPUs Ray gave its trials, as they saw them", [])
    transferred: list[Transferred] = described(
        "its trials started from other tasks' best configurations (`sampler.transfer`)", [], status=5
    )
    transfer_worker_hours: float = described(
        "what the transferred trials' source studies spent in their workers, not counted here", 0.0, status=5
    )


class VerdictOdds(Output):
    """The verdict's odds: how likely the named winner is the true one, which models tie with it
    within seed noise, and what each model's value is."""

    winner: str = described("the model the verdict names")
    p_winner: float = described("P(the named winner is the true winner)")
    p_best: dict[str, float] = described("each model's chance of being the true winner")
    co_winners: list[str] = described("the models tied with the winner within seed noise, the winner first")
    p_tie: float | None = described(
        "where the verdict names a tie, P(every co-winner is tied with the best); else null",
        None,
        status=4,
        report=3,
    )
    p_modelled: float | None = described(
        "what the odds' model said, where the stated chance (`p_tie` for a tie, else `p_winner`) was "
        "recalibrated to how often such verdicts were right on the recorded tables' replays; else null",
        None,
        status=6,
        report=4,
    )
    few_draws: dict[str, list[int]] = described(
        "the winner's rivals with fewer complete trials than searched values, whose best the search "
        "may have missed: [complete trials, searched values]",
        {},
        status=6,
        report=4,
    )
    p_level: dict[str, float] = described(
        "each model's chance that its true value lies within the tie margin of the best (a co-winner): "
        "what a race stopped a model on, and a raced-out model's chance on the sweep's trials",
        {},
        status=7,
        report=5,
    )
    noise: float = described("one run's seed spread, in the objective's units")
    noise_source: str = described("where `noise` was estimated from, in words")
    based_on: dict[str, str] = described("each model's value: its best trial, or its confirmation runs' mean")


class ConfirmationClaim(Output):
    """What the latest `sweeper confirm` of the leaders said: an anytime-valid test on their fresh
    seeds (`sweeper.results.separation`)."""

    asked: Literal["ahead", "margin", "tie"] = described(
        "the claim asked for: `ahead`, `margin` (ahead by more than the tie margin) or `tie` (a tie)"
    )
    level: float = described("the confidence level the claims were tested at")
    outcome: Literal["ahead", "margin", "tie"] | None = described(
        "the claim it ended on: the one asked for, or the one that rules it out; null: not decided"
    )
    made: dict[str, bool] = described("each claim, whether it was made at the last look")
    winner: str = described("the leader with the best mean")
    means: dict[str, float] = described("each leader's mean objective over its fresh seeds")
    runs: dict[str, int] = described("each leader's fresh seeds")
    margin: float = described("the tie margin in the objective's units: two of the verdict's seed spreads")
    line: str = described("the decision in a sentence, with what it rests on")
    suggested_seeds: int = described("what `confirm --seeds` to ask for next, where it was not decided")


class ConfirmedRuns(Output):
    """One study's confirmation runs: its best configuration retrained on fresh seeds."""

    model: str = described("the study's model")
    task: str = described("the study's task")
    source_trial: int = described("the sweep trial whose configuration was retrained")
    runs: int = described("the runs that completed")
    failed: int = described("the runs that failed")
    mean: float | None = described("their objective's mean; null with none complete")
    std: float | None = described("their objective's standard deviation; null with fewer than two complete")


class SweepStatus(Output):
    """`status` and `summarize`: the sweep, where it stands, and its studies best first."""

    kind: Literal["status", "summarize"] = described("the command that printed it")
    version: Literal[7] = described("this schema's version", STATUS_VERSION)
    sweep: str = described("the sweep's name")
    status: str = described("where the sweep stands: created, running, finished, interrupted or failed")
    objective: Objective = described("what the sweep optimizes")
    elapsed_s: float = described("the sweep's wall time so far, in seconds")
    winner: str | None = described("the model with the best complete trial; null before one completes")
    partial: bool = described("true when some model has no complete trial: `winner` is the best of the rest")
    missing: list[str] = described("the models without a complete trial")
    studies: list[Study] = described("one per model, best first")
    importances: dict[str, dict[str, float] | str] | None = described(
        "with `--importance`: each model's parameter importances, or why it has none; else null", None
    )
    spec_sha256: str | None = described("the SHA-256 of the resolved spec the sweep ran", None)
    job_id: str | None = described("its Ray job's submission id, when it was submitted to a cluster", None)
    image: str | None = described("the container image its driver ran in, on a cluster", None)
    odds: VerdictOdds | None = described(
        "`status`'s verdict odds; null in `summarize` and before there is a verdict", None, status=2
    )
    confirmation: ConfirmationClaim | None = described(
        "the claim the latest `confirm` of the leaders made; null before one", None, status=6
    )


class ConfirmOutput(Output):
    """`confirm`: how the confirmation ended, the leaders' decision, and each confirmed study's
    fresh seeds."""

    kind: Literal["confirm"] = described("the command that printed it", "confirm")
    version: Literal[1] = described("this schema's version", VERSION)
    sweep: str = described("the sweep's name")
    status: str = described("how the confirmation ended: finished, interrupted or failed")
    claim: ConfirmationClaim | None = described(
        "the leaders' decision; null with `--every`, `--task` or `--model`, or under two leaders compared"
    )
    confirmed: list[ConfirmedRuns] = described("each confirmed study's runs on fresh seeds")
    notes: list[str] = described("what it said, in words")


class ListedSweep(Output):
    """One sweep in the study database."""

    name: str = described("the sweep's name")
    status: str = described("where it stands: created, running, finished, interrupted or failed")
    task: str | None = described("the task of its first study; null with none")
    studies: int = described("how many studies it has")
    created: str = described("when it was created, ISO 8601")
    elapsed_s: float = described("its wall time so far, in seconds")
    experiment: str | None = described("its MLflow experiment's id; null without one")


class SweepList(Output):
    """`list`: every sweep in the study database, newest last."""

    kind: Literal["list"] = described("the command that printed it", "list")
    version: Literal[1] = described("this schema's version", VERSION)
    storage: str = described("the study database's URL, any password hidden")
    sweeps: list[ListedSweep] = described("every sweep, newest last")


class Hyperparameter(Output):
    """A setting a spec may fix or search."""

    name: str = described("its name, as a spec writes it")
    type: str = described("int, float, categorical or bool")
    default: Any = described("its value where a spec gives none")
    allowed: str = described(
        'the values it may take, in words, e.g. "[0.0001, 0.03] log" or "{adam, rmsprop}"'
    )
    meaning: str = described("what it sets")


class Model(Output):
    """A registered model."""

    name: str = described("its registered name, as a spec names it")
    defined_in: str = described("where its code is: a path in this project, or a plugin's module")
    description: str = described("what it is, in a sentence")
    parameters: int | None = described(
        "its parameter count at the command's input and hidden sizes; null where it cannot be built"
    )
    hyperparameters: list[Hyperparameter] = described("its own hyperparameters")


class ModelCatalog(Output):
    """`models`: each registered model and the training settings every model shares."""

    kind: Literal["models"] = described("the command that printed it", "models")
    version: Literal[1] = described("this schema's version", VERSION)
    input_size: int = described("the input size the parameter counts are at (`--input-size`)")
    hidden_size: int = described("the hidden size the parameter counts are at (`--hidden-size`)")
    models: list[Model] = described("every registered model")
    training: list[Hyperparameter] = described("the training settings every model shares")


class Setting(Output):
    """A task's setting."""

    name: str = described("its name, as a spec writes it")
    type: str = described("its Python type's name")
    default: Any = described("its value where a spec gives none")
    meaning: str = described("what it sets")


class Task(Output):
    """A registered task."""

    name: str = described("its registered name, as a spec names it")
    defined_in: str = described("where its code is: a path in this project, or a plugin's module")
    description: str = described("what it is, in a sentence")
    objective: str = described("the metric a sweep optimizes unless its spec names another")
    mode: Literal["min", "max"] = described("whether lower (`min`) or higher (`max`) is better")
    settings: list[Setting] = described("its settings")


class TaskCatalog(Output):
    """`tasks`: each registered task and its settings."""

    kind: Literal["tasks"] = described("the command that printed it", "tasks")
    version: Literal[1] = described("this schema's version", VERSION)
    tasks: list[Task] = described("every registered task")


class Report(Output):
    """`report`: the sweep beside the papers' tables, a comparison's or a reproduction's."""

    kind: Literal["report"] = described("the command that printed it", "report")
    version: Literal[5] = described("this schema's version", REPORT_VERSION)
    sweep: str = described("the sweep's name")
    title: str = described("the report's title")
    rows: list[dict[str, Any]] = described(
        "the report's rows, each by column: the comparison's or a reproduction's"
    )
    notes: list[str] = described("a reproduction's readings, or the verdict's odds in words", [])
    odds: VerdictOdds | None = described("a comparison's verdict odds; else null", None, report=2)


SCHEMAS: dict[str, type[Output]] = {
    "status": SweepStatus,
    "summarize": SweepStatus,
    "list": SweepList,
    "models": ModelCatalog,
    "tasks": TaskCatalog,
    "report": Report,
    "confirm": ConfirmOutput,
}
