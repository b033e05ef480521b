"""How the benchmarks README writes a figure: one format per kind of figure, so a ratio, an
interval or a share reads the same in every generated table (`benchmarks.readme_tables`)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"


def load(name: str) -> Any:
    """A results file, read afresh for every table: a table is only ever as new as its file."""
    return json.loads((RESULTS / name).read_text())


def table(header: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    """A markdown table: the header, its rule, one line per row."""
    head = list(header)
    lines = [head, ["---"] * len(head), *(list(row) for row in rows)]
    return "".join("| " + " | ".join(line) + " |\n" for line in lines)


def times(ratio: float | None) -> str:
    """A ratio as `0.87x`; None is a point never reached (`never`)."""
    return "never" if ratio is None else f"{ratio:.2f}x"


def interval(pair: list[float | None]) -> str:
    """A 95% interval as `(0.73-1.03)`; an end that no resample reaches is `∞`."""
    low, high = pair
    return f"({'∞' if low is None else f'{low:.2f}'}-{'∞' if high is None else f'{high:.2f}'})"


def point(ratio: float | None, bounds: list[float | None]) -> str:
    """A 90%-right point with its interval, `never` alone where neither end is ever reached."""
    return "never" if bounds == [None, None] else f"{times(ratio)} {interval(bounds)}"


def percent(share: float, decimals: int = 0) -> str:
    """A share as a percentage, as many decimals as its count of repetitions supports."""
    return f"{100 * share:.{decimals}f}%"


def of(part: int, whole: int) -> str:
    """A count out of its whole, `0 of 119`: a share of few would claim digits it has not."""
    return f"{part:,} of {whole:,}"


def sig(value: float, digits: int = 2) -> str:
    """A positive measured amount to `digits` significant digits (a timing repeats to no better)."""
    places = digits - 1 - math.floor(math.log10(abs(value)))
    return f"{round(value, places):,.{max(places, 0)}f}"


def cell(task: str, workers: int) -> str:
    """A replay's (task, W) as every table names it."""
    return f"{task}, W = {workers}"
