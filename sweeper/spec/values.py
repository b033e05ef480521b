"""The values a spec's parameters take: fixed values, ranges, choices, grids, fractions of a
bound, and hidden sizes matched to a target; durations; and the error that carries key paths."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    model_validator,
)

from trainables.hyperparams import Hyperparam

Loc = tuple[str | int, ...]


class LocatedErrors(ValueError):
    """Raised inside validation so `load_spec` can attach lines to key paths."""

    def __init__(self, errors: list[tuple[Loc, str]]) -> None:
        super().__init__("; ".join(msg for _, msg in errors))
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


def pydantic_message(err: Any) -> str:
    """A pydantic error as one line of a spec error."""
    if err["type"] == "extra_forbidden":
        return "unknown key"
    return err["msg"].removeprefix("Value error, ")
