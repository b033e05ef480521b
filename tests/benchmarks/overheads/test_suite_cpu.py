"""The suite's CPU by module: each second's busy cores shared among the tests running in it, read
from a real pytest run through the timeline plugin."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.overheads import suite_cpu


def test_each_second_s_cpu_is_shared_among_the_tests_running_in_it() -> None:
    spans = [
        {"id": "tests/a.py::one", "start": 0.0, "stop": 2.0},
        {"id": "tests/b.py::two", "start": 1.0, "stop": 3.0},
    ]
    samples = [(0.0, 1.0, 2.0), (1.0, 2.0, 1.0), (2.0, 3.0, 0.5), (3.0, 4.0, 2.0)]  # the last: no test ran
    shares = suite_cpu.attribute(spans, samples)
    assert shares == pytest.approx({"tests/a.py": 2.0 + 0.5, "tests/b.py": 0.5 + 0.5})


@pytest.mark.slow
def test_a_run_writes_its_wall_cores_and_each_module_s_cpu(tmp_path: Path) -> None:
    busy = tmp_path / "test_busy.py"
    busy.write_text(  # two seconds of one core, on a machine of any speed
        "import time\n\ndef test_spins():\n    start = time.process_time()\n"
        "    while time.process_time() - start < 2.0:\n        pass\n"
    )
    out = tmp_path / "suite-cpu.json"
    assert suite_cpu.main(["--out", str(out), "--idle-seconds", "1", "--", str(busy), "-n", "0"]) == 0
    figures = json.loads(out.read_text())["figures"]
    assert figures["exit_code"] == 0 and figures["wall_s"] > 0
    assert [Path(m["module"]).name for m in figures["modules"]] == [busy.name]
    assert figures["modules"][0]["cpu_s"] > 1.0  # seconds of one core spinning
    assert figures["pytest_tree_cpu_s"] > figures["modules"][0]["cpu_s"] / 2
