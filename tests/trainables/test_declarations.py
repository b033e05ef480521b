"""Each setting declared once: every registered model's constructor takes its defaults from the
declarations the registry validates against, the ranges a model checks itself are those
declared, and a papers' table that runs the orthogonal weights at `lr` says so."""

from __future__ import annotations

import inspect

import pytest

from trainables.catalog import load_all
from trainables.models.orthogonal import ScaledCayley
from trainables.models.orthogonal_settings import NEUMANN_ORDER, RESET_INTERVAL
from trainables.registry import MODELS

load_all()


@pytest.mark.parametrize("entry", list(MODELS), ids=lambda e: e.name)
def test_a_models_constructor_defaults_are_its_declarations(entry) -> None:
    signature = inspect.signature(entry.build.__init__)
    for hp in entry.hyperparams:
        assert hp.name in signature.parameters, f"{entry.name} declares {hp.name} but does not take it"
        default = signature.parameters[hp.name].default
        assert default == hp.default, (
            f"{entry.name}.{hp.name}: built with {default!r}, declared {hp.default!r}"
        )


def test_the_cayley_inverse_takes_the_declared_neumann_orders_and_reset_intervals_and_no_others() -> None:
    for order in range(int(NEUMANN_ORDER.low), int(NEUMANN_ORDER.high) + 1):
        ScaledCayley(4, 1, order, int(RESET_INTERVAL.low))
    for order, interval in ((int(NEUMANN_ORDER.high) + 1, 50), (-1, 50), (2, int(RESET_INTERVAL.low) - 1)):
        with pytest.raises(ValueError, match="outside the allowed range"):
            ScaledCayley(4, 1, order, interval)
    ncgru = MODELS.get("ncgru").all_hyperparams
    assert ncgru["neumann_order"] is NEUMANN_ORDER and ncgru["reset_interval"] is RESET_INTERVAL
