"""One training step as Python runs it, op by op: the reference the captured step
(`trainables.capture`) is tested against, and the step every CPU trial takes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from trainables.models.base import RecurrentModel
from trainables.tasks.base import Batch, Task


@dataclass(frozen=True)
class StepParts:
    """What a training step acts on. `loss_sum` and `norm_sum` are the report window's sums, kept
    on the device so that a GPU step never waits for the host; the loop reads and zeroes them."""

    task: Task
    network: nn.Module
    optimizers: Sequence[torch.optim.Optimizer]
    rnns: Sequence[RecurrentModel]
    clip: float
    loss_sum: torch.Tensor
    norm_sum: torch.Tensor


def gradients_on(
    batch: Batch, task: Task, network: nn.Module, optimizers: Sequence[torch.optim.Optimizer], clip: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """The first half of a training step, on `batch`: the loss and the clipped gradient's norm,
    both left on the device (clipping reads nothing back, so a graph may hold it)."""
    network.train()
    loss = task.loss(network, batch)
    for optimizer in optimizers:
        optimizer.zero_grad(set_to_none=True)
    loss.backward()
    return loss, torch.nn.utils.clip_grad_norm_(network.parameters(), clip)


def gradients(
    task: Task, network: nn.Module, optimizers: Sequence[torch.optim.Optimizer], clip: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """`gradients_on` the task's next training batch."""
    return gradients_on(task.train_batch(), task, network, optimizers, clip)


def apply_step(optimizers: Sequence[torch.optim.Optimizer], rnns: Sequence[RecurrentModel]) -> None:
    """The second half: every optimizer steps, then the models carry their maintained inverses over."""
    for optimizer in optimizers:
        optimizer.step()
    for rnn in rnns:
        rnn.after_optimizer_step()


class PlainStep:
    """The uncaptured step. `capture` is the trial's `capture` metric: why no graph replays it."""

    def __init__(self, parts: StepParts, capture: str) -> None:
        self.parts = parts
        self.capture = capture

    def gradients_on(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """The first half on `batch`, its loss and norm added to the window's sums."""
        parts = self.parts
        loss, norm = gradients_on(batch, parts.task, parts.network, parts.optimizers, parts.clip)
        parts.loss_sum.add_(loss.detach())
        parts.norm_sum.add_(norm)
        return loss, norm

    def gradients(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.gradients_on(self.parts.task.train_batch())

    def finish(self) -> None:
        apply_step(self.parts.optimizers, self.parts.rnns)
