"""A task of your own, registered for sweeper: predict the running mean of a noisy signal.

Input u_t ~ U(0, 1); target at every step the mean of u_1 … u_t; mean squared error. Always
answering 0.5 scores the variance of the running mean, about (ln T + 0.58) / (12 T).
"""

from __future__ import annotations

import math
from typing import ClassVar

import torch
import torch.nn.functional as F
from pydantic import BaseModel, ConfigDict, Field
from torch import nn

from trainables.registry import register_task
from trainables.tasks.base import Task


class RunningMeanSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    T: int = Field(50, ge=1, le=100_000, description="sequence length")
    valid_size: int = Field(256, ge=1, le=1_000_000, description="validation sequences")


@register_task(
    "running_mean",
    RunningMeanSettings,
    description="example plugin task: the running mean of U(0, 1) inputs at every step; MSE",
)
class RunningMean(Task):
    stream_attributes: ClassVar[tuple[str, ...]] = ("generator",)
    input_size = 1
    output_size = 1

    def __init__(
        self, settings: RunningMeanSettings, batch_size: int, seed: int, device: torch.device
    ) -> None:
        self.settings, self.batch_size, self.device = settings, batch_size, device
        self.generator = torch.Generator(device=device).manual_seed(seed)
        self.baseline = (math.log(settings.T) + 0.58) / (12 * settings.T)
        self._valid = self._batch(settings.valid_size, torch.Generator(device=device).manual_seed(1))

    def _batch(self, size: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        u = torch.rand(self.settings.T, size, 1, generator=generator, device=self.device)
        steps = torch.arange(1, self.settings.T + 1, device=self.device).view(-1, 1, 1)
        return u, u.cumsum(0) / steps

    def train_batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self._batch(self.batch_size, self.generator)

    def loss(self, network: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        inputs, targets = batch
        return F.mse_loss(network(inputs), targets)

    @torch.no_grad()
    def evaluate(self, network: nn.Module, split: str = "valid") -> dict[str, float]:
        return {f"{split}_loss": float(self.loss(network, self._valid))}
