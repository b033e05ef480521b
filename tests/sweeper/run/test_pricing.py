"""Where a sweep's price comes from: paces measured here for trials that run here, the recorded
GPU figures for a cluster's GPUs, and, asked for, paces measured on a worker of the cluster, whose
size gives the slots; and the configurations timed at the ends of each size range."""

from __future__ import annotations

import pytest

from sweeper.run.pricing import calibrated, ends, measured_paces, recorded_paces, slots, sweep_price
from sweeper.run.tune.workers import NICENESS_ENV
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


def test_the_slots_are_the_cpus_over_a_trials_and_the_gpus_over_its_share() -> None:
    cpus = parse_spec(dump_spec(tiny_spec(resources={"cpus": 2})), "c.yaml")
    assert slots(cpus, 8, 0) == 4 and slots(cpus, 1, 0) == 1  # never none
    gpus = parse_spec(dump_spec(tiny_spec(resources={"cpus": 1, "gpus": 0.25})), "g.yaml")
    assert slots(gpus, 16, 2) == 8 and slots(gpus, 3, 2) == 3


@pytest.mark.slow
def test_calibrating_times_each_model_on_a_worker_and_reads_the_clusters_size(monkeypatch) -> None:
    spec = parse_spec(dump_spec(tiny_spec(resources={"cpus": 1})), "s.yaml")
    # A local Ray stands for the cluster, its workers at the niceness sweeper's own local Ray gives
    # them: at Ray's default of 15, beside busy processes (the other test worker's) the task's
    # imports get a few percent of a core, and its seconds become minutes.
    monkeypatch.setenv(NICENESS_ENV, "0")
    paces, slots = calibrated(spec, "local")
    assert set(paces) == {"lstm", "gru"} and slots >= 1
    assert all(0 < p.low <= p.high and "on a worker of the cluster" in p.source for p in paces.values())
    assert all(p.start > 0 and p.evaluation > 0 for p in paces.values())  # priced as a trial here is


def test_each_model_is_timed_at_both_ends_of_its_sizes_and_recorded_figures_say_where() -> None:
    raw = tiny_spec(models=("gru", "ncgru"))
    raw["per_model"] = {"ncgru": {"hidden_size": 12}}
    spec = parse_spec(dump_spec(raw), "s.yaml")
    gru = ends(spec, "gru", "cpu")
    assert [c["hidden_size"] for c in gru] == [4, 16] and {c["device"] for c in gru} == {"cpu"}
    assert 1e-3 < gru[0]["lr"] < 3e-2  # the middle of the space: its log-middle
    assert [c["hidden_size"] for c in ends(spec, "ncgru", "cpu")] == [12]
    paces, speedups = recorded_paces(spec)
    assert paces["gru"].low == pytest.approx(0.00181) and "H200" in paces["gru"].source
    assert speedups["gru"]["4"] == 2.69
    assert speedups["ncgru"]["4"] == 1.94 and "packed as goru" in paces["ncgru"].source  # goru's packing
    assert "packed as" not in paces["gru"].source


def test_the_processs_first_trial_is_not_priced_its_one_time_start_is_not_a_trials(monkeypatch) -> None:
    import trainables.step_time
    from trainables.step_time import TrialCosts

    timed: list[int] = []

    def costs(config: dict, steps: int) -> TrialCosts:  # the first call pays the process's imports
        timed.append(config["hidden_size"])
        return TrialCosts(50.0 if len(timed) == 1 else 0.5, 0.01 * config["hidden_size"], 0.2)

    monkeypatch.setattr(trainables.step_time, "trial_costs", costs)
    spec = parse_spec(dump_spec(tiny_spec(models=("lstm", "gru"))), "s.yaml")
    paces = measured_paces(spec, "cpu", "here")
    assert timed == [4, 4, 16, 4, 16]  # a warm-up, then each model at both ends of its sizes
    assert all(p.start == 0.5 and p.evaluation == 0.2 for p in paces.values())
    assert paces["gru"].low == pytest.approx(0.04) and paces["gru"].high == pytest.approx(0.16)
