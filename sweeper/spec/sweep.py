"""The sweep spec: one typed object, read from YAML and validated once (`loading`).

Every error names the key path (`loading` adds the file and the line), so a researcher can fix a
config without reading a traceback. Nothing is written anywhere before a spec validates.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Literal

import yaml
from pydantic import Field, PrivateAttr, ValidationError, ValidationInfo, field_validator, model_validator

from sweeper.spec.sections import WITHDRAWN_ALLOCATIONS, Budget, Reproduces, Resources, Sampler, Scheduler
from sweeper.spec.values import (
    FRACTION_SUFFIX,
    SEARCHED,
    Choice,
    FloatRange,
    Grid,
    IntRange,
    Loc,
    LocatedErrors,
    ParamValue,
    Strict,
    check_param,
    is_fixed,
    pydantic_message,
)
from sweeper.store.credentials import has_password
from trainables.catalog import load_all
from trainables.hyperparams import TRAINING, Hyperparam
from trainables.registry import MODELS, TASKS


class TaskRef(Strict):
    name: str
    settings: dict[str, Any] = Field(default_factory=dict)


class Objective(Strict):
    metric: str
    mode: Literal["min", "max"]


class SweepSpec(Strict):
    """Everything a sweep needs, resolved: profile applied, names checked against the registries."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
    description: str = ""
    task: TaskRef
    models: list[str] = Field(min_length=1)
    objective: Objective | None = None
    params: dict[str, ParamValue] = Field(default_factory=dict)
    per_model: dict[str, dict[str, ParamValue]] = Field(default_factory=dict)
    sampler: Sampler = Sampler()
    scheduler: Scheduler = Scheduler()
    budget: Budget = Budget()
    resources: Resources = Resources()
    seed: int = Field(0, ge=0, le=2**31 - 1)
    storage: str | None = None
    tracking_uri: str | None = None
    profiles: dict[str, dict[str, Any]] = Field(default_factory=dict)
    reproduces: Reproduces | None = None

    @field_validator("storage", "tracking_uri")
    @classmethod
    def _no_credentials(cls, value: str | None, info: Any) -> str | None:
        """Specs are stored, logged and shared; passwords belong in environment variables."""
        if value is not None and has_password(value):
            variable = "SWEEPER_STORAGE" if info.field_name == "storage" else "SWEEPER_TRACKING_URI"
            raise ValueError(
                f"this URL carries a password; put it in the {variable} environment variable instead"
            )
        return value

    _spaces: dict[str, dict[str, Any]] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _against_registries(self, info: ValidationInfo) -> SweepSpec:
        """Names and values checked against what the models and tasks declare, and the task's
        default objective written in. A spec read back from a sweep's record was checked when it
        was launched (`trusted`), and is read without importing the models (and torch)."""
        if info.context and info.context.get("trusted"):
            return self
        load_all()
        errors: list[tuple[Loc, str]] = []
        if self.task.name not in TASKS:
            raise LocatedErrors(
                [
                    (
                        ("task", "name"),
                        f"unknown task {self.task.name!r}; registered: {', '.join(TASKS.names())}",
                    )
                ]
            )
        task = TASKS.get(self.task.name)
        try:
            settings = task.settings.model_validate(self.task.settings).model_dump(exclude_unset=True)
        except ValidationError as exc:
            for err in exc.errors():
                errors.append((("task", "settings", *err["loc"]), pydantic_message(err)))
            raise LocatedErrors(errors) from None
        object.__setattr__(self.task, "settings", settings)

        for i, model in enumerate(self.models):
            if model not in MODELS:
                errors.append(
                    (("models", i), f"unknown model {model!r}; registered: {', '.join(MODELS.names())}")
                )
        if len(set(self.models)) != len(self.models):
            errors.append((("models",), "a model is listed twice"))
        if errors:
            raise LocatedErrors(errors)

        for name, value in self.params.items():
            owners = [m for m in self.models if name in self.declared(m)]
            if not owners and name.startswith("task."):
                searchable = ", ".join(TASKS.get(self.task.name).searchable_settings()) or "none"
                errors.append(
                    (
                        ("params", name),
                        f"task {self.task.name!r} has no such setting; searchable: {searchable}",
                    )
                )
            elif not owners:
                errors.append((("params", name), f"no model of this sweep accepts {name!r}"))
            problems = {}
            for model in owners:
                try:
                    check_param(self.declared(model), name, value)
                except ValueError as exc:
                    problems.setdefault(str(exc), []).append(model)
            errors.extend(
                (("params", name), f"{msg} (models: {', '.join(ms)})") for msg, ms in problems.items()
            )
        for i, model in enumerate(self.budget.race_exempt):
            if model not in self.models:
                errors.append(
                    (("budget", "race_exempt", i), f"{model!r} is not in models: {', '.join(self.models)}")
                )
        errors.extend(self._allocation_errors())
        for model in self.resources.per_model:
            if model not in self.models:
                errors.append(
                    (
                        ("resources", "per_model", model),
                        f"{model!r} is not in models: {', '.join(self.models)}",
                    )
                )
        for model, overrides in self.per_model.items():
            if model not in self.models:
                errors.append((("per_model", model), f"{model!r} is not in models: {', '.join(self.models)}"))
                continue
            declared = self.declared(model)
            for name, value in overrides.items():
                if name not in declared:
                    errors.append(
                        (
                            ("per_model", model, name),
                            f"model {model!r} accepts: {', '.join(sorted(declared))}",
                        )
                    )
                    continue
                try:
                    check_param(declared, name, value)
                except ValueError as exc:
                    errors.append((("per_model", model, name), str(exc)))

        if self.objective is None:
            object.__setattr__(self, "objective", Objective(metric=task.objective, mode=task.mode))
        elif self.objective.metric not in task.metrics:
            errors.append(
                (("objective", "metric"), f"task {self.task.name!r} reports: {', '.join(task.metrics)}")
            )
        if not errors:  # the combinations below read each model's validated space
            for model in self.models:
                errors.extend(self._model_space_errors(model))
        if errors:
            raise LocatedErrors(errors)
        return self

    def declared(self, model: str) -> dict[str, Hyperparam]:
        """What a study of `model` may set: training, the model's own, and the task's settings."""
        load_all()
        return {
            **TRAINING,
            **MODELS.get(model).all_hyperparams,
            **TASKS.get(self.task.name).searchable_settings(),
        }

    def _where(self, model: str, name: str) -> Loc:
        return ("per_model", model, name) if name in self.per_model.get(model, {}) else ("params", name)

    def _allocation_errors(self) -> list[tuple[Loc, str]]:
        """A withdrawn allocation (`WITHDRAWN_ALLOCATIONS`: stored sweeps still say it) and a
        budget setting given a value of its own that the chosen allocation never reads are refused
        (a resolved spec writes every default out), as is a race with no model it could drop; a
        stored spec is not checked again."""
        budget, errors = self.budget, []
        if budget.allocate in WITHDRAWN_ALLOCATIONS:
            errors.append(
                (
                    ("budget", "allocate"),
                    f"{budget.allocate} is withdrawn ({WITHDRAWN_ALLOCATIONS[budget.allocate]}); "
                    "use allocate: equal or race",
                )
            )
        if budget.drop_below != type(budget).model_fields["drop_below"].get_default():
            errors.append(
                (("budget", "drop_below"), "does nothing: only allocate: curves read it, and it is withdrawn")
            )
        for name in ("race_rung", "race_exempt"):
            default = type(budget).model_fields[name].get_default(call_default_factory=True)
            if getattr(budget, name) != default and budget.allocate != "race":
                errors.append(
                    (
                        ("budget", name),
                        f"does nothing under allocate: {budget.allocate}; only allocate: race reads it",
                    )
                )
        if budget.allocate == "race" and budget.race_exempt and set(self.models) <= set(budget.race_exempt):
            errors.append(
                (
                    ("budget", "race_exempt"),
                    "names every model, so allocate: race could drop none; use allocate: equal",
                )
            )
        return errors

    def _model_space_errors(self, model: str) -> list[tuple[Loc, str]]:
        """Combinations no single value can reveal: a bound between two settings (ρ ≤ hidden
        size), a fused kernel without a GPU, grids, the sampler."""
        errors: list[tuple[Loc, str]] = []
        space = self.space(model)
        declared = self.declared(model)
        for name, hp in declared.items():
            if hp.at_most is None or name not in space:
                continue
            low, bound = _lowest(space[name]), _lowest(space.get(hp.at_most, declared[hp.at_most].default))
            if low is not None and bound is not None and low > bound:
                errors.append(
                    (
                        self._where(model, name),
                        f"{name} {low} exceeds {hp.at_most} {bound} of {model}; "
                        f"use a smaller {name} or {{fraction: ...}} of the {hp.at_most}",
                    )
                )
        kernel = space.get("kernel")
        kernels = (
            kernel.choice
            if isinstance(kernel, Choice)
            else kernel.grid
            if isinstance(kernel, Grid)
            else (kernel,)
        )
        if "fused" in kernels and self.resources.for_model(model)["gpu"] == 0:
            errors.append(
                (
                    self._where(model, "kernel"),
                    f"'fused' runs on a GPU, and the trials of {model} ask for none (resources.gpus is 0); "
                    "give them a GPU fraction or use kernel: auto",
                )
            )
        searched = {k: v for k, v in space.items() if isinstance(v, SEARCHED)}
        grids = [k for k, v in searched.items() if isinstance(v, Grid)]
        if grids and len(grids) != len(searched):
            others = ", ".join(sorted(set(searched) - set(grids)))
            errors.append(
                (
                    self._where(model, grids[0]),
                    f"{model}: with a grid, every searched value must be a grid ({others} is not)",
                )
            )
        if self.sampler.name == "cmaes":
            for name, value in searched.items():
                if isinstance(value, (Choice, Grid)):
                    errors.append(
                        (("sampler", "name"), f"cmaes searches numbers only; {name!r} of {model} is a choice")
                    )
        return errors

    def space(self, model: str) -> dict[str, Any]:
        """The parameters of one model's study: shared values it accepts, then its overrides."""
        if model not in self._spaces:
            declared = self.declared(model)
            merged = {k: v for k, v in self.params.items() if k in declared}
            merged.update(self.per_model.get(model, {}))
            self._spaces[model] = {name: check_param(declared, name, value) for name, value in merged.items()}
        return self._spaces[model]

    def fixed_value(self, model: str, name: str) -> Any:
        """The value the spec fixes for one model's setting (its override, else the shared
        value), or None where it is searched or not given; reads no model declaration."""
        value = self.per_model.get(model, {}).get(name, self.params.get(name))
        return value if value is not None and is_fixed(value) else None

    def resolved_objective(self) -> Objective:
        """The objective: validation writes the task's default in, so only a spec stored before
        it did needs the task registry here."""
        if self.objective is not None:
            return self.objective
        load_all()
        task = TASKS.get(self.task.name)
        return Objective(metric=task.objective, mode=task.mode)

    def canonical(self) -> dict[str, Any]:
        """The resolved spec as plain data (profiles dropped: they are already applied)."""
        return self.model_dump(mode="json", exclude={"profiles"})

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.canonical(), sort_keys=False)

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.canonical(), sort_keys=True).encode()).hexdigest()


def _lowest(value: Any) -> int | float | None:
    """The smallest number a fixed value or an {int|float: [low, high]} range can take."""
    if isinstance(value, IntRange | FloatRange):
        return value.bounds[0]
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def trial_config(spec: SweepSpec, model: str, params: Mapping[str, Any], seed: int) -> dict[str, Any]:
    """The flat config `trainables.train.train` takes for one trial, from a study's parameters.

    A sampled `<name>_fraction` becomes `<name>` = round(fraction × its bound), such as ρ of the
    hidden size, so the value never exceeds the bound the same trial drew.
    """
    fixed = {k: v for k, v in spec.space(model).items() if is_fixed(v)}
    config = {"task": spec.task.name, "task_settings": dict(spec.task.settings), "model": model, "seed": seed}
    config.update(fixed)
    config.update(params)
    for key in [k for k in config if k.startswith("task.")]:  # a searched or fixed task setting
        config["task_settings"][key.removeprefix("task.")] = config.pop(key)
    declared = spec.declared(model)
    for key in [k for k in config if k.endswith(FRACTION_SUFFIX)]:
        name = key.removesuffix(FRACTION_SUFFIX)
        bound = declared[name].at_most
        config[name] = round(config.pop(key) * config.get(bound, declared[bound].default))
    return config
