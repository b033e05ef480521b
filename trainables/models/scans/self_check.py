"""The self-check `kernel: auto` runs before it trusts a fused scan, and the record of what ran.

A fused path that has never run on this GPU, driver or Triton version may fail to compile, fail to
launch, or compute something else. So the first time a process uses a path (per kernel variant
and precision), it runs that path and the loop on a small slice of the real inputs (three steps,
two rows), forward and backward, and compares. On an error or a mismatch the process keeps the
loop for that variant, logs why, and the trial's `kernel` metric says so.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

import torch

from trainables.models.scans.barrier import raise_if_stalled
from trainables.models.scans.plan import Precision, ScanPlan

log = logging.getLogger(__name__)

Scan = Callable[..., tuple[torch.Tensor, torch.Tensor]]
CHECK_STEPS, CHECK_ROWS = 3, 2
# ‖fused − loop‖ / ‖loop‖ allowed: float32 rounding, or TF32's 10-bit mantissa
TOLERANCE: dict[Precision, float] = {"ieee": 1e-4, "tf32x3": 1e-4, "tf32": 2e-2}
FELL_BACK = "loop:fused-failed-its-self-check"

_verdicts: dict[Hashable, str | None] = {}


@dataclass
class KernelRecord:
    """What a model's last forward pass ran: `kernel` (fused, loop, or the fallback) and `path`
    (the plan, compact enough to be one `key=value` word in a log line)."""

    kernel: str = ""
    path: str = ""
    problems: list[str] = field(default_factory=list)

    def hear(self, plan: ScanPlan, problem: str | None) -> None:
        if problem is None:
            self.kernel = "fused"
            self.path = plan.tag()
        else:
            self.kernel, self.path = FELL_BACK, "loop"
            if problem not in self.problems:
                self.problems.append(problem)


def _relative_error(got: torch.Tensor | None, want: torch.Tensor | None) -> float:
    if got is None or want is None:
        return 0.0 if got is None and want is None else float("inf")
    if not torch.isfinite(got).all():
        return float("inf")
    return float((got - want).norm() / want.norm().clamp_min(1e-12))


def compare(fused: Scan, loop: Scan, inputs: Sequence[torch.Tensor], precision: Precision) -> str | None:
    """Why `fused` differs from `loop` on these inputs (outputs, last state, every gradient), or None."""
    generator = torch.Generator(device=inputs[0].device).manual_seed(0)
    results = []
    for scan in (fused, loop):
        leaves = [t.detach().clone().requires_grad_() for t in inputs]
        with torch.enable_grad():
            outputs, last = scan(*leaves)
            generator.manual_seed(0)
            g_out = torch.randn(outputs.shape, generator=generator, device=outputs.device)
            g_last = torch.randn(last.shape, generator=generator, device=last.device)
            grads = torch.autograd.grad(
                (outputs * g_out).sum() + (last * g_last).sum(), leaves, allow_unused=True
            )
        results.append([outputs.detach(), last.detach(), *grads])
    names = ["outputs", "last state", *(f"gradient {i}" for i in range(len(inputs)))]
    for name, got, want in zip(names, *results, strict=True):
        error = _relative_error(got, want)
        if not error <= TOLERANCE[precision]:
            return f"{name} differs from the loop's by {error:.2e} (allowed {TOLERANCE[precision]:.0e})"
    return None


def verdict(key: Hashable, fused: Scan, loop: Scan, inputs: Sequence[torch.Tensor], precision: Precision) -> str | None:  # fmt: skip
    """None when the fused variant `key` agrees with the loop in this process, else why not;
    checked once per process, on a slice of `inputs` (projected inputs, state, then weights)."""
    if key in _verdicts:
        return _verdicts[key]
    projected, h0, *weights = inputs
    small = [projected[:CHECK_STEPS, :CHECK_ROWS], h0[:CHECK_ROWS], *weights]
    try:
        problem = compare(fused, loop, small, precision)
        raise_if_stalled(projected.device)
    except Exception as exc:  # any failure to build, launch or run the kernel means: use the loop
        problem = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    if problem is not None:
        log.warning("fused scan %s failed its self-check, so this process runs the loop: %s", key, problem)
    _verdicts[key] = problem
    return problem


def forget() -> None:
    """Check every variant again at its next use (tests)."""
    _verdicts.clear()
