"""The space a table's design is drawn over and its replay searches, for any registered task
whose data this machine generates and any registered model.

Two designs, told apart by the table's settings:
- fixed hidden size (`Settings.hidden`, the first table's): every model at that size, its
  training and orthogonal settings searched over the benchmark's own ranges below, which hold
  both papers' values;
- searched hidden sizes (`Settings.hidden_scale`): the task's shipped config
  (`configs/<task>.yaml`) as a sweep of it searches, with every hidden-size range and value
  scaled by that one factor, so the papers' parameter matching between models is kept and the
  sizes train on a CPU core. The papers' points enter at their own sizes scaled by the same
  factor (inside the scaled range).

The table's sequence length, validation size, batch size and trial length replace the config's
(a table's runs share them).
"""

from __future__ import annotations

import copy
import dataclasses
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from benchmarks.search_tables.table import Settings, TableMismatch

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "configs"

FIXED_PARAMS: dict[str, Any] = {
    "lr": {"float": [1e-4, 3e-2], "log": True},
    "optimizer": {"choice": ["adam", "rmsprop_tf"]},
    "orth_lr": {"float": [1e-5, 1e-2], "log": True},
    "orth_optimizer": {"choice": ["adam", "rmsprop_tf"]},
}
FIXED_PER_MODEL: dict[str, dict[str, Any]] = {
    "scornn": {"rho": {"fraction": [0.0, 1.0]}},
    "ncgru": {
        "rho": {"fraction": [0.1, 1.0]},
        "orthogonal": {"choice": ["c", "rc"]},
        "neumann_order": {"choice": [0, 1, 2, 3]},
        "reset_interval": {"int": [10, 100], "log": True},
    },
}


def recordable_tasks() -> list[str]:
    """Registered tasks whose data the task generates (no files to read)."""
    from trainables.catalog import load_all
    from trainables.registry import TASKS

    load_all()
    return [t.name for t in TASKS if not t.reads_files]


def check_names(tasks: list[str], models: list[str]) -> None:
    """Refuse a task this machine cannot make data for or a model nobody registered, by name."""
    from trainables.catalog import load_all
    from trainables.registry import MODELS

    load_all()
    recordable = recordable_tasks()
    problems = [
        f"task {t!r} is not one whose data this machine generates ({', '.join(recordable)})"
        for t in tasks
        if t not in recordable
    ]
    problems += [
        f"model {m!r} is not registered ({', '.join(MODELS.names())})" for m in models if m not in MODELS
    ]
    if problems:
        raise TableMismatch("; ".join(problems))


def shipped_config(task: str) -> dict[str, Any]:
    """The task's shipped sweep config, as YAML data (a copy of its own: callers edit it)."""
    return copy.deepcopy(_parsed_config(task))


@cache
def _parsed_config(task: str) -> dict[str, Any]:
    """Parsed once per process: every replayed sweep's spec is built from it."""
    path = CONFIGS / f"{task}.yaml"
    if not path.is_file():
        raise TableMismatch(
            f"task {task!r} has no shipped config {path.relative_to(ROOT)} to draw a design over"
        )
    return yaml.safe_load(path.read_text())


def task_settings(task: str, settings: Settings) -> dict[str, Any]:
    """The task's settings in every run of the table."""
    if settings.hidden is not None:
        return {"T": settings.T, "valid_size": settings.valid_size}
    from trainables.catalog import load_all
    from trainables.registry import TASKS

    load_all()
    fields = TASKS.get(task).settings.model_fields
    chosen = dict(shipped_config(task)["task"].get("settings") or {})
    chosen.update({"valid_size": settings.valid_size, **({"T": settings.T} if "T" in fields else {})})
    return chosen


def raw_space(task: str, settings: Settings, models: list[str]) -> dict[str, Any]:
    """The spec entries that define what a study of each model searches: its task, models, shared
    parameters and per-model parameters (the strategies add sampler, scheduler and budget)."""
    fixed = {
        "iterations": settings.iterations,
        "eval_every": settings.eval_every,
        "batch_size": settings.batch_size,
    }
    entries: dict[str, Any] = {
        "task": {"name": task, "settings": task_settings(task, settings)},
        "models": models,
    }
    accepted = _accepted(task, models)
    if settings.hidden is not None:
        per_model = {m: copy.deepcopy(FIXED_PER_MODEL[m]) for m in models if m in FIXED_PER_MODEL}
        shared = {k: v for k, v in FIXED_PARAMS.items() if k in accepted}
        return {
            **entries,
            "params": {**fixed, "hidden_size": settings.hidden, **shared},
            "per_model": per_model,
        }
    config = shipped_config(task)
    params = {k: v for k, v in (config.get("params") or {}).items() if k in accepted}
    params.update(fixed)
    per_model = {m: dict(v) for m, v in (config.get("per_model") or {}).items() if m in models}
    factor = settings.hidden_scale or 1.0
    where = f"configs/{task}.yaml"
    if "hidden_size" in params:
        params["hidden_size"] = scaled(params["hidden_size"], factor, f"{where} params.hidden_size")
    for model, values in per_model.items():
        if "hidden_size" in values:
            values["hidden_size"] = scaled(
                values["hidden_size"], factor, f"{where} per_model.{model}.hidden_size"
            )
    return {**entries, "params": params, "per_model": per_model}


def _accepted(task: str, models: list[str]) -> set[str]:
    """The settings some study of the sweep can take: a config's shared entry for models the
    table leaves out (EURNN's Givens capacity) is dropped with them."""
    from trainables.catalog import load_all
    from trainables.hyperparams import TRAINING
    from trainables.registry import MODELS, TASKS

    load_all()
    names = set(TRAINING) | set(TASKS.get(task).searchable_settings())
    for model in models:
        names |= set(MODELS.get(model).all_hyperparams)
    return names


def scaled(value: Any, factor: float, where: str) -> Any:
    """A hidden-size value of a config times `factor`, rounded, at least 2."""
    if isinstance(value, bool):
        raise TableMismatch(f"{where}: {value!r} is no hidden size")
    if isinstance(value, int):
        return _size(value, factor)
    if isinstance(value, dict) and "int" in value:
        low, high = value["int"]
        return {**value, "int": [_size(low, factor), _size(high, factor)]}
    if isinstance(value, dict) and "choice" in value:
        return {**value, "choice": sorted({_size(v, factor) for v in value["choice"]})}
    raise TableMismatch(f"{where}: {value!r} cannot be scaled (a size, a range or a choice of sizes)")


def _size(size: int, factor: float) -> int:
    return max(2, round(size * factor))


def unscaled(settings: Settings) -> Settings:
    """The same design at the config's own sizes (where the papers' points are matched)."""
    return settings if settings.hidden is not None else dataclasses.replace(settings, hidden_scale=1.0)
