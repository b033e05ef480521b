"""How long one training step of a configuration takes here: what a plan's cost estimate rests on.

Measured, not modelled: the step's cost depends on the model's time loop, the device and the
threads, which no formula of the sizes captures. One untimed step first, so start-up is not
counted; evaluation is not counted either.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

from trainables.step import apply_step, gradients
from trainables.train import TrialConfig, build, build_optimizers, pick_device


def seconds_per_step(config: Mapping[str, Any], steps: int = 2) -> float:
    """Mean seconds of a training step (forward, backward, optimizer) of `config` on its device."""
    trial = TrialConfig.from_mapping(config)
    device = pick_device(trial.device)
    task, network, rnns = build(trial, device)
    optimizers = build_optimizers(rnns, network, trial)
    clip = trial.training["grad_clip"] or math.inf

    def step() -> None:
        loss, _ = gradients(task, network, optimizers, clip)
        apply_step(optimizers, rnns)
        float(loss.detach())  # waits for the device

    step()
    started = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - started) / steps
