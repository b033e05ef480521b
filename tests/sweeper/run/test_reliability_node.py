"""A worker node lost mid-trial: Tune restarts the trial on another node from its last checkpoint,
and the sweep finishes with the trial COMPLETE."""

from __future__ import annotations

import time

import pytest
from optuna.trial import TrialState

from sweeper.store.trial_record import FINAL_METRICS_ATTR
from tests.helpers import cli_env, free_port, start_cli, tiny_spec, write_spec
from tests.sweeper.run.test_sweep_end_to_end import studies

pytestmark = [pytest.mark.slow, pytest.mark.postgres]
ITERATIONS = 1000
LOST_AT = 300  # the node is lost at this step or later: near a third is done before, 700 steps after


def test_worker_node_lost_trial_retried_from_checkpoint(postgres_url, tmp_path):
    from ray.cluster_utils import Cluster

    # the nodes' workers compute at the test's priority: at Ray's default niceness of 15 a trial
    # beside other CPU-bound work gets a few percent of a core and crawls
    head = {
        "num_cpus": 0,
        "gcs_server_port": free_port(),
        "include_dashboard": False,  # nothing here reads it; it would start its own modules' processes
        # the lost node is declared dead after two missed health checks a second apart, not
        # Ray's default five at three seconds: the rest of the test waits on that declaration
        "_system_config": {
            "worker_niceness": 0,
            "health_check_period_ms": 1000,
            "health_check_failure_threshold": 2,
        },
    }
    cluster = Cluster(initialize_head=True, head_node_args=head)
    try:
        worker = cluster.add_node(num_cpus=1)
        spec = tiny_spec(
            name="nodeloss", models=["gru"], scheduler="none", budget={"trials": 1, "retries": 2}
        )
        spec["params"].update(iterations=ITERATIONS, eval_every=100, checkpoint_every=1, hidden_size=16)
        config = write_spec(tmp_path, spec)
        env = cli_env()
        env.pop("SWEEPER_PLUGINS")  # the cluster's workers were not started with the test plugins' path
        process = start_cli(
            ["launch", str(config), "--storage", postgres_url, "--address", cluster.address, "--no-price"],
            tmp_path,
            env,
        )
        reached = 0  # however long a slow machine takes to get there (pytest's timeout bounds it)
        while process.poll() is None:
            time.sleep(0.5)
            try:
                (trials,) = studies(postgres_url, "nodeloss-1").values()
            except Exception:
                continue
            reached = max((max(t.intermediate_values, default=0) for t in trials), default=0)
            if reached >= LOST_AT:
                break
        assert process.poll() is None and reached >= LOST_AT, (
            process.stdout.read() if process.poll() else reached
        )
        cluster.remove_node(worker, allow_graceful=False)
        cluster.add_node(num_cpus=1)
        output, _ = process.communicate()  # however long it takes: pytest's timeout bounds it
        assert process.returncode == 0, output
    finally:
        cluster.shutdown()

    (trials,) = studies(postgres_url, "nodeloss-1").values()
    (trial,) = trials
    assert trial.state == TrialState.COMPLETE
    restored = trial.user_attrs[FINAL_METRICS_ATTR]["restored_from_step"]
    assert 100 <= restored < ITERATIONS and restored % 100 == 0
    assert sorted(trial.intermediate_values) == list(range(100, ITERATIONS + 1, 100))
