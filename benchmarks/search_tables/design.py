"""The configurations the table records: a scrambled Sobol design over each study's own space,
plus every papers' point of the task.

The space is the table's design's (`space`), drawn by the function a study draws with (`suggest_params`),
so log scales, choices and conditional bounds (ρ at most the hidden size) are the study's. Each
searched parameter takes one coordinate of the unit cube, in the order the study asks for them;
a float or an integer maps it linearly or, on a log scale, through the logarithm (Optuna's
rounding for integers), and a choice takes the option whose slice of [0, 1) holds it. The
design is extensible: the first n points of a longer design are the n-point design.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from functools import cache
from typing import Any

import torch

from benchmarks.search_tables import table as tables
from benchmarks.search_tables.space import check_names, task_settings, unscaled
from benchmarks.search_tables.strategies import Settings, Strategy, sweep_spec
from sweeper.papers.points import paper_points
from sweeper.spec.space import UnitTrial, describe, suggest_params
from sweeper.spec.sweep import SweepSpec, trial_config
from sweeper.spec.values import IntRange
from trainables.models.orthogonal import resolve_layout

SOBOL_SEED = 20261126


@dataclass(frozen=True)
class Design:
    """One recorded configuration of a (task, model): its study parameters, the flat config
    `train` takes (without its seed), and where it came from ("sobol 12", or a paper's row)."""

    label: str
    params: dict[str, Any]
    config: dict[str, Any]

    @property
    def paper(self) -> bool:
        return not self.label.startswith("sobol ")


def base_spec(task: str, settings: Settings, models: list[str]) -> SweepSpec:
    """The benchmark's sweep of `task`, for its spaces (which no strategy changes)."""
    return _base_spec(task, settings, tuple(models))


@cache
def _base_spec(task: str, settings: Settings, models: tuple[str, ...]) -> SweepSpec:
    """Built once per process: every replayed sweep's papers' points are matched in it."""
    return sweep_spec(task, Strategy("random"), 0, settings, 1, list(models))


def papers(task: str, settings: Settings, spec: SweepSpec) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """Each model's papers' points in `spec`'s space, as a study asks for them first. Where the
    design scales hidden sizes, the points are matched at the config's own sizes and enter at
    their size times the scale (inside the scaled range)."""
    own = spec if settings.hidden is not None else base_spec(task, unscaled(settings), list(spec.models))
    out: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for model in spec.models:
        points: dict[tuple, tuple[str, dict[str, Any]]] = {}
        for point in paper_points(own, model)[0]:
            params = dict(point.params)
            searched_size = spec.space(model).get("hidden_size")
            if (
                settings.hidden_scale is not None
                and "hidden_size" in params
                and isinstance(searched_size, IntRange)
            ):
                low, high = searched_size.int
                params["hidden_size"] = min(
                    max(round(params["hidden_size"] * settings.hidden_scale), low), high
                )
            points.setdefault(tuple(sorted(params.items())), (point.label, params))
        out[model] = list(points.values())
    return out


def searched(spec: SweepSpec, model: str) -> list[str]:
    """The parameters a study of `model` draws, in the order it draws them."""
    probe = UnitTrial()
    suggest_params(probe, spec, model)  # type: ignore[arg-type]
    return probe.asked


def space_text(spec: SweepSpec, model: str) -> dict[str, str]:
    """A model's space as words, the table's record of what its design was drawn over."""
    declared = {hp.name: hp for hp in spec.declared(model).values()}
    return {
        name: describe(value, declared[name].at_most if name in declared else None)
        for name, value in sorted(spec.space(model).items())
    }


def sobol_design(spec: SweepSpec, model: str, count: int, offset: int = 0) -> list[Design]:
    """Points offset..count-1 of the model's scrambled Sobol design (scrambled per model, so no
    two models share a learning rate by construction; the same on every task)."""
    names = searched(spec, model)
    seed = SOBOL_SEED + zlib.crc32(model.encode())
    engine = torch.quasirandom.SobolEngine(len(names), scramble=True, seed=seed)
    points = engine.draw(count, dtype=torch.float64).tolist()
    designs = []
    for index in range(offset, count):
        params = suggest_params(UnitTrial(dict(zip(names, points[index], strict=True))), spec, model)  # type: ignore[arg-type]
        designs.append(Design(f"sobol {index}", params, _config(spec, model, params)))
    return designs


def paper_design(spec: SweepSpec, settings: Settings, model: str) -> list[Design]:
    """The papers' points of the model on the task that fit its space, every searched value set."""
    names = set(searched(spec, model))
    designs = []
    for label, params in papers(spec.task.name, settings, spec)[model]:
        params = {**params, **_ignored(spec, model, params, names - set(params))}
        if set(params) != names:
            missing = ", ".join(sorted(names - set(params)))
            raise ValueError(f"{label} leaves {missing} to the sampler; the table records whole points")
        designs.append(Design(label, params, _config(spec, model, params)))
    return designs


def _ignored(spec: SweepSpec, model: str, params: dict[str, Any], missing: set[str]) -> dict[str, Any]:
    """The missing values the run ignores, at their range's low end: a paper's point at a power
    of two takes the FFT layout, which has no capacity (a study still draws one)."""
    searched_capacity = spec.space(model).get("capacity")
    if "capacity" not in missing or not isinstance(searched_capacity, IntRange):
        return {}
    config = trial_config(spec, model, {**params, "capacity": searched_capacity.int[0]}, seed=0)
    if resolve_layout(config.get("layout", "auto"), config["hidden_size"]) != "fft":
        return {}
    return {"capacity": searched_capacity.int[0]}


def _config(spec: SweepSpec, model: str, params: dict[str, Any]) -> dict[str, Any]:
    config = trial_config(spec, model, params, seed=0)
    del config["seed"]
    return config


def new_table(
    settings: Settings, configs: int, seeds: int, tasks: list[str], models: list[str]
) -> tables.Table:
    """A table with its design and nothing recorded (needs the spec's code)."""
    return extended(tables.Table(settings, seeds, {}, {}, {}), configs, seeds, tasks, models)


def extended(
    table: tables.Table, configs: int, seeds: int, tasks: list[str], models: list[str]
) -> tables.Table:
    """The table grown to hold every asked (task, model) (each asked task gains the asked models),
    its Sobol designs extended to `configs` points and its runs to `seeds` seeds; refused where a
    task's settings, a space or the papers' points differ from what the table's design drew."""
    from trainables.registry import TASKS

    check_names(tasks, models)
    seeds = max(seeds, table.seeds)
    evaluations = len(table.settings.steps)
    grid = {task: list(models_) for task, models_ in table.curves.items()}
    for task in tasks:
        grid[task] = list(dict.fromkeys([*grid.get(task, []), *models]))
    for task, names in grid.items():
        spec = base_spec(task, table.settings, names)
        objective = spec.resolved_objective()
        settings = task_settings(task, table.settings)
        info = tables.TaskInfo(
            settings, objective.metric, objective.mode, TASKS.get(task).sized(settings).baseline
        )
        known = table.tasks.setdefault(task, info)
        if known != info:
            raise tables.TableMismatch(f"{task}: the table's task is {known}, the design's today {info}")
        recorded_spaces = table.spaces.setdefault(task, {})
        for model in names:
            space = space_text(spec, model)
            if recorded_spaces.setdefault(model, space) != space:
                tables.check_spaces(table, {task: {model: space}})
            papers = [
                {"label": d.label, "params": d.params} for d in paper_design(spec, table.settings, model)
            ]
            curves = table.curves.setdefault(task, {}).get(model)
            if curves is None:
                designs = [
                    {"label": d.label, "params": d.params, "config": d.config}
                    for d in [*paper_design(spec, table.settings, model), *sobol_design(spec, model, configs)]
                ]
                table.curves[task][model] = tables.Curves.empty(designs, seeds, evaluations)
                continue
            recorded = [
                {"label": d["label"], "params": d["params"]}
                for d, p in zip(curves.designs, curves.paper, strict=True)
                if p
            ]
            if papers != recorded:
                raise tables.TableMismatch(
                    f"{task}/{model}: the papers' points changed since the table's design"
                )
            have = sum(not p for p in curves.paper)
            more = sobol_design(spec, model, configs, offset=have) if configs > have else []
            designs = curves.designs + [
                {"label": d.label, "params": d.params, "config": d.config} for d in more
            ]
            if more or seeds > curves.status.shape[1]:
                table.curves[task][model] = curves.grown(designs, seeds)
    table.seeds = seeds
    return table
