"""Two recordings of one design are paired run by run: how far each run's best value moved, whether
the runs kept their order, and only runs complete in both count."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks.search_tables import agreement
from benchmarks.search_tables import table as tables
from tests.benchmarks.search_tables.synthetic import synthetic_table


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    first = tmp_path / "cpu"
    synthetic_table(first)
    second = synthetic_table(tmp_path / "gpu")
    copying = second.curves["copying"]
    copying["gru"].objective *= 1.02  # every run 2% worse
    copying["goru"].objective = (
        copying["goru"].objective.max() + 1 - copying["goru"].objective
    )  # order reversed
    copying["scornn"].status[0, :] = tables.MISSING  # not yet recorded here
    copying["scornn"].seconds *= 0.25
    copying["scornn"].ended *= 0.25
    tables.write(second, tmp_path / "gpu")
    return first, tmp_path / "gpu"


def test_runs_are_paired_and_compared(pair: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "rows.json"
    assert agreement.main([str(pair[0]), str(pair[1]), "--out", str(out)]) == 0
    rows = {(r["task"], r["model"]): r for r in json.loads(out.read_text())}
    first = tables.read(pair[0])
    runs = first.curves["copying"]["gru"].status.size
    gru, goru, scornn = (rows["copying", m] for m in ("gru", "goru", "scornn"))
    assert gru["runs"] == runs and gru["median_relative_difference"] == pytest.approx(0.02)
    assert gru["spearman"] == pytest.approx(1.0)
    assert goru["spearman"] < -0.9  # the order of the runs' best values reversed
    assert scornn["runs"] == runs - first.seeds  # the configuration missing in one table is left out
    assert scornn["median_relative_difference"] == 0
    assert scornn["seconds_second"] == pytest.approx(0.25 * scornn["seconds_first"])
    assert rows["denoise", "ncgru"]["largest_relative_difference"] == 0


def test_tables_of_different_designs_are_refused(
    pair: tuple[Path, Path], capsys: pytest.CaptureFixture
) -> None:
    other = tables.read(pair[1])
    designs = other.curves["denoise"]["gru"].designs
    designs[0] = {**designs[0], "config": {**designs[0]["config"], "lr": 0.5}}
    tables.write(other, pair[1])
    assert agreement.main([str(pair[0]), str(pair[1])]) == 2
    assert "different designs" in capsys.readouterr().err


def test_rank_correlation_needs_three_runs() -> None:
    assert np.isnan(agreement.spearman(np.array([1.0, 2.0]), np.array([2.0, 1.0])))
    assert agreement.spearman(np.array([3.0, 1.0, 2.0]), np.array([30.0, 10.0, 20.0])) == pytest.approx(1.0)


def test_a_best_value_of_zero_moves_by_nothing_or_without_bound() -> None:
    moved = agreement.relative_difference(np.array([0.0, 0.0, 2.0]), np.array([0.0, 1.0, 3.0]))
    assert moved.tolist() == [0.0, float("inf"), 0.5]


def test_tables_with_other_models_are_refused(pair: tuple[Path, Path], capsys: pytest.CaptureFixture) -> None:
    other = tables.read(pair[1])
    del other.curves["copying"]["ncgru"]
    tables.write(other, pair[1])
    assert agreement.main([str(pair[0]), str(pair[1])]) == 2
    assert "different designs" in capsys.readouterr().err


def test_a_folder_without_a_table_is_named(pair: tuple[Path, Path], capsys: pytest.CaptureFixture) -> None:
    missing = pair[1].parent / "nowhere"
    assert agreement.main([str(pair[0]), str(missing)]) == 2
    assert f"{missing} holds no table" in capsys.readouterr().err
