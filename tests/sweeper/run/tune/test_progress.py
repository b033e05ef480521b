"""Progress where the output is not a terminal: plain lines at a steady cadence."""

from __future__ import annotations

import io

from sweeper.run.tune.progress import ProgressDisplay


def test_a_log_file_gets_plain_lines_at_a_steady_cadence() -> None:
    rows = [
        {"model": "gru", "complete": 2, "pruned": 1, "fail": 1, "running": 1, "budget": 6, "best": 0.0812},
        {"model": "lstm", "complete": 0, "pruned": 0, "fail": 0, "running": 1, "budget": 6, "best": None},
    ]
    log = io.StringIO()
    display = ProgressDisplay("sweep-1", lambda: rows, lambda: 12.0, stream=log, every=3600)
    with display:
        display.refresh()  # within the cadence: nothing
    lines = log.getvalue().splitlines()
    assert len(lines) == 2  # when it starts and when it ends
    assert "sweep-1: 12s, 4 of 12 trials finished (1 failed), 2 running; best: gru 0.0812" in lines[-1]
    assert "\x1b[" not in log.getvalue()  # no terminal control codes in a log file
