"""Where a sweep's price comes from: paces measured here for trials that run here, the recorded
GPU figures for a cluster's GPUs, and, asked for, paces measured on a worker of the cluster, whose
size gives the slots."""

from __future__ import annotations

import pytest

from sweeper.run.pricing import calibrated, sweep_price
from sweeper.spec.loading import parse_spec
from tests.helpers import GPU_RESOURCES, dump_spec, tiny_spec


def test_trials_here_are_measured_here_and_a_clusters_gpus_read_the_recorded_figures() -> None:
    spec = parse_spec(dump_spec(tiny_spec(budget={"trials": 3, "max_concurrent": 2})), "s.yaml")
    priced, where = sweep_price(spec, None)
    assert where == "trials here, paces measured here" and priced.slots == 2
    assert all("here (cpu)" in s.source for s in priced.studies) and priced.worker_hours[0] > 0
    gpus = parse_spec(dump_spec(tiny_spec(resources=GPU_RESOURCES)), "g.yaml")
    priced, where = sweep_price(gpus, "ray://cluster:10001")
    assert where == "the cluster's GPUs, budget.max_concurrent" and priced.slots == 1
    assert all("recorded on an NVIDIA H200" in s.source for s in priced.studies) and priced.gpu_hours


@pytest.mark.slow
def test_calibrating_times_each_model_on_a_worker_and_reads_the_clusters_size() -> None:
    spec = parse_spec(dump_spec(tiny_spec(resources={"cpus": 1})), "s.yaml")
    paces, slots = calibrated(spec, "local")  # a local Ray stands for the cluster
    assert set(paces) == {"lstm", "gru"} and slots >= 1
    assert all(0 < p.low <= p.high and "on a worker of the cluster" in p.source for p in paces.values())
