"""Each setting declared once: every registered model's constructor takes its defaults from the
declarations the registry validates against, the ranges a model checks itself are those
declared, and every task reports the metrics it is declared with and checks its data where it
is declared to read files."""

from __future__ import annotations

import inspect

import pytest
import torch

from trainables.catalog import load_all
from trainables.models.hyperparams import NEUMANN_ORDER, RESET_INTERVAL
from trainables.models.orthogonal import ScaledCayley
from trainables.registry import MODELS, TASKS, TaskEntry, resolved
from trainables.tasks.base import Task

load_all()


@pytest.mark.parametrize("entry", list(MODELS), ids=lambda e: e.name)
def test_a_models_constructor_defaults_are_its_declarations(entry) -> None:
    signature = inspect.signature(resolved(entry.build).__init__)
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


SMALL = {
    "T": 12,
    "valid_size": 8,
    "test_size": 8,
    "train_size": 8,
}  # what each generated task accepts of these


@pytest.mark.parametrize("entry", [e for e in TASKS if not e.reads_files], ids=lambda e: e.name)
def test_a_generated_tasks_validation_reports_the_metrics_it_is_declared_with(entry) -> None:
    settings = {k: v for k, v in SMALL.items() if k in entry.settings.model_fields}
    task = entry.create(settings, batch_size=2, seed=0, device=torch.device("cpu"))
    network = task.create_network(lambda inputs, hidden=None: MODELS.get("gru").create(inputs, hidden or 4))
    assert set(task.evaluate(network)) == set(entry.metrics)
    assert entry.objective in entry.metrics


@pytest.mark.parametrize("entry", list(TASKS), ids=lambda e: e.name)
def test_a_task_checks_its_data_exactly_where_it_is_declared_to_read_files(entry) -> None:
    overrides = entry.task_class.check_data.__func__ is not Task.check_data.__func__
    assert overrides == entry.reads_files


def test_a_task_whose_objective_it_does_not_report_is_refused() -> None:
    with pytest.raises(ValueError, match="objective 'valid_bpc' is not among its metrics"):
        TaskEntry("t", TASKS.get("adding").settings, "m:C", objective="valid_bpc")
