"""What a finished trial leaves in its study, in the words both sides use: the searcher that
writes it (in the driver, with Ray) and the commands that only read it (without Ray or torch).

An Optuna trial carries its parameters, its intermediate values (the objective at each
reported step) and these user attributes: its seed and whole config, the metrics of its last report (the test
split's too when it completed; the trial's constants such as its parameter count and the
kernel it ran), why it failed, whether a stop interrupted it, and its MLflow run.
"""

from __future__ import annotations

from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

SEED_ATTR = "seed"
CONFIG_ATTR = "config"  # the whole flat config the trial trained with (`spec.trial_config`)
FINAL_METRICS_ATTR = "final_metrics"
FAIL_REASON_ATTR = "fail_reason"
FAIL_TRACEBACK_ATTR = "fail_traceback"  # where in the trial code it failed, kept past the cluster
INTERRUPTED_ATTR = "sweeper_interrupted"
MLFLOW_RUN_ATTR = "mlflow_run_id"
SAMPLER_ATTR = "sampler"  # a study's: how it draws its trials (`run.policy.sampler_text`)
RACE_STOP_ATTR = "race_stopped"  # a study's, once a race stopped it: {"cut": k, "reason": "..."}
SHARE_ATTR = "budget_share"  # a study's, in a race: the trials it may run now
PRICE_ATTR = "price"  # a study's, at launch: its predicted worker-hours and where the pace came from
WARM_START_ATTR = "warm_start"  # a trial copied from an earlier sweep, e.g. "denoise-1 trial 7"
PAPER_POINT_ATTR = "paper_point"  # the published configuration a trial starts from, e.g. "ncgru Table 2, gru"
TRANSFER_ATTR = (
    "transferred_from"  # an earlier sweep's best on another task, e.g. "copying-1 trial 7 (copying)"
)
PORTFOLIO_SOURCE = "the recorded tables' portfolio,"  # a TRANSFER_ATTR's start where the portfolio gave it
TRANSFERRED_ATTR = "transfer_sources"  # a study's: [{"source": a TRANSFER_ATTR, "worker_hours": its cost}]
PARAMETERS_METRIC = "parameters"  # the trial's whole network, reported with its metrics
BASELINE_METRIC = "baseline"  # the task's memoryless baseline, where it has one
WALL_TIME_METRIC = "wall_time"  # the trial's own seconds, from its start in the worker to its last report
GPU_IDS_METRIC = "gpu_ids"  # the GPUs Ray gave the trial ("0,1"; "none"), as its process saw them
FINISHED_STATES = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)


def trial_seed(spec_seed: int, number: int) -> int:
    """Distinct per trial number, and equal across models for the same number (paired runs)."""
    return (spec_seed * 1_000_003 + number) % 2**31


def counts_toward_budget(trial: FrozenTrial) -> bool:
    """Finished here, and not cut by a stop (an interrupted trial is run again by `resume`); a
    trial copied from an earlier sweep informs the sampler and spends nothing."""
    attrs = trial.user_attrs
    return trial.state in FINISHED_STATES and INTERRUPTED_ATTR not in attrs and WARM_START_ATTR not in attrs


def steps_trained(trial: FrozenTrial) -> int:
    """Training steps a trial ran: its last reported step."""
    return max(trial.intermediate_values, default=0)


def final_metrics(trial: FrozenTrial) -> dict[str, Any]:
    return dict(trial.user_attrs.get(FINAL_METRICS_ATTR, {}))


def reported_seconds(metrics: dict[str, Any]) -> float:
    """A trial's own time in its worker as a report of its metrics gives it (0 before its first)."""
    return float(metrics.get(WALL_TIME_METRIC, 0.0))


def worker_seconds(trials: list[FrozenTrial]) -> float:
    """The trials' own time in their workers, what a price prices and `budget.study_time` spends
    (a wait for a worker left out): each one's last report's."""
    return sum(reported_seconds(final_metrics(t)) for t in trials)


def parameter_count(trial: FrozenTrial) -> int | None:
    """The trial's network size as it reported it; None for a trial that never reported."""
    value = final_metrics(trial).get(PARAMETERS_METRIC)
    return None if value is None else int(value)


def own_trials(study: optuna.Study, states: tuple[TrialState, ...] | None = None) -> list[FrozenTrial]:
    """The study's trials of its own sweep: a trial copied from an earlier sweep (a warm start)
    informs the sampler only, and the verdict and its odds leave it out."""
    return [t for t in study.get_trials(deepcopy=False, states=states) if WARM_START_ATTR not in t.user_attrs]


def best_trial(study: optuna.Study) -> FrozenTrial | None:
    """The study's best complete trial of its own sweep, or None before one completed."""
    own = [t for t in own_trials(study, (TrialState.COMPLETE,)) if t.value is not None]
    if not own:
        return None
    pick = min if study.direction == optuna.study.StudyDirection.MINIMIZE else max
    return pick(own, key=lambda t: t.value)


def run_params(config: dict[str, Any]) -> dict[str, Any]:
    """A trial's whole configuration as flat MLflow params (task settings as `task.<name>`)."""
    flat = {k: v for k, v in config.items() if k not in ("task", "model", "task_settings")}
    flat.update({f"task.{k}": v for k, v in config["task_settings"].items()})
    return flat
