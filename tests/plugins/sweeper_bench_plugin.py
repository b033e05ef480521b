"""A plugin registering `fixed_work`, a task whose every step costs a set amount of work.

Throughput benchmarks and tests need trials whose length is known in advance, so that whatever
time a sweep takes beyond it is the service's overhead, and trials that say which process ran
them and when, so that actor reuse and worker-slot utilization can be read back from the study
database or MLflow. Loaded through SWEEPER_PLUGINS like any user plugin.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import psutil
import torch
import torch.nn.functional as F
from pydantic import BaseModel, ConfigDict, Field
from torch import nn

from trainables.registry import register_task
from trainables.tasks.base import Task

MATMUL_SIZE = 256


def busy_work(matmuls: int) -> None:
    """`matmuls` products of two 256×256 matrices: a fixed amount of compute, not of time."""
    a = torch.ones(MATMUL_SIZE, MATMUL_SIZE)
    for _ in range(matmuls):
        a = torch.mm(a, a).clamp_(max=1.0)


class FixedWorkSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["sleep", "compute"] = Field("sleep", description="sleep, or multiply matrices")
    step_seconds: float = Field(0.01, ge=0.0, le=3600.0, description="sleep per training step")
    step_matmuls: int = Field(10, ge=0, le=10**7, description="256×256 matrix products per training step")
    meet: int = Field(0, ge=0, description="before its first step, wait until this many trials have started")
    meet_dir: str = Field("", description="the folder where the trials that meet say they started")
    meet_timeout_s: float = Field(
        120.0, gt=0.0, description="how long a trial waits to meet the others or to go on"
    )
    hold_after: int = Field(
        0, ge=0, description="a trial started after this many waits for `release_file` before its first step"
    )
    release_file: str = Field("", description="the file whose existence lets held trials go on")


def actor_environment() -> dict[str, float]:
    """How many variables this trial's Ray actor carries in its own runtime environment."""
    if "ray" not in sys.modules:  # `sweeper train`, without Ray
        return {}
    import ray

    runtime_env = ray.get_runtime_context().runtime_env if ray.is_initialized() else {}
    return {"runtime_env_vars": float(len(runtime_env.get("env_vars") or {}))}


@register_task(
    "fixed_work",
    FixedWorkSettings,
    description="test task: a fixed sleep or compute per step; reports its process id and times",
)
class FixedWork(Task):
    """One scalar per step through the trial's recurrent model, after the step's fixed work.

    Reports `worker_pid`, `process_started_at`, `trial_started_at` and `reported_at` (epoch
    seconds) with every validation result, so readers can tell which process ran a trial, since
    when it existed, and for how long the trial ran; `dynamo_preloaded`, whether
    `torch._dynamo` (which a process imports with its first optimizer) was imported before the
    trial built its optimizers; `torch_threads`, the threads torch computes with; and, under Ray,
    `runtime_env_vars`, how many variables the trial's actor carries in a runtime environment of
    its own (with any, Ray starts a new worker for it instead of handing it a preloaded one).

    With `meet` set, each trial says it started (a file in `meet_dir`) and, before its first step,
    waits until `meet` trials have started; it reports `met`, how many it saw. No trial finishes
    while it waits, so `met` >= `meet` proves that many ran at once, whatever the machine's speed.
    With `hold_after` set, a trial that starts after that many (counted in `meet_dir`) waits before
    its first step until `release_file` exists: a test can find held trials running for as long as
    it needs, however fast the others trained.
    """

    input_size = 1
    output_size = 1

    def __init__(self, settings: FixedWorkSettings, batch_size: int, seed: int, device: torch.device) -> None:
        self.settings = settings
        self.started_at = time.time()
        self.dynamo_preloaded = float("torch._dynamo" in sys.modules)
        gen = torch.Generator().manual_seed(seed)
        self.inputs = torch.randn(2, 1, 1, generator=gen).to(device)
        self.targets = torch.zeros(2, 1, 1, device=device)
        self.met: float | None = None
        self.held = False
        if settings.meet or settings.hold_after:
            (Path(settings.meet_dir) / uuid.uuid4().hex).touch()
            self.held = 0 < settings.hold_after < self.started()

    @classmethod
    def sized(cls, settings: FixedWorkSettings) -> FixedWork:
        """The task a launch reads its baseline from, or counts parameters with, in the driver: no
        trial, so it neither says it started nor waits."""
        quiet = settings.model_copy(update={"meet": 0, "hold_after": 0})
        return cls(quiet, batch_size=1, seed=0, device=torch.device("cpu"))

    def wait_until(self, done: Callable[[], bool]) -> None:
        """Poll `done` until it holds or `meet_timeout_s` has passed."""
        deadline = time.monotonic() + self.settings.meet_timeout_s
        while not done() and time.monotonic() < deadline:
            time.sleep(0.05)

    def started(self) -> int:
        return len(list(Path(self.settings.meet_dir).iterdir()))

    def train_batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        if self.settings.meet and self.met is None:
            self.wait_until(lambda: self.started() >= self.settings.meet)
            self.met = float(self.started())
        if self.held:
            self.wait_until(Path(self.settings.release_file).exists)
            self.held = False
        if self.settings.kind == "sleep":
            time.sleep(self.settings.step_seconds)
        else:
            busy_work(self.settings.step_matmuls)
        return self.inputs, self.targets

    def loss(self, network: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        inputs, targets = batch
        return F.mse_loss(network(inputs), targets)

    @torch.no_grad()
    def evaluate(self, network: nn.Module, split: str = "valid") -> dict[str, float]:
        return {
            f"{split}_loss": F.mse_loss(network(self.inputs), self.targets).item(),
            "worker_pid": float(os.getpid()),
            "process_started_at": psutil.Process().create_time(),
            "trial_started_at": self.started_at,
            "dynamo_preloaded": self.dynamo_preloaded,
            "torch_threads": float(torch.get_num_threads()),
            "reported_at": time.time(),
            **({"met": self.met} if self.met is not None else {}),
            **actor_environment(),
        }
