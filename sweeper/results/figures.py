"""Paper-style figures of a sweep, as matplotlib Figures (tests read their data, not pixels).

Every figure uses matplotlib's constrained layout, so titles, labels and ticks never overlap, and
gives each model the same colour in every figure of a sweep.
"""

from __future__ import annotations

import logging
import textwrap
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import optuna
from matplotlib import colormaps
from matplotlib.colors import LinearSegmentedColormap, to_hex, to_rgb
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter

from sweeper.results.summaries import format_params, recorded_baseline
from sweeper.spec.loading import stored_spec
from sweeper.store.database import ConfirmationRecord, Store, SweepRecord
from sweeper.store.states import ConfirmationStatus
from sweeper.store.trial_record import MLFLOW_RUN_ATTR, best_trial, final_metrics

log = logging.getLogger(__name__)
DIAGNOSTICS = ("ortho_error", "neumann_condition")
TITLE_WIDTH = 60  # characters per title line at the figures' widths


def model_colours(record: SweepRecord) -> dict[str, str]:
    """Each model of the sweep its colour, by name, the same in every figure: tab10's but its grey
    (tab20's past nine models) as hex, never the style's cycle ("C3"), which Optuna's plots switch to
    ggplot's seven colours, so that two of eight models shared one."""
    models = sorted({s.model for s in record.studies})
    palette = [c for i, c in enumerate(colormaps["tab10"].colors) if i != 7]  # grey is the baseline's
    if len(models) > len(palette):
        palette = list(colormaps["tab20"].colors)
    return {model: to_hex(palette[index % len(palette)]) for index, model in enumerate(models)}


def task_title(record: SweepRecord) -> str:
    """The sweep, its task and the task's settings, as words."""
    spec = stored_spec(record)
    settings = format_params(dict(spec.task.settings))
    return f"{record.name}: {spec.task.name}" + (f" ({settings})" if settings else "")


def wrapped(title: str) -> str:
    return "\n".join(textwrap.wrap(title, TITLE_WIDTH))


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
    figure = Figure(figsize=(8, 5), layout="constrained")
    ax = figure.subplots()
    colours = model_colours(record)
    for study_record in record.studies:
        colour = colours[study_record.model]
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
            mean = values.mean(axis=0)
            ax.plot(steps, mean, color=colour, label=f"{study_record.model} ({len(curves)} seeds)")
            ax.fill_between(steps, values.min(axis=0), values.max(axis=0), color=colour, alpha=0.2)
            continue
        best = best_trial(store.study(study_record.study_name))
        if best is None:
            continue
        steps = sorted(best.intermediate_values)
        ax.plot(
            steps,
            [best.intermediate_values[s] for s in steps],
            color=colour,
            label=f"{study_record.model} (trial #{best.number})",
        )
    baseline = recorded_baseline(store, record)
    if baseline is not None:
        ax.axhline(baseline, color="grey", linestyle="--", label="memoryless baseline")
    ax.set_xlabel("iteration")
    ax.set_ylabel(metric)
    ax.set_title(wrapped(f"{task_title(record)}: {metric} over training"))
    ax.legend(loc="best", fontsize="small")
    return figure


def diagnostics(store: Store, record: SweepRecord, client: Any) -> Figure | None:
    """Orthogonality error and the NC-GRU Neumann condition over training (NC-GRU paper §5.3), for
    each model's best trial that reported them; None when no model did."""
    figure = Figure(figsize=(8, 6), layout="constrained")
    axes = figure.subplots(len(DIAGNOSTICS), 1, sharex=True)
    colours = model_colours(record)
    drawn = False
    for study_record in record.studies:
        best = best_trial(store.study(study_record.study_name))
        if best is None or not set(DIAGNOSTICS) & set(final_metrics(best)):
            continue
        for ax, metric in zip(axes, DIAGNOSTICS, strict=True):
            steps, values = _history(client, best.user_attrs.get(MLFLOW_RUN_ATTR), metric)
            if steps:
                ax.plot(steps, values, color=colours[study_record.model], label=study_record.model)
                drawn = True
    if not drawn:
        return None
    for ax, metric in zip(axes, DIAGNOSTICS, strict=True):
        ax.set_ylabel(metric)
        values = [v for line in ax.get_lines() for v in line.get_ydata() if v > 0]
        if values and max(values) >= 10 * min(values):  # a log axis within a decade has no labels
            ax.set_yscale("log")
            ax.yaxis.set_minor_formatter(NullFormatter())  # over about a decade they collide
        if ax.get_lines():
            ax.legend()
        else:
            ax.text(0.5, 0.5, f"no model reported {metric}", ha="center", va="center", transform=ax.transAxes)
    axes[-1].set_xlabel("iteration")
    figure.suptitle(wrapped(f"{task_title(record)}: orthogonality and Neumann condition"))
    return figure


def shades(colour: str) -> LinearSegmentedColormap:
    """A colour map from a pale tint of `colour` to `colour`: trial order in the model's own hue."""
    pale = tuple(0.85 + 0.15 * c for c in to_rgb(colour))
    return LinearSegmentedColormap.from_list(f"shades of {colour}", [pale, colour])


def study_figures(store: Store, record: SweepRecord) -> dict[str, Any]:
    """Optuna's optimization history, parameter importances and slice plot of each study."""
    import matplotlib

    # the caller holds every study's figures at once and closes them: three a model pass
    # matplotlib's open-figure warning at seven models
    with warnings.catch_warnings(), matplotlib.rc_context({"figure.max_open_warning": 0}):
        # Optuna's plots are experimental, and say so for every study
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        # a parameter drawn at one value has a slice of zero width, which matplotlib widens itself
        warnings.filterwarnings("ignore", "Attempting to set identical low and high xlims", UserWarning)
        return _study_figures(store, record)


def _study_figures(store: Store, record: SweepRecord) -> dict[str, Any]:
    from optuna.visualization import matplotlib as plots

    figures: dict[str, Any] = {}
    colours = model_colours(record)
    for study_record in record.studies:
        study = store.study(study_record.study_name)
        complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
        if not complete:
            continue
        model, colour = study_record.model, colours[study_record.model]
        history = plots.plot_optimization_history(study)
        for points in history.collections:
            points.set_color(colour)
        for line in history.get_lines():  # the best value so far, red in Optuna's plot
            line.set_color(colour)
        history.legend(loc="upper left", bbox_to_anchor=(1.05, 1.0))
        _titled(history, f"{model}: optimization history ({record.name})")
        figures[f"history-{model}"] = _laid_out(history.figure)
        if len(complete) >= 2 and any(t.params for t in complete):
            importance = plots.plot_param_importances(study)
            for bar in importance.patches:
                bar.set_color(colour)
            _titled(importance, f"{model}: hyperparameter importances ({record.name})")
            figures[f"importances-{model}"] = _laid_out(importance.figure)
            axes = np.ravel(plots.plot_slice(study))
            for ax in axes:
                ax.tick_params(axis="x", labelrotation=30)
                for points in ax.collections:  # coloured by trial number, in the model's hue
                    points.set_cmap(shades(colour))
            slices = axes[0].figure
            slices.suptitle(wrapped(f"{model}: objective by hyperparameter ({record.name})"))
            figures[f"slice-{model}"] = _laid_out(slices)
    return figures


def _titled(ax: Any, title: str) -> None:
    """`title` as the axes' only title (Optuna puts its own on the left)."""
    for loc in ("left", "right"):
        ax.set_title("", loc=loc)
    ax.set_title(wrapped(title))


def _laid_out(figure: Any) -> Any:
    """Optuna's figure under constrained layout. A log axis spanning less than a decade is shown
    linear (its minor labels would collide, and without them it would have none); wider ones keep
    only their decades' labels. A figure whose colorbar took a grid cell of zero height (Optuna's
    slice plot of one parameter) cannot be constrained, and is laid out tight instead."""
    specs = [ax.get_subplotspec() for ax in figure.axes if ax.get_subplotspec() is not None]
    grids = [spec.get_gridspec() for spec in specs]
    ratios = [r for grid in grids for r in (*grid.get_height_ratios(), *grid.get_width_ratios())]
    figure.set_layout_engine("constrained" if all(r > 0 for r in ratios) else "tight")
    for ax in figure.axes:
        for axis, scale, rescale in (
            (ax.xaxis, ax.get_xscale(), ax.set_xscale),
            (ax.yaxis, ax.get_yscale(), ax.set_yscale),
        ):
            low, high = sorted(axis.get_view_interval())
            if scale == "log" and low > 0 and high < 10 * low:
                rescale("linear")
            elif scale == "log":
                axis.set_minor_formatter(NullFormatter())
    return figure


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
        figure.savefig(path, dpi=100)  # the layout engine keeps every label inside the figure
        plt.close(figure)
        paths.append(path)
    return paths
