"""Where a sweep's price comes from (`spec.price` does its arithmetic): the pace of each model
measured here where the trials run here, the project's recorded GPU figures where they run on a
cluster's GPUs, or, when asked (`--calibrate`), measured on a worker of the cluster with a trial's
resources; and the trial slots the sweep will have.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from sweeper.run.tune.workers import local_cpus
from sweeper.spec.price import Pace, Price, price
from sweeper.spec.sweep import SweepSpec, trial_config
from sweeper.spec.trial_cost import TrialCost, kept, measured
from sweeper.spec.values import Choice, IntRange
from trainables.hyperparams import TRAINING

TRAINING_HIDDEN = TRAINING["hidden_size"].default  # a model that states no hidden size runs at it

GPU_PACES = Path(__file__).with_name("gpu_paces.json")


def gpu_trials(spec: SweepSpec) -> bool:
    return any(spec.resources.for_model(m)["gpu"] > 0 for m in spec.models)


def slots(spec: SweepSpec, cpus: float, gpus: float) -> int:
    """The trials `cpus` and `gpus` hold at once: the CPUs over a trial's, and the GPUs over a
    trial's share where trials take GPUs."""
    per_trial = max(spec.resources.for_model(m)["cpu"] for m in spec.models)
    held = math.floor(cpus / per_trial)
    shares = [spec.resources.for_model(m)["gpu"] for m in spec.models]
    if any(shares):
        held = min(held, math.floor(gpus / max(shares)))
    return max(1, held)


def local_slots(spec: SweepSpec) -> int:
    """The trials a local Ray runs at once, on the CPUs it is given and this machine's GPUs."""
    gpus = 0
    if gpu_trials(spec):
        import torch

        gpus = torch.cuda.device_count()
    return slots(spec, local_cpus([spec]) or os.cpu_count() or 1, gpus)


def has_gpu() -> bool:
    import torch

    return torch.cuda.is_available()


def _slots_said(spec: SweepSpec) -> str:
    if spec.budget.max_concurrent:
        return "budget.max_concurrent"
    return "one slot (--calibrate reads the cluster's)"


def sweep_price(
    spec: SweepSpec, address: str | None, calibrate: bool = False, say: Callable[[str], None] | None = None
) -> tuple[Price, str]:
    """The sweep's price and where its paces and slots come from, in words; `say` hears what is
    being timed while it is."""
    concurrent = spec.budget.max_concurrent or 1
    if address is None and gpu_trials(spec) and not has_gpu():
        paces, speedups, device = recorded_paces(spec)
        return (
            price(spec, paces, concurrent, speedups),
            f"{device}'s paces at this spec's sizes, for GPUs this machine lacks; {_slots_said(spec)}",
        )
    if address is None:
        device = "cuda" if gpu_trials(spec) else "cpu"
        paces = measured_paces(spec, device, f"here ({device})", say=say)
        return price(spec, paces, local_slots(spec)), "trials here, paces measured here"
    if calibrate:
        paces, held = calibrated(spec, address)
        return price(spec, paces, held), f"the cluster at {address}, paces measured on one of its workers"
    if gpu_trials(spec):
        paces, speedups, device = recorded_paces(spec)
        return price(
            spec, paces, concurrent, speedups
        ), f"the cluster's GPUs, priced as {device}'s; {_slots_said(spec)}"
    cpu = measured_paces(spec, "cpu", "here, a CPU like the cluster's or not", say=say)
    return price(spec, cpu, concurrent), f"the cluster's CPUs, {_slots_said(spec)}"


def calibrated(spec: SweepSpec, address: str) -> tuple[dict[str, Pace], int]:
    """Each model's pace timed on a worker of the cluster with a trial's resources, and the
    trials the cluster holds at once (its CPUs and GPUs over a trial's)."""
    import ray

    ray.init(address=address, log_to_driver=False, include_dashboard=False)
    try:
        resources = ray.cluster_resources()
        paces: dict[str, Pace] = {}
        for model in spec.models:
            reserve = spec.resources.for_model(model)
            task = ray.remote(num_cpus=reserve["cpu"], num_gpus=reserve["gpu"])(_worker_pace)
            paces[model] = ray.get(task.remote(spec.to_yaml(), model))
        return paces, slots(spec, resources.get("CPU", 1), resources.get("GPU", 0))
    finally:
        ray.shutdown()


def _worker_pace(spec_yaml: str, model: str) -> Pace:
    """On the worker: the model's pace at both ends of its space, on the device it was given."""
    from sweeper.spec.loading import parse_spec

    spec = parse_spec(spec_yaml, "the sweep's spec", trusted=True)
    device = "cuda" if has_gpu() and spec.resources.for_model(model)["gpu"] > 0 else "cpu"
    return measured_paces(spec, device, f"on a worker of the cluster ({device})", models=[model])[model]


class _Middle:
    """Answers a study's suggestions with the middle of each range, the hidden size and choices
    as given (else a choice's first)."""

    def __init__(self, hidden: int | None, choices: Mapping[str, Any] | None = None) -> None:
        self.hidden = hidden
        self.choices = dict(choices or {})

    def suggest_float(self, name: str, low: float, high: float, log: bool = False) -> float:
        return math.sqrt(low * high) if log else (low + high) / 2

    def suggest_int(self, name: str, low: int, high: int, log: bool = False, step: int = 1) -> int:
        if name == "hidden_size" and self.hidden is not None:
            return self.hidden
        return round(math.sqrt(low * high)) if log else low + step * ((high - low) // step // 2)

    def suggest_categorical(self, name: str, choices: list[Any]) -> Any:
        return self.choices.get(name, choices[0])


def _config(
    spec: SweepSpec, model: str, device: str, hidden: int | None, choices: Mapping[str, Any]
) -> dict[str, Any]:
    from sweeper.spec.space import suggest_params

    params = suggest_params(_Middle(hidden, choices), spec, model)  # type: ignore[arg-type]
    return {**trial_config(spec, model, params, seed=0), "device": device}


def sizes(spec: SweepSpec, model: str) -> list[int | None]:
    """The smallest and the largest hidden size the model searches (one where it is fixed)."""
    size = spec.space(model).get("hidden_size")
    return list(size.int) if isinstance(size, IntRange) else [None]


def ends(
    spec: SweepSpec, model: str, device: str, timed: Callable[[dict[str, Any], str], float] | None = None
) -> list[dict[str, Any]]:
    """The trial configs of `model` at the two ends of its cost: its smallest hidden size with the
    cheapest choice of every categorical setting it searches, and its largest with the dearest
    (each choice timed, one at a time, at the smallest size, by `timed`: a step's seconds); the
    rest of the configuration at the middle of its range. Without `timed`, every choice's first."""
    ends_sizes = sizes(spec, model)
    searched = {
        name: list(value.choice)
        for name, value in spec.space(model).items()
        if isinstance(value, Choice) and len(value.choice) > 1
    }
    cheapest: dict[str, Any] = {}
    dearest: dict[str, Any] = {}
    if timed is not None:
        for name, choices in searched.items():
            seconds = {
                choice: timed(_config(spec, model, device, ends_sizes[0], {name: choice}), f"{name}={choice}")
                for choice in choices
            }
            cheapest[name] = min(seconds, key=seconds.__getitem__)
            dearest[name] = max(seconds, key=seconds.__getitem__)
    return [
        _config(spec, model, device, ends_sizes[0], cheapest),
        _config(spec, model, device, ends_sizes[-1], dearest),
    ]


def measured_paces(
    spec: SweepSpec,
    device: str,
    where: str,
    steps: int = 2,
    models: list[str] | None = None,
    say: Callable[[str], None] | None = None,
) -> dict[str, Pace]:
    """Each model's pace (of `models`, else all), timed at the two ends of its cost (`ends`): its
    steps, a trial's start and an evaluation, computing with the threads a trial gets (its CPUs),
    each kept and read back where this machine and code timed it before (`trial_cost`)."""
    import torch

    from trainables.step_time import trial_costs

    paces = {}
    threads = torch.get_num_threads()
    warmed = False

    def timed(config: dict[str, Any], what: str) -> TrialCost:
        nonlocal warmed
        if not warmed and not kept(config, steps):
            # A process's first trial pays imports and first calls (torch.optim pulls in
            # torch._dynamo): about a second, which a sweep's worker pays once, no trial after.
            trial_costs(config, 1)
            warmed = True
        said = f"{config['model']} at hidden size {config.get('hidden_size')}{what} ({device})"
        return measured(config, steps, say, said)

    for model in models or spec.models:
        torch.set_num_threads(max(1, int(spec.resources.for_model(model)["cpu"])))
        try:
            configs = ends(spec, model, device, lambda config, what: timed(config, f", {what}").step)
            low, high = (timed(config, "") for config in configs)
        finally:
            torch.set_num_threads(threads)
        paces[model] = Pace(
            min(low.step, high.step),  # two steps' timing can put the cheaper end a little above
            max(low.step, high.step),
            f"{steps} steps, a start and an evaluation at the cheapest and the dearest end of its space {where}",
            max(low.start, high.start),
            max(low.evaluation, high.evaluation),
        )
    return paces


def recorded_paces(spec: SweepSpec) -> tuple[dict[str, Pace], dict[str, dict[str, float]], str]:
    """The recorded figures of a GPU kind (`gpu_paces.json`) at the spec's own sizes: each
    model's step by its fitted rule (`benchmarks/gpu/pace_rule.py`) at the spec's sequence length
    and the ends of its hidden sizes, widened by how far the recorded shapes left out of the fit
    fell from it; its trials per hour at k per GPU against one; and the GPU they were recorded on."""
    data = json.loads(GPU_PACES.read_text())
    length, said_length = sequence_length(spec)
    paces, speedups = {}, {}
    for model in spec.models:
        recorded = model if "rule" in data["models"].get(model, {}) else data["fallback"]
        entry = data["models"][recorded]
        packed_as = entry.get("packed_as", recorded)
        rule = entry["rule"]
        low_size, high_size = (s or TRAINING_HIDDEN for s in (sizes(spec, model)[0], sizes(spec, model)[-1]))
        low = rule_ms(rule, length, low_size) * rule["within"][0] / 1000
        high = rule_ms(rule, length, high_size) * rule["within"][1] / 1000
        said = f"{data['device']}'s steps ({data['date']}) by {data['rule'].split(',')[0]} at T = {length}{said_length}"
        said += "" if recorded == model else f"; not recorded, priced as {recorded}"
        said += "" if packed_as == recorded else f"; packed as {packed_as}, its own packing not measured"
        paces[model] = Pace(low, high, said + "; starts and evaluations not")
        speedups[model] = data["models"][packed_as].get("packed", {})
    return paces, speedups, data["device"]


def rule_ms(rule: Mapping[str, float], length: float, hidden: float) -> float:
    """A step's milliseconds by the recorded rule (`benchmarks.gpu.pace_rule.ms`)."""
    return rule["a"] + rule["b"] * length * (hidden / 128.0) ** rule["q"]


def sequence_length(spec: SweepSpec) -> tuple[int, str]:
    """The sequence length a step runs through: the task's T, or its backpropagation window;
    where it states neither, the recorded figures' own 200, said so."""
    settings = spec.task.settings
    for name in ("T", "bptt"):
        if isinstance(settings.get(name), int):
            return settings[name], ""
    return 200, " (the task states no sequence length: the recorded T)"


def other_gpu_kind(spec: SweepSpec) -> str | None:
    """On a joined cluster: a line where its GPUs are another kind than the one whose recorded
    paces priced the sweep (Ray names a node's GPU kind as an `accelerator_type:` resource)."""
    import ray

    if not gpu_trials(spec):
        return None
    kinds = sorted(k.split(":", 1)[1] for k in ray.cluster_resources() if k.startswith("accelerator_type:"))
    recorded = json.loads(GPU_PACES.read_text())["device"]
    if not kinds or any(kind in recorded for kind in kinds):
        return None
    return (
        f"the price's GPU paces are {recorded}'s and this cluster's GPUs are {', '.join(kinds)}: "
        "its figures may be off by their difference (`--calibrate` times a worker of this cluster)"
    )
