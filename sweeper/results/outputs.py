"""What `--json` prints: one typed schema per command, so scripts can rely on it.

Each output names its `kind` and schema `version`; a field is added with a new version, never
renamed. `python -m sweeper.results.outputs` prints the schemas that docs/json.md holds.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from sweeper.results.odds import Odds
from sweeper.results.summaries import StudySummary, missing_models, sorted_best_first
from sweeper.spec.loading import stored_spec
from sweeper.store.credentials import redact
from sweeper.store.database import SweepRecord

VERSION = 1
# what later versions added: status and summarize 2 the verdict's odds, 3 each study's time in its
# workers beside its price, 4 the odds' `p_tie` and each study's `predicted_worker_hours`, 5 each
# study's transferred trials and their sources' cost; report 2 the verdict's odds, 3 their `p_tie`
STATUS_VERSION = 5
REPORT_TIE_VERSION = 3


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
    noise: float
    noise_source: str
    based_on: dict[str, str]


class SweepStatus(Output):
    """`status` and `summarize`: the studies best first. `partial` is true when some model has no
    complete trial; `missing` names them, and `winner` is then the best of the rest only; `odds`
    (version 2) states the verdict's odds; each study's `worker_seconds` (version 3) is what its
    trials spent in their workers, beside the price, `predicted_worker_hours` (version 4); the
    odds' `p_tie` (version 4) how likely a tie holds; `transferred` (version 5) the trials started
    from other tasks' sweeps, whose cost `transfer_worker_hours` is not counted in the study's."""

    kind: Literal["status", "summarize"]
    version: Literal[5] = STATUS_VERSION
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
    words, `odds` (version 2) a comparison's verdict odds, with `p_tie` (version 3)."""

    kind: Literal["report"] = "report"
    version: Literal[3] = REPORT_TIE_VERSION
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
}


def dumped(output: Output) -> str:
    return output.model_dump_json(indent=2)


def sweep_status(
    record: SweepRecord,
    summaries: list[StudySummary],
    kind: Literal["status", "summarize"],
    importances: dict[str, dict[str, float] | str] | None = None,
    odds: Odds | None = None,
) -> SweepStatus:
    spec = stored_spec(record)
    objective = spec.resolved_objective()
    ranked = sorted_best_first(summaries, objective.mode)
    missing = missing_models(summaries)
    return SweepStatus(
        kind=kind,
        sweep=record.name,
        status=str(record.status),
        objective=Objective(metric=objective.metric, mode=objective.mode),
        elapsed_s=record.elapsed_s,
        winner=ranked[0].model if ranked and ranked[0].best_value is not None else None,
        spec_sha256=record.spec_hash,
        job_id=record.job_id,
        image=record.image,
        partial=bool(missing),
        missing=missing,
        studies=[
            Study(
                study=s.study,
                task=s.task,
                model=s.model,
                best=s.best_value,
                best_trial=s.best_trial,
                best_params=s.best_params,
                parameters=s.parameters,
                complete=s.counts["COMPLETE"],
                pruned=s.counts["PRUNED"],
                failed=s.counts["FAIL"],
                running=s.counts["RUNNING"],
                interrupted=s.interrupted,
                budget=spec.budget.trials if s.share is None else s.share,
                steps=s.steps,
                seconds=s.seconds,
                worker_seconds=s.worker_seconds,
                sampler=s.sampler,
                paper_points=[PaperPoint(**vars(p)) for p in s.paper_points],
                warm_started=s.warm_started,
                transferred=[Transferred(**vars(t)) for t in s.transferred],
                transfer_worker_hours=s.transfer_worker_hours,
                race_stopped=s.race_stopped,
                last_failure=s.last_failure,
                common_failure=None
                if s.common_failure is None
                else Failure(reason=s.common_failure[0], times=s.common_failure[1]),
                gpu_share=spec.resources.for_model(s.model)["gpu"],
                predicted_worker_hours=None if s.predicted_hours is None else list(s.predicted_hours),
                gpu_ids=s.gpu_ids,
            )
            for s in ranked
        ],
        importances=importances,
        odds=None if odds is None else VerdictOdds(**odds.as_dict()),
    )


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
        f"{STATUS_VERSION}, report {REPORT_TIE_VERSION}, the others {VERSION}); a new field",
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


def sweep_list(url: str, records: list[SweepRecord]) -> SweepList:
    return SweepList(
        storage=redact(url),
        sweeps=[
            ListedSweep(
                name=r.name,
                status=str(r.status),
                task=r.studies[0].task if r.studies else None,
                studies=len(r.studies),
                created=r.created_at.isoformat(),
                elapsed_s=r.elapsed_s,
                experiment=r.mlflow_experiment_id,
            )
            for r in records
        ],
    )


def hyperparameters(declared: Any) -> list[Hyperparameter]:
    return [
        Hyperparameter(
            name=hp.name, type=hp.kind, default=hp.default, allowed=hp.describe_range(), meaning=hp.help
        )
        for hp in declared
    ]


def task_output(entry: Any) -> Task:
    return Task(
        name=entry.name,
        defined_in=entry.defined_in,
        description=entry.description,
        objective=entry.objective,
        mode=entry.mode,
        settings=[
            Setting(
                name=name,
                type=getattr(fld.annotation, "__name__", str(fld.annotation)),
                default=fld.default,
                meaning=fld.description or "",
            )
            for name, fld in entry.settings.model_fields.items()
        ],
    )


def report_json(
    sweep: str, title: str, rendered: str, odds: Odds | None = None, said: Sequence[str] = ()
) -> str:
    """The report's JSON file and `--json`: a comparison's rows (and its verdict's odds), or a
    reproduction's rows and notes."""
    data = json.loads(rendered)
    rows, notes = (data["rows"], data["notes"]) if isinstance(data, dict) else (data, [])
    verdict = None if odds is None else VerdictOdds(**odds.as_dict())
    return dumped(Report(sweep=sweep, title=title, rows=rows, notes=[*notes, *said], odds=verdict))


if __name__ == "__main__":
    print(schemas_markdown(), end="")
