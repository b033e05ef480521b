"""The replay's vectorized TPE arithmetic against Optuna's own: the same function on both tails
and the branches' edges, and replayed sweeps identical with either, on a synthetic table and on
the recorded second table."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import optuna
import pytest
from optuna.samplers._tpe import _truncnorm

from benchmarks.search_tables import fast_tpe
from benchmarks.search_tables import table as tables
from benchmarks.search_tables.loading import load
from benchmarks.search_tables.record import ROOT
from benchmarks.search_tables.tpe_speed import Job, comparable_traces
from tests.benchmarks.search_tables.synthetic import synthetic_table

optuna.logging.set_verbosity(optuna.logging.WARNING)


@pytest.fixture
def plain() -> Iterator[None]:
    fast_tpe.uninstall()
    yield
    fast_tpe.uninstall()


POINTS = np.concatenate([np.linspace(-60, 60, 20001), -np.logspace(-6, 2, 500), np.logspace(-6, 2, 500)])


def test_the_vectorized_log_cdf_is_optunas_to_its_precision(plain: None) -> None:
    expected = _truncnorm._log_ndtr(POINTS)
    got = fast_tpe.vectorized_log_ndtr(POINTS)
    assert got.shape == expected.shape and got.dtype == np.float64
    relative, absolute = fast_tpe.TOLERANCE["_log_ndtr"]
    np.testing.assert_allclose(got, expected, rtol=relative, atol=absolute)
    left = POINTS < 0  # where TPE's masses and draws mostly evaluate it: to a few ulps
    np.testing.assert_allclose(got[left], expected[left], rtol=1e-13, atol=0)


def test_the_vectorized_cdf_is_optunas_to_an_ulp(plain: None) -> None:
    np.testing.assert_allclose(fast_tpe.vectorized_ndtr(POINTS), _truncnorm._ndtr(POINTS), rtol=0, atol=3e-16)


def test_install_routes_tpe_through_it_and_refuses_a_disagreeing_one(
    plain: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast_tpe.install()
    assert (
        _truncnorm._log_ndtr is fast_tpe.vectorized_log_ndtr and _truncnorm._ndtr is fast_tpe.vectorized_ndtr
    )
    fast_tpe.uninstall()
    off = {**fast_tpe.PLAIN, "_ndtr": lambda a: fast_tpe.vectorized_ndtr(a) * 1.01}
    monkeypatch.setattr(fast_tpe, "PLAIN", off)
    with pytest.raises(RuntimeError, match="ndtr differs from Optuna's"):
        fast_tpe.install()
    assert _truncnorm._log_ndtr is not fast_tpe.vectorized_log_ndtr  # nothing half-installed


def _both(table: tables.Table, jobs: list[Job]) -> None:
    reference = comparable_traces(table, jobs, 12)
    fast_tpe.install()
    fast = comparable_traces(table, jobs, 12)
    assert any(t["race_stops"] for t in reference if t["strategy"] == "top2"), "no family raced out"
    for ref, got in zip(reference, fast, strict=True):
        assert got == ref, (ref["task"], ref["strategy"], ref["workers"], ref["seed"])


def test_replayed_sweeps_are_identical_with_it(plain: None, tmp_path: Path) -> None:
    table = synthetic_table(tmp_path / "table")
    _both(
        table,
        [(t, s, 2, seed) for t in table.curves for s in ("default", "top2", "old") for seed in (0,)],
    )


@pytest.mark.slow
def test_replayed_sweeps_of_the_second_table_are_identical_with_it(plain: None) -> None:
    table = load(ROOT / "benchmarks/results/blackbox-hidden", None)
    _both(table, [("denoise", "top2", 4, 0), ("copying", "default", 8, 1), ("copying", "top2", 8, 0)])
