"""The interface every task offers to the training loop.

A task owns its data, its network head, its loss, its metrics and its memoryless baseline, so
the loop in `trainables.train` is the same for every task and every model.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Protocol

import torch
from torch import nn

from trainables.models.base import RecurrentModel

Batch = Any


class RNNFactory(Protocol):
    """Builds one more recurrent model of the trial's kind, with the trial's hyperparameters.

    Networks that need several recurrent parts (bAbI's three readers, stacked language models)
    ask for each; `hidden_size` defaults to the trial's.
    """

    def __call__(self, input_size: int, hidden_size: int | None = None) -> RecurrentModel: ...


class Task(ABC):
    """One benchmark instance, built for a batch size, a seed and a device.

    What it reports (its objective, mode and validation metrics) is declared with its name in
    `trainables.tasks.declared`, so specs are checked before any trial runs or torch is imported.
    """

    input_size: int
    output_size: int
    baseline: float | None = None

    stream_attributes: ClassVar[tuple[str, ...]] = ()
    """Attributes that position the training stream (generators, epoch order, carried state)."""

    capturable: ClassVar[bool] = False
    """Whether a CUDA graph may replay the training step (`trainables.capture`): every training
    batch a tuple of tensors of one shape and dtype, copied into the buffers the graph reads, and
    a loss that keeps nothing from one batch to the next (a graph would read a carried state where
    the capture found it)."""

    def stream_state(self) -> dict[str, Any]:
        """Where the training stream is, so a trial restored from a checkpoint continues it."""
        state = {}
        for name in self.stream_attributes:
            value = getattr(self, name)
            state[name] = value.get_state() if isinstance(value, torch.Generator) else value
        return state

    def load_stream_state(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            current = getattr(self, name)
            if isinstance(current, torch.Generator):
                current.set_state(value)
            else:
                setattr(self, name, value)

    @classmethod
    def check_data(cls, settings: Any) -> None:
        """Raise `trainables.data.MissingDataError` when files the task reads are absent, without
        reading them: a launch calls it before anything starts. Generated tasks need none."""
        return None

    @classmethod
    def sized(cls, settings: Any) -> Task:
        """A task that can build its network and holds no data, for parameter counts: a
        reproduction's model sizes are checked before any data set is on the machine. Tasks that
        read files override it with their usual shapes."""
        return cls(settings, batch_size=1, seed=0, device=torch.device("cpu"))

    def build_network(self, rnn: RecurrentModel) -> nn.Module:
        """The whole trainable network around the recurrent model (default: a linear read-out)."""
        return SequenceNetwork(rnn, self.output_size)

    def create_network(self, make_rnn: RNNFactory) -> nn.Module:
        """The network the training loop trains; override when it needs more than one recurrent model."""
        return self.build_network(make_rnn(self.input_size))

    @abstractmethod
    def train_batch(self) -> Batch:
        """The next training batch, already on the task's device."""

    @abstractmethod
    def loss(self, network: nn.Module, batch: Batch) -> torch.Tensor:
        """The training loss of `network` on `batch` (a scalar with a graph)."""

    @abstractmethod
    def evaluate(self, network: nn.Module, split: str = "valid") -> dict[str, float]:
        """Metrics on a fixed split ("valid" or "test"), keyed `<split>_<metric>`; for "valid"
        the keys are the declared `metrics`."""


class SequenceNetwork(nn.Module):
    """Recurrent model followed by a per-step linear read-out."""

    def __init__(self, rnn: RecurrentModel, output_size: int) -> None:
        super().__init__()
        self.rnn = rnn
        self.head = nn.Linear(rnn.hidden_size, output_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden, _ = self.rnn(x)
        return self.head(hidden)
