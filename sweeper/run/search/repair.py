"""A study left by a stopped driver, made ready to run again: the trials it left RUNNING marked
interrupted (`resume` runs them again), and the papers' points it cut short asked for again.
"""

from __future__ import annotations

import optuna
from optuna.trial import TrialState

from sweeper.store.database import Store, SweepRecord
from sweeper.store.trial_record import FAIL_REASON_ATTR, INTERRUPTED_ATTR, PAPER_POINT_ATTR


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
