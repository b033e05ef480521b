"""Registries of models and tasks: name → what to build and what it accepts.

Each built-in model and task is declared once, by name, in `trainables.models.declared` and
`trainables.tasks.declared`: its hyperparameters or settings, its objective and metrics, and
where its code is (`"module:Qualname"`, imported when a trial first builds it). So a spec is
validated, and `sweeper models`/`tasks`/`status` read, without importing torch. A plugin
registers with a decorator on its class (`register_model`, `register_task`), its code already
imported. `trainables.catalog` imports the declarations and the plugins; this module imports
none of them.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    Generic,
    Literal,
    TypeAlias,
    TypeVar,
    get_args,
    get_origin,
    get_type_hints,
)

from pydantic import BaseModel

from trainables.hyperparams import ORTHOGONAL_OPTIMIZER_HYPERPARAMS, Hyperparam, validate_values

if TYPE_CHECKING:
    import torch

    from trainables.models.base import RecurrentModel
    from trainables.tasks.base import Task

PROJECT = Path(__file__).resolve().parents[1]
T = TypeVar("T")
Code: TypeAlias = Callable[..., Any] | str  # a callable, or "module:Qualname" imported when first used


def resolved(code: Code) -> Callable[..., Any]:
    """The callable `code` names, importing its module the first time (a declared name)."""
    if not isinstance(code, str):
        return code
    module, _, qualname = code.partition(":")
    found: Any = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    return found


def defined_in(code: Code) -> str:
    """Where `code` is defined: a path in this project, or its module's name (a plugin); a
    declared name is located without importing it."""
    if isinstance(code, str):
        module = code.partition(":")[0]
        spec = importlib.util.find_spec(module)
        path = Path(spec.origin) if spec is not None and spec.origin else None
    else:
        found = inspect.getmodule(code)
        module = getattr(found, "__name__", "?")
        path = Path(inspect.getsourcefile(code) or "") if found is not None else None
    if path is not None and path.is_absolute() and path.is_relative_to(PROJECT):
        return path.relative_to(PROJECT).as_posix()
    return module


class Registry(Generic[T]):
    """Name → entry; registering a name twice is a bug, so it raises."""

    def __init__(self, what: str) -> None:
        self._what = what
        self._entries: dict[str, T] = {}

    def register(self, name: str, entry: T) -> T:
        if name in self._entries:
            raise ValueError(f"{self._what} {name!r} is already registered")
        self._entries[name] = entry
        return entry

    def get(self, name: str) -> T:
        try:
            return self._entries[name]
        except KeyError:
            raise KeyError(f"unknown {self._what} {name!r}; registered: {', '.join(self.names())}") from None

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[T]:
        return iter(self._entries[n] for n in self.names())

    def __len__(self) -> int:
        return len(self._entries)


@dataclass(frozen=True)
class ModelEntry:
    """A registered recurrent model: how to build it and what it accepts.

    `build(input_size, hidden_size, **hyperparams)` returns a `RecurrentModel`. Orthogonal models
    also accept the orthogonal optimizer settings, which the training loop (not the model) uses.
    """

    name: str
    build: Code
    hyperparams: tuple[Hyperparam, ...] = ()
    orthogonal: bool = False
    description: str = ""
    ablation_of: str | None = None  # the model this one removes a part of, compared at its size

    @property
    def all_hyperparams(self) -> dict[str, Hyperparam]:
        extra = ORTHOGONAL_OPTIMIZER_HYPERPARAMS if self.orthogonal else ()
        return {hp.name: hp for hp in (*self.hyperparams, *extra)}

    @property
    def defined_in(self) -> str:
        return defined_in(self.build)

    def resolve(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Validated values of every hyperparameter of this model, defaults filled in."""
        return validate_values(self.all_hyperparams, values, f"model {self.name!r}")

    def create(self, input_size: int, hidden_size: int, **values: Any) -> RecurrentModel:
        checked = self.resolve(values)
        own = {hp.name: checked[hp.name] for hp in self.hyperparams}
        build: Callable[..., RecurrentModel] = resolved(self.build)
        return build(input_size, hidden_size, **own)


@dataclass(frozen=True)
class TaskEntry:
    """A registered task: its typed settings, what it reports and the Task class that builds it.

    `build(settings, batch_size=, seed=, device=)` returns a `Task`. Settings are a pydantic model
    with `extra="forbid"`, validated when a spec is read, so a typo never reaches a trial.
    `objective` is the metric a sweep optimizes by default and `mode` its direction; `metrics`
    what the task's `evaluate` returns on the validation split, so a spec's objective is checked
    before any trial. `reads_files`: whether a launch must check its data first (`check_data`).
    """

    name: str
    settings: type[BaseModel]
    build: Code
    description: str = ""
    objective: str = "valid_loss"
    mode: Literal["min", "max"] = "min"
    metrics: tuple[str, ...] = ("valid_loss",)
    reads_files: bool = False

    def __post_init__(self) -> None:
        if self.objective not in self.metrics:
            raise ValueError(
                f"task {self.name!r}: objective {self.objective!r} is not among its metrics {self.metrics}"
            )
        if self.mode not in ("min", "max"):
            raise ValueError(f"task {self.name!r}: mode must be min or max, got {self.mode!r}")

    @property
    def defined_in(self) -> str:
        return defined_in(self.build)

    def searchable_settings(self) -> dict[str, Hyperparam]:
        """The numeric, boolean and enumerated settings, as `task.<name>` hyperparameters a sweep
        may search (dropout, BPTT length); derived from the settings model, declared once."""
        return dict(_settings_hyperparams(self.settings))

    @property
    def task_class(self) -> type[Task]:
        """The Task subclass `build` makes (imported on first use: its code needs torch)."""
        build = resolved(self.build)
        if isinstance(build, type):
            return build
        return get_type_hints(build)["return"]

    def check_data(self, settings: Mapping[str, Any]) -> None:
        """Raise `trainables.data.MissingDataError` when files the task reads are absent (a
        generated task reads none, and its code is not imported to say so)."""
        if self.reads_files:
            self.task_class.check_data(self.settings.model_validate(dict(settings)))

    def create(
        self, settings: Mapping[str, Any], *, batch_size: int, seed: int, device: torch.device
    ) -> Task:
        build: Callable[..., Task] = resolved(self.build)
        return build(
            self.settings.model_validate(dict(settings)), batch_size=batch_size, seed=seed, device=device
        )

    def sized(self, settings: Mapping[str, Any]) -> Task:
        """The task without its data, for counting its networks' parameters (`Task.sized`)."""
        return self.task_class.sized(self.settings.model_validate(dict(settings)))


MODELS: Registry[ModelEntry] = Registry("model")
TASKS: Registry[TaskEntry] = Registry("task")
Built = TypeVar("Built", bound=Callable[..., Any])


def declare_model(
    name: str,
    build: Code,
    *,
    hyperparams: tuple[Hyperparam, ...] = (),
    orthogonal: bool = False,
    description: str = "",
    ablation_of: str | None = None,
) -> ModelEntry:
    """Register a recurrent model under `name`; `build` is called as
    `build(input_size, hidden_size, **hyperparams)`, every declared hyperparameter filled in from
    the trial or from its default."""
    return MODELS.register(name, ModelEntry(name, build, hyperparams, orthogonal, description, ablation_of))


def declare_task(
    name: str,
    settings: type[BaseModel],
    build: Code,
    *,
    description: str = "",
    objective: str = "valid_loss",
    mode: Literal["min", "max"] = "min",
    metrics: tuple[str, ...] = ("valid_loss",),
    reads_files: bool = False,
) -> TaskEntry:
    """Register a task under `name`, with its settings model and what it reports."""
    return TASKS.register(
        name, TaskEntry(name, settings, build, description, objective, mode, metrics, reads_files)
    )


def register_model(
    name: str,
    *,
    hyperparams: tuple[Hyperparam, ...] = (),
    orthogonal: bool = False,
    description: str = "",
    ablation_of: str | None = None,
) -> Callable[[Built], Built]:
    """Class (or builder) decorator for a plugin's model: `declare_model` with the code in hand."""

    def register(build: Built) -> Built:
        declare_model(
            name,
            build,
            hyperparams=hyperparams,
            orthogonal=orthogonal,
            description=description,
            ablation_of=ablation_of,
        )
        return build

    return register


def register_task(
    name: str,
    settings: type[BaseModel],
    *,
    description: str = "",
    objective: str = "valid_loss",
    mode: Literal["min", "max"] = "min",
    metrics: tuple[str, ...] = ("valid_loss",),
) -> Callable[[Built], Built]:
    """Class decorator for a plugin's Task subclass: `declare_task` with the code in hand. Its
    `check_data` is always asked, since its code is imported anyway."""

    def register(build: Built) -> Built:
        declare_task(
            name,
            settings,
            build,
            description=description,
            objective=objective,
            mode=mode,
            metrics=metrics,
            reads_files=True,
        )
        return build

    return register


@functools.cache
def _settings_hyperparams(settings: type[BaseModel]) -> dict[str, Hyperparam]:
    """A settings model's fields as hyperparameters: read at every suggestion a sweep makes, so
    derived once per model class (they never change after import)."""
    declared: dict[str, Hyperparam] = {}
    for name, info in settings.model_fields.items():
        bounds = {"low": None, "high": None}
        for constraint in info.metadata:
            for attribute, key in (("ge", "low"), ("gt", "low"), ("le", "high"), ("lt", "high")):
                if getattr(constraint, attribute, None) is not None:
                    bounds[key] = getattr(constraint, attribute)
        annotation, label = info.annotation, f"task.{name}"
        if annotation is bool:
            declared[label] = Hyperparam(label, "bool", info.default, help=info.description or "")
        elif annotation in (int, float):
            kind = "int" if annotation is int else "float"
            declared[label] = Hyperparam(label, kind, info.default, **bounds, help=info.description or "")
        elif get_origin(annotation) is Literal:
            choices = get_args(annotation)
            declared[label] = Hyperparam(label, "categorical", info.default, choices=choices)
    return declared
