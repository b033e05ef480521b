"""The teardown benchmark's clock: a command's wall time, and the wait after its last line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from benchmarks.overheads.teardown import wall_and_tail


def test_the_tail_is_the_time_after_the_last_line(tmp_path: Path) -> None:
    code = (
        "import time; print('first', flush=True); time.sleep(0.2); print('last', flush=True); time.sleep(0.5)"
    )
    wall, tail = wall_and_tail([sys.executable, "-c", code], tmp_path)
    assert 0.5 <= tail < wall and wall >= 0.7


def test_a_failing_command_stops_the_benchmark_with_its_output(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="boom"):
        wall_and_tail([sys.executable, "-c", "import sys; print('boom'); sys.exit(3)"], tmp_path)


def test_no_launch_per_side_is_refused_before_any_launch(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks.overheads.teardown import main

    with pytest.raises(SystemExit) as exited:
        main(["--runs", "0"])
    assert exited.value.code == 2 and "--runs 0" in capsys.readouterr().err
