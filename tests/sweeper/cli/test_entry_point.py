"""The console script's exit: the command's status and exit handlers kept, the interpreter's
teardown skipped only after an exit of the command's own."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

PROBE = textwrap.dedent(
    """
    import atexit, sys
    import click
    from sweeper.cli import main, run

    class Teardown:
        def __del__(self):
            print("teardown ran", flush=True)

    kept = Teardown()  # freed by the interpreter's teardown, if it runs

    @main.command("probe")
    @click.argument("how")
    def probe(how):
        atexit.register(lambda: print("handler ran", flush=True))
        print("buffered line", end="")  # left in stdout's buffer
        if how == "raise":
            raise RuntimeError("boom")
        return {"ok": 0, "fail": 1}[how]

    sys.argv = ["sweeper", "probe", *sys.argv[1:]]
    run()
    """
)


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    return subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_a_finished_command_keeps_its_status_handlers_and_output_but_not_the_teardown(tmp_path: Path) -> None:
    for how, code in (("ok", 0), ("fail", 1)):
        done = _run(tmp_path, how)
        assert done.returncode == code, done.stderr
        assert done.stdout.startswith("buffered line") and "handler ran" in done.stdout
        assert "teardown ran" not in done.stdout


def test_a_usage_error_exits_2_the_same_way(tmp_path: Path) -> None:
    done = _run(tmp_path, "ok", "extra")
    assert done.returncode == 2 and "error:" in done.stderr
    assert "teardown ran" not in done.stdout


def test_an_exit_that_is_not_the_commands_own_keeps_the_teardown(tmp_path: Path) -> None:
    done = _run(tmp_path, "raise")
    assert done.returncode == 1 and "RuntimeError: boom" in done.stderr
    assert "handler ran" in done.stdout and "teardown ran" in done.stdout
