"""The test worker's Ray head (`tests.ray_head`): a launch given its address runs its driver and its
trials there, on the head's one node, and the head outlives the launch, for the next test's."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.helpers import cli_env, start_cli, tiny_spec, write_spec
from tests.ray_head import HEAD_CPUS

pytestmark = pytest.mark.slow

# the CPUs of the Ray at argv[1], joined as a driver
CLUSTER_CPUS = "import sys, ray; ray.init(address=sys.argv[1]); print(ray.cluster_resources()['CPU'])"


def test_a_launch_given_the_address_runs_on_the_head_which_outlives_it(ray_head, tmp_path) -> None:
    spec = tiny_spec(
        name="joined", models=("gru",), scheduler="none", budget={"trials": 1, "max_concurrent": 1}
    )
    spec["params"].update(iterations=10, eval_every=10)
    args = ["launch", str(write_spec(tmp_path, spec)), "--no-price", *ray_head.args]
    launch = start_cli(args, tmp_path, cli_env(ray_head.env))
    output, _ = launch.communicate(timeout=300)
    assert launch.returncode == 0 and "sweep joined-1: finished" in output, output

    # a driver and the workers on a node write their logs into that node's session folder
    logs = ray_head.temp_dir / "session_latest" / "logs"
    (driver,) = logs.glob(f"python-core-driver-*_{launch.pid}.log")
    job = driver.name.removeprefix("python-core-driver-")[:8]  # a driver's id begins with its job's
    trials = [log for log in logs.glob(f"worker-*-{job}-*.out") if "ImplicitFunc" in log.read_text()]
    assert trials, f"no worker of job {job} ran a trial: {sorted(p.name for p in logs.iterdir())}"

    os.kill(ray_head.pid, 0)  # the head's `ray start` still runs, and a driver still joins it
    joined = subprocess.run(
        [sys.executable, "-c", CLUSTER_CPUS, ray_head.address],
        env=cli_env(ray_head.env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert joined.returncode == 0, joined.stderr[-3000:]
    assert float(joined.stdout.split()[-1]) == HEAD_CPUS
