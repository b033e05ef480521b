"""The self-check `kernel: auto` runs before it trusts a fused scan, and the record of what ran.

A fused path that has never run on this GPU, driver or Triton version may fail to compile, fail to
launch, or compute something else. So the first time a process uses a path (per kernel variant
and precision), it runs that path and the loop on a small slice of the real inputs (three steps,
two rows), forward and backward, and compares. On an error or a mismatch the process keeps the
loop for that variant, logs why, and the trial's `kernel` metric says so.

The Triton builds of the orthogonal matrices (`givens_matrix`, `cayley_matrix`) are checked the
same way against their ATen build, once per size, dtype and layout of their operands, on the
model's own parameters (a matrix is small, and its size picks the launch); one that fails leaves
the process on the ATen build for it, and the `kernel` metric gains `+MATRIX_FELL_BACK`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

import torch

from trainables.models.scans.barrier import raise_if_stalled
from trainables.models.scans.plan import Precision, ScanPlan

log = logging.getLogger(__name__)

Computation = Callable[..., torch.Tensor | tuple[torch.Tensor, ...]]
Scan = Callable[..., tuple[torch.Tensor, torch.Tensor]]
Build = Callable[..., torch.Tensor]
CHECK_STEPS, CHECK_ROWS = 3, 2
# ‖fused − loop‖ / ‖loop‖ allowed: float32 rounding, or TF32's 10-bit mantissa
TOLERANCE: dict[Precision, float] = {"ieee": 1e-4, "tf32x3": 1e-4, "tf32": 2e-2}
FELL_BACK = "loop:fused-failed-its-self-check"
MATRIX_FELL_BACK = "aten-matrix:kernels-failed-their-self-check"

_verdicts: dict[Hashable, str | None] = {}


@dataclass
class KernelRecord:
    """What a model's last forward pass ran: `scan` (fused, loop, or the fallback), `path` (the
    plan), and whether a matrix build fell back to its ATen ops, which its self-check's verdict
    makes so for the rest of the process. `kernel` and `path` are the trial's metrics, each one
    `key=value` word in a log line."""

    scan: str = ""
    path: str = ""
    problems: list[str] = field(default_factory=list)
    matrix_fell_back: bool = False

    @property
    def kernel(self) -> str:
        return f"{self.scan}+{MATRIX_FELL_BACK}" if self.matrix_fell_back else self.scan

    def hear(self, plan: ScanPlan, problem: str | None) -> None:
        if problem is None:
            self.scan = "fused"
            self.path = plan.tag()
        else:
            self.scan, self.path = FELL_BACK, "loop"
            self._note(problem)

    def hear_matrix(self, problem: str | None) -> None:
        """A Triton matrix build's self-check: None passed (or was passed before), else why not."""
        if problem is not None:
            self.matrix_fell_back = True
            self._note(problem)

    def _note(self, problem: str) -> None:
        if problem not in self.problems:
            self.problems.append(problem)


def _relative_error(got: torch.Tensor | None, want: torch.Tensor | None) -> float:
    if got is None or want is None:
        return 0.0 if got is None and want is None else float("inf")
    if not torch.isfinite(got).all():
        return float("inf")
    return float((got - want).norm() / want.norm().clamp_min(1e-12))


def compare(
    fused: Computation,
    reference: Computation,
    inputs: Sequence[torch.Tensor],
    tolerance: float,
    outputs: Sequence[str] = ("outputs", "last state"),
    against: str = "the loop's",
) -> str | None:
    """Why `fused` differs from `reference` on these inputs (each of its `outputs`, every
    gradient), or None."""
    generator = torch.Generator(device=inputs[0].device).manual_seed(0)
    results = []
    for computation in (fused, reference):
        leaves = [t.detach().clone().requires_grad_() for t in inputs]
        with torch.enable_grad():
            produced = computation(*leaves)
            produced = (produced,) if isinstance(produced, torch.Tensor) else tuple(produced)
            generator.manual_seed(0)
            loss = sum(
                (t * torch.randn(t.shape, generator=generator, device=t.device)).sum() for t in produced
            )
            grads = torch.autograd.grad(loss, leaves, allow_unused=True)
        results.append([*(t.detach() for t in produced), *grads])
    names = [*outputs, *(f"gradient {i}" for i in range(len(inputs)))]
    for name, got, want in zip(names, *results, strict=True):
        error = _relative_error(got, want)
        if not error <= tolerance:
            return f"{name} differs from {against} by {error:.2e} (allowed {tolerance:.0e})"
    return None


def _judged(key: Hashable, what: str, fallback: str, check: Callable[[], str | None]) -> str | None:
    """The cached verdict on `key`, else `check`'s, kept for the process; any failure to build,
    launch or run a kernel counts as a failed check."""
    if key in _verdicts:
        return _verdicts[key]
    try:
        problem = check()
    except Exception as exc:
        problem = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    if problem is not None:
        log.warning("%s %s failed its self-check, so this process %s: %s", what, key, fallback, problem)
    _verdicts[key] = problem
    return problem


def verdict(key: Hashable, fused: Scan, loop: Scan, inputs: Sequence[torch.Tensor], precision: Precision) -> str | None:  # fmt: skip
    """None when the fused variant `key` agrees with the loop in this process, else why not;
    checked once per process, on a slice of `inputs` (projected inputs, state, then weights)."""

    def check() -> str | None:
        projected, h0, *weights = inputs
        small = [projected[:CHECK_STEPS, :CHECK_ROWS], h0[:CHECK_ROWS], *weights]
        problem = compare(fused, loop, small, TOLERANCE[precision])
        raise_if_stalled(projected.device)
        return problem

    return _judged(key, "fused scan", "runs the loop", check)


def build_verdict(key: Hashable, kernels: Build, aten: Build, inputs: Sequence[torch.Tensor]) -> str | None:
    """None when the Triton matrix build `key` agrees with its ATen build in this process, else
    why not; checked once per process, on `inputs` whole, in IEEE arithmetic as both compute."""

    def check() -> str | None:
        return compare(kernels, aten, inputs, TOLERANCE["ieee"], ("the matrix",), "the ATen build's")

    return _judged(key, "matrix build", "builds it with ATen ops", check)


def forget() -> None:
    """Check every variant again at its next use (tests)."""
    _verdicts.clear()
