"""Where a sweep's price comes from (`spec.price` does its arithmetic): the pace of each model
measured here where the trials run here, the project's recorded GPU figures where they run on a
cluster's GPUs, or, when asked (`--calibrate`), measured on a worker of the cluster with a trial's
resources; and the trial slots the sweep will have.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from sweeper.run.tune.workers import local_cpus
from sweeper.spec.price import Pace, Price, price
from sweeper.spec.sweep import SweepSpec, trial_config
from sweeper.spec.values import IntRange

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


def sweep_price(spec: SweepSpec, address: str | None, calibrate: bool = False) -> tuple[Price, str]:
    """The sweep's price and where its paces and slots come from, in words."""
    if address is None:
        import torch

        device = "cuda" if gpu_trials(spec) and torch.cuda.is_available() else "cpu"
        paces = measured_paces(spec, device, f"here ({device})")
        return price(spec, paces, local_slots(spec)), "trials here, paces measured here"
    if calibrate:
        paces, held = calibrated(spec, address)
        return price(spec, paces, held), f"the cluster at {address}, paces measured on one of its workers"
    concurrent = spec.budget.max_concurrent or 1
    said = (
        "budget.max_concurrent"
        if spec.budget.max_concurrent
        else "one slot (--calibrate reads the cluster's)"
    )
    if gpu_trials(spec):
        paces, speedups = recorded_paces(spec)
        return price(spec, paces, concurrent, speedups), f"the cluster's GPUs, {said}"
    cpu = measured_paces(spec, "cpu", "here, a CPU like the cluster's or not")
    return price(spec, cpu, concurrent), f"the cluster's CPUs, {said}"


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
    """On the worker: the model's pace at both ends of its sizes (steps, a start and an
    evaluation), on the device it was given."""
    import torch

    from sweeper.spec.loading import parse_spec

    spec = parse_spec(spec_yaml, "the sweep's spec", trusted=True)
    device = "cuda" if torch.cuda.is_available() and spec.resources.for_model(model)["gpu"] > 0 else "cpu"
    return measured_paces(spec, device, f"on a worker of the cluster ({device})", models=[model])[model]


class _Middle:
    """Answers a study's suggestions with the middle of each range (the hidden size as given)."""

    def __init__(self, hidden: int | None) -> None:
        self.hidden = hidden

    def suggest_float(self, name: str, low: float, high: float, log: bool = False) -> float:
        return math.sqrt(low * high) if log else (low + high) / 2

    def suggest_int(self, name: str, low: int, high: int, log: bool = False, step: int = 1) -> int:
        if name == "hidden_size" and self.hidden is not None:
            return self.hidden
        return round(math.sqrt(low * high)) if log else low + step * ((high - low) // step // 2)

    def suggest_categorical(self, name: str, choices: list[Any]) -> Any:
        return choices[0]


def ends(spec: SweepSpec, model: str, device: str) -> list[dict[str, Any]]:
    """Trial configs of `model` at the smallest and the largest hidden size it searches (one
    where the size is fixed), every other setting at the middle of its range."""
    from sweeper.spec.space import suggest_params

    size = spec.space(model).get("hidden_size")
    sizes = list(size.int) if isinstance(size, IntRange) else [None]
    configs = []
    for hidden in sizes:
        params = suggest_params(_Middle(hidden), spec, model)  # type: ignore[arg-type]
        configs.append({**trial_config(spec, model, params, seed=0), "device": device})
    return configs


def measured_paces(
    spec: SweepSpec, device: str, where: str, steps: int = 2, models: list[str] | None = None
) -> dict[str, Pace]:
    """Each model's pace (of `models`, else all), timed at both ends of its hidden-size range: its
    steps, a trial's start and an evaluation, computing with the threads a trial gets (its CPUs)."""
    import torch

    from trainables.step_time import trial_costs

    paces = {}
    threads = torch.get_num_threads()
    measured = models or spec.models
    # A process's first trial pays imports and first calls (torch.optim pulls in torch._dynamo):
    # about a second, which a sweep's worker pays once, when it starts, and no trial after.
    trial_costs(ends(spec, measured[0], device)[0], 1)
    for model in measured:
        torch.set_num_threads(max(1, int(spec.resources.for_model(model)["cpu"])))
        try:
            costs = [trial_costs(config, steps) for config in ends(spec, model, device)]
        finally:
            torch.set_num_threads(threads)
        paces[model] = Pace(
            min(c.step for c in costs),
            max(c.step for c in costs),
            f"{steps} steps, a start and an evaluation at each end of its sizes {where}",
            max(c.start for c in costs),
            max(c.evaluation for c in costs),
        )
    return paces


def recorded_paces(spec: SweepSpec) -> tuple[dict[str, Pace], dict[str, dict[str, float]]]:
    """The recorded figures of a GPU kind (`gpu_paces.json`): each model's pace at the papers'
    sizes, and its trials per hour at k per GPU against one."""
    data = json.loads(GPU_PACES.read_text())
    where = (
        f"steps recorded on {data['device']} at the papers' sizes, {data['date']}; starts and evaluations not"
    )
    paces, speedups = {}, {}
    for model in spec.models:
        recorded = model if model in data["models"] else data["fallback"]
        entry = data["models"][recorded]
        packed_as = entry.get("packed_as", recorded)
        said = "" if recorded == model else f"; not recorded, priced as {recorded}"
        said += "" if packed_as == recorded else f"; packed as {packed_as}, its own packing not measured"
        seconds = entry["ms_per_iteration"] / 1000
        paces[model] = Pace(seconds, seconds, where + said)
        speedups[model] = data["models"][packed_as].get("packed", {})
    return paces, speedups
