"""Paper-style figures of a sweep, as matplotlib Figures (tests read their data, not pixels)."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import optuna
from matplotlib.figure import Figure

from sweeper.results.summaries import recorded_baseline
from sweeper.spec.loading import stored_spec
from sweeper.store.database import ConfirmationRecord, Store, SweepRecord
from sweeper.store.states import ConfirmationStatus
from sweeper.store.trial_record import MLFLOW_RUN_ATTR, best_trial, final_metrics

log = logging.getLogger(__name__)
DIAGNOSTICS = ("ortho_error", "neumann_condition")


def _history(client: Any, run_id: str | None, metric: str) -> tuple[list[int], list[float]]:
    if client is None or run_id is None:
        return [], []
    try:
        points = sorted((m.step, m.value) for m in client.get_metric_history(run_id, metric))
    except Exception as exc:  # an unreachable tracking server costs a curve, not the report
        log.warning("MLflow history of %s unavailable: %s", run_id, exc)
        return [], []
    return [p[0] for p in points], [p[1] for p in points]


def learning_curves(store: Store, record: SweepRecord, client: Any = None) -> Figure:
    """The objective over iterations, one line per model: the mean over confirmation seeds with a
    min–max band where confirmed, else the best trial; the memoryless baseline where there is one."""
    spec = stored_spec(record)
    metric = spec.resolved_objective().metric
    figure = Figure(figsize=(8, 5))
    ax = figure.subplots()
    for study_record in record.studies:
        with store.session() as session:
            runs = [
                r.mlflow_run_id
                for r in session.query(ConfirmationRecord)
                .filter_by(study_id=study_record.id, status=ConfirmationStatus.COMPLETE)
                .order_by(ConfirmationRecord.id)
            ]
        curves = [_history(client, run_id, metric) for run_id in runs]
        curves = [c for c in curves if c[0]]
        if curves:
            steps = sorted(set.intersection(*(set(s) for s, _ in curves)))
            values = np.array([[dict(zip(s, v, strict=True))[k] for k in steps] for s, v in curves])
            ax.plot(steps, values.mean(axis=0), label=f"{study_record.model} ({len(curves)} seeds)")
            ax.fill_between(steps, values.min(axis=0), values.max(axis=0), alpha=0.2)
            continue
        best = best_trial(optuna.load_study(study_name=study_record.study_name, storage=store.optuna))
        if best is None:
            continue
        steps = sorted(best.intermediate_values)
        ax.plot(
            steps,
            [best.intermediate_values[s] for s in steps],
            label=f"{study_record.model} (trial #{best.number})",
        )
    baseline = recorded_baseline(store, record)
    if baseline is not None:
        ax.axhline(baseline, color="grey", linestyle="--", label="memoryless baseline")
    ax.set_xlabel("iteration")
    ax.set_ylabel(metric)
    ax.set_title(f"{record.name}: {spec.task.name} {spec.task.settings}")
    ax.legend()
    return figure


def diagnostics(store: Store, record: SweepRecord, client: Any) -> Figure | None:
    """Orthogonality error and the NC-GRU Neumann condition over training (NC-GRU paper §5.3), for
    each model's best trial that reported them; None when no model did."""
    figure = Figure(figsize=(8, 6))
    axes = figure.subplots(len(DIAGNOSTICS), 1, sharex=True)
    drawn = False
    for study_record in record.studies:
        best = best_trial(optuna.load_study(study_name=study_record.study_name, storage=store.optuna))
        if best is None or not set(DIAGNOSTICS) & set(final_metrics(best)):
            continue
        for ax, metric in zip(axes, DIAGNOSTICS, strict=True):
            steps, values = _history(client, best.user_attrs.get(MLFLOW_RUN_ATTR), metric)
            if steps:
                ax.plot(steps, values, label=study_record.model)
                drawn = True
    if not drawn:
        return None
    for ax, metric in zip(axes, DIAGNOSTICS, strict=True):
        ax.set_ylabel(metric)
        ax.set_yscale("log")
        if ax.get_lines():
            ax.legend()
    axes[-1].set_xlabel("iteration")
    return figure


def study_figures(store: Store, record: SweepRecord) -> dict[str, Any]:
    """Optuna's optimization history, parameter importances and slice plot of each study."""
    from optuna.visualization import matplotlib as plots

    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    figures: dict[str, Any] = {}
    for study_record in record.studies:
        study = optuna.load_study(study_name=study_record.study_name, storage=store.optuna)
        complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
        if not complete:
            continue
        model = study_record.model
        history = plots.plot_optimization_history(study)
        history.set_title(f"{model}: optimization history ({record.name})")
        figures[f"history-{model}"] = history.figure
        if len(complete) >= 2 and any(t.params for t in complete):
            importance = plots.plot_param_importances(study)
            importance.set_title(f"{model}: hyperparameter importances ({record.name})")
            figures[f"importances-{model}"] = importance.figure
            axes = plots.plot_slice(study)
            slices = np.ravel(axes)[0].figure
            slices.suptitle(f"{model}: objective by hyperparameter ({record.name})")
            figures[f"slice-{model}"] = slices
    return figures


def write_figures(store: Store, record: SweepRecord, out: Path, client: Any) -> list[Path]:
    """Every figure of the sweep as PNG under `out`; returns the files written."""
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    figures: dict[str, Any] = {"learning-curves": learning_curves(store, record, client)}
    extra = diagnostics(store, record, client)
    if extra is not None:
        figures["diagnostics"] = extra
    figures.update(study_figures(store, record))
    paths = []
    for name, figure in figures.items():
        path = out / f"{name}.png"
        figure.savefig(path, dpi=100, bbox_inches="tight")
        plt.close(figure)
        paths.append(path)
    return paths
