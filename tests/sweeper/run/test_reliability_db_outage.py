"""The study database lost mid-sweep: the driver retries, then stops the sweep as interrupted;
once the database is back, `resume` reconciles and finishes without losing a finished trial."""

from __future__ import annotations

import time

import pytest
import sqlalchemy as sa
from optuna.trial import TrialState

from sweeper.store.database import Store
from sweeper.store.trial_record import INTERRUPTED_ATTR
from tests.helpers import POSTGRES_ADMIN_URL, cli_env, run_cli, start_cli, tiny_spec, write_spec
from tests.sweeper.run.test_sweep_end_to_end import studies

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


def set_connections(database: str, allowed: bool) -> None:
    admin = sa.create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS {str(allowed).lower()}'))
        if not allowed:
            conn.execute(
                sa.text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :d"),
                {"d": database},
            )
    admin.dispose()


def test_database_lost_mid_sweep_interrupts(postgres_url, tmp_path, ray_head):
    """On the worker's Ray head: the driver loses the database, not Ray."""
    database = sa.engine.make_url(postgres_url).database
    spec = tiny_spec(name="dbloss", scheduler="none", budget={"trials": 4, "max_concurrent": 1})
    spec["params"].update(iterations=120, eval_every=40)
    config = write_spec(tmp_path, spec)
    env = cli_env(ray_head.env)
    process = start_cli(
        ["launch", str(config), "--storage", postgres_url, "--no-price", *ray_head.args], tmp_path, env
    )
    finished: dict[tuple[str, int], float] = {}
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.5)
        try:
            trials = studies(postgres_url, "dbloss-1")
        except Exception:
            continue
        finished = {
            (m, t.number): t.value for m, ts in trials.items() for t in ts if t.state == TrialState.COMPLETE
        }
        if finished and any(t.state == TrialState.RUNNING for ts in trials.values() for t in ts):
            break
    assert process.poll() is None and finished, "no moment with finished and running trials"

    set_connections(database, False)
    try:
        output, _ = process.communicate(timeout=240)
    finally:
        set_connections(database, True)
    assert process.returncode == 130, output
    assert "the study database is unreachable" in output
    assert "Traceback" not in output

    resumed = run_cli(["resume", "dbloss-1", "--storage", postgres_url, *ray_head.args], tmp_path, env)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    final = studies(postgres_url, "dbloss-1")
    for model, trials in final.items():
        assert len({t.number for t in trials}) == len(trials)
        for (m, number), value in finished.items():
            if m == model:
                (kept,) = [t for t in trials if t.number == number]
                assert kept.state == TrialState.COMPLETE and kept.value == value
        counted = [t for t in trials if INTERRUPTED_ATTR not in t.user_attrs]
        assert len(counted) == 4 and all(t.state == TrialState.COMPLETE for t in counted)
    store = Store(postgres_url)
    assert store.get_sweep("dbloss-1").status == "finished"
    store.dispose()
