"""The tests' own helpers, where a mistake would show up as another test's flake."""

from __future__ import annotations

from tests.helpers import free_port


def test_free_ports_are_never_handed_out_twice() -> None:
    """A Ray node is started with six ports from six calls in a row; one port given to two of its
    services stops it from starting."""
    ports = [free_port() for _ in range(200)]
    assert len(set(ports)) == len(ports)
