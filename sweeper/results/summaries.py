"""Status and summaries of sweeps, read back from the studies in the database."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import optuna
from optuna.trial import TrialState

from sweeper.spec.price import hours_text
from sweeper.store.database import Store, SweepRecord
from sweeper.store.trial_record import (
    BASELINE_METRIC,
    FAIL_REASON_ATTR,
    GPU_IDS_METRIC,
    INTERRUPTED_ATTR,
    PAPER_POINT_ATTR,
    PORTFOLIO_SOURCE,
    PRICE_ATTR,
    RACE_STOP_ATTR,
    SAMPLER_ATTR,
    SHARE_ATTR,
    TRANSFER_ATTR,
    TRANSFERRED_ATTR,
    WARM_START_ATTR,
    best_trial,
    counts_toward_budget,
    final_metrics,
    parameter_count,
    steps_trained,
    worker_seconds,
)


@dataclass
class StudySummary:
    study: str
    task: str
    model: str
    counts: dict[str, int]
    interrupted: int
    best_value: float | None
    best_params: dict[str, Any] = field(default_factory=dict)
    best_trial: int | None = None
    parameters: int | None = None
    last_failure: str | None = None
    common_failure: tuple[str, int] | None = None  # the most common failure reason, and how often
    steps: int = 0  # training steps of the trials that count toward the budget
    seconds: float = 0.0  # and their time, from the searcher's suggestion (a wait for a worker included)
    worker_seconds: float = 0.0  # and their own time in their workers: what the price prices
    sampler: str | None = None
    paper_points: list[PaperPointResult] = field(default_factory=list)
    warm_started: int = 0  # trials copied from an earlier sweep (`launch --warm-start`)
    transferred: list[TransferredResult] = field(default_factory=list)  # `sampler.transfer`'s trials
    transfer_worker_hours: float = 0.0  # what their source studies spent in their workers
    share: int | None = None  # in a race: the trials this model may run
    race_stopped: str | None = None  # in a race: why this model stopped
    predicted_hours: tuple[float, float] | None = None  # the worker-hours priced at launch
    gpu_ids: list[str] = field(default_factory=list)  # the GPUs Ray gave its trials, as they saw them


@dataclass
class PaperPointResult:
    """A trial started from a paper's configuration, and where it ended."""

    label: str
    trial: int
    state: str
    value: float | None

    def versus(self, best: float | None, mode: str) -> str:
        """The paper's point beside the search's best, as a line of the summary."""
        if self.value is None:
            return f"the paper's point ({self.label}) is trial {self.trial}: {self.state.lower()}"
        line = f"the paper's point ({self.label}) reached {self.value:.5g} at trial {self.trial}"
        if best is None or best == self.value:
            return line + "; the search found nothing better"
        better = best < self.value if mode == "min" else best > self.value
        return line + (
            f"; the search's best {best:.5g} is {abs(best - self.value) / abs(self.value):.0%} "
            f"{'better' if better else 'worse'}"
        )


@dataclass
class TransferredResult:
    """A trial started from another task's best configuration (`sampler.transfer`), and where it ended."""

    source: str  # e.g. "copying-1 trial 7 (copying)"
    trial: int
    state: str
    value: float | None

    def line(self) -> str:
        """Where the transferred trial ended, as a line of the summary."""
        ended = self.state.lower() if self.value is None else f"reached {self.value:.5g}"
        return f"trial {self.trial}, from {self.source}, {ended}"


def study_summaries(store: Store, record: SweepRecord) -> list[StudySummary]:
    """Per study: trials by state, the best trial with its parameters and network size, the last
    failure, and the training the budget counted."""
    summaries = []
    for study_record in record.studies:
        study = store.study(study_record.study_name)
        trials = study.get_trials(deepcopy=False)
        attrs = study.user_attrs  # each reading of `Study.user_attrs` is a query
        counts = Counter(
            t.state.name
            for t in trials
            if INTERRUPTED_ATTR not in t.user_attrs and WARM_START_ATTR not in t.user_attrs
        )
        counted = [t for t in trials if counts_toward_budget(t)]
        failures = [t.user_attrs[FAIL_REASON_ATTR] for t in trials if FAIL_REASON_ATTR in t.user_attrs]
        summary = StudySummary(
            study=study_record.study_name,
            task=study_record.task,
            model=study_record.model,
            counts={s.name: counts.get(s.name, 0) for s in TrialState},
            interrupted=sum(INTERRUPTED_ATTR in t.user_attrs for t in trials),
            best_value=None,
            last_failure=failures[-1] if failures else None,
            common_failure=Counter(failures).most_common(1)[0] if failures else None,
            steps=sum(steps_trained(t) for t in counted),
            seconds=sum(t.duration.total_seconds() for t in counted if t.duration is not None),
            worker_seconds=worker_seconds(counted),
            sampler=attrs.get(SAMPLER_ATTR),
            warm_started=sum(WARM_START_ATTR in t.user_attrs for t in trials),
            share=attrs.get(SHARE_ATTR),
            race_stopped=(attrs.get(RACE_STOP_ATTR) or {}).get("reason"),
            predicted_hours=_predicted(attrs.get(PRICE_ATTR)),
            gpu_ids=sorted(
                {i for t in trials for i in str(final_metrics(t).get(GPU_IDS_METRIC, "none")).split(",")}
                - {"none"}
            ),
            paper_points=[
                PaperPointResult(t.user_attrs[PAPER_POINT_ATTR], t.number, t.state.name, t.value)
                for t in trials
                if PAPER_POINT_ATTR in t.user_attrs and INTERRUPTED_ATTR not in t.user_attrs
            ],
            transferred=[
                TransferredResult(t.user_attrs[TRANSFER_ATTR], t.number, t.state.name, t.value)
                for t in trials
                if TRANSFER_ATTR in t.user_attrs and INTERRUPTED_ATTR not in t.user_attrs
            ],
            # a study may list its sources as labels alone, with no cost recorded
            transfer_worker_hours=sum(
                s["worker_hours"] for s in attrs.get(TRANSFERRED_ATTR, []) if isinstance(s, dict)
            ),
        )
        best = best_trial(study)
        if best is not None:
            summary.best_value = best.value
            summary.best_params = dict(best.params)
            summary.best_trial = best.number
            summary.parameters = parameter_count(best)
        summaries.append(summary)
    return summaries


def recorded_baseline(store: Store, record: SweepRecord) -> float | None:
    """The task's memoryless baseline (copying, denoise, adding) as the trials reported it, or None."""
    for study_record in record.studies:
        best = best_trial(store.study(study_record.study_name))
        if best is not None and BASELINE_METRIC in final_metrics(best):
            return float(final_metrics(best)[BASELINE_METRIC])
    return None


def importances(store: Store, record: SweepRecord) -> dict[str, dict[str, float] | str]:
    """Each study's parameter importances (Optuna's default evaluator), or why there are none."""
    result: dict[str, dict[str, float] | str] = {}
    for study_record in record.studies:
        study = store.study(study_record.study_name)
        complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        if len(complete) < 2 or not any(t.params for t in complete):
            result[study_record.model] = "needs at least two complete trials with searched parameters"
            continue
        try:
            result[study_record.model] = dict(optuna.importance.get_param_importances(study))
        except (RuntimeError, ValueError) as exc:
            result[study_record.model] = str(exc)
    return result


def sorted_best_first(summaries: list[StudySummary], mode: str) -> list[StudySummary]:
    found = [s for s in summaries if s.best_value is not None]
    missing = [s for s in summaries if s.best_value is None]
    return sorted(found, key=lambda s: s.best_value, reverse=(mode == "max")) + missing


def _predicted(price: dict[str, Any] | None) -> tuple[float, float] | None:
    return None if not price else (float(price["worker_hours"][0]), float(price["worker_hours"][1]))


def cost_line(summaries: list[StudySummary]) -> str | None:
    """What the sweep was priced at launch against what its trials spent in their workers, in
    worker-hours (a trial's wait for a free worker is not a worker's time)."""
    priced = [s.predicted_hours for s in summaries if s.predicted_hours is not None]
    if not priced:
        return None
    low, high = sum(p[0] for p in priced), sum(p[1] for p in priced)
    spent = sum(s.worker_seconds for s in summaries) / 3600
    where = (
        "within"
        if low <= spent <= high
        else f"{spent / high:.2g}x its high end"
        if spent > high
        else f"{spent / low:.2g}x its low end"
    )
    return (
        f"cost: priced at {hours_text(low)}-{hours_text(high)} worker-hours at launch, "
        f"spent {hours_text(spent)} in the workers ({where})"
    )


def missing_models(summaries: list[StudySummary]) -> list[str]:
    """The models without a complete trial: a verdict can only rank the others. A model a race
    stopped before it completed one is among them: nothing says it could not have won."""
    return [s.model for s in summaries if s.best_value is None]


def format_params(params: dict[str, Any], separator: str = ", ") -> str:
    return separator.join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items())


def search_notes(summary: StudySummary, mode: str) -> list[str]:
    """How the study searched: the papers' points beside its best, the trials it reused, why a race
    stopped it."""
    lines = [point.versus(summary.best_value, mode) for point in summary.paper_points]
    if summary.warm_started:
        lines.append(f"started from {summary.warm_started} trials of an earlier sweep (not counted here)")
    portfolio = [t for t in summary.transferred if t.source.startswith(PORTFOLIO_SOURCE)]
    swept = [t for t in summary.transferred if t not in portfolio]
    if swept:
        lines.append(
            "transferred from other tasks' sweeps, whose studies of this model spent "
            f"{hours_text(summary.transfer_worker_hours)} worker-hours (not counted here): "
            + "; ".join(t.line() for t in swept)
        )
    if portfolio:  # the database held no other task's sweep
        lines.append(
            "started from the portfolio learned from the project's recorded search tables (no other "
            "task's sweep in the database): " + "; ".join(t.line() for t in portfolio)
        )
    if summary.race_stopped:
        lines.append(summary.race_stopped)
    return lines


def render_markdown(
    record: SweepRecord,
    metric: str,
    mode: str,
    summaries: list[StudySummary],
    weights: dict[str, dict[str, float] | str] | None = None,
) -> str:
    lines = []
    for task in dict.fromkeys(s.task for s in summaries):
        lines += [
            f"### {record.name}: {task} (best {metric})",
            "",
            "| model | best | parameters | hyperparameters |",
            "|---|---|---|---|",
        ]
        for s in summaries:
            if s.task == task:
                best = "" if s.best_value is None else f"{s.best_value:.5g}"
                count = "" if s.parameters is None else str(s.parameters)
                lines.append(f"| {s.model} | {best} | {count} | {format_params(s.best_params)} |")
        lines.append("")
        notes = [
            f"- {s.model}: {line}" for s in summaries if s.task == task for line in search_notes(s, mode)
        ]
        lines += [*notes, ""] if notes else []
    if weights is not None:
        lines += ["### parameter importances", "", "| model | importances |", "|---|---|"]
        for model, value in weights.items():
            shown = value if isinstance(value, str) else ", ".join(f"{k} {v:.2f}" for k, v in value.items())
            lines.append(f"| {model} | {shown} |")
        lines.append("")
    return "\n".join(lines)
