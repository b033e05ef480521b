"""One clock for the table: runs recorded at any speed are timed by their configuration's measured
pace, later sittings scaled onto the first by the anchor, and a table not fully re-timed refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmarks.search_tables import loading
from benchmarks.search_tables import table as tables
from benchmarks.search_tables.clock import Timing, clock_text, on_one_clock, read_timing, write_timing
from tests.benchmarks.search_tables.synthetic import SPEED, run_seconds, synthetic_table


def _timed(table: tables.Table, anchor: float = 1.0) -> Timing:
    """Every configuration measured at its model's synthetic pace, in one sitting."""
    timing = Timing.empty(table)
    timing.sittings.append(
        {"machine": "synthetic", "device": "cpu", "first_run": "today", "anchor_pace": anchor}
    )
    for task, models in timing.measured.items():
        for model, measured in models.items():
            measured[:] = [run_seconds(model, 100 * (e + 1)) for e in range(timing.evaluations)]
            timing.sitting[task][model][:] = 0
    return timing


def test_runs_recorded_at_other_speeds_take_their_configurations_measured_pace(tmp_path: Path) -> None:
    table = synthetic_table(tmp_path)
    gru = table.curves["copying"]["gru"]
    gru.seconds[1] *= 3  # recorded on a machine three times slower
    gru.ended[1] *= 3
    gru.seconds[2, :, -1] += 0.5 * SPEED["gru"] * 100  # its last interval half as long again
    gru.ended[2] = gru.seconds[2, :, -1]
    timed = on_one_clock(table, _timed(table)).curves["copying"]["gru"]
    expected = [run_seconds("gru", int(step)) for step in table.steps]
    for config in (0, 1):
        np.testing.assert_allclose(timed.seconds[config], [expected, expected])
        np.testing.assert_allclose(timed.ended[config], expected[-1])
    np.testing.assert_allclose(timed.seconds[2, 0, -1], expected[-1] + 0.5 * SPEED["gru"] * 100)
    np.testing.assert_array_equal(timed.objective, gru.objective)


def test_a_later_sitting_is_scaled_onto_the_first_by_its_anchor(tmp_path: Path) -> None:
    table = synthetic_table(tmp_path)
    timing = _timed(table)
    timing.sittings.append({**timing.sittings[0], "anchor_pace": 2.0})  # a machine twice as slow
    timing.measured["denoise"]["goru"][3] *= 2
    timing.sitting["denoise"]["goru"][3] = 1
    timed = on_one_clock(table, timing).curves["denoise"]["goru"]
    np.testing.assert_allclose(timed.seconds[3], timed.seconds[4])


def test_a_diverged_run_ends_on_the_new_clock_and_a_missing_one_stays_missing(tmp_path: Path) -> None:
    table = synthetic_table(tmp_path)
    ncgru = table.curves["denoise"]["ncgru"]
    ncgru.objective[0, 1, 2:] = np.nan  # diverged between its second and third report
    ncgru.seconds[0, 1, 2:] = np.nan
    ncgru.status[0, 1] = tables.DIVERGED
    ncgru.ended[0, 1] = ncgru.seconds[0, 1, 1] + 0.5
    ncgru.seconds[0, 1, :2] *= 2  # recorded twice as slow
    ncgru.ended[0, 1] *= 2
    ncgru.status[1, 0] = tables.MISSING
    ncgru.objective[1, 0] = ncgru.seconds[1, 0] = np.nan
    timed = on_one_clock(table, _timed(table)).curves["denoise"]["ncgru"]
    np.testing.assert_allclose(
        timed.seconds[0, 1, :2], [run_seconds("ncgru", 100), run_seconds("ncgru", 200)]
    )
    assert np.isnan(timed.seconds[0, 1, 2:]).all()
    np.testing.assert_allclose(timed.ended[0, 1], run_seconds("ncgru", 200) + 0.5)
    assert np.isnan(timed.seconds[1, 0]).all() and np.isnan(timed.ended[1, 0])


def test_a_table_not_wholly_re_timed_is_refused_naming_what_is_left(tmp_path: Path) -> None:
    table = synthetic_table(tmp_path)
    timing = _timed(table)
    timing.sitting["copying"]["scornn"][5] = -1
    with pytest.raises(
        tables.TableMismatch, match=r"copying/scornn: 1 recorded configurations are not re-timed"
    ):
        on_one_clock(table, timing)
    assert timing.pending(table) == [("copying", "scornn", 5)]
    table.curves["copying"]["scornn"].status[5] = tables.MISSING  # nothing recorded: nothing to time
    assert timing.pending(table) == []
    on_one_clock(table, timing)


def test_the_replay_reads_the_timing_beside_the_table_and_says_which_clock(tmp_path: Path) -> None:
    table = synthetic_table(tmp_path)
    assert clock_text(tmp_path) == "each run's own recorded worker-seconds"
    table.curves["copying"]["gru"].seconds *= 3
    tables.write(table, tmp_path)
    write_timing(_timed(table), tmp_path)
    assert read_timing(tmp_path, table).sittings[0]["anchor_pace"] == 1.0
    loaded = loading.load(tmp_path, None).curves["copying"]["gru"]
    np.testing.assert_allclose(loaded.seconds[0, 0, -1], run_seconds("gru", 600))
    assert clock_text(tmp_path) == "every configuration re-timed in 1 sitting (synthetic, cpu, today)"
    grown = synthetic_table(tmp_path / "grown", configs=9)
    with pytest.raises(tables.TableMismatch, match="measured for another design"):
        read_timing(tmp_path, grown)
