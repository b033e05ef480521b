"""The sweep spec: one typed object, read from YAML and validated once.

Every error names the file, the line and the key path, so a researcher can fix a config without
reading a traceback. Nothing is written anywhere before a spec validates.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from sweeper.urls import has_password
from trainables.catalog import load_all
from trainables.hyperparams import TRAINING, Hyperparam
from trainables.registry import MODELS, TASKS

MAX_SPEC_BYTES = 1_000_000
Loc = tuple[str | int, ...]


class SpecError(Exception):
    """A spec that cannot run; `errors` holds one human-readable line per problem."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("\n".join(errors))
        self.errors = errors


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(value: str | float | int) -> float:
    """Seconds in `value`: a number of seconds or a string like `90s`, `30m`, `2h`, `1d`."""
    if isinstance(value, bool):
        raise ValueError(f"expected a duration like 30m or 2h, got {value!r}")
    if isinstance(value, (int, float)):
        seconds = float(value)
    else:
        match = _DURATION.match(str(value))
        if not match:
            raise ValueError(f"expected a duration like 90s, 30m, 2h or 1d, got {value!r}")
        seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    if not 0 < seconds <= 366 * 86400:
        raise ValueError(f"a duration must be positive and at most a year, got {value!r}")
    return seconds


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class IntRange(Strict):
    """`{int: [low, high], log: true, step: 1}`: an integer searched in [low, high]."""

    int: tuple[int, int]
    log: bool = False
    step: int = Field(1, ge=1)

    @model_validator(mode="after")
    def _ordered(self) -> IntRange:
        low, high = self.int
        if low > high:
            raise ValueError(f"low {low} is above high {high}")
        if self.log and low < 1:
            raise ValueError("a log-scaled range needs low >= 1")
        return self

    @property
    def bounds(self) -> tuple[float, float]:
        return self.int


class FloatRange(Strict):
    """`{float: [low, high], log: true}`: a real number searched in [low, high]."""

    float: tuple[float, float]
    log: bool = False

    @model_validator(mode="after")
    def _ordered(self) -> FloatRange:
        low, high = self.float
        if low > high:
            raise ValueError(f"low {low} is above high {high}")
        if self.log and low <= 0:
            raise ValueError("a log-scaled range needs low > 0")
        return self

    @property
    def bounds(self) -> tuple[float, float]:
        return self.float


class Choice(Strict):
    """`{choice: [a, b, c]}`: one of the listed values."""

    choice: tuple[Any, ...] = Field(min_length=1)


class Grid(Strict):
    """`{grid: [a, b, c]}`: every listed value is tried (a study's searched values all grids)."""

    grid: tuple[Any, ...] = Field(min_length=1)


class Fraction(Strict):
    """`{fraction: [0.2, 0.6]}` or `{fraction: 0.5}`: a setting as a fraction of the one its
    declaration says it may not exceed (ρ of the trial's hidden size)."""

    fraction: tuple[float, float] | float

    @model_validator(mode="after")
    def _in_unit_interval(self) -> Fraction:
        low, high = self.bounds
        if not 0.0 <= low <= high <= 1.0:
            raise ValueError(f"a fraction must satisfy 0 <= low <= high <= 1, got {self.fraction}")
        return self

    @property
    def bounds(self) -> tuple[float, float]:
        return self.fraction if isinstance(self.fraction, tuple) else (self.fraction, self.fraction)


class MatchTarget(Strict):
    parameters: int | None = Field(None, ge=1, le=10**10, description="parameter budget of the whole network")
    model: str | None = Field(None, description="a reference model ...")
    hidden_size: int | None = Field(None, ge=1, le=65536, description="... at this hidden size")

    @model_validator(mode="after")
    def _one_target(self) -> MatchTarget:
        reference = (self.model, self.hidden_size)
        if self.parameters is not None and reference != (None, None):
            raise ValueError("give either {parameters: N} or {model: NAME, hidden_size: H}, not both")
        if self.parameters is None and None in reference:
            raise ValueError("give either {parameters: N} or both model and hidden_size")
        return self


class Match(Strict):
    """`{match: {parameters: 20000}}` or `{match: {model: gru, hidden_size: 100}}`: each model's
    hidden size is derived so its parameter count matches, the papers' way of comparing models."""

    match: MatchTarget


SEARCHED = (IntRange, FloatRange, Choice, Grid, Fraction)
Distribution = IntRange | FloatRange | Choice | Grid | Fraction | Match
ParamValue = Annotated[Distribution | str | int | float | bool, Field(union_mode="left_to_right")]
FRACTION_SUFFIX = "_fraction"  # a fraction is sampled as the parameter `<name>_fraction`


def is_fixed(value: Any) -> bool:
    return not isinstance(value, (*SEARCHED, Match))


def check_param(declared: Mapping[str, Hyperparam], name: str, value: Any) -> Any:
    """Validate a fixed value or a distribution against the declaration of `name`."""
    hp = declared[name]
    if isinstance(value, Match):
        if hp.name != "hidden_size":
            raise ValueError("only hidden_size can be derived by {match: ...}")
        return value
    if isinstance(value, Fraction):
        if hp.at_most is None:
            bounded = ", ".join(n for n, h in declared.items() if h.at_most) or "no setting"
            raise ValueError(f"only {bounded} can be a fraction (of the setting that bounds it)")
        return value
    if isinstance(value, Grid):
        return Grid(grid=tuple(hp.validate(v) for v in value.grid))
    if isinstance(value, Choice):
        return Choice(choice=tuple(hp.validate(v) for v in value.choice))
    if isinstance(value, (IntRange, FloatRange)):
        if hp.kind not in ("int", "float"):
            raise ValueError(f"{hp.name} is {hp.kind}; search it with {{choice: [...]}}")
        if hp.kind == "int" and isinstance(value, FloatRange):
            raise ValueError(f"{hp.name} is an integer; use {{int: [low, high]}}")
        for bound in value.bounds:
            hp.validate(bound)
        if hp.kind == "float" and isinstance(value, IntRange):
            return FloatRange(float=tuple(float(b) for b in value.bounds), log=value.log)
        return value
    return hp.validate(value)


class TaskRef(Strict):
    name: str
    settings: dict[str, Any] = Field(default_factory=dict)


class Objective(Strict):
    metric: str
    mode: Literal["min", "max"]


class Named(Strict):
    """A section that may be written as just its name (`sampler: random`)."""

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        return {"name": value} if isinstance(value, str) else value


class Sampler(Named):
    name: Literal["tpe", "random", "cmaes"] = "tpe"
    seed: int | None = Field(None, ge=0, description="defaults to the sweep's seed")


class Scheduler(Named):
    """Early stopping: Ray Tune's ASHA, Optuna's median or Hyperband pruner, or none."""

    name: Literal["asha", "median", "hyperband", "none"] = "asha"
    grace_period: int | None = Field(None, ge=1, description="steps before a trial may be stopped")
    reduction_factor: float = Field(3.0, gt=1)


class Budget(Strict):
    trials: int = Field(20, ge=1, le=1_000_000, description="trials per (task, model) study")
    iterations: int | None = Field(
        None, ge=1, le=10**12, description="training steps per study, summed over its trials"
    )
    time: float | None = Field(None, description="wall-clock budget of the whole sweep, e.g. 2h")
    trial_time: float | None = Field(None, description="a trial running longer fails, e.g. 20m")
    study_time: float | None = Field(None, description="training time per study, summed over its trials")
    max_concurrent: int | None = Field(None, ge=1, le=100_000)
    retries: int = Field(
        2, ge=0, le=100, description="restarts of a trial whose worker died, from its checkpoint"
    )

    @field_validator("time", "trial_time", "study_time", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> float | None:
        return None if value is None else parse_duration(value)


class ModelResources(Strict):
    """One model's exceptions to the sweep's resources; what it leaves out it shares."""

    cpus: float | None = Field(None, gt=0, le=1024)
    gpus: float | None = Field(None, ge=0, le=64)
    memory_gb: float | None = Field(None, gt=0, le=4096)


class Resources(Strict):
    """What one trial reserves; `per_model` for models that need more (EURNN at 512 units) or less
    (several small GRU trials share one GPU)."""

    cpus: float = Field(1.0, gt=0, le=1024)
    gpus: float = Field(0.0, ge=0, le=64, description="a fraction packs several trials per GPU")
    memory_gb: float | None = Field(None, gt=0, le=4096, description="memory Ray reserves per trial")
    per_model: dict[str, ModelResources] = Field(default_factory=dict)

    def for_model(self, model: str) -> dict[str, float]:
        own = self.per_model.get(model, ModelResources())
        reserved = {
            "cpu": self.cpus if own.cpus is None else own.cpus,
            "gpu": self.gpus if own.gpus is None else own.gpus,
        }
        memory_gb = self.memory_gb if own.memory_gb is None else own.memory_gb
        if memory_gb is not None:
            reserved["memory"] = memory_gb * 2**30
        return reserved


class Reproduces(Strict):
    """The published table a `sweeper reproduce` sweep runs (its rows are confirmation runs)."""

    paper: str
    table: str
    seeds: int = Field(ge=1, le=1000)
    rows: dict[int, int] = Field(
        default_factory=dict,
        description="the table's rows this sweep runs, each mapped to the row whose runs it reads",
    )


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
            raise _LocatedErrors(
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
                errors.append((("task", "settings", *err["loc"]), _message(err)))
            raise _LocatedErrors(errors) from None
        object.__setattr__(self.task, "settings", settings)

        for i, model in enumerate(self.models):
            if model not in MODELS:
                errors.append(
                    (("models", i), f"unknown model {model!r}; registered: {', '.join(MODELS.names())}")
                )
        if len(set(self.models)) != len(self.models):
            errors.append((("models",), "a model is listed twice"))
        if errors:
            raise _LocatedErrors(errors)

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

        task_class = task.task_class
        if self.objective is None:
            object.__setattr__(
                self, "objective", Objective(metric=task_class.objective, mode=task_class.mode)
            )
        elif self.objective.metric not in task_class.metrics:
            errors.append(
                (("objective", "metric"), f"task {self.task.name!r} reports: {', '.join(task_class.metrics)}")
            )
        if not errors:  # the combinations below read each model's validated space
            for model in self.models:
                errors.extend(self._model_space_errors(model))
        if errors:
            raise _LocatedErrors(errors)
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
        task_cls = TASKS.get(self.task.name).task_class
        return Objective(metric=task_cls.objective, mode=task_cls.mode)

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


class _LocatedErrors(ValueError):
    """Raised inside validation so `load_spec` can attach lines to key paths."""

    def __init__(self, errors: list[tuple[Loc, str]]) -> None:
        super().__init__("; ".join(msg for _, msg in errors))
        self.errors = errors


class _NoAliasLoader(yaml.SafeLoader):
    """Safe loader that refuses anchors and aliases: they buy nothing here and allow YAML bombs."""

    max_depth = 50  # a deeper spec is garbage, and far deeper ones would exhaust the stack

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth = getattr(self, "_depth", 0) + 1
        try:
            if self._depth > self.max_depth:
                raise yaml.constructor.ConstructorError(
                    None, None, f"nested more than {self.max_depth} levels deep", self.peek_event().start_mark
                )
            return self._compose_checked(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        """Refuse a key given twice: YAML would silently keep the last one."""
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, (str, int, float, bool)):
                continue
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}: each key may appear once", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep)

    def _compose_checked(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.constructor.ConstructorError(
                None,
                None,
                "anchors and aliases (&name / *name) are not allowed in sweep specs",
                event.start_mark,
            )
        return super().compose_node(parent, index)


def _line_index(node: yaml.Node, path: Loc = ()) -> dict[Loc, int]:
    """Key path → 1-based line, for every node of a composed YAML document."""
    lines: dict[Loc, int] = {path: node.start_mark.line + 1}
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            child = (*path, key.value)
            lines[child] = key.start_mark.line + 1
            lines.update({k: v for k, v in _line_index(value, child).items() if k != child})
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines.update(_line_index(item, (*path, i)))
    return lines


def _line_for(loc: Loc, *indexes: dict[Loc, int]) -> int | None:
    for end in range(len(loc), -1, -1):
        for index in indexes:
            if loc[:end] in index:
                return index[loc[:end]]
    return None


def _deep_merge(base: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _format_loc(loc: Loc) -> str:
    return ".".join(str(part) for part in loc) or "(top level)"


def parse_spec(
    text: str, source: str = "<spec>", profile: str | None = None, *, trusted: bool = False
) -> SweepSpec:
    """Parse YAML text into a validated spec; raises SpecError naming source, line and key.

    `trusted`: the text is a sweep's stored spec, validated against the registries at launch.
    """
    if len(text.encode()) > MAX_SPEC_BYTES:
        raise SpecError([f"{source}: the file is larger than {MAX_SPEC_BYTES} bytes"])
    try:
        node = yaml.compose(text, Loader=_NoAliasLoader)
        raw = yaml.load(text, Loader=_NoAliasLoader)
    except RecursionError:
        raise SpecError([f"{source}: nested too deeply to be a sweep spec"]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"{source}:{mark.line + 1}" if mark else source
        problem = getattr(exc, "problem", None) or str(exc)
        raise SpecError([f"{where}: not valid YAML: {problem}"]) from None
    if not isinstance(raw, dict):
        raise SpecError([f"{source}:1: a sweep spec must be a mapping of keys (name, task, models, ...)"])
    base_lines = _line_index(node) if node is not None else {}
    profile_lines: dict[Loc, int] = {}
    missing_sections: set[str] = set()
    if profile is not None:
        profiles = raw.get("profiles") or {}
        if not isinstance(profiles, dict) or profile not in profiles:
            known = ", ".join(map(str, profiles)) if isinstance(profiles, dict) and profiles else "none"
            raise SpecError([f"{source}: no profile {profile!r} (profiles: {known})"])
        override = profiles[profile]
        if not isinstance(override, dict):
            line = base_lines.get(("profiles", profile))
            raise SpecError(
                [f"{source}:{line}: profiles.{profile}: a profile must be a mapping of overrides"]
            )
        if "profiles" in override:
            raise SpecError([f"{source}: profiles.{profile}: a profile cannot define profiles"])
        prefix: Loc = ("profiles", profile)
        profile_lines = {k[2:]: v for k, v in base_lines.items() if k[:2] == prefix and len(k) > 2}
        missing_sections = {key for key in override if key not in raw}
        raw = _deep_merge(raw, override)
    try:
        return SweepSpec.model_validate(raw, context={"trusted": trusted})
    except ValidationError as exc:
        located = _collect(exc)
    except _LocatedErrors as exc:
        located = exc.errors
    messages = []
    for loc, msg in located:
        if profile and msg == "Field required" and loc and loc[0] in missing_sections:
            # the profile only adds to a section the spec itself lacks: the spec is what to fix
            messages.append(
                f"{source}:1: {loc[0]}: the spec has no {loc[0]}: section (profile {profile} only adds to it)"
            )
            continue
        line = _line_for(loc, profile_lines, base_lines)
        where = f"{source}:{line}" if line else source
        via = f" (profile {profile})" if profile and _line_for(loc, profile_lines) else ""
        messages.append(f"{where}: {_format_loc(loc)}{via}: {msg}")
    raise SpecError(messages)


def _message(err: Any) -> str:
    if err["type"] == "extra_forbidden":
        return "unknown key"
    return err["msg"].removeprefix("Value error, ")


def _collect(exc: ValidationError) -> list[tuple[Loc, str]]:
    located: list[tuple[Loc, str]] = []
    for err in exc.errors():
        ctx_error = (err.get("ctx") or {}).get("error")
        if isinstance(ctx_error, _LocatedErrors):
            located.extend(ctx_error.errors)
            continue
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and ("[" in p or p in _UNION_TAGS)))
        located.append((loc, _message(err)))
    return _dedupe_union_errors(located)


_UNION_TAGS = {"IntRange", "FloatRange", "Choice", "Grid", "Fraction", "Match", "str", "int", "float", "bool"}


def _dedupe_union_errors(located: list[tuple[Loc, str]]) -> list[tuple[Loc, str]]:
    """A bad search value fails every member of the union: report it once, plainly, with the
    reason of the member its keys chose (`{float: [1.0, 0.1]}` is a reversed range, not a
    choice without `choice:`)."""
    by_param: dict[Loc, list[tuple[Loc, str]]] = {}
    result = []
    for loc, msg in located:
        width = 2 if loc and loc[0] == "params" else 3 if loc and loc[0] == "per_model" else 0
        if width and len(loc) >= width:
            by_param.setdefault(loc[:width], []).append((loc, msg))
        else:
            result.append((loc, msg))
    for param, errors in by_param.items():
        messages = list(dict.fromkeys(msg for _, msg in errors))
        specific = [
            m
            for m in messages
            if m not in ("unknown key", "Field required") and not m.startswith("Input should")
        ]
        if len(errors) > 2 or specific:
            result.append(
                (
                    param,
                    specific[0]
                    if specific
                    else "expected a value or {int|float: [low, high]} or {choice: [...]}",
                )
            )
        else:
            result.extend(errors)
    return result


def load_spec(path: str | Path, profile: str | None = None) -> SweepSpec:
    """Read and validate a spec file; raises SpecError for a missing, unreadable or bad file."""
    path = Path(path)
    if not path.is_file():
        raise SpecError([f"{path}: no such file"])
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError([f"{path}: cannot read: {exc}"]) from None
    return parse_spec(text, str(path), profile)


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
