"""The one interface every recurrent model offers to every task."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from trainables.models.orthogonal import GivensRotations, ScaledCayley, orthogonal_diagnostics
from trainables.models.scans.barrier import raise_if_stalled
from trainables.models.scans.choice import Kernel, resolve_kernel
from trainables.models.scans.self_check import KernelRecord

State = Any


class RecurrentModel(nn.Module):
    """Maps a time-major input sequence to per-step hidden outputs.

    `forward(x, state=None)` takes `x` of shape (T, B, input_size) and returns
    `(outputs, state)` with outputs of shape (T, B, hidden_size). `state` is opaque to callers
    (a tensor, or a tuple for LSTM); language-modelling tasks pass it back in to carry it across
    BPTT windows, after `detach_state`.
    """

    input_size: int
    hidden_size: int

    def orthogonal_parameters(self) -> list[nn.Parameter]:
        """Parameters that get the orthogonal optimizer and learning rate (angles, A)."""
        return []

    def diagnostics(self) -> dict[str, float]:
        """Per-report health figures, e.g. `ortho_error` = max‖UᵀU − I‖ over orthogonal matrices."""
        return {}

    def after_optimizer_step(self) -> None:
        """Hook for parametrizations that maintain state across steps (NC-GRU's inverse)."""


class OrthogonalModel(RecurrentModel):
    """A model with orthogonal recurrent matrices, each a parametrization module among its
    submodules (`GivensRotations`, `ScaledCayley`): their parameters get the orthogonal
    optimizer, their maintained inverses are carried over each step, and their diagnostics are
    reported. `kernel` picks the implementation of the time loop and of the matrices' builds
    (`scans.choice`), which a model hands its parametrizations with its `kernel_record`; the
    record says what the last forward pass ran."""

    kernel: str = "auto"
    kernel_precision: str = "ieee"

    def __init__(self) -> None:
        super().__init__()
        self.kernel_record = KernelRecord()

    def parametrizations(self) -> list[GivensRotations | ScaledCayley]:
        return [m for m in self.modules() if isinstance(m, GivensRotations | ScaledCayley)]

    def orthogonal_parameters(self) -> list[nn.Parameter]:
        return [p for part in self.parametrizations() for p in part.parameters()]

    def orthogonal_matrices(self) -> list[torch.Tensor]:
        """The orthogonal matrices as the forward pass builds them."""
        return [part() for part in self.parametrizations()]

    def after_optimizer_step(self) -> None:
        for part in self.parametrizations():  # each matrix from its own A and its own inverse
            if isinstance(part, ScaledCayley):
                part.after_optimizer_step()

    def diagnostics(self) -> dict[str, float]:
        if self.kernel_record.scan == "fused":  # a barrier that gave up made this window's results wrong
            raise_if_stalled(next(self.parameters()).device)
        with torch.no_grad():
            matrices = self.orthogonal_matrices()
        figures = orthogonal_diagnostics(matrices, self.orthogonal_parameters())
        maintained = [
            p for p in self.parametrizations() if isinstance(p, ScaledCayley) and p.neumann_order is not None
        ]
        if maintained:
            figures["neumann_condition"] = max(part.neumann_condition() for part in maintained)
        return figures

    def scan_kernel(self, x: torch.Tensor) -> Kernel:
        """The implementation this forward pass takes for an input like `x`."""
        kernel = resolve_kernel(self.kernel, x.device, x.dtype)
        if kernel == "loop":
            self.kernel_record.scan = self.kernel_record.path = "loop"
        return kernel

    def scan_options(self) -> dict[str, Any]:
        """What the fused scans take from the model's settings: precision, the self-check of
        `kernel: auto`, and the record to fill."""
        return {
            "precision": self.kernel_precision,
            "check": self.kernel == "auto",
            "record": self.kernel_record,
        }


def detach_state(state: State) -> State:
    """Cut the autograd history of a carried state, whatever its nesting."""
    if state is None:
        return None
    if isinstance(state, torch.Tensor):
        return state.detach()
    return type(state)(detach_state(s) for s in state)
