"""Shared fixtures: a throw-away PostgreSQL database when one is reachable, one finished sweep.

Without a GPU to test on (`SWEEPER_TEST_DEVICE`, default cpu), Triton's kernels run in its
interpreter on CPU tensors; the variable must be set before any kernel module is imported.

The suite runs on two pytest-xdist workers (`-n 2 --dist loadgroup` in pyproject.toml; `-n 0`
runs it in one process): each worker computes with one thread. Two, on CI's two cores, because the
slow tests compute too (Ray's processes, the CLI's, training): a third worker makes each slower.
Tests that start a local Ray run on either worker, since each starts a new Ray of its own
(`address="local"`); the tests that read the session's finished sweep run on one worker, so that
it is built once.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

if os.environ.get("SWEEPER_TEST_DEVICE", "cpu") == "cpu":
    os.environ.setdefault("TRITON_INTERPRET", "1")
if "PYTEST_XDIST_WORKER" in os.environ:  # one core per worker: two workers on two cores, not four threads
    for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(variable, "1")

import pytest

from tests.helpers import POSTGRES_ADMIN_URL, FinishedSweep, run_sweep_cli


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups (`--dist loadgroup`)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Group the tests of the session's finished sweep on one worker, and hand out the slow tests
    first: a minute-long test picked up last would leave the other worker idle while it runs."""
    for item in items:
        if "finished_sweep" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("finished_sweep"))
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable: same order everywhere


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh PostgreSQL database for one test, dropped afterwards."""
    import sqlalchemy as sa

    try:
        admin = sa.create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
        with admin.connect():
            pass
    except Exception as exc:
        pytest.skip(f"no PostgreSQL reachable at {POSTGRES_ADMIN_URL}: {str(exc).splitlines()[0]}")
    name = f"sweeper_test_{uuid.uuid4().hex[:10]}"
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    url = sa.engine.make_url(POSTGRES_ADMIN_URL).set(database=name).render_as_string(hide_password=False)
    try:
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(scope="session")
def finished_sweep(tmp_path_factory) -> FinishedSweep:
    """One tiny 2-model x 4-trial sweep on SQLite and a local MLflow store, run once per session."""
    return run_sweep_cli(tmp_path_factory.mktemp("finished"), None)
