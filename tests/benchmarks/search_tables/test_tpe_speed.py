"""The fast_tpe benchmark: each strategy replayed both ways, its ratio written, a differing sweep
an exit 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from optuna.samplers._tpe import _truncnorm

from benchmarks.search_tables import fast_tpe, tpe_speed
from tests.benchmarks.search_tables.synthetic import synthetic_table


@pytest.fixture(autouse=True)
def plain_after() -> None:
    yield
    fast_tpe.uninstall()


def test_writes_each_strategys_ratio_and_leaves_optuna_as_it_ships(tmp_path: Path) -> None:
    synthetic_table(tmp_path / "table")
    out = tmp_path / "speed.json"
    args = ["--table", str(tmp_path / "table"), "--strategies", "default", "--trials", "6", "--rounds", "1"]
    assert tpe_speed.main([*args, "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert set(data["strategies"]) == {"default"} and data["sweeps_per_side"] == 4
    row = data["strategies"]["default"]
    assert row["ratio"] == pytest.approx(row["plain_cpu_s"] / row["fast_cpu_s"])
    assert all(getattr(_truncnorm, name) is plain for name, plain in fast_tpe.PLAIN.items())


def test_a_sweep_that_differs_exits_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synthetic_table(tmp_path / "table")
    monkeypatch.setitem(fast_tpe.FAST, "_log_ndtr", lambda a: fast_tpe.log_ndtr(a) * 1.05)
    monkeypatch.setitem(fast_tpe.TOLERANCE, "_log_ndtr", (1.0, 1.0))
    args = ["--table", str(tmp_path / "table"), "--strategies", "default", "--trials", "12", "--rounds", "1"]
    assert tpe_speed.main(args) == 1


def test_a_folder_without_a_table_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert tpe_speed.main(["--table", str(tmp_path), "--out", str(tmp_path / "speed.json")]) == 2
    assert str(tmp_path) in capsys.readouterr().err and not (tmp_path / "speed.json").exists()
