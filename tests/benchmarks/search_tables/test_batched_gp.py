"""Optuna's GP sampler with greenlet, as the service installs it, against its sequential
fallback: the batched path is the one taken, and replayed `+gp` sweeps are identical either way."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import optuna
import pytest
from optuna._gp import batched_lbfgsb

from benchmarks.search_tables import batched_gp
from benchmarks.search_tables.tpe_speed import comparable_traces
from tests.benchmarks.search_tables.synthetic import synthetic_table


@pytest.fixture
def shipped() -> Iterator[None]:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    batched_gp.install()
    yield
    batched_gp.install()


def test_greenlet_imports_so_the_gp_sampler_steps_its_starts_together(shipped: None) -> None:
    assert batched_lbfgsb._greenlet_imports.is_successful()
    batched_gp.uninstall()
    assert not batched_lbfgsb._greenlet_imports.is_successful()
    batched_gp.install()
    assert batched_lbfgsb._greenlet_imports is batched_gp.BATCHED


@pytest.mark.slow
def test_replayed_gp_sweeps_are_identical_batched_and_sequential(
    shipped: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = synthetic_table(tmp_path / "table")
    jobs = [(next(iter(table.curves)), "+gp", 4, 0)]
    batches: list[int] = []
    plain = batched_lbfgsb._batched_lbfgsb

    def counted(*args: Any, **kwargs: Any) -> Any:
        batches.append(len(kwargs["x0_batched"]))
        return plain(*args, **kwargs)

    monkeypatch.setattr(batched_lbfgsb, "_batched_lbfgsb", counted)
    reference = comparable_traces(table, jobs, 16)
    assert batches and max(batches) > 1  # the GP fitted and optimized several starts together
    batched_gp.uninstall()
    taken = len(batches)
    for ref, got in zip(reference, comparable_traces(table, jobs, 16), strict=True):
        assert got == ref
    assert len(batches) == taken  # the fallback never took the batched path
