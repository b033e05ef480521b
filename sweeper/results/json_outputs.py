"""Each command's `--json` document (`sweeper.results.outputs`' schemas), built from what the
results layer reads: a sweep's record and study summaries, its verdict's odds, the claim its latest
`confirm` kept, the registered models and tasks, a report's rendered rows."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from sweeper.results.odds import Odds
from sweeper.results.outputs import (
    ConfirmationClaim,
    ConfirmedRuns,
    ConfirmOutput,
    Failure,
    Hyperparameter,
    ListedSweep,
    Objective,
    Output,
    PaperPoint,
    Report,
    Setting,
    Study,
    SweepList,
    SweepStatus,
    Task,
    Transferred,
    VerdictOdds,
)
from sweeper.results.retrained import ConfirmedStudy
from sweeper.results.summaries import StudySummary, missing_models, sorted_best_first
from sweeper.spec.loading import stored_spec
from sweeper.store.credentials import redact
from sweeper.store.database import SweepRecord


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
        confirmation=stored_claim(record),
    )


def stored_claim(record: SweepRecord) -> ConfirmationClaim | None:
    """The claim the latest `confirm` of the leaders recorded on the sweep, if any."""
    return None if not record.confirmation_json else ConfirmationClaim(**json.loads(record.confirmation_json))


def confirm_output(
    record: SweepRecord, status: str, confirmed: list[ConfirmedStudy], notes: list[str], claim: bool
) -> ConfirmOutput:
    """`confirm --json`: `claim` where this invocation decided between the leaders."""
    return ConfirmOutput(
        sweep=record.name,
        status=status,
        claim=stored_claim(record) if claim else None,
        confirmed=[
            ConfirmedRuns(
                model=c.model,
                task=c.task,
                source_trial=c.source_trial,
                runs=len(c.objectives),
                failed=c.failed,
                mean=c.objective[0],
                std=c.objective[1],
            )
            for c in confirmed
        ],
        notes=notes,
    )


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
