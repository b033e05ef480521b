"""The GPU pace rule: fitted per model to the recorded per-shape figures, every shape left out
and predicted from the rest, the paper trials predicted too, and the price's bounds the ratios
over both; written into the service's paces with their packing kept."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchmarks.gpu import pace_rule
from sweeper.run.pricing import rule_ms


def test_the_rule_is_fitted_checked_and_bounds_every_shape_left_out(tmp_path: Path) -> None:
    paces = tmp_path / "gpu_paces.json"
    shutil.copy(pace_rule.PACES, paces)
    out = tmp_path / "rule.json"
    assert pace_rule.main(["--out", str(out), "--paces", str(paces)]) == 0
    result = json.loads(out.read_text())
    written = json.loads(paces.read_text())
    assert (
        written["models"]["gru"]["packed"]
        == json.loads(pace_rule.PACES.read_text())["models"]["gru"]["packed"]
    )
    for model, checked in result["models"].items():
        rule = written["models"][model]["rule"]
        low, high = rule["within"]
        ratios = [r["ratio"] for r in checked["left_out"]] + [
            checked.get("paper_trial", {}).get("ratio", 1.0)
        ]
        assert low <= min(ratios) and max(ratios) <= high, model
        # the service computes the rule as the fit does
        assert rule_ms(rule, 200, 128) == pytest.approx(pace_rule.ms(rule, 200, 128))
    assert result["command"] == f"python -m benchmarks.gpu.pace_rule --out {out} --paces {paces}"
    assert result["machine"]["device"] == "cpu"  # where the fit ran; `device` names the GPU timed
