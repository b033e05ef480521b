"""Database faults: many writers on one study, SQLite on a cluster, connections killed by the server.

A sweep's studies are its state, so concurrent trials must never lose or repeat a row, SQLite must
be refused where its file locks cannot work, and a long sweep must outlive the server dropping its
idle connections. Every test goes through `sweeper.store.Store`, so it exercises the engine
settings the service itself uses.
"""

from __future__ import annotations

import multiprocessing
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import optuna
import pytest
import sqlalchemy as sa
from click.testing import CliRunner, Result
from optuna.trial import TrialState
from sqlalchemy.pool import NullPool

from sweeper.store.database import Store, StoreError
from tests.helpers import tiny_spec, write_spec

WORKERS = 8
TRIALS_PER_WORKER = 25  # 8 x 25 = the 200 trials of the issue
STEPS = 4  # intermediate values reported by every trial
STUDY = "concurrency/denoise/gru"


def _expected_curve(x: float) -> dict[int, float]:
    """The intermediate values a trial with parameter `x` reports: recomputable after the fact."""
    return {step: x * step for step in range(1, STEPS + 1)}


def complete_trials(url: str, start: Barrier, trials: int) -> None:
    """One worker process: ask, report every step, tell, as a Tune worker's trial does through
    the driver; `start` is a barrier so that all workers write at once rather than in turn.

    Random sampling: the storage is under test, not the sampler, and TPE's reading of every
    trial at each ask would spend the time budget on a small machine.
    """
    store = Store(url)
    study = optuna.load_study(study_name=STUDY, storage=store.optuna, sampler=optuna.samplers.RandomSampler())
    start.wait()
    for _ in range(trials):
        trial = study.ask()
        x = trial.suggest_float("x", 0.0, 1.0)
        trial.set_user_attr("seed", trial.number)
        for step, value in _expected_curve(x).items():
            trial.report(value, step)
        study.tell(trial, x)
    store.dispose()


@pytest.fixture(params=[pytest.param("postgresql", marks=pytest.mark.postgres), "sqlite"])
def storage_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """PostgreSQL, the cluster's database, and SQLite, which one machine's workers share."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'studies.db'}"
    return request.getfixturevalue("postgres_url")


@pytest.mark.slow
def test_eight_processes_complete_200_trials_of_one_study_without_loss(storage_url: str) -> None:
    """PostgreSQL is the cluster database; SQLite must hold up too for one machine's workers."""
    store = Store(storage_url)
    optuna.create_study(study_name=STUDY, storage=store.optuna)
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(WORKERS)
    workers = [
        context.Process(target=complete_trials, args=(storage_url, start, TRIALS_PER_WORKER))
        for _ in range(WORKERS)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        if worker.is_alive():  # hung: fail below rather than leave it holding the database
            worker.kill()
            worker.join()
    assert [w.exitcode for w in workers] == [0] * WORKERS

    trials = optuna.load_study(study_name=STUDY, storage=store.optuna).get_trials(deepcopy=False)
    total = WORKERS * TRIALS_PER_WORKER
    assert len(trials) == total
    assert all(t.state == TrialState.COMPLETE for t in trials)
    assert sorted(t.number for t in trials) == list(range(total))
    assert len({t._trial_id for t in trials}) == total
    assert sorted(t.user_attrs["seed"] for t in trials) == list(range(total))
    for trial in trials:
        assert trial.intermediate_values == _expected_curve(trial.params["x"]), trial.number
        assert trial.value == trial.params["x"]
    store.dispose()


def _fake_cluster(monkeypatch: pytest.MonkeyPatch, alive: list[bool]) -> None:
    """Ray already initialised, with nodes of the given liveness: no real Ray is started."""
    import ray

    import sweeper.run.launch

    monkeypatch.setattr(ray, "is_initialized", lambda: True)
    monkeypatch.setattr(
        ray, "nodes", lambda: [{"NodeID": f"node{i}", "Alive": a} for i, a in enumerate(alive)]
    )
    # it sets process-wide Tune variables and logger levels that other tests must not inherit
    monkeypatch.setattr(sweeper.run.launch, "quiet_environment", lambda verbose: None)


def test_sqlite_is_refused_on_a_multi_node_cluster(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """SQLite's file locks do not work across hosts, so two live nodes and a SQLite URL must stop
    the launch with a message that says what to use instead."""
    from sweeper.run.tune.runtime import connect_ray

    sqlite_url = f"sqlite:///{tmp_path / 'studies.db'}"
    _fake_cluster(monkeypatch, [True, True])
    with pytest.raises(StoreError) as refused:
        connect_ray("auto", sqlite_url)
    message = str(refused.value)
    assert "2 nodes" in message and "SQLite" in message and "for one machine" in message
    assert "PostgreSQL" in message and "SWEEPER_STORAGE" in message

    connect_ray("auto", "postgresql+psycopg2://sweeper@db.example/studies")


@pytest.mark.parametrize("alive", [[True], [True, False, False]], ids=["one node", "one alive of three"])
def test_sqlite_is_accepted_on_one_live_node(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, alive: list[bool]
) -> None:
    """Dead nodes stay listed by Ray; only live ones make a cluster."""
    from sweeper.run.tune.runtime import connect_ray

    _fake_cluster(monkeypatch, alive)
    connect_ray("auto", f"sqlite:///{tmp_path / 'studies.db'}")


def _launch_on_fake_cluster(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Result:
    """`sweeper launch` with the default SQLite store, from a directory holding only the spec."""
    import sweeper.run.launch
    from sweeper.cli import main

    _fake_cluster(monkeypatch, [True, True])

    def went_on(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("SQLite was accepted on a cluster: launch went on to create the sweep")

    monkeypatch.setattr(sweeper.run.launch, "create_sweep", went_on)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SWEEPER_STORAGE", raising=False)
    monkeypatch.delenv("SWEEPER_TRACKING_URI", raising=False)
    return CliRunner().invoke(main, ["launch", str(write_spec(tmp_path, tiny_spec()))])


def test_launch_with_sqlite_on_a_cluster_exits_2_saying_what_to_use(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    result = _launch_on_fake_cluster(monkeypatch, tmp_path)
    assert result.exit_code == 2, (result.output, result.exception)
    assert "is for one machine; use a PostgreSQL URL (--storage or SWEEPER_STORAGE)" in result.output


def test_launch_refused_for_sqlite_on_a_cluster_writes_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`connect_ray` promises that a refused launch leaves no trace."""
    _launch_on_fake_cluster(monkeypatch, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.yaml"]


@pytest.mark.slow
@pytest.mark.postgres
def test_postgres_connections_killed_by_the_server_are_replaced(postgres_url: str) -> None:
    """A server restart or an idle-connection reaper drops pooled connections between two uses.

    Pre-ping must replace them, in the registry engine and in Optuna's; an engine without it is
    the control that shows the kill really broke the pooled connections.
    """
    store = Store(postgres_url)
    study = optuna.create_study(study_name=STUDY, storage=store.optuna)
    study.tell(study.ask(), 1.0)
    store.next_sweep_name("before")
    control = sa.create_engine(postgres_url, pool_size=1)
    with control.connect() as conn:
        conn.execute(sa.text("SELECT 1"))

    killer = sa.create_engine(postgres_url, poolclass=NullPool)
    with killer.connect() as conn:
        killed = conn.execute(
            sa.text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        ).all()
    killer.dispose()
    assert len(killed) >= 3 and all(ok for (ok,) in killed), killed

    with pytest.raises(sa.exc.OperationalError), control.connect() as conn:
        conn.execute(sa.text("SELECT 1"))
    control.dispose()

    assert store.next_sweep_name("after") == "after-1"
    study = optuna.load_study(study_name=STUDY, storage=store.optuna)
    study.tell(study.ask(), 2.0)
    assert [t.value for t in study.get_trials(deepcopy=False)] == [1.0, 2.0]
    store.dispose()
