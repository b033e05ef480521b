"""The one interface every recurrent model offers to every task."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from trainables.models.kernel_choice import Kernel, resolve_kernel
from trainables.models.orthogonal import orthogonal_diagnostics

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
    """A model with orthogonal recurrent matrices: their diagnostics, and the `kernel` setting
    that picks the implementation of its time loop (`kernel_choice`)."""

    kernel: str = "auto"

    def orthogonal_matrices(self) -> list[torch.Tensor]:
        """The orthogonal matrices as the forward pass builds them."""
        raise NotImplementedError

    def diagnostics(self) -> dict[str, float]:
        with torch.no_grad():
            matrices = self.orthogonal_matrices()
        return orthogonal_diagnostics(matrices, self.orthogonal_parameters())

    def scan_kernel(self, x: torch.Tensor) -> Kernel:
        """The implementation this forward pass takes for an input like `x`."""
        return resolve_kernel(self.kernel, x.device, x.dtype)


def detach_state(state: State) -> State:
    """Cut the autograd history of a carried state, whatever its nesting."""
    if state is None:
        return None
    if isinstance(state, torch.Tensor):
        return state.detach()
    return type(state)(detach_state(s) for s in state)
