"""The loop every trial runs: `train(config, report)`.

It knows nothing of Ray, Optuna or MLflow; whoever calls it decides what `report` does
(print a line, feed Ray Tune, log to MLflow). Run it alone with `sweeper train`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from torch import nn

from trainables.capture import CapturedStep, capture_declined
from trainables.catalog import load_all
from trainables.hyperparams import TRAINING, validate_values
from trainables.memory import TrialOutOfMemory, gpu_memory_share, resident_mb
from trainables.models.base import OrthogonalModel, RecurrentModel
from trainables.models.scans.choice import resolve_kernel, triton_cache_problem
from trainables.optimizers import make_optimizer
from trainables.registry import MODELS, TASKS
from trainables.sizing import count_parameters
from trainables.step import PlainStep, StepParts
from trainables.tasks.base import Task

# (step, metrics): numbers, and text facts of the run such as the kernel its recurrence ran on
Report = Callable[[int, dict[str, float | str]], None]


class Checkpointing(Protocol):
    """Where a trial keeps its state, so a lost worker's trial continues instead of restarting.

    `save` is called just before the `report` it belongs with; `load` returns the last saved
    state, or None for a fresh trial. `keep_final` is called just before the last report, with the
    trained network, so that a finished trial's weights outlive it (the sweep keeps the best).
    """

    def save(self, state: dict[str, Any]) -> None: ...

    def load(self) -> dict[str, Any] | None: ...

    def keep_final(self, network: nn.Module) -> None: ...


STRUCTURAL_KEYS = ("task", "task_settings", "model", "seed", "device")


class TrialDiverged(RuntimeError):
    """The loss became NaN or infinite: the trial is a failure, not a bad value."""


@dataclass(frozen=True)
class TrialConfig:
    """A validated trial: what `train` runs, resolved from a flat config mapping."""

    task: str
    task_settings: dict[str, Any]
    model: str
    model_params: dict[str, Any]
    training: dict[str, Any]
    seed: int
    device: str

    @classmethod
    def from_mapping(cls, config: Mapping[str, Any]) -> TrialConfig:
        """Validate a flat config; raises ValueError naming the offending key."""
        load_all()
        for key in ("task", "model"):
            if key not in config:
                raise ValueError(f"config needs {key!r}")
        task_entry = TASKS.get(config["task"])
        model_entry = MODELS.get(config["model"])
        task_settings = task_entry.settings.model_validate(
            dict(config.get("task_settings") or {})
        ).model_dump()
        rest = {k: v for k, v in config.items() if k not in STRUCTURAL_KEYS}
        declared = {**TRAINING, **model_entry.all_hyperparams}
        values = validate_values(declared, rest, f"trial of model {model_entry.name!r}")
        seed = config.get("seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed: expected a non-negative integer, got {seed!r}")
        return cls(
            task=task_entry.name,
            task_settings=task_settings,
            model=model_entry.name,
            model_params={k: values[k] for k in model_entry.all_hyperparams},
            training={k: values[k] for k in TRAINING},
            seed=seed,
            device=str(config.get("device", "auto")),
        )

    def check_runnable(self) -> None:
        """Raise ValueError, naming the setting, for what this machine cannot run (`kernel: fused`
        without CUDA or Triton), before anything is built."""
        if "kernel" in self.model_params:
            resolve_kernel(self.model_params["kernel"], pick_device(self.device))


def config_from_settings(
    task: str, model: str, settings: Mapping[str, Any], seed: int = 0, device: str = "auto"
) -> dict[str, Any]:
    """A trial config from NAME=VALUE settings (`sweeper train --set`): the task's own settings
    go to the task, the rest are hyperparameters, checked when the config is validated."""
    load_all()
    fields = TASKS.get(task).settings.model_fields
    return {
        "task": task,
        "model": model,
        "task_settings": {k: v for k, v in settings.items() if k in fields},
        "seed": seed,
        "device": device,
        **{k: v for k, v in settings.items() if k not in fields},
    }


def settings_of(config: Mapping[str, Any]) -> dict[str, Any]:
    """The NAME=VALUE settings of a trial config, task settings and hyperparameters together: what
    `config_from_settings` takes back, as `sweeper train --init-from` does with a kept trial's."""
    rest = {k: v for k, v in config.items() if k not in STRUCTURAL_KEYS}
    return {**dict(config.get("task_settings") or {}), **rest}


def pick_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def recurrent_models(network: nn.Module) -> list[RecurrentModel]:
    """The outermost recurrent models inside `network` (one, or several for multi-RNN networks)."""
    found: list[RecurrentModel] = []

    def visit(module: nn.Module) -> None:
        if isinstance(module, RecurrentModel):
            found.append(module)
            return
        for child in module.children():
            visit(child)

    visit(network)
    return found


def combined_diagnostics(rnns: Sequence[RecurrentModel]) -> dict[str, float]:
    """Diagnostics of every recurrent model; a figure reported by several is their worst (max)."""
    combined: dict[str, float] = {}
    for rnn in rnns:
        for key, value in rnn.diagnostics().items():
            combined[key] = max(combined.get(key, value), value)
    return combined


def build_optimizers(
    rnns: Sequence[RecurrentModel], network: nn.Module, trial: TrialConfig, capturable: bool = False
) -> list[torch.optim.Optimizer]:
    """One optimizer for ordinary weights and, for orthogonal models, one for angles / A;
    `capturable` where a CUDA graph will capture their steps."""
    orthogonal = [p for rnn in rnns for p in rnn.orthogonal_parameters()]
    ids = {id(p) for p in orthogonal}
    ordinary = [p for p in network.parameters() if p.requires_grad and id(p) not in ids]
    optimizers = [make_optimizer(trial.training["optimizer"], ordinary, trial.training["lr"], capturable)]
    if orthogonal:
        optimizers.append(
            make_optimizer(
                trial.model_params["orth_optimizer"], orthogonal, trial.model_params["orth_lr"], capturable
            )
        )
    return optimizers


def reads_every_step(device: torch.device) -> bool:
    """Whether the loop reads its loss on the host every step: free on a CPU, a stall on a GPU."""
    return device.type != "cuda"


def check_kernels(rnns: Sequence[RecurrentModel], device: torch.device) -> None:
    """Raise ValueError, before any step, for `kernel: fused` where it cannot run, and where the
    fused kernels (`auto` on CUDA included) could not be compiled for want of a writable cache."""
    fused = [
        rnn
        for rnn in rnns
        if isinstance(rnn, OrthogonalModel) and resolve_kernel(rnn.kernel, device) == "fused"
    ]
    if fused and device.type == "cuda" and (problem := triton_cache_problem()) is not None:
        raise ValueError(problem)


def kernel_facts(rnns: Sequence[RecurrentModel]) -> dict[str, str]:
    """What the orthogonal models' time loops ran in their last forward pass: `kernel` (fused, loop,
    or the loop after a fused path failed its self-check) and `kernel_path` (the fused launch)."""
    records = [
        rnn.kernel_record for rnn in rnns if isinstance(rnn, OrthogonalModel) and rnn.kernel_record.kernel
    ]
    if not records:
        return {}
    return {
        "kernel": ",".join(sorted({record.kernel for record in records})),
        "kernel_path": ";".join(sorted({record.path for record in records})),
    }


def network_facts(task: Task, network: nn.Module) -> dict[str, float]:
    """Constants of a trial reported with its metrics, so that reading results needs no network
    built: its parameter count and the task's memoryless baseline."""
    baseline = {} if task.baseline is None else {"baseline": float(task.baseline)}
    return {"parameters": float(count_parameters(network)), **baseline}


def build(trial: TrialConfig, device: torch.device) -> tuple[Task, nn.Module, list[RecurrentModel]]:
    """The task, the whole network and its recurrent models for one trial, on `device`."""
    torch.manual_seed(trial.seed)
    hp = trial.training
    model_entry = MODELS.get(trial.model)
    task = TASKS.get(trial.task).create(
        trial.task_settings, batch_size=hp["batch_size"], seed=trial.seed, device=device
    )

    def make_rnn(input_size: int, hidden_size: int | None = None) -> RecurrentModel:
        return model_entry.create(input_size, hidden_size or hp["hidden_size"], **trial.model_params)

    network = task.create_network(make_rnn).to(device)
    return task, network, recurrent_models(network)


def load_weights(network: nn.Module, weights: Mapping[str, torch.Tensor]) -> None:
    """Load another run's weights, refusing (with the names) those of a different network."""
    own = network.state_dict()
    missing = sorted(set(own) - set(weights))
    unexpected = sorted(set(weights) - set(own))
    resized = sorted(k for k in set(own) & set(weights) if own[k].shape != weights[k].shape)
    if missing or unexpected or resized:
        found = {"missing": missing, "unexpected": unexpected, "of another shape": resized}
        raise ValueError(
            "the initial weights belong to another network (model, hidden size or task settings): "
            + "; ".join(f"{what}: {', '.join(names[:5])}" for what, names in found.items() if names)
        )
    network.load_state_dict(weights)


EARLY_STEPS = (1, 2, 5, 10, 20, 50)  # `progress` hears of these, before the first report
Progress = Callable[[int, float, float], None]  # (step, mean training loss so far, seconds)


def train(
    config: Mapping[str, Any],
    report: Report,
    checkpointing: Checkpointing | None = None,
    progress: Progress | None = None,
    initial_weights: Mapping[str, torch.Tensor] | None = None,
) -> dict[str, float]:
    """Train one model on one task and report validation metrics every `eval_every` steps.

    The last report also carries the test split's metrics (`test_*`), measured once, at the end.
    With `checkpointing`, the whole state (network with any maintained inverses, optimizers, the
    task's stream, random generators) is saved every `checkpoint_every` reports and restored at
    start; a restored trial reports `restored_from_step`.

    `initial_weights` (a state dict of the same network, such as a sweep's best trial's) replace
    the fresh initialisation, so a run continues from them; a saved checkpoint still wins.

    `progress`, for a person watching one run, hears the training loss at the `EARLY_STEPS`
    before the first report (reading it there costs a GPU a wait on those few steps only).

    On CUDA, the `capture` setting replays the step from a CUDA graph (`trainables.capture`);
    the reports' `capture` says whether it did, and why not.

    Returns the last reported metrics. Raises `TrialDiverged` on a non-finite loss, so the caller
    records a failure with its reason instead of a meaningless value, and `TrialOutOfMemory` when
    it outgrows its memory (`memory_limit_mb` on the host, `gpu_memory_fraction` on a GPU).
    """
    trial = TrialConfig.from_mapping(config)
    device = pick_device(trial.device)
    with gpu_memory_share(device, trial.training["gpu_memory_fraction"]):
        return _train(trial, device, report, checkpointing, progress, initial_weights)


def _train(
    trial: TrialConfig,
    device: torch.device,
    report: Report,
    checkpointing: Checkpointing | None,
    progress: Progress | None,
    initial_weights: Mapping[str, torch.Tensor] | None,
) -> dict[str, float]:
    hp = trial.training
    task, network, rnns = build(trial, device)
    objective = TASKS.get(trial.task).objective
    check_kernels(rnns, device)
    if initial_weights is not None:
        load_weights(network, initial_weights)
    facts = network_facts(task, network)
    declined = capture_declined(hp["capture"], device, task)
    optimizers = build_optimizers(rnns, network, trial, capturable=declined is None)

    started = time.perf_counter()
    # The window's summed loss and gradient norm stay on the device: a GPU step never waits for the
    # host. A non-finite value makes its sum non-finite, so reading the sums at a report finds it;
    # on a CPU, where reading is free, they are read every step and name the very step.
    loss_sum, norm_sum = torch.zeros((), device=device), torch.zeros((), device=device)
    read_every_step = reads_every_step(device)
    window_steps = 0
    metrics: dict[str, float | str] = {}
    first, reports, restored = 1, 0, {}
    saved = checkpointing.load() if checkpointing is not None else None
    if saved is not None:
        network.load_state_dict(saved["network"])
        for optimizer, state in zip(optimizers, saved["optimizers"], strict=True):
            optimizer.load_state_dict(state)
        task.load_stream_state(saved["task"])
        torch.set_rng_state(saved["torch_rng"])
        first, reports = saved["step"] + 1, saved["reports"]
        started -= saved["wall_time"]
        restored = {"restored_from_step": float(saved["step"])}
    clip = hp["grad_clip"] if hp["grad_clip"] > 0 else math.inf
    parts = StepParts(task, network, optimizers, rnns, clip, loss_sum, norm_sum)
    training_step = PlainStep(parts, declined) if declined is not None else CapturedStep(parts, device)
    window_start = first
    for step in range(first, hp["iterations"] + 1):
        loss, grad_norm = training_step.gradients()
        window_steps += 1
        reporting = step % hp["eval_every"] == 0 or step == hp["iterations"]
        early = progress is not None and step in EARLY_STEPS and step < hp["eval_every"]
        if read_every_step or reporting or early:
            loss_total, norm_total = (float(v) for v in torch.stack([loss_sum, norm_sum]).cpu())
            if not (math.isfinite(loss_total) and math.isfinite(norm_total)):
                raise TrialDiverged(
                    f"loss {float(loss.detach())} and gradient norm {float(grad_norm)} at step {step}"
                    if read_every_step
                    else f"the loss or the gradient norm became non-finite between steps {window_start} and {step}"
                )
        if early:
            progress(step, loss_total / window_steps, time.perf_counter() - started)
        training_step.finish()
        if reporting:
            network.eval()
            final = step == hp["iterations"]
            metrics = {
                "train_loss": loss_total / window_steps,
                **task.evaluate(network),
                **(task.evaluate(network, "test") if final else {}),
                "grad_norm": float(grad_norm),
                "wall_time": time.perf_counter() - started,
                **combined_diagnostics(rnns),
                **facts,
                **kernel_facts(rnns),
                "capture": training_step.capture,
            }
            if not math.isfinite(metrics[objective]):
                raise TrialDiverged(f"{objective} became {metrics[objective]} at step {step}")
            metrics.update(restored)
            limit = hp["memory_limit_mb"]
            if limit and (held := resident_mb()) > limit:
                raise TrialOutOfMemory(f"holds {held:.0f} MB at step {step}, over its limit of {limit} MB")
            reports += 1
            if checkpointing is not None and final:
                checkpointing.keep_final(network)
            if checkpointing is not None and not final and reports % hp["checkpoint_every"] == 0:
                checkpointing.save(
                    {
                        "step": step,
                        "reports": reports,
                        "network": network.state_dict(),
                        "optimizers": [o.state_dict() for o in optimizers],
                        "task": task.stream_state(),
                        "torch_rng": torch.get_rng_state(),
                        "wall_time": metrics["wall_time"],
                    }
                )
            report(step, metrics)
            loss_sum.zero_()
            norm_sum.zero_()
            window_start, window_steps = step + 1, 0
    return metrics
