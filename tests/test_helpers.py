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
