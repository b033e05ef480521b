"""Where a sweep's price comes from: paces measured here for trials that run here (kept per machine
and code, so a second price times nothing), the recorded GPU figures at the spec's own sizes for a
cluster's GPUs or where this machine has none, and, asked for, paces measured on a worker of the
cluster, whose size gives the slots; the configurations timed at the cheapest and the dearest end
of each space; a cluster of another GPU kind said so."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import sweeper.run.pricing as pricing
from sweeper.run.pricing import (
    GPU_PACES,
    ends,
    measured_paces,
    other_gpu_kind,
    recorded_paces,
    rule_ms,
    slots,
    sweep_price,
)
from sweeper.spec.loading import parse_spec
from sweeper.spec.trial_cost import CACHE_ENV
from tests.helpers import GPU_RESOURCES, cli_env, dump_spec, tiny_spec
from tests.ray_head import HEAD_CPUS


def test_trials_here_are_measured_here_and_a_clusters_gpus_read_the_recorded_figures() -> None:
    spec = parse_spec(dump_spec(tiny_spec(budget={"trials": 3, "max_concurrent": 2})), "s.yaml")
    priced, where = sweep_price(spec, None)
    assert where == "trials here, paces measured here" and priced.slots == 2
    assert all("here (cpu)" in s.source for s in priced.studies) and priced.worker_hours[0] > 0
    gpus = parse_spec(dump_spec(tiny_spec(resources=GPU_RESOURCES)), "g.yaml")
    priced, where = sweep_price(gpus, "ray://cluster:10001")
    assert (
        where == "the cluster's GPUs, priced as an NVIDIA H200's; budget.max_concurrent" and priced.slots == 1
    )
    assert all("an NVIDIA H200's steps" in s.source for s in priced.studies) and priced.gpu_hours


def test_a_gpu_sweep_planned_on_a_machine_without_gpus_is_priced_by_the_recorded_figures(monkeypatch) -> None:
    monkeypatch.setattr(pricing, "has_gpu", lambda: False)
    gpus = parse_spec(dump_spec(tiny_spec(resources=GPU_RESOURCES)), "g.yaml")
    priced, where = sweep_price(gpus, None)
    assert where.startswith("an NVIDIA H200's paces at this spec's sizes, for GPUs this machine lacks")
    assert priced.gpu_hours and all("at T = 6" in s.source for s in priced.studies)


def test_the_slots_are_the_cpus_over_a_trials_and_the_gpus_over_its_share() -> None:
    cpus = parse_spec(dump_spec(tiny_spec(resources={"cpus": 2})), "c.yaml")
    assert slots(cpus, 8, 0) == 4 and slots(cpus, 1, 0) == 1  # never none
    gpus = parse_spec(dump_spec(tiny_spec(resources={"cpus": 1, "gpus": 0.25})), "g.yaml")
    assert slots(gpus, 16, 2) == 8 and slots(gpus, 3, 2) == 3


# `calibrated` on the cluster at argv[1], for the spec on stdin: the paces and slots as JSON
CALIBRATE = """
import dataclasses, json, sys
from sweeper.run.pricing import calibrated
from sweeper.spec.loading import parse_spec
paces, slots = calibrated(parse_spec(sys.stdin.read(), "s.yaml"), sys.argv[1])
print(json.dumps({"paces": {m: dataclasses.asdict(p) for m, p in paces.items()}, "slots": slots}))
"""


@pytest.mark.slow
def test_calibrating_times_each_model_on_a_worker_and_reads_the_clusters_size(ray_head) -> None:
    """The worker's Ray head stands for the cluster. Its driver runs in a process of its own, which
    holds the head's token, as a launch's does, and leaves this one without a Ray connection."""
    spec = dump_spec(tiny_spec(resources={"cpus": 1}))
    done = subprocess.run(
        [sys.executable, "-c", CALIBRATE, ray_head.address],
        input=spec,
        env=cli_env(ray_head.env),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.splitlines()[-1])
    paces = found["paces"].values()
    assert set(found["paces"]) == {"lstm", "gru"} and found["slots"] == HEAD_CPUS  # a trial takes one CPU
    assert all(0 < p["low"] <= p["high"] and "on a worker of the cluster" in p["source"] for p in paces)
    assert all(p["start"] > 0 and p["evaluation"] > 0 for p in paces)  # priced as a trial here is


def test_each_model_is_timed_at_both_ends_of_its_sizes_and_recorded_figures_say_where() -> None:
    raw = tiny_spec(models=("gru", "ncgru"))
    raw["per_model"] = {"ncgru": {"hidden_size": 12}}
    spec = parse_spec(dump_spec(raw), "s.yaml")
    gru = ends(spec, "gru", "cpu")
    assert [c["hidden_size"] for c in gru] == [4, 16] and {c["device"] for c in gru} == {"cpu"}
    assert 1e-3 < gru[0]["lr"] < 3e-2  # the middle of the space: its log-middle
    assert [c["hidden_size"] for c in ends(spec, "ncgru", "cpu")] == [12, 12]  # a fixed size at both ends
    paces, speedups, device = recorded_paces(spec)
    rule = json.loads(GPU_PACES.read_text())["models"]["gru"]["rule"]
    # the rule at the spec's T = 6 and the ends of gru's sizes, widened by its left-out shapes' range
    assert paces["gru"].low == pytest.approx(rule_ms(rule, 6, 4) * rule["within"][0] / 1000)
    assert paces["gru"].high == pytest.approx(rule_ms(rule, 6, 16) * rule["within"][1] / 1000)
    assert device == "an NVIDIA H200" and "H200" in paces["gru"].source
    assert speedups["gru"]["4"] == 2.69
    assert speedups["ncgru"]["4"] == 1.94 and "packed as goru" in paces["ncgru"].source  # goru's packing
    assert "packed as" not in paces["gru"].source


def test_the_processs_first_trial_is_not_priced_its_one_time_start_is_not_a_trials(
    monkeypatch, tmp_path
) -> None:
    import trainables.step_time
    from trainables.step_time import TrialCosts

    timed: list[int] = []

    def costs(config: dict, steps: int) -> TrialCosts:  # the first call pays the process's imports
        timed.append(config["hidden_size"])
        return TrialCosts(50.0 if len(timed) == 1 else 0.5, 0.01 * config["hidden_size"], 0.2)

    monkeypatch.setattr(trainables.step_time, "trial_costs", costs)
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    spec = parse_spec(dump_spec(tiny_spec(models=("lstm", "gru"))), "s.yaml")
    said: list[str] = []
    paces = measured_paces(spec, "cpu", "here", say=said.append)
    assert timed == [4, 4, 16, 4, 16]  # a warm-up, then each model at both ends of its sizes
    assert all(p.start == 0.5 and p.evaluation == 0.2 for p in paces.values())
    assert paces["gru"].low == pytest.approx(0.04) and paces["gru"].high == pytest.approx(0.16)
    assert said == [f"timing {m} at hidden size {n} (cpu)" for m in ("lstm", "gru") for n in (4, 16)]
    # the same spec on the same machine and code: every cost kept, nothing timed or said
    again: list[str] = []
    assert measured_paces(spec, "cpu", "here", say=again.append) == paces and again == [] and len(timed) == 5


def test_the_ends_take_the_cheapest_choice_of_every_categorical_at_the_smallest_size_and_the_dearest_at_the_largest(
    monkeypatch, tmp_path
) -> None:
    import trainables.step_time
    from trainables.step_time import TrialCosts

    def costs(config: dict, steps: int) -> TrialCosts:  # rc twice c, order 0 (the exact inverse) dearest
        factor = (2.0 if config["orthogonal"] == "rc" else 1.0) * (
            3.0 if config["neumann_order"] == 0 else 1.0
        )
        return TrialCosts(0.5, 0.001 * config["hidden_size"] * factor, 0.2)

    monkeypatch.setattr(trainables.step_time, "trial_costs", costs)
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    raw = tiny_spec(models=("ncgru",))
    raw["per_model"] = {
        "ncgru": {"orthogonal": {"choice": ["c", "rc"]}, "neumann_order": {"choice": [1, 0, 2]}}
    }
    spec = parse_spec(dump_spec(raw), "s.yaml")
    cheap, dear = ends(spec, "ncgru", "cpu", lambda config, what: costs(config, 2).step)
    assert (cheap["hidden_size"], cheap["orthogonal"], cheap["neumann_order"]) == (4, "c", 1)
    assert (dear["hidden_size"], dear["orthogonal"], dear["neumann_order"]) == (16, "rc", 0)
    pace = measured_paces(spec, "cpu", "here")["ncgru"]
    assert pace.low == pytest.approx(0.004) and pace.high == pytest.approx(0.016 * 6)


def test_a_joined_cluster_of_another_gpu_kind_is_said(monkeypatch) -> None:
    import ray

    gpus = parse_spec(dump_spec(tiny_spec(resources=GPU_RESOURCES)), "g.yaml")
    cpus = parse_spec(dump_spec(tiny_spec()), "c.yaml")
    monkeypatch.setattr(
        ray, "cluster_resources", lambda: {"CPU": 8.0, "GPU": 2.0, "accelerator_type:A100": 1.0}
    )
    said = other_gpu_kind(gpus)
    assert said.startswith("the price's GPU paces are an NVIDIA H200's and this cluster's GPUs are A100")
    assert other_gpu_kind(cpus) is None  # no GPU asked for: nothing to say
    monkeypatch.setattr(ray, "cluster_resources", lambda: {"GPU": 1.0, "accelerator_type:H200": 1.0})
    assert other_gpu_kind(gpus) is None
    monkeypatch.setattr(ray, "cluster_resources", lambda: {"GPU": 1.0})  # a kind Ray does not name
    assert other_gpu_kind(gpus) is None
