"""How long a configuration's training takes here: what a plan's cost estimate rests on.

Measured, not modelled: the step's cost depends on the model's time loop, the device and the
threads, which no formula of the sizes captures. A trial also pays its start (the task's data and
the network built, the first step with its compilation) and each evaluation of the validation
set, which for short trials outweigh the steps; `trial_costs` times each apart.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from trainables.step import apply_step, gradients
from trainables.train import TrialConfig, build, build_optimizers, pick_device


@dataclass(frozen=True)
class TrialCosts:
    start: float  # seconds: data, network, and the first step
    step: float  # seconds of one training step (forward, backward, optimizer)
    evaluation: float  # seconds of one evaluation of the validation set


def _trial(config: Mapping[str, Any]) -> tuple[Callable[[], None], Callable[[], None]]:
    """A configuration's training step and its evaluation, built."""
    trial = TrialConfig.from_mapping(config)
    device = pick_device(trial.device)
    task, network, rnns = build(trial, device)
    optimizers = build_optimizers(rnns, network, trial)
    clip = trial.training["grad_clip"] or math.inf

    def step() -> None:
        network.train()
        loss, _ = gradients(task, network, optimizers, clip)
        apply_step(optimizers, rnns)
        float(loss.detach())  # waits for the device

    def evaluate() -> None:
        network.eval()
        with torch.no_grad():
            task.evaluate(network)

    return step, evaluate


def _timed(work: Callable[[], None], times: int) -> float:
    started = time.perf_counter()
    for _ in range(times):
        work()
    return (time.perf_counter() - started) / times


def trial_costs(config: Mapping[str, Any], steps: int = 2) -> TrialCosts:
    """The start, a step and an evaluation of `config` on its device, each timed apart."""
    started = time.perf_counter()
    step, evaluate = _trial(config)
    step()
    start = time.perf_counter() - started
    return TrialCosts(start, _timed(step, steps), _timed(evaluate, 1))
