"""Shared fixtures: a throw-away PostgreSQL database when one is reachable, and the sweeps that
several tests read (each launched once per session: `SESSION_SWEEPS`).

Without a GPU to test on (`SWEEPER_TEST_DEVICE`, default cpu), Triton's kernels run in its
interpreter on CPU tensors; the variable must be set before any kernel module is imported.

The suite runs on two pytest-xdist workers (`-n 2 --dist loadgroup` in pyproject.toml; `-n 0`
runs it in one process): each worker computes with one thread. Two, on CI's two cores, because the
slow tests compute too (Ray's processes, the CLI's, training): a third worker makes each slower.
Each worker starts one Ray head on first use (`ray_head`, `tests.ray_head`): the launches of
tests whose subject is not Ray's own start, stop, loss or recovery join it with `--address`, as a
user of a cluster does. Tests that need a node of their own (declared GPUs, plugins, a late
worker), or test a local start, a killed driver or a lost node, start a local Ray, a new one of
their own (`address="local"`), as does the README's path (`finished_sweep`). A fixture wider than
one test is built once per worker that uses it, so the tests that share one run on one worker (an
`xdist_group` mark: the session's sweeps are grouped here, the modules' own fixtures where the
module declares them; a test that asks for a shared fixture through `request.getfixturevalue` is
marked where it does); the head is not shared across workers, so its tests need no group.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

if os.environ.get("SWEEPER_TEST_DEVICE", "cpu") == "cpu":
    os.environ.setdefault("TRITON_INTERPRET", "1")
if "PYTEST_XDIST_WORKER" in os.environ:  # one core per worker: two workers on two cores, not four threads
    for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(variable, "1")

import pytest

from tests.helpers import (
    FinishedSweep,
    role_with_password,
    run_failing_launch,
    run_outage_sweep,
    run_shared_launch,
    run_sweep_cli,
    throwaway_databases,
)
from tests.ray_head import RayHead, started_head

# each launched once per session, and read by several tests
SESSION_SWEEPS = ("finished_sweep", "postgres_sweep", "outage_sweep", "shared_launch", "failing_launch")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups (`--dist loadgroup`)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Group the tests of each of the session's sweeps on one worker, and hand out the slow tests
    first: a minute-long test picked up last would leave the other worker idle while it runs."""
    for item in items:
        for sweep in SESSION_SWEEPS:
            if sweep in getattr(item, "fixturenames", ()):
                item.add_marker(pytest.mark.xdist_group(sweep))
                break
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable: same order everywhere


@pytest.fixture(scope="session", autouse=True)
def kept_trial_costs(tmp_path_factory) -> None:
    """The prices' kept trial costs in a folder of this session's (per worker, shared by its tests
    and the CLIs they start): never the user's own, and a configuration timed once per session."""
    from sweeper.spec.trial_cost import CACHE_ENV

    os.environ[CACHE_ENV] = str(tmp_path_factory.mktemp("trial-costs"))


@pytest.fixture(scope="session")
def ray_head(kept_trial_costs: None) -> Iterator[RayHead]:
    """This worker's Ray head, started at its first use with the session's kept trial costs in its
    environment, and stopped by its process group when the session ends."""
    with started_head() as head:
        yield head


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh PostgreSQL database for one test, dropped afterwards."""
    with throwaway_databases(1) as (url,):
        yield url


@pytest.fixture(scope="session")
def finished_sweep(tmp_path_factory) -> FinishedSweep:
    """One tiny 2-model x 4-trial sweep on SQLite and a local MLflow store, run once per session."""
    return run_sweep_cli(tmp_path_factory.mktemp("finished"), None)


@pytest.fixture(scope="session")
def postgres_sweep(tmp_path_factory, ray_head: RayHead) -> Iterator[FinishedSweep]:
    """The tiny sweep `e2e` on PostgreSQL, launched with its URL in SWEEPER_STORAGE (the documented
    way) as a role whose URL carries a password, on the worker's Ray head: read by the end-to-end
    test and the secrets test."""
    with throwaway_databases(1) as (url,), role_with_password(url) as with_password:
        cwd = tmp_path_factory.mktemp("postgres")
        yield run_sweep_cli(cwd, with_password, storage_by_environment=True, head=ray_head)


@pytest.fixture(scope="session")
def outage_sweep(tmp_path_factory, ray_head: RayHead) -> FinishedSweep:
    """A tiny sweep launched on the worker's Ray head while its MLflow server is down, the server's
    URL (with a password) in SWEEPER_TRACKING_URI: read by the secrets test and by the outage test,
    which syncs a copy."""
    return run_outage_sweep(tmp_path_factory.mktemp("outage"), ray_head)


@pytest.fixture(scope="session")
def shared_launch(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """One launch of three sweeps (`tests.helpers.run_shared_launch`): its folder and the launch."""
    cwd = tmp_path_factory.mktemp("shared-launch")
    return cwd, run_shared_launch(cwd)


@pytest.fixture(scope="session")
def failing_launch(tmp_path_factory) -> tuple[str, subprocess.CompletedProcess]:
    """One launch of two sweeps whose every trial fails (`tests.helpers.run_failing_launch`)."""
    return run_failing_launch(tmp_path_factory.mktemp("failing-launch"))
