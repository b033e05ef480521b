"""Shared fixtures: a throw-away PostgreSQL database when one is reachable.

Without a GPU to test on (`SWEEPER_TEST_DEVICE`, default cpu), Triton's kernels run in its
interpreter on CPU tensors; the variable must be set before any kernel module is imported.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

if os.environ.get("SWEEPER_TEST_DEVICE", "cpu") == "cpu":
    os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest

from tests.helpers import POSTGRES_ADMIN_URL, FinishedSweep, run_sweep_cli


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
