"""Registries of models and tasks: name → what to build and what it accepts.

A model or a task registers itself with a decorator on its class, beside its code, declaring its
hyperparameters once; spec validation, search spaces, `sweeper models`/`sweeper tasks` and the
trial itself all read that one declaration. `trainables.catalog` imports the modules that
register; this module imports none of them.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, get_args, get_origin, get_type_hints

from pydantic import BaseModel

from trainables.hyperparams import ORTHOGONAL_OPTIMIZER_HYPERPARAMS, Hyperparam, validate_values

if TYPE_CHECKING:
    import torch

    from trainables.models.base import RecurrentModel
    from trainables.tasks.base import Task

PROJECT = Path(__file__).resolve().parents[1]
T = TypeVar("T")


def defined_in(obj: object) -> str:
    """Where `obj` is defined: a path in this project, or the module it came from (a plugin)."""
    module = inspect.getmodule(obj)
    path = Path(inspect.getsourcefile(obj) or "") if module is not None else None
    if path is not None and path.is_absolute() and path.is_relative_to(PROJECT):
        return path.relative_to(PROJECT).as_posix()
    return getattr(module, "__name__", "?")


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
    build: Callable[..., RecurrentModel]
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
        resolved = self.resolve(values)
        own = {hp.name: resolved[hp.name] for hp in self.hyperparams}
        return self.build(input_size, hidden_size, **own)


@dataclass(frozen=True)
class TaskEntry:
    """A registered task: its typed settings and the Task class that builds it.

    `build(settings, batch_size=, seed=, device=)` returns a `Task`. Settings are a pydantic model
    with `extra="forbid"`, validated when a spec is read, so a typo never reaches a trial.
    """

    name: str
    settings: type[BaseModel]
    build: Callable[..., Task]
    description: str = ""

    @property
    def defined_in(self) -> str:
        return defined_in(self.build)

    def searchable_settings(self) -> dict[str, Hyperparam]:
        """The numeric, boolean and enumerated settings, as `task.<name>` hyperparameters a sweep
        may search (dropout, BPTT length); derived from the settings model, declared once."""
        return dict(_settings_hyperparams(self.settings))

    @property
    def task_class(self) -> type[Task]:
        """The Task subclass `build` makes: its objective, mode and metric names are known before any trial."""
        if isinstance(self.build, type):
            return self.build
        return get_type_hints(self.build)["return"]

    def create(
        self, settings: Mapping[str, Any], *, batch_size: int, seed: int, device: torch.device
    ) -> Task:
        return self.build(
            self.settings.model_validate(dict(settings)), batch_size=batch_size, seed=seed, device=device
        )

    def sized(self, settings: Mapping[str, Any]) -> Task:
        """The task without its data, for counting its networks' parameters (`Task.sized`)."""
        return self.task_class.sized(self.settings.model_validate(dict(settings)))


MODELS: Registry[ModelEntry] = Registry("model")
TASKS: Registry[TaskEntry] = Registry("task")
Built = TypeVar("Built", bound=Callable[..., Any])


def register_model(
    name: str,
    *,
    hyperparams: tuple[Hyperparam, ...] = (),
    orthogonal: bool = False,
    description: str = "",
    ablation_of: str | None = None,
) -> Callable[[Built], Built]:
    """Class (or builder) decorator: register a recurrent model under `name`.

    The decorated callable is called as `build(input_size, hidden_size, **hyperparams)`, with
    every declared hyperparameter filled in from the trial or from its default.
    """

    def register(build: Built) -> Built:
        MODELS.register(name, ModelEntry(name, build, hyperparams, orthogonal, description, ablation_of))
        return build

    return register


def register_task(name: str, settings: type[BaseModel], *, description: str = "") -> Callable[[Built], Built]:
    """Class decorator: register a Task subclass under `name`, with its settings model."""

    def register(build: Built) -> Built:
        TASKS.register(name, TaskEntry(name, settings, build, description))
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
