"""The Ray Tune function trainable: `trainables.train.train` with Tune's reporting and checkpoints.

A trial that raises reports its reason as a result instead of crashing its worker, so the
searcher records FAIL with the reason and Ray does not retry a deterministic error. A worker
that dies (a lost node, a killed process) surfaces as a Tune error instead: Tune restarts the
trial, up to `budget.retries` times, and the trial continues from its last checkpoint.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import traceback
from pathlib import Path
from typing import Any

GPU_TRIALS_ON_CPU_ENV = "SWEEPER_GPU_TRIALS_ON_CPU"  # "1": trials Ray gave a GPU train on the CPU
GPU_IDS_METRIC = "gpu_ids"  # as `store.trial_record` names it; not imported, which would load Optuna here
STATE_FILE = "state.pt"
FINAL_FILE = "final.pt"  # a finished trial's network (pickled), with its last report


class RayCheckpointing:
    """Checkpoints through Tune: saved to a folder, handed over with the next report."""

    def __init__(self) -> None:
        self._pending: str | None = None

    def save(self, state: dict[str, Any]) -> None:
        import torch

        folder = tempfile.mkdtemp(prefix="sweeper-checkpoint-")
        torch.save(state, Path(folder) / STATE_FILE)
        self._pending = folder

    def keep_final(self, network: Any) -> None:
        """The trained network goes with the last report, for the driver to keep if it is the best
        (saved where it is, GPU or CPU: the driver loads it onto the CPU)."""
        import torch

        folder = tempfile.mkdtemp(prefix="sweeper-final-")
        torch.save(network, Path(folder) / FINAL_FILE)
        self._pending = folder

    def load(self) -> dict[str, Any] | None:
        import torch
        from ray import tune

        checkpoint = tune.get_checkpoint()
        if checkpoint is None:
            return None
        with checkpoint.as_directory() as folder:
            return torch.load(Path(folder) / STATE_FILE, weights_only=False)

    def report(self, metrics: dict[str, Any]) -> None:
        """Report with the pending checkpoint, whose folder Tune has persisted once this returns."""
        from ray import tune
        from ray.tune import Checkpoint

        folder, self._pending = self._pending, None
        if folder is None:
            tune.report(metrics)
            return
        try:
            tune.report(metrics, checkpoint=Checkpoint.from_directory(folder))
        finally:
            shutil.rmtree(folder, ignore_errors=True)


def compute_with_the_trials_cpus() -> None:
    """Have torch compute with as many threads as the CPUs Ray gave this trial.

    Ray sets `OMP_NUM_THREADS` to them when it hands the worker its actor, but a preloaded
    worker imported torch before that, and torch had sized its thread pool to every core of the
    machine: two trials of one CPU each then ran two threads each on 2 cores, 7× slower.
    """
    import torch

    threads = os.environ.get("OMP_NUM_THREADS", "")
    if threads.isdigit() and int(threads) > 0 and torch.get_num_threads() != int(threads):
        torch.set_num_threads(int(threads))


class NoUsableGpu(RuntimeError):
    """Ray gave the trial a GPU that its process cannot use: it stops before training on the CPU."""


def cuda_problem() -> str | None:
    """Why torch in this process cannot use CUDA, or None when it can."""
    import torch

    if torch.version.cuda is None and torch.version.hip is None:
        return f"torch {torch.__version__} is a build without CUDA"
    if not torch.cuda.is_available():
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "unset")
        return (
            f"torch {torch.__version__} (CUDA {torch.version.cuda}) finds no usable device "
            f"(CUDA_VISIBLE_DEVICES={visible}; a missing or broken driver, or a device not mounted)"
        )
    return None


def placement(config: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The trial's config on the device Ray gave it, and what it records of that: the GPU ids
    and share Ray gave it, and its host. A trial given a GPU trains on it, its memory capped to
    its share; one whose process cannot use CUDA fails here, naming the host and what is missing,
    unless `GPU_TRIALS_ON_CPU_ENV` asks for the CPU (tests of GPU scheduling on a CPU host)."""
    import ray

    ids = [str(i) for i in ray.get_gpu_ids()]
    share = float(ray.get_runtime_context().get_assigned_resources().get("GPU", 0.0))
    facts = {GPU_IDS_METRIC: ",".join(ids) or "none", "gpu_share": share, "host": socket.gethostname()}
    if not ids:
        return config, facts
    if os.environ.get(GPU_TRIALS_ON_CPU_ENV) == "1":
        return {**config, "device": "cpu"}, facts
    problem = cuda_problem()
    if problem is not None:
        raise NoUsableGpu(
            f"Ray gave this trial GPU {facts[GPU_IDS_METRIC]} on host {facts['host']}, but {problem}; "
            "fix the worker's image or driver, or run the sweep with --no-gpus"
        )
    return {**config, "device": "cuda", "gpu_memory_fraction": share if 0.0 < share < 1.0 else 0.0}, facts


def run_trial(config: dict[str, Any], plugins: tuple[str, ...] = ()) -> None:
    """One trial; `plugins` are the driver's plugin modules, registered here before the trial."""
    from trainables.catalog import load_all
    from trainables.train import train

    compute_with_the_trials_cpus()
    checkpointing = RayCheckpointing()
    facts: dict[str, Any] = {}

    def report(step: int, metrics: dict[str, float]) -> None:
        checkpointing.report({**metrics, **facts, "step": step})

    try:
        load_all(plugins)  # a plugin this machine cannot import fails the trial, with the reason
        config, facts = placement(config)
        train(config, report, checkpointing)
    except Exception as exc:  # every failure becomes FAIL with its reason, not a lost worker
        failure = {"fail_reason": f"{type(exc).__name__}: {exc}", "fail_traceback": traceback.format_exc()}
        checkpointing.report(failure)
