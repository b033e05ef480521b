"""Worker-slot utilization of a 3-model sweep on a simulated 2-node Ray cluster.

Two Ray nodes on this host (`ray.cluster_utils.Cluster`, one CPU each, the GCS on a free port
rather than Redis's 6379) run a sweep of gru, lstm and scornn over the `fixed_work` task with
trials of unequal length (10 to 80 steps of sleep, ASHA cutting the weak ones at 10, 20 and 40),
through `create_sweep` and `run_sweep` with a throw-away PostgreSQL study database (SQLite is
refused for more than one node), created here and dropped afterwards.

Utilization is the fraction of worker-slot time spent inside trials (from a trial's task being
built to its last report, as the trials themselves record it), up to the moment the last trial
is handed out: after it, idle slots only mean the budget is spent. It is printed from the sweep's
start (Tune's and the workers' start-up included) and from the first trial's start.

    python -m benchmarks.overheads.utilization           # 15 trials per model
    python -m benchmarks.overheads.utilization --quick   # 6 trials per model
    python -m benchmarks.overheads.utilization --postgres postgresql+psycopg2://user@host:5432/admin_db
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa

from benchmarks.overheads.sweep_runs import (
    SweepRun,
    fixed_work_spec,
    handoff_gaps,
    run_sweep_in_process,
    use_plugin,
)

MODELS = ["gru", "lstm", "scornn"]
STEP_SECONDS = 0.05
NODES = 2


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def throwaway_database(admin_url: str) -> Iterator[str]:
    """A fresh PostgreSQL database for this run, dropped afterwards even if the run fails."""
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    name = f"sweeper_bench_{uuid.uuid4().hex[:10]}"
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        yield sa.engine.make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@contextmanager
def two_node_cluster() -> Iterator[str]:
    """Two one-CPU Ray nodes on this host; yields the head's address.

    They use the host's own address: the driver rewrites a loopback address to it when it
    connects, and then finds no GCS listening there. Their environment preloads the trial
    workers as `deploy/` does on Kubernetes.
    """
    from ray.cluster_utils import Cluster

    from sweeper.run.tune.workers import node_environment

    for name, value in node_environment().items():
        os.environ.setdefault(name, value)

    head = {"num_cpus": 1, "gcs_server_port": free_port()}
    cluster = Cluster(initialize_head=True, head_node_args=head)
    try:
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        yield cluster.address
    finally:
        import ray

        ray.shutdown()
        cluster.shutdown()


def utilization(run: SweepRun, slots: int, since: float) -> float:
    """Share of `slots` × [since, last trial's start] that trials were running."""
    until = max(t.started for t in run.trials)
    busy = sum(max(0.0, min(t.reported, until) - max(t.started, since)) for t in run.trials)
    return busy / (slots * (until - since))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="6 trials per model instead of 15")
    parser.add_argument(
        "--postgres",
        default=os.environ.get("SWEEPER_TEST_POSTGRES", "postgresql+psycopg2://postgres@127.0.0.1:5432/test"),
        help="a PostgreSQL URL allowed to create and drop databases",
    )
    args = parser.parse_args()
    use_plugin()
    from sweeper.run.tune.runtime import quiet_environment

    quiet_environment(verbose=False)
    trials = 6 if args.quick else 15
    spec = fixed_work_spec(
        "utilization",
        MODELS,
        trials,
        NODES,
        {"kind": "sleep", "step_seconds": STEP_SECONDS},
        iterations={"int": [10, 80]},
        eval_every=10,
        grace_period=10,
    )
    with (
        throwaway_database(args.postgres) as storage,
        two_node_cluster() as address,
        tempfile.TemporaryDirectory(prefix="sweeper-utilization-") as tmp,
    ):
        run = run_sweep_in_process(spec, storage, Path(tmp), address)
    lengths = [t.reported - t.started for t in run.trials]
    gaps = handoff_gaps(run.trials)
    first = min(t.started for t in run.trials)
    print(
        f"{len(run.trials)} trials ({', '.join(f'{m}: {sum(t.model == m for t in run.trials)}' for m in MODELS)}) "
        f"on {NODES} nodes x 1 slot, status {run.status}, {len({t.pid for t in run.trials})} worker processes"
    )
    print(
        f"trial length: {min(lengths):.2f} to {max(lengths):.2f} s (median {statistics.median(lengths):.2f}); "
        f"gap between trials in one process: median {statistics.median(gaps):.2f} s, max {max(gaps):.2f} s"
    )
    print(
        f"sweep: registered in {run.create_s:.1f} s, ran {run.run_s:.1f} s; first trial after {first - run.started - run.create_s:.1f} s"
    )
    print(
        f"utilization until the last trial is handed out, from the sweep's start: {utilization(run, NODES, run.started + run.create_s):.1%}"
    )
    print(
        f"utilization until the last trial is handed out, from the first trial:  {utilization(run, NODES, first):.1%}"
    )


if __name__ == "__main__":
    main()
