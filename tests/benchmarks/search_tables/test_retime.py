"""The retiming: each recorded configuration trained again through `train` until its first
evaluations are timed, once, resumably, a stretch again in a later sitting when asked, and the
replay then reads the table on that clock."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmarks.search_tables import loading, record, retime
from benchmarks.search_tables import table as tables
from benchmarks.search_tables.clock import read_timing


@pytest.mark.slow
def test_each_recorded_configuration_is_timed_once_and_the_replay_reads_that_clock(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "table"
    tiny = ["--table", str(folder), "--tasks", "denoise", "--models", "gru", "--jobs", "1"]
    assert record.main([*tiny, "--configs", "1", "--iterations", "6", "--eval-every", "2"]) == 0
    assert retime.main(["--table", str(folder), "--jobs", "1"]) == 0
    table = tables.read(folder)
    timing = read_timing(folder, table)
    measured = timing.measured["denoise"]["gru"]
    assert (timing.sitting["denoise"]["gru"] == 0).all() and (np.diff(measured, axis=1) > 0).all()
    assert list(timing.sitting) == ["denoise"]
    assert timing.sittings[0]["anchor"] == "denoise/gru/0" and timing.sittings[0]["anchor_pace"] > 0
    capsys.readouterr()
    assert retime.main(["--table", str(folder), "--jobs", "1"]) == 0  # resumed: nothing left
    assert "2 of 2 recorded configurations timed in 1 sittings" in capsys.readouterr().out
    loaded = loading.load(folder, None).curves["denoise"]["gru"]
    np.testing.assert_allclose(loaded.seconds[:, 0, :3], measured)
    np.testing.assert_allclose(loaded.seconds[:, 1, :3], measured)  # one pace for both seeds
    assert retime.main(["--table", str(folder), "--jobs", "1", "--again", "1-1"]) == 0
    timing = read_timing(folder, table)
    assert timing.sitting["denoise"]["gru"].tolist() == [0, 1]  # only the index asked for, afresh
    assert "2 of 2 recorded configurations timed in 2 sittings" in capsys.readouterr().out
