"""Registries of models and tasks.

A model or task declares its hyperparameters once, next to its code; spec validation, search
spaces, `sweeper models`/`sweeper tasks` and the trial itself all read that one declaration.
"""

from __future__ import annotations

import importlib
import math
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, get_args, get_origin, get_type_hints

from pydantic import BaseModel

from trainables.optimizers import OPTIMIZERS

if TYPE_CHECKING:
    import torch

    from trainables.models.base import RecurrentModel
    from trainables.tasks.base import Task

Kind = Literal["int", "float", "categorical", "bool"]


@dataclass(frozen=True)
class Hyperparam:
    """One tunable setting: its type, default and the range a search may explore."""

    name: str
    kind: Kind
    default: Any
    low: float | None = None
    high: float | None = None
    choices: tuple[Any, ...] | None = None
    log: bool = False
    help: str = ""

    def __post_init__(self) -> None:
        if self.kind == "categorical" and not self.choices:
            raise ValueError(f"hyperparameter {self.name!r}: categorical needs choices")
        if self.kind == "bool" and self.choices is None:
            object.__setattr__(self, "choices", (False, True))

    def describe_range(self) -> str:
        """Human-readable allowed values, for CLI listings and error messages."""
        if self.choices is not None:
            return "{" + ", ".join(str(c) for c in self.choices) + "}"
        low = "-inf" if self.low is None else f"{self.low:g}"
        high = "inf" if self.high is None else f"{self.high:g}"
        return f"[{low}, {high}]" + (" log" if self.log else "")

    def validate(self, value: Any) -> Any:
        """Return `value` coerced to this parameter's type, or raise ValueError saying why."""
        if self.kind == "bool":
            if not isinstance(value, bool):
                raise ValueError(f"{self.name}: expected true or false, got {value!r}")
            return value
        if self.kind == "categorical":
            if value not in self.choices:
                raise ValueError(f"{self.name}: expected one of {self.describe_range()}, got {value!r}")
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{self.name}: expected a number, got {value!r}")
        if self.kind == "int":
            if isinstance(value, float) and not value.is_integer():
                raise ValueError(f"{self.name}: expected an integer, got {value!r}")
            value = int(value)
        else:
            value = float(value)
            if not math.isfinite(value):
                raise ValueError(f"{self.name}: expected a finite number, got {value!r}")
        if (self.low is not None and value < self.low) or (self.high is not None and value > self.high):
            raise ValueError(f"{self.name}: {value!r} is outside the allowed range {self.describe_range()}")
        return value


def validate_values(
    declared: Mapping[str, Hyperparam], values: Mapping[str, Any], owner: str
) -> dict[str, Any]:
    """Fill defaults and validate `values` against `declared`; unknown names are an error."""
    unknown = sorted(set(values) - set(declared))
    if unknown:
        raise ValueError(
            f"{owner} does not accept {', '.join(unknown)}; it accepts: {', '.join(sorted(declared)) or 'nothing'}"
        )
    resolved = {name: hp.default for name, hp in declared.items()}
    for name, value in values.items():
        resolved[name] = declared[name].validate(value)
    return resolved


T = TypeVar("T")


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


ORTHOGONAL_OPTIMIZER_HYPERPARAMS: tuple[Hyperparam, ...] = (
    Hyperparam(
        "orth_lr",
        "float",
        1e-4,
        low=1e-7,
        high=1.0,
        log=True,
        help="learning rate of the orthogonal parameters (angles, A)",
    ),
    Hyperparam(
        "orth_optimizer",
        "categorical",
        "rmsprop",
        choices=tuple(OPTIMIZERS),
        help="optimizer of the orthogonal parameters",
    ),
)


@dataclass(frozen=True)
class ModelSpec:
    """A registered recurrent model: how to build it and what it accepts.

    `build(input_size, hidden_size, **hyperparams)` returns a `RecurrentModel`. Orthogonal models
    also accept the orthogonal optimizer settings, which the training loop (not the model) uses.
    """

    name: str
    build: Callable[..., RecurrentModel]
    hyperparams: tuple[Hyperparam, ...] = ()
    orthogonal: bool = False
    description: str = ""

    @property
    def all_hyperparams(self) -> dict[str, Hyperparam]:
        extra = ORTHOGONAL_OPTIMIZER_HYPERPARAMS if self.orthogonal else ()
        return {hp.name: hp for hp in (*self.hyperparams, *extra)}

    def resolve(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Validated values of every hyperparameter of this model, defaults filled in."""
        return validate_values(self.all_hyperparams, values, f"model {self.name!r}")

    def create(self, input_size: int, hidden_size: int, **values: Any) -> RecurrentModel:
        resolved = self.resolve(values)
        own = {hp.name: resolved[hp.name] for hp in self.hyperparams}
        return self.build(input_size, hidden_size, **own)

    def parameter_count(self, input_size: int, hidden_size: int, **values: Any) -> int:
        """Trainable parameters of the recurrent part (the task's head is counted by the task)."""
        model = self.create(input_size, hidden_size, **values)
        return sum(p.numel() for p in model.parameters() if p.requires_grad)


@dataclass(frozen=True)
class TaskSpec:
    """A registered task: its typed settings and a builder.

    `build(settings, batch_size=, seed=, device=)` returns a `Task`. Settings are a pydantic model
    with `extra="forbid"`, validated when a spec is read, so a typo never reaches a trial.
    """

    name: str
    settings: type[BaseModel]
    build: Callable[..., Task]
    description: str = ""

    def searchable_settings(self) -> dict[str, Hyperparam]:
        """The numeric, boolean and enumerated settings, as `task.<name>` hyperparameters a sweep
        may search (dropout, BPTT length); derived from the settings model, declared once."""
        declared: dict[str, Hyperparam] = {}
        for name, info in self.settings.model_fields.items():
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


MODELS: Registry[ModelSpec] = Registry("model")
TASKS: Registry[TaskSpec] = Registry("task")


def register_model(spec: ModelSpec) -> ModelSpec:
    return MODELS.register(spec.name, spec)


def register_task(spec: TaskSpec) -> TaskSpec:
    return TASKS.register(spec.name, spec)


PLUGINS_ENV = "SWEEPER_PLUGINS"


def plugin_modules() -> tuple[str, ...]:
    """The modules `SWEEPER_PLUGINS` names (comma-separated): models or tasks of a user's own."""
    return tuple(filter(None, (m.strip() for m in os.environ.get(PLUGINS_ENV, "").split(","))))


def load_all(plugins: tuple[str, ...] = ()) -> None:
    """Import the model and task packages, whose modules register themselves, and the plugins:
    those `SWEEPER_PLUGINS` names here and `plugins` (what it named in the driver, which a trial
    on another machine is handed, since that machine's environment may not have the variable)."""
    import trainables.models
    import trainables.tasks  # noqa: F401

    for module in (*plugin_modules(), *plugins):
        if module not in _loaded_plugins:
            importlib.import_module(module)
            _loaded_plugins.add(module)


_loaded_plugins: set[str] = set()
