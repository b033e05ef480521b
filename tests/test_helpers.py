"""The tests' own helpers, where a mistake would show up as another test's flake."""

from __future__ import annotations

from tests.helpers import cli_env, free_port


def test_free_ports_are_never_handed_out_twice() -> None:
    """A Ray node is started with six ports from six calls in a row; one port given to two of its
    services stops it from starting."""
    ports = [free_port() for _ in range(200)]
    assert len(set(ports)) == len(ports)


def test_the_clis_environment_joins_no_ray_from_outside(monkeypatch) -> None:
    """A launch joins the worker's Ray head only where its test gives the address, never a cluster
    named in the environment of whoever runs the tests."""
    monkeypatch.setenv("SWEEPER_RAY_ADDRESS", "ray://elsewhere:10001")
    assert "SWEEPER_RAY_ADDRESS" not in cli_env()


def test_the_bench_tasks_sized_instance_is_not_a_started_trial(tmp_path) -> None:
    """A launch reads the task's baseline in its driver (`Task.sized`): counted among the trials
    that meet, it would let one trial fewer prove `meet` ran at once, and hold a trial that should run."""
    from tests.plugins.sweeper_bench_plugin import FixedWork, FixedWorkSettings

    settings = FixedWorkSettings(
        meet=2, meet_dir=str(tmp_path), hold_after=1, release_file=str(tmp_path / "go")
    )
    sized = FixedWork.sized(settings)
    assert list(tmp_path.iterdir()) == [] and not sized.held
    FixedWork(settings, batch_size=1, seed=0, device=sized.inputs.device)  # a trial's says it started
    assert len(list(tmp_path.iterdir())) == 1
