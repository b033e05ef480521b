"""The sweep's answer written to MLflow when it ends: each study run's best and size, the race's
drop where there was one, the verdict's odds (the answer view's columns), the comparison figure
and ranking on the `report` run; and the back-fill from the studies after an outage."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sweeper.run.tracking.tracker import Tracker
from sweeper.spec.loading import stored_spec
from sweeper.store.credentials import scrub
from sweeper.store.database import Store, SweepRecord
from sweeper.store.locations import resolve_tracking_uri
from sweeper.store.trial_record import RACE_STOP_ATTR, best_trial, parameter_count

if TYPE_CHECKING:
    from sweeper.run.search.searcher import StudyPlan

log = logging.getLogger(__name__)


def write_answer(tracker: Tracker, store: Store, record: SweepRecord, plans: list[StudyPlan]) -> None:
    """Everything the sweep's MLflow experiment shows of its answer (see the module's docstring)."""
    _summarize_parents(tracker, plans)
    log_odds(tracker, store, record)
    if record.mlflow_experiment_id:
        try:
            _log_comparison(tracker, store, record)
        except Exception as exc:  # the figure is a view; the sweep and its runs are done
            log.warning("could not log the comparison of %s to MLflow: %s", record.name, exc)


def catch_up_mlflow(store: Store, record: SweepRecord, why: str) -> None:
    """Back-fill MLflow from the studies once (after an outage or a dead driver); say so if it fails."""
    from sweeper.run.tracking.sync import sync_mlflow

    try:
        counts = sync_mlflow(
            store, store.get_sweep(record.name), Tracker(resolve_tracking_uri(record.tracking_uri))
        )
        log.warning("%s; back-filled %d runs from the studies", why, counts.created)
    except Exception as exc:  # a catch-up that fails leaves the sweep intact and says what to run
        log.warning(
            "MLflow is still incomplete (%s); run `sweeper sync-mlflow %s` once it is back",
            scrub(str(exc), resolve_tracking_uri(record.tracking_uri or "")),
            record.name,
        )


def _log_comparison(tracker: Tracker, store: Store, record: SweepRecord) -> None:
    """The sweep's answer on its `report` run, one click from the runs table: every model's best
    learning curve with the baseline in one figure, and the models ranked best first."""
    from sweeper.results.figures import learning_curves
    from sweeper.results.summaries import render_markdown, sorted_best_first, study_summaries

    objective = stored_spec(record).resolved_objective()
    summaries = sorted_best_first(study_summaries(store, record), objective.mode)
    with tempfile.TemporaryDirectory() as folder:
        curves, ranking = Path(folder) / "learning-curves.png", Path(folder) / "ranking.md"
        learning_curves(store, record, tracker.client).savefig(curves, dpi=100)
        ranking.write_text(render_markdown(record, objective.metric, objective.mode, summaries))
        tracker.log_report(record.mlflow_experiment_id, [curves, ranking])


def log_odds(tracker: Tracker, store: Store, record: SweepRecord) -> None:
    """The verdict's odds on the study runs the answer view lists: each model's chance to be the
    true winner (`p_best`, a column) and its place in the verdict (a tag)."""
    from sweeper.results.odds import sweep_odds

    odds = sweep_odds(store, record)
    if odds is None:
        return
    for study in record.studies:
        if study.mlflow_parent_run_id is None or study.model not in odds.p_best:
            continue
        p = odds.p_best[study.model]
        if study.model == odds.winner:
            said = f"winner, P {p:.2f}" + (
                f"; ties with {', '.join(odds.co_winners[1:])} (P {odds.p_tie:.2f})" if odds.tie else ""
            )
        elif study.model in odds.co_winners:
            said = f"ties with the winner {odds.winner} within seed noise, P {p:.2f}"
        else:
            said = f"P {p:.2f} of being the best"
        tracker.log_parent_metrics(study.mlflow_parent_run_id, {"p_best": p})
        tracker.set_tags(study.mlflow_parent_run_id, {"sweeper.verdict": said})


def log_confirmation(tracker: Tracker, record: SweepRecord, said: dict[str, Any]) -> None:
    """The latest `confirm` of the leaders on their study runs: the claim asked for and at what
    level, the one made (or "not decided") and the sentence that says it."""
    tags = {
        "sweeper.confirm.asked": f"{said['asked']} at {said['level']:g}",
        "sweeper.confirm.claim": said["outcome"] or "not decided",
        "sweeper.confirm": said["line"][:5000],
    }
    for study in record.studies:
        if study.mlflow_parent_run_id is not None and study.model in said["runs"]:
            tracker.set_tags(study.mlflow_parent_run_id, tags)


def _summarize_parents(tracker: Tracker, plans: list[StudyPlan]) -> None:
    for plan in plans:
        if plan.parent_run_id is None:
            continue
        best = best_trial(plan.study)
        tracker.summarize_parent(
            plan.parent_run_id,
            best.value if best else None,
            best.params if best else {},
            parameter_count(best) if best else None,
            plan.study.user_attrs.get(RACE_STOP_ATTR),
        )
        ended = [t.datetime_complete for t in plan.study.get_trials(deepcopy=False) if t.datetime_complete]
        tracker.end_parent(plan.parent_run_id, end_time=int(max(ended).timestamp() * 1000) if ended else None)
