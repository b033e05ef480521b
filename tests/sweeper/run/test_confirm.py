"""Confirmation runs: fresh distinct seeds, unpruned, statistics recomputed from what was stored;
by default the leaders' seeds one more at a time until one is shown ahead, few for a clear
case and up to the cap for a close one."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import optuna
import pytest
import yaml
from mlflow.tracking import MlflowClient
from sqlalchemy import select

from sweeper.results.json_outputs import confirm_output, sweep_status
from sweeper.results.odds import sweep_odds
from sweeper.results.retrained import confirmed as confirmed_runs
from sweeper.results.retrained import mean_std
from sweeper.results.summaries import study_summaries
from sweeper.results.verdict import verdict
from sweeper.run.confirm import confirm_seed
from sweeper.run.confirm_leaders import confirm_leaders
from sweeper.run.launch import create_sweep
from sweeper.run.tune.runtime import RunEnd
from sweeper.spec.loading import parse_spec
from sweeper.store.database import ConfirmationRecord, Store, StudyRecord
from sweeper.store.states import ConfirmationStatus, SweepStatus
from sweeper.store.trial_record import trial_seed
from tests.helpers import cli_env, run_cli, tiny_spec


def test_mean_std_uses_the_sample_deviation_and_claims_no_spread_from_one_run():
    assert mean_std([]) == (None, None)
    assert mean_std([2.0]) == (2.0, None)
    mean, std = mean_std([1.0, 2.0, 4.0])
    assert mean == pytest.approx(7 / 3) and std == pytest.approx(statistics.stdev([1.0, 2.0, 4.0]))


def test_confirmation_seeds_never_collide_with_sweep_seeds():
    sweep_seeds = {trial_seed(0, n) for n in range(100_000)}
    assert not sweep_seeds & {confirm_seed(0, k) for k in range(10)}


def rows(storage: str, sweep: str) -> dict[str, list[ConfirmationRecord]]:
    store = Store(storage)
    try:
        record = store.get_sweep(sweep)
        with store.session() as session:
            return {
                s.model: session.scalars(
                    select(ConfirmationRecord)
                    .where(ConfirmationRecord.study_id == s.id)
                    .order_by(ConfirmationRecord.id)
                ).all()
                for s in session.scalars(select(StudyRecord).where(StudyRecord.sweep_id == record.id)).all()
            }
    finally:
        store.dispose()


@pytest.mark.slow
def test_confirm_retrains_the_best_configuration_with_fresh_seeds(finished_sweep, ray_head):
    """Confirmations of the README's local sweep, run on the worker's Ray head."""
    confirm = ["confirm", finished_sweep.name, "--storage", finished_sweep.storage, *ray_head.args]
    args = [*confirm, "--every", "--seeds", "2"]
    result = run_cli(args, finished_sweep.cwd, cli_env(ray_head.env))
    assert result.returncode == 0, result.stdout + result.stderr
    first = rows(finished_sweep.storage, finished_sweep.name)
    assert sorted(first) == ["gru", "lstm"]
    client = MlflowClient(finished_sweep.tracking)
    (experiment,) = [e for e in client.search_experiments() if e.name == finished_sweep.name]
    runs = client.search_runs([experiment.experiment_id], max_results=1000)
    parents = {r.data.tags["model"]: r for r in runs if r.data.tags.get("sweeper.role") == "study"}
    confirmations = [r for r in runs if r.data.tags.get("sweeper.role") == "confirmation"]
    assert len(confirmations) == 4

    for model, model_rows in first.items():
        assert [r.status for r in model_rows] == ["complete", "complete"]
        assert len({r.seed for r in model_rows}) == 2
        assert {r.source_trial for r in model_rows} == {model_rows[0].source_trial}
        objectives = [r.objective for r in model_rows]
        parent = parents[model]
        assert parent.data.metrics["confirmed_valid_loss_mean"] == pytest.approx(statistics.fmean(objectives))
        assert parent.data.metrics["confirmed_valid_loss_std"] == pytest.approx(statistics.stdev(objectives))
        tests = [json.loads(r.metrics_json)["test_loss"] for r in model_rows]
        assert parent.data.metrics["confirmed_test_loss_mean"] == pytest.approx(statistics.fmean(tests))
        for row in model_rows:
            (run,) = [r for r in confirmations if r.info.run_id == row.mlflow_run_id]
            assert run.data.tags["mlflow.parentRunId"] == parent.info.run_id
            assert run.data.tags["seed"] == str(row.seed) and run.data.tags["state"] == "COMPLETE"
            history = client.get_metric_history(run.info.run_id, "valid_loss")
            assert max(m.step for m in history) == 30  # full budget: nothing pruned
            assert row.objective == pytest.approx(min(m.value for m in history))
        assert f"{statistics.fmean(objectives):.5g}" in result.stdout

    again = run_cli([*args[:-1], "3", "--json"], finished_sweep.cwd, cli_env(ray_head.env))
    assert again.returncode == 0, again.stdout + again.stderr
    said = json.loads(again.stdout)
    assert (said["kind"], said["version"], said["status"], said["claim"]) == ("confirm", 1, "finished", None)
    assert {c["model"]: c["runs"] for c in said["confirmed"]} == {"gru": 3, "lstm": 3}
    second = rows(finished_sweep.storage, finished_sweep.name)
    for model, model_rows in second.items():
        assert len(model_rows) == 3 and all(r.status == "complete" for r in model_rows)
        assert [(r.id, r.seed, r.objective) for r in model_rows[:2]] == [
            (r.id, r.seed, r.objective) for r in first[model]
        ]


def test_the_progress_line_shows_each_leaders_best_confirmation_so_far() -> None:
    from sweeper.run.confirm import ConfirmationSearcher, Job
    from sweeper.run.search.recorder import Progress

    spec = parse_spec(yaml.safe_dump(tiny_spec()), "t.yaml")
    study = StudyRecord(study_name="s/denoise/gru", task="denoise", model="gru")
    jobs = [Job(k, study, 0, 7 + k, {"lr": 0.01}) for k in (1, 2)]
    searcher = ConfirmationSearcher(None, spec, jobs, None, None)
    searcher._update = lambda job, **values: None  # no registry here: only what it counts
    assert searcher.snapshot()[0]["best"] is None
    for key, (job, best) in enumerate(zip(jobs, (0.12, 0.09), strict=True)):
        searcher._live[f"t{key}"] = (job, Progress(iterations=30, run=None, last_step=30, best=best))
        searcher.on_trial_complete(f"t{key}", {"step": 30, "valid_loss": best})
    (row,) = searcher.snapshot()
    assert (row["complete"], row["best"]) == (2, 0.09)


class LostDatabase:
    """A store whose every session fails as a database that went away does."""

    def session(self):
        from sqlalchemy.exc import OperationalError

        raise OperationalError("UPDATE sweeper_confirmations", {}, Exception("server closed the connection"))


def test_a_lost_database_stops_confirmations_as_interrupted_and_keeps_them_to_run_again():
    """Retried, then stopped as interrupted, as sweeps are; the run whose end could not be
    written stays running in the registry, which the next `sweeper confirm` runs again."""
    import yaml
    from ray.tune.search import Searcher

    from sweeper.run.confirm import ConfirmationSearcher, Job
    from sweeper.run.search.recorder import Progress
    from sweeper.spec.loading import parse_spec
    from sweeper.store.database import StudyRecord
    from tests.helpers import tiny_spec

    spec = parse_spec(yaml.safe_dump(tiny_spec()), "t.yaml")
    study = StudyRecord(study_name="s/denoise/gru", task="denoise", model="gru")
    job = Job(1, study, 0, 7, {"lr": 0.01})
    searcher = ConfirmationSearcher(LostDatabase(), spec, [job], None, None)
    searcher.database_backoff = 0.001
    assert searcher.suggest("t1") == Searcher.FINISHED
    assert searcher.stop_reason.startswith("interrupted: the study database is unreachable")
    assert list(searcher._pending) == [job]  # not handed out, so not lost

    searcher = ConfirmationSearcher(LostDatabase(), spec, [], None, None)
    searcher.database_backoff = 0.001
    searcher._live["t2"] = (job, Progress(iterations=30, run=None, last_step=30, best=0.1))
    searcher.on_trial_complete("t2", {"step": 30, "valid_loss": 0.1})
    assert searcher.stop_reason.startswith("interrupted")
    assert "t2" in searcher._live  # its end is not written: kept for abandon_running
    searcher.abandon_running(searcher.stop_reason)
    assert not searcher._live


def _sweep(tmp_path: Path, values: dict[str, list[float]]) -> tuple[Store, object]:
    store = Store(f"sqlite:///{tmp_path / 'sweeper.db'}")
    spec = parse_spec(yaml.safe_dump(tiny_spec(name="pair", models=tuple(values))), "pair.yaml")
    record = create_sweep(spec, store, f"sqlite:///{tmp_path / 'mlflow.db'}", None, None, home=tmp_path)
    for study_record in record.studies:
        study = optuna.load_study(study_name=study_record.study_name, storage=store.optuna)
        for value in values[study_record.model]:
            study.add_trial(optuna.trial.create_trial(value=value, params={}, distributions={}))
    return store, store.get_sweep(record.name)


def _trainer(values: dict[str, list[float]], seen: list[int]):
    """Confirmation runs that end at each model's values in turn (one per seed), counting the
    jobs of each round."""
    taken = {model: 0 for model in values}

    def run(store, record, where, jobs, label) -> RunEnd:
        seen.append(len(jobs))
        with store.session() as session:
            for job in jobs:
                row = session.get(ConfirmationRecord, job.confirmation_id)
                mine = values[job.study.model]
                row.objective = mine[taken[job.study.model] % len(mine)]
                row.status, row.metrics_json = ConfirmationStatus.COMPLETE, "{}"
                taken[job.study.model] += 1
        return RunEnd(record.name, SweepStatus.FINISHED, None)

    return run


def _confirm(
    folder: Path,
    bests: dict[str, list[float]],
    confirmed: dict[str, list[float]],
    cap: int | None = 6,
    claim: str = "ahead",
):
    """A sweep with these complete trials, confirmed (level 0.95) by runs that end at
    `confirmed`'s values in turn: its store, record, rounds (jobs each) and notes."""
    store, record = _sweep(folder, bests)
    rounds: list[int] = []
    decided = confirm_leaders(
        store, record, None, cap=cap, level=0.95, claim=claim, run=_trainer(confirmed, rounds)
    )
    assert decided.end.status == SweepStatus.FINISHED
    return store, record, rounds, decided.notes


def test_confirm_shows_a_clear_case_ahead_after_three_seeds_and_keeps_what_it_said(tmp_path: Path) -> None:
    """Two seeds each cannot show anything at 95% (the test's ratio is bounded with so few), the
    third does; the claim is kept on the sweep for status, its JSON and MLflow."""
    clear = {"gru": [0.199, 0.201, 0.2], "lstm": [0.299, 0.301, 0.3]}
    store, record, rounds, notes = _confirm(tmp_path / "clear", {"gru": [0.2, 0.4], "lstm": [0.3]}, clear)
    assert rounds == [4, 2]  # two fresh seeds each, then one more each: ahead
    assert notes[-1].startswith("gru ahead of lstm at 95% (tie margin ")
    assert "fresh seeds: gru 3, lstm 3; valid at every look" in notes[-1]
    assert notes[-1].endswith("ahead by more than the tie margin: yes; tie confirmed: not yet")
    odds_now = sweep_odds(store, record)
    assert odds_now.estimates["gru"].source == "3 confirmation runs"
    assert "repeated seeds" in odds_now.noise.source

    kept = store.get_sweep(record.name)
    status = sweep_status(kept, study_summaries(store, kept), "status")
    assert status.version == 7 and status.confirmation is not None
    claim = status.confirmation
    assert (claim.asked, claim.level, claim.outcome, claim.winner) == ("ahead", 0.95, "ahead", "gru")
    assert claim.made == {"ahead": True, "margin": True, "tie": False} and claim.runs == {"gru": 3, "lstm": 3}
    assert claim.line == notes[-1]
    said = confirm_output(kept, "finished", confirmed_runs(store, kept), notes, claim=True)
    assert said.claim == claim and [c.runs for c in said.confirmed] == [3, 3]

    client = MlflowClient(kept.tracking_uri)
    for study in kept.studies:
        tags = client.get_run(study.mlflow_parent_run_id).data.tags
        assert tags["sweeper.confirm.asked"] == "ahead at 0.95"
        assert tags["sweeper.confirm.claim"] == "ahead" and tags["sweeper.confirm"] == notes[-1]


def test_confirm_goes_to_its_cap_when_undecided_and_a_later_call_looks_on_from_there(tmp_path: Path) -> None:
    """Gaps of about one seed spread are neither ahead nor tied: each round adds a seed to each
    leader up to the cap; the next call's first look is the seventh, not the second again, and
    both it and the verdict suggest the same seeds."""
    unclear = {"gru": [0.20, 0.30], "lstm": [0.27, 0.33]}
    store, record, rounds, notes = _confirm(tmp_path / "unclear", {"gru": [0.25], "lstm": [0.29]}, unclear)
    assert rounds == [4, 2, 2, 2, 2]  # one more seed each per round, up to six each
    assert notes[-2].startswith("not decided at 95% after 6 seeds each: gru leads, not yet ahead")
    assert notes[-1].startswith("not decided within 6 seeds each: `sweeper confirm pair-1 --seeds 12`")
    kept = store.get_sweep(record.name)
    said = verdict(kept, study_summaries(store, kept), None, sweep_odds(store, kept))
    assert any(line.strip().startswith("sweeper confirm pair-1 --seeds 12 ") for line in said)
    later: list[int] = []
    decided = confirm_leaders(store, record, None, cap=7, level=0.95, run=_trainer(unclear, later))
    assert later == [2] and "after 7 seeds each" in decided.notes[-2]
    assert sweep_status(store.get_sweep(record.name), [], "status").confirmation.runs == {"gru": 7, "lstm": 7}


def test_confirm_told_no_cap_runs_to_the_seeds_the_verdict_suggests(tmp_path: Path) -> None:
    unclear = {"gru": [0.20, 0.30], "lstm": [0.27, 0.33]}
    _, _, rounds, notes = _confirm(tmp_path / "u", {"gru": [0.25], "lstm": [0.29]}, unclear, cap=None)
    assert rounds == [4, 2, 2, 2]  # five seeds each: `suggested_seeds(0)`
    assert notes[-1].startswith("not decided within 5 seeds each: `sweeper confirm pair-1 --seeds 10`")


def test_confirm_takes_every_model_of_the_leading_tie_and_confirms_a_tie(tmp_path: Path) -> None:
    """Three models within the tie margin of each other in the sweep: all three get fresh seeds;
    equal means with little spread are a tie confirmed once asked for; the fourth, far behind,
    gets none."""
    bests = {"gru": [0.250], "lstm": [0.2502], "goru": [0.2504], "scornn": [0.9]}
    level = {"gru": [0.2499, 0.2501], "lstm": [0.2501, 0.2499], "goru": [0.25, 0.2502], "scornn": [0.9]}
    _, _, rounds, notes = _confirm(tmp_path / "tie", bests, level, claim="tie")
    assert rounds == [6, 3]
    assert notes[-1].startswith("gru, lstm and goru tie within the tie margin at 95% (tie margin ")
