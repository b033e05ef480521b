"""The recorder: runs in design order, resumable, failures kept as data, and no runs of other
training code mixed into a table unless asked."""

from __future__ import annotations

import fcntl
from pathlib import Path

import numpy as np
import pytest

from benchmarks.search_tables import record
from benchmarks.search_tables import table as tables
from tests.benchmarks.search_tables.synthetic import synthetic_table


def _version(**changes: object) -> dict:
    version = {
        "trainables": "abc",
        "device": "cpu",
        "torch": "2.13.0",
        "machine": "a CPU, 2 cores",
        "files": {"trainables/train.py": "1", "trainables/models/goru.py": "2"},
    }
    return {**version, **changes}


def test_runs_of_other_training_code_are_refused_naming_what_changed(tmp_path: Path) -> None:
    table = synthetic_table(tmp_path)
    table.versions[:] = [_version()]
    assert record.version_index(table, _version(), allow_new=False) == 0
    changed = _version(trainables="abd", files={"trainables/train.py": "1", "trainables/models/goru.py": "3"})
    with pytest.raises(tables.TableMismatch, match=r"changed since: trainables/models/goru\.py"):
        record.version_index(table, changed, allow_new=False)
    with pytest.raises(tables.TableMismatch, match=r"device: cpu -> cuda: NVIDIA H100"):
        record.version_index(table, _version(device="cuda: NVIDIA H100"), allow_new=False)
    with pytest.raises(tables.TableMismatch, match=r"machine: a CPU, 2 cores -> another CPU, 2 cores"):
        record.version_index(table, _version(machine="another CPU, 2 cores"), allow_new=False)
    assert record.version_index(table, changed, allow_new=True) == 1 and len(table.versions) == 2


def test_missing_runs_come_in_design_order_across_every_task_and_model(tmp_path: Path) -> None:
    table = synthetic_table(tmp_path)
    for models in table.curves.values():
        for curves in models.values():
            curves.status[1:] = tables.MISSING
    curves = table.curves["copying"]["gru"]
    curves.status[2, 0] = tables.COMPLETE
    runs = list(record.pending(table, ["copying", "denoise"], ["gru", "ncgru"]))
    assert [r.key for r in runs[:6]] == [
        "copying/gru/1/0",
        "copying/ncgru/1/0",
        "denoise/gru/1/0",
        "denoise/ncgru/1/0",
        "copying/gru/1/1",
        "copying/ncgru/1/1",
    ]
    assert "copying/gru/2/0" not in {r.key for r in runs}


def test_a_diverged_run_keeps_its_evaluations_and_why(tmp_path: Path) -> None:
    table = synthetic_table(tmp_path)
    run = record.Run("denoise", "goru", 3, 1)
    outcome = record.Outcome(
        run, tables.DIVERGED, [0.2, 0.19], [1.0, 2.0], [1.1, 2.1], 2.5, "TrialDiverged: loss nan"
    )
    record.store(table, outcome, version=0)
    curves = table.curves["denoise"]["goru"]
    assert curves.status[3, 1] == tables.DIVERGED and curves.ended[3, 1] == 2.5
    np.testing.assert_array_equal(curves.objective[3, 1, :3], [0.2, 0.19, np.nan])
    assert table.reasons["denoise/goru/3/1"] == "TrialDiverged: loss nan"


def test_a_table_cut_to_fewer_points_keeps_their_runs_and_grows_back_to_the_same_design(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from benchmarks.search_tables.clock import TIMING_META
    from benchmarks.search_tables.design import extended

    whole = synthetic_table(tmp_path)
    gru = whole.curves["copying"]["gru"]
    papers = int(gru.paper.sum())
    gru.status[papers + 6, 1] = tables.FAILED
    whole.reasons[f"copying/gru/{papers + 6}/1"] = "RuntimeError: beyond the cut"
    whole.reasons["copying/gru/0/0"] = "TrialDiverged: kept"
    tables.write(whole, tmp_path)
    assert record.main(["--table", str(tmp_path), "--cut-to", "5"]) == 0
    assert "runs kept" in capsys.readouterr().out
    cut = tables.read(tmp_path)
    for task, models in cut.curves.items():
        for model, curves in models.items():
            before = whole.curves[task][model]
            kept = int(before.paper.sum()) + 5
            assert [d["label"] for d in curves.designs] == [d["label"] for d in before.designs[:kept]]
            assert int((~curves.paper).sum()) == 5
            np.testing.assert_array_equal(curves.objective, before.objective[:kept])
            np.testing.assert_array_equal(curves.status, before.status[:kept])
    assert cut.reasons == {"copying/gru/0/0": "TrialDiverged: kept"}
    grown = extended(cut, 8, 2, ["copying"], ["gru"]).curves["copying"]["gru"]
    assert [d["params"] for d in grown.designs] == [d["params"] for d in gru.designs]
    assert (grown.status[papers + 5 :] == tables.MISSING).all()
    assert record.main(["--table", str(tmp_path), "--cut-to", "9"]) == 2
    assert "hold fewer" in capsys.readouterr().err
    (tmp_path / TIMING_META).write_text("{}")
    assert record.main(["--table", str(tmp_path), "--cut-to", "3"]) == 2
    assert "before `retime`" in capsys.readouterr().err
    assert len(tables.read(tmp_path).curves["copying"]["gru"].designs) == papers + 5  # nothing written
    with pytest.raises(SystemExit) as refused:
        record.main(["--table", str(tmp_path), "--cut-to", "0"])
    assert refused.value.code == 2 and "not a count of Sobol points" in capsys.readouterr().err
    assert record.main(["--table", str(tmp_path / "none"), "--cut-to", "3"]) == 2
    assert "holds no table" in capsys.readouterr().err and not (tmp_path / "none").exists()


@pytest.mark.slow
def test_a_recorder_trains_through_train_resumes_and_extends_its_design(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "table"
    tiny = ["--table", str(folder), "--tasks", "denoise", "--models", "gru", "--jobs", "1"]
    assert record.main([*tiny, "--configs", "1", "--iterations", "4", "--eval-every", "2"]) == 0
    table = tables.read(folder)
    gru = table.curves["denoise"]["gru"]
    assert [d["label"] for d in gru.designs] == ["ncgru Table 2, gru, T=200", "sobol 0"]
    assert (gru.status == tables.COMPLETE).all() and np.isfinite(gru.objective).all()
    assert (np.diff(gru.seconds, axis=2) > 0).all() and table.versions[0]["device"] == "cpu"
    assert {t: list(m) for t, m in table.curves.items()} == {"denoise": ["gru"]}  # what was asked for
    first = gru.objective.copy()
    capsys.readouterr()
    assert record.main([*tiny, "--configs", "2"]) == 0
    assert "2 runs to record" in capsys.readouterr().out  # only the new Sobol point's two seeds
    gru = tables.read(folder).curves["denoise"]["gru"]
    np.testing.assert_array_equal(gru.objective[:2], first)
    assert (gru.status == tables.COMPLETE).all() and len(gru.designs) == 3
    assert record.main([*tiny, "--iterations", "6"]) == 2
    with (folder / ".recording").open("w") as other:  # another recorder holds the table
        fcntl.flock(other, fcntl.LOCK_EX)
        assert record.main(tiny) == 2
        assert "another recorder is writing" in capsys.readouterr().err
        assert record.main([*tiny, "--status"]) == 0  # reading the table beside it
        assert "denoise" in capsys.readouterr().out
