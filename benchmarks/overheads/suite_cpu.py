"""Where the test suite's time goes: its wall time, how many cores were busy, and the CPU-seconds
of each test module.

`time` on pytest counts only the processes pytest waits for; the Ray nodes the tests start run as
daemons outside that tree, so it reads the suite as waiting when the cores are busy with Ray. This
reads the whole machine's CPU from /proc/stat once a second, and each test's start and end from
the pytest-xdist workers (a plugin, `suite_timeline`), and gives each second's busy CPU to the
tests running in it, shared equally (a test alone in a second gets all of it). What ran besides
the suite (the databases, an idle machine's daemons) is measured for 10 s before and reported.

    python -m benchmarks.overheads.suite_cpu                      # the whole suite, as the README runs it
    python -m benchmarks.overheads.suite_cpu -- -n 3              # with pytest options of its own
    python -m benchmarks.overheads.suite_cpu -- tests/sweeper/run/search   # a part of it
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

from benchmarks import figures_file
from benchmarks.overheads.suite_timeline import TIMELINE_ENV

ROOT = Path(__file__).resolve().parents[2]


def cpu_jiffies() -> tuple[int, int]:
    """The machine's CPU time since boot, in all and idle (idle and waiting on I/O)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return sum(fields), fields[3] + fields[4]


class Sampler(threading.Thread):
    """The cores busy in each second (the last one cut where it stops), as (start, end, cores)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.samples: list[tuple[float, float, float]] = []
        self.stopped = threading.Event()
        self.cores = os.cpu_count() or 1

    def run(self) -> None:
        before, since = cpu_jiffies(), time.time()
        while True:
            stopping = self.stopped.wait(1.0)
            now, at = cpu_jiffies(), time.time()
            total, idle = now[0] - before[0], now[1] - before[1]
            if total:
                self.samples.append((since, at, self.cores * (total - idle) / total))
            before, since = now, at
            if stopping:
                return

    def busy(self) -> float:
        """The mean cores busy over the time sampled."""
        seconds = sum(end - start for start, end, _ in self.samples)
        return sum((end - start) * c for start, end, c in self.samples) / seconds if seconds else 0.0


def background(seconds: float) -> float:
    """The cores busy while nothing of the suite runs."""
    sampler = Sampler()
    sampler.start()
    time.sleep(seconds)
    sampler.stopped.set()
    sampler.join()
    return sampler.busy()


def module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def attribute(spans: list[dict], samples: list[tuple[float, float, float]]) -> dict[str, float]:
    """Each module's CPU-seconds: every second's busy cores shared among the tests running in it."""
    cpu: dict[str, float] = defaultdict(float)
    for start, end, cores in samples:
        running = [s for s in spans if s["start"] < end and s["stop"] > start]
        for span in running:
            overlap = min(span["stop"], end) - max(span["start"], start)
            cpu[module_of(span["id"])] += cores * overlap / len(running)
    return dict(cpu)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("pytest_args", nargs="*", help="after --: pytest's own options and paths")
    parser.add_argument("--out", type=Path, help="default: benchmarks/results/suite-cpu.json")
    parser.add_argument("--idle-seconds", type=float, default=10.0, help="the machine measured before")
    args = parser.parse_args(argv)
    idle = background(args.idle_seconds)
    with tempfile.TemporaryDirectory(prefix="suite-timeline-") as folder:
        env = {**os.environ, TIMELINE_ENV: folder}
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(ROOT / "benchmarks" / "overheads"), env.get("PYTHONPATH")])
        )
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "suite_timeline"]
        sampler = Sampler()
        sampler.start()
        started, usage = time.time(), os.times()
        done = subprocess.run([*command, *args.pytest_args], cwd=ROOT, env=env, check=False)
        wall, after = time.time() - started, os.times()
        sampler.stopped.set()
        sampler.join()
        spans = [
            json.loads(line)
            for path in Path(folder).glob("*.jsonl")
            for line in path.read_text().splitlines()
        ]
    tree = (after.children_user - usage.children_user) + (after.children_system - usage.children_system)
    busy = sampler.busy()
    modules = attribute(spans, sampler.samples)
    ranked = sorted(modules.items(), key=lambda item: -item[1])
    figures = {
        "pytest_args": args.pytest_args,
        "exit_code": done.returncode,
        "wall_s": wall,
        "cores": sampler.cores,
        "cores_busy": busy,
        "cores_busy_before": idle,
        "cpu_s": busy * wall,
        "pytest_tree_cpu_s": tree,
        "pytest_tree_cores_busy": tree / wall,
        "loop_s": figures_file.loop_seconds(),
        "modules": [{"module": m, "cpu_s": s} for m, s in ranked],
        # collection, the workers' start and the gaps between tests, where no test ran
        "unattributed_cpu_s": busy * wall - sum(modules.values()),
    }
    print(
        f"wall {wall:.0f} s; {busy:.2f} of {sampler.cores} cores busy ({idle:.2f} before it ran); "
        f"{busy * wall:.0f} CPU-s, of which pytest's own processes {tree:.0f} ({tree / wall:.2f} cores)"
    )
    for module, seconds in ranked[:15]:
        print(f"  {seconds:7.0f} CPU-s  {module}")
    print(f"  {figures['unattributed_cpu_s']:7.0f} CPU-s  while no test ran (collection, starts, gaps)")
    figures_file.write("suite-cpu", "cpu", figures, args.out)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
