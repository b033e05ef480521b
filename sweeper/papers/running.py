"""Running a reproduction: each part of the table registered as a sweep, its rows run over seeds as
confirmation runs (Ray trials, unpruned, in the registry and in MLflow under the study's parent run).

Every run is registered before any starts, so a stopped reproduction resumes (`sweeper resume`)
with exactly the runs it had left.
"""

from __future__ import annotations

import json
import time

from sqlalchemy import select

from sweeper.papers.outcome import source_of
from sweeper.papers.table_runs import Part, Reproduction
from sweeper.run.confirm import Job, confirm_seed, run_jobs
from sweeper.run.launch import Where, register
from sweeper.run.tune.runtime import RunEnd
from sweeper.spec.loading import stored_spec
from sweeper.spec.sweep import SweepSpec
from sweeper.store.database import ConfirmationRecord, Store, SweepRecord, now
from sweeper.store.states import ConfirmationStatus, SweepStatus


def register_parts(
    repro: Reproduction, specs: list[SweepSpec], where: Where
) -> list[tuple[Store, SweepRecord]]:
    """One sweep per part (`specs`: `spec_for` each part), with every run of it registered as pending."""
    registered = []
    for part, spec in zip(repro.parts, specs, strict=True):
        store, record = register(spec, where, repro.profile, specs)
        register_runs(store, record, part, repro.seeds)
        registered.append((store, record))
    return registered


def register_runs(store: Store, record: SweepRecord, part: Part, seeds: int) -> None:
    studies = {s.model: s for s in record.studies}
    with store.session() as session:
        for row in part.rows:
            if row.runs_of != row.index:  # reads the runs of an earlier row with its configuration
                continue
            for k in range(seeds):
                session.add(
                    ConfirmationRecord(
                        study_id=studies[row.model].id,
                        source_trial=source_of(row.index),
                        seed=confirm_seed(stored_spec(record).seed, k),
                        params_json=json.dumps(row.params, sort_keys=True),
                    )
                )


def pending_jobs(store: Store, record: SweepRecord) -> list[Job]:
    """The runs not yet finished: pending ones, and those a stopped driver left running."""
    studies = {s.id: s for s in record.studies}
    with store.session() as session:
        rows = session.scalars(
            select(ConfirmationRecord)
            .where(
                ConfirmationRecord.study_id.in_(list(studies)),
                ConfirmationRecord.source_trial < 0,
                ConfirmationRecord.status.in_([ConfirmationStatus.PENDING, ConfirmationStatus.RUNNING]),
            )
            .order_by(ConfirmationRecord.id)
        ).all()
        return [
            Job(r.id, studies[r.study_id], r.source_trial, r.seed, json.loads(r.params_json)) for r in rows
        ]


def run_reproduction(store: Store, record: SweepRecord, where: Where) -> RunEnd:
    """Run what is left of one registered reproduction sweep, and record how it ended."""
    jobs = pending_jobs(store, record)
    if not jobs:
        store.update_sweep(record.id, status=SweepStatus.FINISHED)
        return RunEnd(record.name, SweepStatus.FINISHED, None)
    started = time.monotonic()
    store.update_sweep(record.id, status=SweepStatus.RUNNING, started_at=record.started_at or now())
    end = run_jobs(store, record, where, jobs, f"{record.name} reproduction")
    store.update_sweep(
        record.id,
        status=end.status,
        ended_at=now(),
        elapsed_s=record.elapsed_s + time.monotonic() - started,
        message=end.message,
    )
    return end
