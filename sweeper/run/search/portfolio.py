"""A first sweep's first trials, where the study database holds no other task to transfer from:
the portfolio learned from the project's recorded search tables (`portfolio.json`, made by
`python -m benchmarks.search_tables.portfolio --ship`, which names the tables and its command).

Per model, an ordered list of configurations that did well across the tables' tasks, each a
position within each searched range, carried into this study's space as a transfer's are
(`UnitTrial`): a range that differs from the tables' keeps the position, not the value. The
study asks for them where it would ask for transferred points (after the papers' points), each
naming the portfolio as its source, at no earlier sweep's cost (`sampler.portfolio` turns this
off).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from sweeper.run.search.transfer import Source, TransferPoint, sources_in_store, transferred_points
from sweeper.spec.space import UnitTrial, grid_of, study_budget, suggest_params
from sweeper.spec.sweep import SweepSpec
from sweeper.store.database import NoDatabase, Store, StoreError
from sweeper.store.trial_record import PORTFOLIO_SOURCE

SHIPPED = Path(__file__).with_name("portfolio.json")


@cache
def shipped() -> dict[str, list[dict[str, Any]]]:
    """The shipped portfolio: per model, its entries in order."""
    return json.loads(SHIPPED.read_text())["models"]


def portfolio_points(
    spec: SweepSpec, model: str, entries: list[dict[str, Any]] | None = None
) -> list[TransferPoint]:
    """The model's portfolio (`entries`, else the shipped one) in this study's space: none for a
    model the tables do not hold, nor into a grid, which runs its own points alone."""
    entries = shipped().get(model, []) if entries is None else entries
    if grid_of(spec.space(model)) is not None:
        return []
    points = []
    for rank, entry in enumerate(entries, 1):
        probe = UnitTrial(entry["units"])
        params = suggest_params(probe, spec, model)  # type: ignore[arg-type]
        carried = {name: value for name, value in params.items() if name in entry["units"]}
        if carried:
            points.append(TransferPoint(f"{PORTFOLIO_SOURCE} {rank} of {len(entries)}", carried, 0.0))
    return points


def opening_points(spec: SweepSpec, model: str, sources: list[Source], room: int) -> list[TransferPoint]:
    """What a study asks for after the papers' points under `sampler.transfer`: the other tasks'
    best configurations where the database holds any, else the portfolio (unless turned off); no
    more than the `room` its budget leaves, so none is left waiting when the study ends."""
    points = transferred_points(spec, model, sources)
    if not points and spec.sampler.portfolio:
        points = portfolio_points(spec, model)
    return points[: max(0, room)]


def first_trials_text(spec: SweepSpec, storage_url: str | None) -> str:
    """What `--dry-run` says each study asks for after the papers' points, and from where: the
    other tasks' sweeps the database at `storage_url` holds, or the portfolio (a dry run creates
    no database: where there is none yet, there is no other task)."""
    if not spec.sampler.transfer:
        return "  first trials: the papers' points, then the sampler's own (sampler.transfer: false)"
    try:
        store = None if storage_url is None else Store(storage_url, create=False)
    except NoDatabase:
        store = None
    except StoreError as exc:  # the preflight names it; what the database holds is unknown here
        return f"  first trials: unknown until the study database can be read ({exc})"
    lines = ["  first trials, after the papers' points (at most the budget's):"]
    for model in spec.models:
        sources = [] if store is None else sources_in_store(store, spec, model, spec.name)
        points = opening_points(spec, model, sources, study_budget(spec, model))
        if not points:
            lines.append(f"    {model}: none to transfer (the sampler's own)")
        elif points[0].label.startswith(PORTFOLIO_SOURCE):
            lines.append(f"    {model}: the recorded tables' portfolio, {len(points)} configurations")
        else:
            tasks = sorted({source.task for source in sources})
            lines.append(f"    {model}: the best of the database's sweeps of {', '.join(tasks)}")
    return "\n".join(lines)
