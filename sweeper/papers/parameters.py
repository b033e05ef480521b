"""The parameter count of each reproduced model beside its target: the count the paper states
for the row, else the median of its peers' (the table's other models at their paper sizes), since
both papers compare models at matched parameter counts (GORU §4.4, NC-GRU §4).

Counts are of the whole network the task builds (embedding, recurrent layers, read-out), counted
without data (`Task.sized`), at the paper's sizes, never the smoke profile's.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, Literal

from sweeper.papers.provenance import Setting
from trainables.reference.published import PublishedTable
from trainables.registry import MODELS, TASKS
from trainables.sizing import network_parameters

TOLERANCE = 0.10  # a count within ±10 % of its target is matched
STATED = "parameters_approx"  # the row setting that holds a count the paper prints


@dataclass(frozen=True)
class Count:
    """A model's count and its target: the paper's printed count (`stated`) or its peers' median."""

    parameters: int
    target: int
    basis: Literal["stated", "peers"]

    @property
    def ratio(self) -> float:
        return self.parameters / self.target

    @property
    def matched(self) -> bool:
        return abs(self.ratio - 1) <= TOLERANCE

    def text(self) -> str:
        against = "the paper's" if self.basis == "stated" else "its peers' median"
        return f"{self.parameters:,} parameters, {self.ratio:.2f}× {against} {self.target:,}"


def network_count(task: str, model: str, params: dict[str, Any]) -> int:
    """Parameters of the network `model` has on `task` with a row's values (`task.` keys included)."""
    task_settings = {k.removeprefix("task."): v for k, v in params.items() if k.startswith("task.")}
    declared = MODELS.get(model).all_hyperparams
    values = {k: v for k, v in params.items() if k in declared and k != "hidden_size"}
    return network_parameters(TASKS.get(task).sized(task_settings), model, params["hidden_size"], values)


def counts(task: str, rows: dict[int, tuple[str, dict[str, Any], int | None]]) -> dict[int, Count]:
    """Each row's count and target; `rows` maps a row's index to (model, values, stated count).
    A row's peers are the rows of other models, ablations left out (they keep their full model's
    size on purpose); a table of one model has no target but its own."""
    parameters = {index: network_count(task, model, params) for index, (model, params, _) in rows.items()}
    result = {}
    for index, (model, _, stated) in rows.items():
        if stated is not None:
            result[index] = Count(parameters[index], int(stated), "stated")
            continue
        peers = [
            parameters[i]
            for i, (other, _, _) in rows.items()
            if other != model and MODELS.get(other).ablation_of is None
        ]
        target = round(statistics.median(peers)) if peers else parameters[index]
        result[index] = Count(parameters[index], target, "peers")
    return result


def count_reading(table: PublishedTable, model: str, count: Count) -> tuple[Setting, ...]:
    """A matched count needs no word. A count off the paper's printed one means our network is
    not the paper's: ValueError, the row is refused. A count off its peers' at the sizes the paper
    states is the paper's own comparison, run as published where the table's readings say why
    (`parameters` or `<model>.parameters`), else refused."""
    if count.matched:
        return ()
    if count.basis == "stated":
        raise ValueError(
            f"the paper's stated sizes give {count.text()}: its network differs from ours in what it does not "
            "state, so this is not its run"
        )
    reading = next(
        (
            (key, table.readings[key])
            for key in (f"{model}.parameters", "parameters")
            if key in table.readings
        ),
        None,
    )
    if reading is None:
        raise ValueError(f"{count.text()}, outside ±{TOLERANCE:.0%}, and no reading of the table says why")
    key, why = reading
    return (Setting("parameters", count.parameters, "reading", why, key),)
