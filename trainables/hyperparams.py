"""Hyperparameters as declarations: what a setting is, its default and the values it may take.

Models, tasks and the training loop declare theirs here or next to their code; spec validation,
search spaces, `sweeper models` and the trial all read those declarations. Nothing here imports
torch, so the commands that only read results can validate what they read.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from trainables.optimizers import OPTIMIZERS

Kind = Literal["int", "float", "categorical", "bool"]


@dataclass(frozen=True)
class Hyperparam:
    """One tunable setting: its type, default and the range a search may explore.

    `at_most` names another setting this one may never exceed (ρ ≤ hidden_size): a trial's
    values are checked against it, a search draws it after the other and never above it, and a
    spec may give it as `{fraction: ...}` of the other.
    """

    name: str
    kind: Kind
    default: Any
    low: float | None = None
    high: float | None = None
    choices: tuple[Any, ...] | None = None
    log: bool = False
    help: str = ""
    at_most: str | None = None

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
        bound = f", ≤ {self.at_most}" if self.at_most else ""
        return f"[{low}, {high}]" + (" log" if self.log else "") + bound

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
    """Fill defaults and validate `values` against `declared`; unknown names are an error, and
    so is a value above the setting its declaration says it may not exceed."""
    unknown = sorted(set(values) - set(declared))
    if unknown:
        raise ValueError(
            f"{owner} does not accept {', '.join(unknown)}; it accepts: {', '.join(sorted(declared)) or 'nothing'}"
        )
    resolved = {name: hp.default for name, hp in declared.items()}
    for name, value in values.items():
        resolved[name] = declared[name].validate(value)
    for name, hp in declared.items():
        if hp.at_most in resolved and resolved[name] > resolved[hp.at_most]:
            raise ValueError(
                f"{name}: {resolved[name]!r} exceeds {hp.at_most} {resolved[hp.at_most]!r}, its upper bound"
            )
    return resolved


TRAINING_HYPERPARAMS: tuple[Hyperparam, ...] = (
    Hyperparam("hidden_size", "int", 128, low=1, high=65536, log=True, help="recurrent state size"),
    Hyperparam("lr", "float", 1e-3, low=1e-7, high=10.0, log=True, help="learning rate"),
    Hyperparam(
        "optimizer",
        "categorical",
        "adam",
        choices=tuple(OPTIMIZERS),
        help="optimizer (Adam, as NC-GRU; rmsprop_tf reproduces TensorFlow 1's RMSProp of the GORU code)",
    ),
    Hyperparam("batch_size", "int", 128, low=1, high=65536, log=True, help="sequences per batch"),
    Hyperparam("grad_clip", "float", 0.0, low=0.0, high=1e6, help="gradient norm clip (0: none)"),
    Hyperparam("iterations", "int", 1000, low=1, high=10**9, help="optimizer steps"),
    Hyperparam("eval_every", "int", 100, low=1, high=10**9, help="steps between validation reports"),
    Hyperparam(
        "checkpoint_every",
        "int",
        4,
        low=1,
        high=10**6,
        help="reports between checkpoints (when checkpointing)",
    ),
    Hyperparam(
        "memory_limit_mb",
        "int",
        0,
        low=0,
        high=10**8,
        help="fail the trial when its process holds more memory at a report (0: no limit)",
    ),
    Hyperparam(
        "gpu_memory_fraction",
        "float",
        0.0,
        low=0.0,
        high=1.0,
        help="on a GPU, the share of its memory the trial may take (0: no cap); a sweep sets its GPU share",
    ),
    Hyperparam(
        "capture",
        "bool",
        True,
        help="on CUDA, replay each training step from one CUDA graph where the task allows (the plain "
        "step where capturing fails); false: never; a CPU never captures",
    ),
)
TRAINING = {hp.name: hp for hp in TRAINING_HYPERPARAMS}

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
