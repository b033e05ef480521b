"""What `--json` prints: one typed schema per command, so scripts can rely on it.

Each output names its `kind` and schema `version`; a field is added with a new version, never
renamed. `python -m sweeper.results.outputs` prints the schemas that docs/json.md holds;
`sweeper.results.json_outputs` builds each document from what the results layer reads.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

VERSION = 1
# what later versions added: status and summarize 2 the verdict's odds, 3 each study's time in its
# workers beside its price, 4 the odds' `p_tie` and each study's `predicted_worker_hours`, 5 each
# study's transferred trials and their sources' cost, 6 the claim the latest `confirm` made and the
# odds' `p_modelled` and `few_draws`; report 2 the verdict's odds, 3 their `p_tie`, 4 their
# `p_modelled` and `few_draws`
STATUS_VERSION = 6
REPORT_VERSION = 4


class Output(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Objective(Output):
    metric: str
    mode: Literal["min", "max"]


class PaperPoint(Output):
    """A trial that started from a paper's published configuration."""

    label: str
    trial: int
    state: str
    value: float | None


class Transferred(Output):
    """A trial that started from another task's best configuration (`sampler.transfer`)."""

    source: str  # the earlier sweep, its trial and task, e.g. "copying-1 trial 7 (copying)"
    trial: int
    state: str
    value: float | None


class Failure(Output):
    reason: str
    times: int


class Study(Output):
    """One model's study: its trials by state, its best complete trial, and why trials failed."""

    study: str
    task: str
    model: str
    best: float | None
    best_trial: int | None
    best_params: dict[str, Any]
    parameters: int | None
    complete: int
    pruned: int
    failed: int
    running: int
    interrupted: int
    budget: int
    steps: int
    seconds: float
    sampler: str | None
    paper_points: list[PaperPoint]
    warm_started: int
    race_stopped: str | None
    last_failure: str | None
    common_failure: Failure | None  # the most common failure reason, and how often
    gpu_share: float = 0.0  # of a GPU each trial reserves (1 / the trials that fit one GPU)
    predicted_worker_hours: list[float] | None = None  # priced at launch (version 4)
    # version 3: the trials' own time in their workers, what `predicted_worker_hours` prices;
    # `seconds` counts each from the searcher's suggestion, a wait for a free worker included
    worker_seconds: float | None = None
    gpu_ids: list[str] = []  # the GPUs Ray gave its trials, as they saw them
    transferred: list[Transferred] = []  # version 5
    # version 5: what the transferred trials' source studies spent in their workers, not counted here
    transfer_worker_hours: float = 0.0


class VerdictOdds(Output):
    """How likely the named winner is the true one (`p_winner`; each model's chance in `p_best`),
    the models tied with it within seed noise (`co_winners`, the winner first) and how likely that
    tie holds (`p_tie`), the noise (one run's seed spread, in the objective's units) and where it
    was estimated from, and what each model's value is (its best trial, or its confirmation runs'
    mean)."""

    winner: str
    p_winner: float
    p_best: dict[str, float]
    co_winners: list[str]
    # where the verdict names a tie: P(every co-winner is tied with the best) (status 4, report 3)
    p_tie: float | None = None
    # where the stated chance (p_tie where it names a tie, else p_winner) was recalibrated to how
    # often such verdicts were right on the recorded tables' replays: what the odds' model said (6)
    p_modelled: float | None = None
    # the winner's rivals with fewer than 2 complete trials a searched value, whose best the search
    # may have missed: [complete trials, searched values] (version 6)
    few_draws: dict[str, list[int]] = {}
    noise: float
    noise_source: str
    based_on: dict[str, str]


class ConfirmationClaim(Output):
    """What the latest `sweeper confirm` of the leaders said (`sweeper.results.separation`): the
    claim `asked` for at `level` and the one it ended on (`outcome`: that claim, or the one that
    rules it out; None: not decided within the seeds asked), whether each claim (`ahead`, `margin`:
    ahead by more than the tie margin, `tie`: tie confirmed) was made at its last look, on the
    leaders' fresh seeds (`runs` each, their `means`), against the tie `margin` in the objective's
    units (two of the verdict's seed spreads on the sweep's own trials)."""

    asked: Literal["ahead", "margin", "tie"]
    level: float
    outcome: Literal["ahead", "margin", "tie"] | None
    made: dict[str, bool]
    winner: str
    means: dict[str, float]
    runs: dict[str, int]
    margin: float
    line: str
    suggested_seeds: int  # what `confirm --seeds` to ask for next, where it was not decided


class ConfirmedRuns(Output):
    """One study's confirmation runs: its best configuration retrained on fresh seeds."""

    model: str
    task: str
    source_trial: int
    runs: int
    failed: int
    mean: float | None
    std: float | None


class SweepStatus(Output):
    """`status` and `summarize`: the studies best first. `partial` is true when some model has no
    complete trial; `missing` names them, and `winner` is then the best of the rest only; `odds`
    (version 2) states the verdict's odds; each study's `worker_seconds` (version 3) is what its
    trials spent in their workers, beside the price, `predicted_worker_hours` (version 4); the
    odds' `p_tie` (version 4) how likely a tie holds; `transferred` (version 5) the trials started
    from other tasks' sweeps, whose cost `transfer_worker_hours` is not counted in the study's;
    `confirmation` (version 6) the claim the latest `confirm` of the leaders made, at what level;
    the odds' `p_modelled` (version 6) what their model said where the stated chance was
    recalibrated, and their `few_draws` (version 6) the rivals the search may have missed a better
    configuration of."""

    kind: Literal["status", "summarize"]
    version: Literal[6] = STATUS_VERSION
    sweep: str
    status: str
    objective: Objective
    elapsed_s: float
    winner: str | None
    partial: bool
    missing: list[str]
    studies: list[Study]
    importances: dict[str, dict[str, float] | str] | None = None
    spec_sha256: str | None = None  # of the resolved spec the sweep ran
    job_id: str | None = None  # its Ray job's submission id, when it was submitted to a cluster
    image: str | None = None  # the container image its driver ran in, on a cluster
    odds: VerdictOdds | None = None
    confirmation: ConfirmationClaim | None = None


class ConfirmOutput(Output):
    """`confirm`: how the confirmation ended (`status`), the leaders' decision (`claim`, None with
    `--every`, `--task` or `--model` or where fewer than two leaders could be compared), each
    confirmed study's fresh seeds (`confirmed`: the mean and spread of their objective), and what
    it said in words (`notes`)."""

    kind: Literal["confirm"] = "confirm"
    version: Literal[1] = VERSION
    sweep: str
    status: str
    claim: ConfirmationClaim | None
    confirmed: list[ConfirmedRuns]
    notes: list[str]


class ListedSweep(Output):
    name: str
    status: str
    task: str | None
    studies: int
    created: str
    elapsed_s: float
    experiment: str | None


class SweepList(Output):
    """`list`: every sweep in the study database, newest last."""

    kind: Literal["list"] = "list"
    version: Literal[1] = VERSION
    storage: str
    sweeps: list[ListedSweep]


class Hyperparameter(Output):
    name: str
    type: str
    default: Any
    allowed: str
    meaning: str


class Model(Output):
    name: str
    defined_in: str
    description: str
    parameters: int | None  # at the command's input and hidden sizes; None where it cannot be built
    hyperparameters: list[Hyperparameter]


class ModelCatalog(Output):
    """`models`: each registered model and the training settings every model shares."""

    kind: Literal["models"] = "models"
    version: Literal[1] = VERSION
    input_size: int
    hidden_size: int
    models: list[Model]
    training: list[Hyperparameter]


class Setting(Output):
    name: str
    type: str
    default: Any
    meaning: str


class Task(Output):
    name: str
    defined_in: str
    description: str
    objective: str
    mode: Literal["min", "max"]
    settings: list[Setting]


class TaskCatalog(Output):
    """`tasks`: each registered task and its settings."""

    kind: Literal["tasks"] = "tasks"
    version: Literal[1] = VERSION
    tasks: list[Task]


class Report(Output):
    """`report`: the sweep beside the papers' tables; `rows` are the report's own rows (the
    comparison's, or a reproduction's), `notes` a reproduction's readings or the verdict's odds in
    words, `odds` (version 2) a comparison's verdict odds, with `p_tie` (version 3), `p_modelled` and
    `few_draws` (version 4)."""

    kind: Literal["report"] = "report"
    version: Literal[4] = REPORT_VERSION
    sweep: str
    title: str
    rows: list[dict[str, Any]]
    notes: list[str] = []
    odds: VerdictOdds | None = None


SCHEMAS: dict[str, type[Output]] = {
    "status": SweepStatus,
    "summarize": SweepStatus,
    "list": SweepList,
    "models": ModelCatalog,
    "tasks": TaskCatalog,
    "report": Report,
    "confirm": ConfirmOutput,
}


def schemas_markdown() -> str:
    """docs/json.md: each command's JSON Schema once (commands that share one, under one heading),
    and the definitions they share once, at the end, referenced from them."""
    from pydantic.json_schema import models_json_schema

    schemas = list(dict.fromkeys(SCHEMAS.values()))
    _, shared = models_json_schema(
        [(schema, "validation") for schema in schemas], ref_template="#/$defs/{model}"
    )
    lines = [
        "# `--json` output",
        "",
        "Generated by `python -m sweeper.results.outputs > docs/json.md`; the tests check that it is",
        "current and that every command's output validates against these schemas. Each document",
        "names its `kind` (the command) and its schema's `version` (status and summarize "
        f"{STATUS_VERSION}, report {REPORT_VERSION}, the others {VERSION}); a new field",
        "comes with a new version, each schema says which version added what, and none is renamed.",
        "A schema's `$ref` names a definition under [Shared definitions](#shared-definitions).",
        "",
    ]
    definitions = dict(shared["$defs"])
    for schema in schemas:
        commands = [command for command, of in SCHEMAS.items() if of is schema]
        top = definitions.pop(schema.__name__)
        lines += [
            "## " + ", ".join(f"sweeper {command} --json" for command in commands),
            "",
            (schema.__doc__ or "").strip().replace("\n    ", "\n"),
            "",
            "```json",
            json.dumps(top, indent=1),
            "```",
            "",
        ]
    lines += ["## Shared definitions", ""]
    for name, definition in sorted(definitions.items()):
        lines += [f"### {name}", "", "```json", json.dumps(definition, indent=1), "```", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    print(schemas_markdown(), end="")
