"""The replayed sweep: the service's own search on a simulated clock that never lets a decision
see a report from its future, random draws uniform over the recorded configurations, ASHA that
frees a worker the moment it stops a trial, a race within the budget, free warm starts, and
missing or diverged runs taken as they were recorded."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import optuna
import pytest

from benchmarks.search_tables import table as tables
from benchmarks.search_tables.simulator import Replay
from benchmarks.search_tables.verdicts import first_named, floors, ground_truth, timeline
from sweeper.store.trial_record import PAPER_POINT_ATTR, TRANSFER_ATTR, TRANSFERRED_ATTR
from tests.benchmarks.search_tables.synthetic import CONFIGS, run_seconds, synthetic_table

pytestmark = pytest.mark.xdist_group("simulator")  # the module's table is built once, on one worker

optuna.logging.set_verbosity(optuna.logging.WARNING)


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> tables.Table:
    return synthetic_table(tmp_path_factory.mktemp("table"))


def test_no_decision_reads_a_report_from_its_future(table: tables.Table) -> None:
    """Each report reaches the scheduler at its own time (the trial's start plus its recorded
    seconds), the clock never runs backwards, and every trial is drawn after every report it
    could know of: what a decision at t sees was reported by t."""
    replay = Replay(table, "copying", "default", seed=0, workers=4, trials=6)
    delivered: list[tuple[str, float, float]] = []  # trial, its report's seconds, the clock then
    drawn: list[float] = []
    suggest, on_result = replay.searcher.suggest, replay.scheduler.on_trial_result

    def suggesting(trial_id: str):
        drawn.append(replay.now)
        assert all(now <= replay.now for _, _, now in delivered)
        return suggest(trial_id)

    def deciding(controller, trial, result: dict):
        if "step" in result:
            assert not delivered or delivered[-1][2] <= replay.now
            delivered.append((trial.trial_id, result["time_total_s"], replay.now))
        return on_result(controller, trial, result)

    replay.searcher.suggest, replay.scheduler.on_trial_result = suggesting, deciding
    trace = replay.run()
    starts = {t["id"]: t["start"] for t in trace.trials}
    assert len(delivered) > 20 and len(trace.trials) == 24
    assert all(starts[trial] + seconds == now for trial, seconds, now in delivered)
    assert drawn == sorted(drawn)


def test_random_search_is_uniform_over_the_recorded_configurations(table: tables.Table) -> None:
    """A study of as many trials as Sobol points draws each once; over seeds, the first draws
    fall on every configuration about equally."""
    trace = Replay(table, "copying", "random", seed=3, workers=2, trials=CONFIGS).run()
    per_model = Counter((t["model"], t["design"]) for t in trace.trials)
    paper = {m: int(table.curves["copying"][m].paper.sum()) for m in table.curves["copying"]}
    for model in table.curves["copying"]:
        assert sorted(d for m, d in per_model if m == model) == list(
            range(paper[model], paper[model] + CONFIGS)
        )
        assert all(per_model[(model, d)] == 1 for d in range(paper[model], paper[model] + CONFIGS))
    first = Counter(
        Replay(table, "denoise", "random", seed=s, workers=1, trials=1).run().trials[0]["design"]
        for s in range(160)
    )
    assert set(first) == set(range(1, 1 + CONFIGS)) and max(first.values()) <= 3 * min(first.values())


def test_asha_stops_at_its_rungs_and_a_stopped_trial_frees_its_worker_at_once(table: tables.Table) -> None:
    trace = Replay(table, "copying", "old", seed=1, workers=2, trials=CONFIGS).run()
    pruned = [t for t in trace.trials if t["state"] == "PRUNED"]
    assert pruned, "ASHA stopped no trial"
    rungs = {100, 300}  # grace 100, reduction factor 3, trials of 600
    for trial in pruned:
        length = trial["end"] - trial["start"]
        assert any(np.isclose(length, run_seconds(trial["model"], rung)) for rung in rungs)
        if trial["end"] < max(t["start"] for t in trace.trials):  # its worker took the next trial then
            assert any(np.isclose(t["start"], trial["end"]) for t in trace.trials)
    busy = sorted((t["start"], t["end"]) for t in trace.trials)
    for when in {t for pair in busy for t in pair}:  # never more than W trials at once
        assert sum(s <= when < e for s, e in busy) <= 2


@pytest.mark.parametrize("strategy", ["random", "default"])
def test_random_and_the_default_keep_every_worker_busy_until_their_first_answer(
    table: tables.Table, strategy: str
) -> None:
    """What the busy floor of the verdicts assumes of them: W trials run from the start until
    every model has completed one, so the first answer costs W times its moment."""
    trace = Replay(table, "copying", strategy, seed=2, workers=4, trials=CONFIGS).run()
    line = timeline(trace, tuple(table.curves["copying"]), table.tasks["copying"])
    ends = sorted(t["end"] for t in trace.trials if t["state"] == "COMPLETE")
    moment = ends[next(i for i, named in enumerate(line.named) if named)]
    assert first_named(line) * 3600 == pytest.approx(4 * moment)
    assert first_named(line) >= floors(table, "copying", 4)["busy_sweep"] * (1 - 1e-9)


def test_a_race_names_a_clearly_better_model_within_the_budget(table: tables.Table) -> None:
    trials = 8
    trace = Replay(table, "copying", "+race", seed=0, workers=4, trials=trials).run()
    assert len(trace.trials) <= trials * 4
    stopped = {m for _, m in trace.race_stops}  # only on their odds and distance: never the winner
    assert "scornn" not in stopped and stopped <= {"gru", "goru", "ncgru"} and stopped
    line = timeline(trace, tuple(table.curves["copying"]), table.tasks["copying"])
    assert line.named[-1] == ground_truth(table, "copying").winner == "scornn"


def test_warm_started_trials_spend_nothing(table: tables.Table) -> None:
    earlier = Replay(table, "copying", "random", seed=5, workers=4, trials=4)
    earlier.run()
    warm = Replay(table, "copying", "+warm", seed=0, workers=4, trials=4, earlier=earlier.studies)
    trace = warm.run()
    assert trace.reused == 16
    assert len(trace.trials) == 16  # the whole budget still runs: the copies spent none of it
    for plan in warm.searcher.plans:
        assert len(plan.study.trials) == 8 and plan.done == 4


def test_a_transfer_asks_first_for_each_models_best_on_the_other_task_within_its_budget(
    table: tables.Table,
) -> None:
    earlier = Replay(table, "copying", "default", seed=5, workers=4, trials=4)
    earlier.run()
    replay = Replay(
        table, "denoise", "transfer", seed=0, workers=4, trials=4, transfer_from={"copying": earlier.studies}
    )
    already = []
    for model, study in replay.studies.items():
        source = earlier.studies[model]
        asked = [t for t in study.get_trials(deepcopy=False) if TRANSFER_ATTR in t.user_attrs]
        if source.best_trial.user_attrs.get(PAPER_POINT_ATTR):  # the same point here: asked for once
            assert not asked and TRANSFERRED_ATTR not in study.user_attrs
            already.append(model)
            continue
        assert [t.user_attrs[TRANSFER_ATTR] for t in asked] == [
            f"copying trial {source.best_trial.number} (copying)"
        ]
        assert [s["source"] for s in study.user_attrs[TRANSFERRED_ATTR]] == [
            asked[0].user_attrs[TRANSFER_ATTR]
        ]
    assert already == ["goru"]  # its best on copying was its papers' point, which denoise asks for too
    trace = replay.run()
    assert len(trace.trials) == 16  # the transferred trials are the study's own, within its budget


def test_a_missing_seed_is_never_drawn_and_a_diverged_run_fails_when_it_did(tmp_path: Path) -> None:
    table = synthetic_table(tmp_path)
    for curves in table.curves["denoise"].values():
        curves.status[:, 1] = tables.MISSING
        curves.objective[:, 1] = np.nan
        curves.status[:, 0] = tables.DIVERGED
        curves.objective[:, 0, 2:] = np.nan
        curves.ended[:, 0] = curves.seconds[:, 0, 1] + 0.5
    trace = Replay(table, "denoise", "random", seed=0, workers=2, trials=3).run()
    assert {t["seed"] for t in trace.trials} == {0}
    assert {t["state"] for t in trace.trials} == {"FAIL"}
    for trial in trace.trials:
        assert np.isclose(trial["end"] - trial["start"], run_seconds(trial["model"], 200) + 0.5)


def test_a_proposal_snaps_to_the_nearest_configuration_and_a_papers_point_to_itself(
    table: tables.Table,
) -> None:
    replay = Replay(table, "copying", "default", seed=0, workers=1, trials=2)
    snapper, curves = replay.snappers["ncgru"], table.curves["copying"]["ncgru"]
    for index, design in enumerate(curves.designs):
        assert snapper.nearest(design["params"]) == index
    nudged = {**curves.designs[4]["params"], "lr": curves.designs[4]["params"]["lr"] * 1.01}
    assert snapper.nearest(nudged) == 4
    trace = replay.run()
    assert [t["design"] for t in trace.trials if t["model"] == "ncgru"][:2] == [
        0,
        1,
    ]  # its two papers' points


def test_one_trial_waits_ahead_of_the_running_ones_as_in_tune(table: tables.Table) -> None:
    """Without `budget.max_concurrent` Tune keeps one trial drawn and waiting for a worker; with
    it, no more trials are live than it allows."""
    for extra, live in (({}, 3), ({"budget": {"max_concurrent": 2}}, 2)):
        replay = Replay(table, "copying", "random", seed=0, workers=2, trials=4, **extra)
        drawn: list[float] = []

        def suggesting(trial_id: str, replay: Replay = replay, suggest=replay.searcher.suggest, drawn=drawn):
            drawn.append(replay.now)
            return suggest(trial_id)

        replay.searcher.suggest = suggesting
        trace = replay.run()
        assert drawn[:live] == [0.0] * live and drawn[live] > 0.0
        first_end = min(t["end"] for t in trace.trials)
        assert sum(t["start"] < first_end for t in trace.trials) == 2  # two workers, whatever is drawn


def sorted_items(params: dict) -> tuple:
    return tuple(sorted(params.items()))


def test_a_running_trial_holds_the_configuration_replayed_for_tpes_constant_liar(table: tables.Table) -> None:
    """Independent TPE (the `old` strategy) draws each parameter on its own: the trial takes the
    recorded configuration nearest its first draw, every parameter of it."""
    replay = Replay(table, "denoise", "old", seed=2, workers=4, trials=14)
    recorded = {m: {sorted_items(d["params"]) for d in c.designs} for m, c in table.curves["denoise"].items()}
    running = []

    def suggesting(trial_id: str, suggest=replay.searcher.suggest):
        for plan in replay.searcher.plans:
            for trial in plan.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
                running.append(sorted_items(trial.params) in recorded[plan.model])
        return suggest(trial_id)

    replay.searcher.suggest = suggesting
    replay.run()
    assert len(running) > 20 and all(running)


def test_a_study_records_the_configuration_that_is_replayed(table: tables.Table) -> None:
    replay = Replay(table, "denoise", "+tpe", seed=2, workers=4, trials=CONFIGS)
    trace = replay.run()
    for plan in replay.searcher.plans:
        curves = table.curves["denoise"][plan.model]
        replayed = [curves.designs[t["design"]]["params"] for t in trace.trials if t["model"] == plan.model]
        assert sorted(map(sorted_items, (t.params for t in plan.study.trials))) == sorted(
            map(sorted_items, replayed)
        )
    with pytest.raises(ValueError, match=r"does not model budget\.time"):
        Replay(table, "denoise", "default", seed=0, workers=1, trials=1, budget={"time": 60})
