"""Where each value of a reproduction's run comes from: the paper (and where it states it) or a
reading of what the paper leaves unstated (and why). A run whose value is neither is refused, so
no reproduction silently differs from its paper.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from trainables.hyperparams import TRAINING
from trainables.models.orthogonal import resolve_layout
from trainables.reference.published import PublishedTable, Reference
from trainables.registry import MODELS, TASKS

# The papers' setting names → ours (`task.` for a task setting).
PAPER_SETTINGS = {
    "hidden_size": "hidden_size",
    "rho": "rho",
    "optimizer": "optimizer",
    "lr": "lr",
    "lr_orthogonal": "orth_lr",
    "batch_size": "batch_size",
    "iterations": "iterations",
    "neumann_order": "neumann_order",
    "neumann_reset_every": "reset_interval",
    "T": "task.T",
    "layers": "task.layers",
    "bptt": "task.bptt",
    "dropout": "task.layer_dropout",
    "embedding_dropout": "task.embedding_dropout",
    "output_dropout": "task.output_dropout",
    "babi_task": "task.tasks",
}
# Per-layer settings of a three-layer network: the first and last layers' size is the model's
# hidden size, the middle one the task's inner size.
INNER_SIZE = "task.inner_hidden_size"
# Settings that change neither what a run learns nor what it measures: where files are, how often
# a trial saves its state, the memory guards, the implementation of the time loop and of the step.
OPERATIONAL = frozenset(
    {
        "checkpoint_every",
        "memory_limit_mb",
        "gpu_memory_fraction",
        "kernel",
        "kernel_precision",
        "capture",
        "task.data_dir",
        "task.data_seed",
    }
)


@dataclass(frozen=True)
class Setting:
    """One value a run uses and where it comes from: the paper (`why`: where it is stated) or a
    reading of what the paper leaves unstated (`why`: the reason)."""

    name: str
    value: Any
    source: Literal["paper", "reading"]
    why: str
    key: str = ""  # the table's key for it: the name, or `model.name` for one model's


def run_settings(entry: PublishedTable, ref: Reference, params: dict[str, Any]) -> tuple[Setting, ...]:
    """Every setting the row's run uses, each the paper's or a reading; ValueError names a value
    that is neither, so no run silently differs from the paper."""
    model = MODELS.get(ref.model)
    declared = {**TRAINING, **model.all_hyperparams}
    values = {name: hp.default for name, hp in declared.items()}
    task_fields = TASKS.get(entry.task).settings.model_fields
    values.update({f"task.{name}": field.default for name, field in task_fields.items()})
    values.update(params)
    stated = {PAPER_SETTINGS[k] for k in ref.settings if k in PAPER_SETTINGS and k not in entry.unused}
    stated |= set(ref.model_settings)
    if INNER_SIZE in params and "hidden_size" in stated:
        stated.add(INNER_SIZE)  # the middle of the per-layer sizes the paper states
    overridden = set(entry.settings) | set(entry.per_model.get(ref.model, {}))
    settings, unlabelled = [], []
    for name, value in values.items():
        if name in OPERATIONAL or not _applies(name, values):
            continue
        reading = _keyed(entry.readings, ref.model, name)
        stated_where = _keyed(entry.paper_settings, ref.model, name)
        if reading is not None:
            settings.append(Setting(name, value, "reading", *reading))
        elif stated_where is not None:
            settings.append(Setting(name, value, "paper", *stated_where))
        elif name in stated and name not in overridden:
            settings.append(Setting(name, value, "paper", entry.stated_in or "", name))
        else:
            unlabelled.append(f"{name}={value}")
    if unlabelled:
        raise ValueError(f"neither the paper's nor a reading: {', '.join(unlabelled)}")
    return tuple(settings)


def _keyed(notes: Any, model: str, name: str) -> tuple[str, str] | None:
    """A table's note on `name` and its key: the model's own (`model.name`) before the table's."""
    for key in (f"{model}.{name}", name):
        if key in notes:
            return notes[key], key
    return None


def _applies(name: str, values: dict[str, Any]) -> bool:
    """Whether a setting changes the run: a tunable layout's capacity, a stack's inner layers."""
    if name == "capacity":
        return resolve_layout(values["layout"], values["hidden_size"]) == "tunable"
    if name in (INNER_SIZE, "task.layer_dropout"):
        return values.get("task.layers", 1) > 1
    return True
