"""Where a sweep's price comes from (`spec.price` does its arithmetic): the pace of each model
measured here where the trials run here, the project's recorded GPU figures where they run on a
cluster's GPUs, or, when asked (`--calibrate`), measured on a worker of the cluster with a trial's
resources; and the trial slots the sweep will have.
"""

from __future__ import annotations

import math
import os

from sweeper.run.tune.workers import local_cpus
from sweeper.spec.price import Pace, Price, measured_paces, price, recorded_paces
from sweeper.spec.sweep import SweepSpec


def gpu_trials(spec: SweepSpec) -> bool:
    return any(spec.resources.for_model(m)["gpu"] > 0 for m in spec.models)


def local_slots(spec: SweepSpec) -> int:
    """The trials a local Ray runs at once: its CPUs over a trial's, and its GPUs over a trial's
    share where trials take GPUs."""
    per_trial = max(spec.resources.for_model(m)["cpu"] for m in spec.models)
    slots = max(1, math.floor((local_cpus([spec]) or os.cpu_count() or 1) / per_trial))
    shares = [spec.resources.for_model(m)["gpu"] for m in spec.models]
    if any(shares):
        import torch

        slots = min(slots, max(1, math.floor(torch.cuda.device_count() / max(shares))))
    return slots


def sweep_price(spec: SweepSpec, address: str | None, calibrate: bool = False) -> tuple[Price, str]:
    """The sweep's price and where its paces and slots come from, in words."""
    if address is None:
        import torch

        device = "cuda" if gpu_trials(spec) and torch.cuda.is_available() else "cpu"
        paces = measured_paces(spec, device, f"here ({device})")
        return price(spec, paces, local_slots(spec)), "trials here, paces measured here"
    if calibrate:
        paces, slots = calibrated(spec, address)
        return price(spec, paces, slots), f"the cluster at {address}, paces measured on one of its workers"
    slots = spec.budget.max_concurrent or 1
    said = (
        "budget.max_concurrent"
        if spec.budget.max_concurrent
        else "one slot (--calibrate reads the cluster's)"
    )
    if gpu_trials(spec):
        paces, speedups = recorded_paces(spec)
        return price(spec, paces, slots, speedups), f"the cluster's GPUs, {said}"
    cpu = measured_paces(spec, "cpu", "here, a CPU like the cluster's or not")
    return price(spec, cpu, slots), f"the cluster's CPUs, {said}"


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
            low, high = ray.get(task.remote(spec.to_yaml(), model))
            paces[model] = Pace(low, high, "2 steps at each end of its sizes on a worker of the cluster")
        per_trial = max(spec.resources.for_model(m)["cpu"] for m in spec.models)
        slots = math.floor(resources.get("CPU", 1) / per_trial)
        shares = [spec.resources.for_model(m)["gpu"] for m in spec.models]
        if any(shares):
            slots = min(slots, math.floor(resources.get("GPU", 0) / max(shares)))
        return paces, max(1, slots)
    finally:
        ray.shutdown()


def _worker_pace(spec_yaml: str, model: str) -> tuple[float, float]:
    """On the worker: the model's pace at both ends of its sizes, on the device it was given."""
    import torch

    from sweeper.spec.loading import parse_spec

    spec = parse_spec(spec_yaml, "the sweep's spec", trusted=True)
    device = "cuda" if torch.cuda.is_available() and spec.resources.for_model(model)["gpu"] > 0 else "cpu"
    pace = measured_paces(spec, device, "on the worker", models=[model])[model]
    return pace.low, pace.high
