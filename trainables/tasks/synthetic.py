"""Synthetic tasks: copying, denoise, parenthesis and adding (GORU paper section 4, NC-GRU paper
section 4; the reference code's generators).

Batches are generated on the fly, vectorized on the task's device. The training stream follows
the trial's seed; the validation set follows `data_seed`, so every trial of a sweep is scored on
the same sequences.
"""

from __future__ import annotations

import math
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from trainables.models.base import RecurrentModel
from trainables.tasks.base import Batch, SequenceNetwork, Task
from trainables.tasks.settings import (
    DenoiseSettings,
    GeneratedSettings,
    ParenthesisSettings,
    SymbolSettings,
)

N_COPIED = 10  # both tasks recall ten data symbols


SPLIT_SEED_OFFSETS = {"valid": 1_000_003, "test": 2_000_003}


class GeneratedTask(Task):
    """Training batches follow the trial's seed; the validation and test sets follow `data_seed`
    and are generated once, on first use, so every trial of a sweep is scored on the same data."""

    stream_attributes: ClassVar[tuple[str, ...]] = ("_train_gen",)
    capturable: ClassVar[bool] = True

    def __init__(self, settings: GeneratedSettings, batch_size: int, seed: int, device: torch.device) -> None:
        self.settings = settings
        self.batch_size = batch_size
        self.device = device
        self._train_gen = torch.Generator(device=device).manual_seed(seed)
        self._fixed: dict[str, list[Batch]] = {}

    def generate(self, batch_size: int, gen: torch.Generator) -> Batch:
        raise NotImplementedError

    def score(self, network: nn.Module, batches: list[Batch]) -> dict[str, float]:
        """Metrics over fixed batches, keyed without the split prefix (loss, accuracy)."""
        raise NotImplementedError

    def fixed_batches(self, split: str) -> list[Batch]:
        if split not in self._fixed:
            gen = torch.Generator(device=self.device).manual_seed(
                self.settings.data_seed + SPLIT_SEED_OFFSETS[split]
            )
            size = self.settings.valid_size if split == "valid" else self.settings.test_size
            self._fixed[split] = [
                self.generate(min(self.batch_size, size - start), gen)
                for start in range(0, size, self.batch_size)
            ]
        return self._fixed[split]

    def train_batch(self) -> Batch:
        return self.generate(self.batch_size, self._train_gen)

    @torch.no_grad()
    def evaluate(self, network: nn.Module, split: str = "valid") -> dict[str, float]:
        return {f"{split}_{k}": v for k, v in self.score(network, self.fixed_batches(split)).items()}


class SymbolRecallTask(GeneratedTask):
    """Per-step classification over one-hot symbols.

    Two accuracies, because the papers disagree on what they count: `accuracy_answer_steps` scores
    only the ten recalled symbols, while `accuracy_all_steps` scores all T + 20 outputs, blanks
    included, as the NC-GRU code and its accuracy tables do (a model stuck at the baseline reads
    about 1/8 on the first and (T + 10 + 10/8)/(T + 20) on the second).
    """

    def __init__(self, settings: SymbolSettings, batch_size: int, seed: int, device: torch.device) -> None:
        super().__init__(settings, batch_size, seed, device)
        self.length = settings.T + 20

    def encode(self, tokens: torch.Tensor) -> torch.Tensor:
        return F.one_hot(tokens, self.input_size).float()

    def _logits(self, network: nn.Module, tokens: torch.Tensor) -> torch.Tensor:
        return network(self.encode(tokens))

    def loss(self, network: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        tokens, targets = batch
        logits = self._logits(network, tokens)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))

    def score(self, network: nn.Module, batches: list[Batch]) -> dict[str, float]:
        total_loss, correct_all, correct_answers, steps, answers = 0.0, 0, 0, 0, 0
        for tokens, targets in batches:
            logits = self._logits(network, tokens)
            total_loss += F.cross_entropy(
                logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), reduction="sum"
            ).item()
            hits = logits.argmax(-1) == targets
            correct_all += hits.sum().item()
            correct_answers += hits[-N_COPIED:].sum().item()
            steps += targets.numel()
            answers += hits[-N_COPIED:].numel()
        return {
            "loss": total_loss / steps,
            "accuracy_all_steps": correct_all / steps,
            "accuracy_answer_steps": correct_answers / answers,
        }


def _random_symbols(
    batch_size: int, n_symbols: int, gen: torch.Generator, device: torch.device
) -> torch.Tensor:
    """(10, B) data symbols drawn uniformly from 1..n_symbols."""
    return torch.randint(1, n_symbols + 1, (N_COPIED, batch_size), generator=gen, device=device)


class Copying(SymbolRecallTask):
    """Ten symbols from 8, T − 1 blanks, a marker, ten blanks; recall the ten after the marker.

    Tokens: 0 blank, 1–8 data, 9 marker (input size 10); outputs 0 blank and 1–8 (9 classes).
    """

    n_data = 8
    input_size = 10
    output_size = 9

    def __init__(self, settings: SymbolSettings, batch_size: int, seed: int, device: torch.device) -> None:
        super().__init__(settings, batch_size, seed, device)
        self.baseline = N_COPIED * math.log(self.n_data) / self.length

    def generate(self, batch_size: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        T = self.settings.T
        data = _random_symbols(batch_size, self.n_data, gen, self.device)
        inputs = torch.zeros(self.length, batch_size, dtype=torch.long, device=self.device)
        inputs[:N_COPIED] = data
        inputs[N_COPIED + T - 1] = self.n_data + 1
        targets = torch.zeros_like(inputs)
        targets[-N_COPIED:] = data
        return inputs, targets


class Denoise(SymbolRecallTask):
    """Ten data symbols (1–9) at random places among the first T + 9 steps of noise, a marker at
    step T + 9, ten blanks; output blanks for T + 10 steps, then the ten symbols in order.

    Tokens: 0 noise/blank, 1–9 data, 10 marker (input size 11); 10 output classes. The `paper`
    variant draws positions with replacement (a later symbol overwrites an earlier one) and encodes
    the marker as an all-zero vector, as the publication code did.
    """

    n_data = 9
    output_size = 10

    def __init__(self, settings: DenoiseSettings, batch_size: int, seed: int, device: torch.device) -> None:
        self.input_size = 11 if settings.variant == "clean" else 10
        super().__init__(settings, batch_size, seed, device)
        self.baseline = N_COPIED * math.log(self.n_data) / self.length

    def encode(self, tokens: torch.Tensor) -> torch.Tensor:
        # paper variant: the marker token (10) lies outside the 10-wide one-hot, so it encodes as zeros
        return F.one_hot(tokens, 11)[..., : self.input_size].float()

    def generate(self, batch_size: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        span = self.settings.T + 9
        device = self.device
        if self.settings.variant == "clean":
            noise = torch.rand(batch_size, span, generator=gen, device=device)
            positions = noise.argsort(dim=1)[:, :N_COPIED]
        else:
            positions = torch.randint(0, span, (batch_size, N_COPIED), generator=gen, device=device)
        positions = positions.sort(dim=1).values.T  # (10, B), in time order
        data = _random_symbols(batch_size, self.n_data, gen, device)
        inputs = torch.zeros(self.length, batch_size, dtype=torch.long, device=device)
        columns = torch.arange(batch_size, device=device).expand(N_COPIED, -1)
        for k in range(N_COPIED):  # in order, so with replacement the later symbol wins, as in the paper code
            inputs[positions[k], columns[k]] = data[k]
        inputs[span] = self.n_data + 1
        targets = torch.zeros_like(inputs)
        targets[-N_COPIED:] = data
        return inputs, targets


class Parenthesis(GeneratedTask):
    """Count the unmatched parentheses of every type at every step, saturating at a cap.

    Tokens are drawn uniformly; type k opens with token 2k and closes with 2k + 1, the remaining
    tokens are noise. Per type and step: count ← min(cap, count + open), then max(0, count − close),
    exactly as both papers' generators. `goru` reads each count as one of 21 classes (the
    publication code's size, more than the 11 reachable values) with cross entropy; `isan` scores
    the output against the one-hot count with squared error.
    """

    def __init__(
        self, settings: ParenthesisSettings, batch_size: int, seed: int, device: torch.device
    ) -> None:
        super().__init__(settings, batch_size, seed, device)
        if settings.variant == "goru":
            self.n_types, self.n_noise, self.cap, self.n_classes = 10, 10, 10, 21
        else:
            self.n_types, self.n_noise, self.cap, self.n_classes = 3, 1, 5, 6
        self.input_size = 2 * self.n_types + self.n_noise
        self.output_size = self.n_types * self.n_classes

    def generate(self, batch_size: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """Tokens (T, B) and counts (T, B, types)."""
        tokens = torch.randint(
            0, self.input_size, (self.settings.T, batch_size), generator=gen, device=self.device
        )
        kinds = torch.arange(self.n_types, device=self.device)
        opened = (tokens.unsqueeze(-1) == 2 * kinds).long()
        closed = (tokens.unsqueeze(-1) == 2 * kinds + 1).long()
        counts = torch.empty_like(opened)
        count = torch.zeros_like(opened[0])
        for t in range(self.settings.T):  # the cap makes the count sequential in time, not in samples
            count = (count + opened[t]).clamp(max=self.cap)
            count = (count - closed[t]).clamp(min=0)
            counts[t] = count
        return tokens, counts

    def _scores(self, network: nn.Module, tokens: torch.Tensor) -> torch.Tensor:
        out = network(F.one_hot(tokens, self.input_size).float())
        return out.reshape(*tokens.shape, self.n_types, self.n_classes)

    def _loss(self, scores: torch.Tensor, counts: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
        if self.settings.variant == "goru":
            return F.cross_entropy(
                scores.reshape(-1, self.n_classes), counts.reshape(-1), reduction=reduction
            )
        target = F.one_hot(counts, self.n_classes).float()
        return F.mse_loss(scores, target, reduction=reduction)

    def loss(self, network: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        tokens, counts = batch
        return self._loss(self._scores(network, tokens), counts)

    def score(self, network: nn.Module, batches: list[Batch]) -> dict[str, float]:
        total_loss, loss_terms, correct, count = 0.0, 0, 0, 0
        for tokens, counts in batches:
            scores = self._scores(network, tokens)
            total_loss += self._loss(scores, counts, reduction="sum").item()
            loss_terms += counts.numel() * (1 if self.settings.variant == "goru" else self.n_classes)
            correct += (scores.argmax(-1) == counts).sum().item()
            count += counts.numel()
        return {"loss": total_loss / loss_terms, "accuracy": correct / count}


class LastStepNetwork(SequenceNetwork):
    """Recurrent model read out once, from its output at the last step."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden, _ = self.rnn(x)
        return self.head(hidden[-1])


class Adding(GeneratedTask):
    """Sum the two marked values of a sequence of [u_t ~ U(0, 1), marker_t].

    One marker lies uniformly in [0, ⌊(T−1)/2⌋), the other in [⌊(T−1)/2⌋, T); the target is read
    from the last state. Always answering 1 scores the variance of the sum, 1/6 ≈ 0.167.
    """

    input_size = 2
    output_size = 1
    baseline = 1 / 6

    def generate(self, batch_size: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """Inputs (T, B, 2) and targets (B,)."""
        T, device = self.settings.T, self.device
        half = (T - 1) // 2
        values = torch.rand(T, batch_size, generator=gen, device=device)
        first = torch.randint(0, max(half, 1), (batch_size,), generator=gen, device=device)
        second = torch.randint(max(half, 1), T, (batch_size,), generator=gen, device=device)
        columns = torch.arange(batch_size, device=device)
        markers = torch.zeros(T, batch_size, device=device)
        markers[first, columns] = 1.0
        markers[second, columns] = 1.0
        targets = values[first, columns] + values[second, columns]
        return torch.stack([values, markers], dim=-1), targets

    def build_network(self, rnn: RecurrentModel) -> nn.Module:
        return LastStepNetwork(rnn, self.output_size)

    def loss(self, network: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        inputs, targets = batch
        return F.mse_loss(network(inputs).squeeze(-1), targets)

    def score(self, network: nn.Module, batches: list[Batch]) -> dict[str, float]:
        total, count = 0.0, 0
        for inputs, targets in batches:
            total += F.mse_loss(network(inputs).squeeze(-1), targets, reduction="sum").item()
            count += targets.numel()
        return {"loss": total / count}
