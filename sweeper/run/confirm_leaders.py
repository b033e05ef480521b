"""Confirming the leaders: fresh seeds for the models the verdict names first, one more each per
round, until the claim asked for holds (`sweeper.results.separation`), and what it said kept on the
sweep for `status`, its JSON and MLflow."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import optuna
from sqlalchemy import func, select

from sweeper.results.odds import signed, sweep_odds
from sweeper.results.retrained import confirmed
from sweeper.results.separation import FIRST_LOOK, Claim, Decision, decide, suggested_seeds, tie_margin
from sweeper.run.confirm import Job, plan_confirmations, run_jobs
from sweeper.run.launch import Where
from sweeper.run.tracking.answer import log_confirmation
from sweeper.run.tracking.tracker import open_tracker
from sweeper.run.tune.runtime import RunEnd
from sweeper.spec.loading import stored_spec
from sweeper.store.database import ConfirmationRecord, Store, StudyRecord, SweepRecord
from sweeper.store.states import SweepStatus
from sweeper.store.trial_record import best_trial


@dataclass(frozen=True)
class Leaders:
    """The studies `confirm` decides between and the tie margin it tests, both from the verdict on
    the sweep's own trials (its confirmation runs left out, so they never change which models are
    compared nor the margin a look is judged by)."""

    studies: list[StudyRecord]
    margin: float = 0.0


def leaders(store: Store, record: SweepRecord, mode: str) -> Leaders:
    """The verdict's leading tie, else the winner and the runner-up; fewer where fewer models have
    a complete trial; and the verdict's tie margin."""
    said = sweep_odds(store, record, confirmations_too=False)
    if said is None:
        return Leaders([])
    names = said.co_winners
    if len(names) < 2:
        ranked = sorted(said.estimates, key=lambda m: signed(said.estimates[m].value, mode))
        names = ranked[:2]
    by_model = {s.model: s for s in record.studies}
    return Leaders([by_model[m] for m in names], tie_margin(said.noise.sigma))


def seeds_asked(store: Store, studies: list[StudyRecord]) -> int:
    """The most seeds registered for any of the studies' best trials, by every invocation so far:
    the look the decision has reached."""
    asked = 0
    with store.session() as session:
        for study_record in studies:
            best = best_trial(optuna.load_study(study_name=study_record.study_name, storage=store.optuna))
            if best is not None:
                asked = max(
                    asked,
                    session.scalar(
                        select(func.count())
                        .select_from(ConfirmationRecord)
                        .where(
                            ConfirmationRecord.study_id == study_record.id,
                            ConfirmationRecord.source_trial == best.number,
                        )
                    )
                    or 0,
                )
    return asked


@dataclass(frozen=True)
class LeadersDecided:
    """How confirming the leaders ended: the run, what it said, and the decision at its last look
    (None where fewer than two leaders could be compared)."""

    end: RunEnd
    notes: list[str]
    decision: Decision | None = None


def confirm_leaders(
    store: Store,
    record: SweepRecord,
    where: Where | None,
    *,
    cap: int | None,
    level: float,
    claim: Claim = "ahead",
    run: Callable[[Store, SweepRecord, Any, list[Job], str], RunEnd] | None = None,
) -> LeadersDecided:
    """Fresh seeds for every leader (`leaders`), one more each per round (two to start), until
    `claim` is made at `level` (`separation.decide`, valid at every look, the runs of earlier
    invocations counted), or the claim that rules it out is, or each has run `cap` (None: the
    verdict's suggestion, `suggested_seeds`): a clear case
    costs few seeds. The decision is kept on the sweep (status, its JSON and MLflow say it). `run`
    trains a round's jobs (`run_jobs`: Ray trials)."""
    run = run or run_jobs
    spec = stored_spec(record)
    mode = spec.resolved_objective().mode
    compared = leaders(store, record, mode)
    studies = compared.studies
    if len(studies) < 2:
        return LeadersDecided(
            RunEnd(record.name, SweepStatus.FINISHED, None),
            ["fewer than two models have a complete trial: nothing to compare"],
        )
    names = [s.model for s in studies]
    asked = seeds_asked(store, studies)
    cap = suggested_seeds(asked) if cap is None else cap
    look, end = max(FIRST_LOOK, asked), RunEnd(record.name, SweepStatus.FINISHED, None)
    while True:
        jobs, notes = plan_confirmations(store, record, spec, look, studies)
        if jobs:
            end = run(store, record, where, jobs, f"{record.name} confirmation ({look} seeds)")
            if end.status != SweepStatus.FINISHED:
                return LeadersDecided(end, notes)
        runs = {c.model: list(c.objectives) for c in confirmed(store, record) if c.model in names}
        empty = [m for m in names if not runs.get(m)]
        if empty:  # a leader's every confirmation failed
            return LeadersDecided(
                end, [*notes, f"{' and '.join(empty)}: no complete confirmation run, nothing to compare"]
            )
        decision = decide({m: runs[m] for m in names}, mode, level, compared.margin)
        if decision.outcome(claim) is not None or look >= cap:
            break
        look += 1
    said = decision.line(claim)
    notes.append(said)
    suggestion = suggested_seeds(max(look, asked))
    if decision.outcome(claim) is None:
        notes.append(
            f"not decided within {look} seeds each: `sweeper confirm {record.name} --seeds {suggestion}` "
            "looks further, at the same level"
        )
    kept = {**decision.as_dict(claim), "line": said, "suggested_seeds": suggestion}
    record.confirmation_json = json.dumps(kept, sort_keys=True)
    with store.session() as session:
        session.get(SweepRecord, record.id).confirmation_json = record.confirmation_json
    if record.tracking_uri and record.mlflow_experiment_id:
        log_confirmation(open_tracker(record.tracking_uri), record, kept)
    return LeadersDecided(end, notes, decision)
