"""The recorded table: read back as written, missing and failed runs counted as such, partial
writes read as missing runs, and a table of another space or format refused with the difference."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks.search_tables import table as tables
from benchmarks.search_tables.loading import load
from tests.benchmarks.search_tables.synthetic import SETTINGS, synthetic_table


def test_a_missing_and_a_diverged_run_are_read_and_counted_as_such(tmp_path: Path) -> None:
    table = synthetic_table(tmp_path)
    gru = table.curves["copying"]["gru"]
    gru.status[1, 0] = tables.MISSING
    gru.objective[1, 0] = np.nan
    gru.status[2, 1] = tables.DIVERGED
    gru.objective[2, 1, 3:] = np.nan
    table.reasons["copying/gru/2/1"] = "TrialDiverged: loss nan at step 350"
    tables.write(table, tmp_path)
    again = tables.read(tmp_path)
    counts = again.counts()
    runs = sum(c.status.size for m in again.curves.values() for c in m.values())
    assert counts["missing"] == 1 and counts["diverged"] == 1 and counts["complete"] == runs - 2
    np.testing.assert_array_equal(again.curves["copying"]["gru"].objective, gru.objective)
    assert again.reasons["copying/gru/2/1"].startswith("TrialDiverged")
    assert json.loads((tmp_path / tables.META).read_text())["runs"] == counts


def test_arrays_shorter_than_the_design_read_as_runs_still_missing(tmp_path: Path) -> None:
    """A recorder stopped between its two writes leaves the new metadata beside the old arrays."""
    table = synthetic_table(tmp_path, configs=4)
    arrays = dict(np.load(tmp_path / tables.CURVES))
    longer = synthetic_table(tmp_path, configs=6)
    np.savez_compressed(tmp_path / tables.CURVES, **arrays)
    read = tables.read(tmp_path)
    gru = read.curves["copying"]["gru"]
    assert len(gru.designs) == len(longer.curves["copying"]["gru"].designs)
    assert (gru.status[: len(table.curves["copying"]["gru"].designs)] == tables.COMPLETE).all()
    assert (gru.status[len(table.curves["copying"]["gru"].designs) :] == tables.MISSING).all()


def test_a_prefix_of_the_table_is_a_table_of_shorter_trials(tmp_path: Path) -> None:
    table = synthetic_table(tmp_path)
    gru = table.curves["denoise"]["gru"]
    gru.status[0, 0] = tables.DIVERGED
    gru.objective[0, 0, 4:] = np.nan
    short = tables.truncated(table, 300)
    assert short.settings.iterations == 300 and list(short.steps) == [100, 200, 300]
    cut = short.curves["denoise"]["gru"]
    assert cut.objective.shape[2] == 3 and cut.status[0, 0] == tables.COMPLETE  # it diverged after 400
    assert cut.ended[0, 0] == gru.seconds[0, 0, 2]
    with pytest.raises(tables.TableMismatch, match="no prefix"):
        tables.truncated(table, 250)


def test_a_configuration_is_replayed_once_every_seed_of_it_is_recorded(tmp_path: Path) -> None:
    """A recorder records a configuration seed by seed: one seen on some seeds is not yet in the
    replayed table (its truth would average other seeds than the rest's), and a failed run counts."""
    table = synthetic_table(tmp_path)
    gru = table.curves["copying"]["gru"]
    gru.status[3, 1], gru.objective[3, 1] = tables.MISSING, np.nan
    gru.status[4, 0] = tables.FAILED
    tables.write(table, tmp_path)
    read = load(tmp_path, None).curves["copying"]["gru"]
    assert (read.status[3] == tables.MISSING).all() and np.isnan(read.objective[3]).all()
    assert np.isnan(read.seconds[3]).all() and np.isnan(read.ended[3]).all()
    assert list(read.status[4]) == [tables.FAILED, tables.COMPLETE]
    others = np.delete(np.arange(len(read.designs)), 3)
    np.testing.assert_array_equal(read.objective[others], gru.objective[others])


def test_a_table_over_another_space_is_refused_naming_the_difference(tmp_path: Path) -> None:
    table = synthetic_table(tmp_path)
    table.spaces["denoise"]["ncgru"]["reset_interval"] = "int [10, 200] log"
    tables.write(table, tmp_path)
    with pytest.raises(tables.TableMismatch) as refused:
        load(tmp_path, None)
    assert (
        "denoise/ncgru reset_interval: the table's int [10, 200] log, the benchmark's int [10, 100] log"
        in str(refused.value)
    )


def test_a_table_of_another_format_or_mixed_devices_is_refused(tmp_path: Path) -> None:
    table = synthetic_table(tmp_path)
    table.versions.append({**table.versions[0], "device": "cuda: NVIDIA H100"})
    table.curves["copying"]["gru"].version[0, 0] = 1
    tables.write(table, tmp_path)
    with pytest.raises(tables.TableMismatch, match=r"timed on cpu .* and cuda: NVIDIA H100"):
        load(tmp_path, None)
    meta = json.loads((tmp_path / tables.META).read_text())
    (tmp_path / tables.META).write_text(json.dumps({**meta, "format": 0}))
    with pytest.raises(tables.TableMismatch, match="format 0; this code reads format 2"):
        tables.read(tmp_path)


def test_recording_other_settings_into_a_table_is_refused(tmp_path: Path) -> None:
    table = synthetic_table(tmp_path)
    with pytest.raises(tables.TableMismatch, match="iterations: the table's 600, asked 2000"):
        tables.check_settings(table, tables.Settings(iterations=2000, eval_every=SETTINGS.eval_every))
