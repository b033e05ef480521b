"""The command runs as `sweeper`, `python -m sweeper` and `python -m sweeper.cli` alike."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("module", ["sweeper", "sweeper.cli"])
def test_python_dash_m_runs_the_command(module: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", module, "--help"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "Hyperparameter sweeps of gated and orthogonal RNNs" in done.stdout
    assert all(command in done.stdout for command in ("launch", "reproduce", "summarize", "train", "job"))
