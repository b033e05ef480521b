"""A reproduction's results beside the published table, read back from the registry without Ray
or torch: ours as mean ± std over seeds, theirs, and whether theirs lies within our spread.

A reproduction row's runs are confirmation records whose `source_trial` is negative: −1 − the
row's index among its table's rows (a sweep trial's number is never negative).
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass

from rich.table import Table
from sqlalchemy import select

from sweeper.papers.table_runs import stated_settings
from sweeper.results.paper_tables import row_metric
from sweeper.results.retrained import mean_std
from sweeper.results.tables import cells_table
from sweeper.spec.loading import stored_spec
from sweeper.store.database import ConfirmationRecord, Store, SweepRecord
from sweeper.store.states import ConfirmationStatus
from trainables.catalog import load_all
from trainables.hyperparams import ORTHOGONAL_OPTIMIZER_HYPERPARAMS
from trainables.reference.published import PublishedTable, Reference, published_table, row_label, table_rows
from trainables.registry import MODELS

SPREAD = 2.0  # theirs is "within" when it lies within this many of our standard deviations


def source_of(row_index: int) -> int:
    return -1 - row_index


@dataclass(frozen=True)
class ReproducedRow:
    reference: Reference
    metric: str
    values: list[float]
    failed: int
    waiting: int

    @property
    def label(self) -> str:
        return row_label(self.reference)

    @property
    def ours(self) -> tuple[float | None, float | None]:
        return mean_std(self.values)

    @property
    def within(self) -> bool | None:
        """Whether the published number lies within SPREAD of our standard deviations of our
        mean; None until two runs give a spread."""
        mean, std = self.ours
        if mean is None or std is None:
            return None
        return abs(self.reference.value - mean) <= SPREAD * std


def reproduced(store: Store, record: SweepRecord) -> tuple[PublishedTable, list[ReproducedRow]]:
    """The rows this reproduction sweep runs, each with the values its finished runs measured."""
    reproduces = stored_spec(record).reproduces
    if reproduces is None:
        raise ValueError(f"{record.name} is a sweep, not a reproduction")
    table = published_table(reproduces.paper, reproduces.table)
    refs = table_rows(table)
    study_ids = [s.id for s in record.studies]
    with store.session() as session:
        records = session.scalars(
            select(ConfirmationRecord).where(
                ConfirmationRecord.study_id.in_(study_ids), ConfirmationRecord.source_trial < 0
            )
        ).all()
        by_source: dict[int, list[ConfirmationRecord]] = {}
        for row in records:
            by_source.setdefault(row.source_trial, []).append(row)
        rows = []
        for index, runs_of in sorted(reproduces.rows.items()):
            ref = refs[index]
            metric = row_metric(table, ref)
            runs = by_source.get(source_of(runs_of), [])
            done = [r for r in runs if r.status == ConfirmationStatus.COMPLETE]
            values = [_value(table, metric, r) for r in done]
            rows.append(
                ReproducedRow(
                    ref,
                    metric,
                    [v for v in values if v is not None],
                    sum(r.status == ConfirmationStatus.FAILED for r in runs),
                    sum(r.status in (ConfirmationStatus.PENDING, ConfirmationStatus.RUNNING) for r in runs),
                )
            )
    return table, rows


def _value(table: PublishedTable, metric: str, run: ConfirmationRecord) -> float | None:
    """The paper's best-during-training number is our objective's best; a last value is the run's
    last report."""
    if table.take == "best" and metric == table.objective:
        return run.objective
    value = json.loads(run.metrics_json or "{}").get(metric)
    return None if value is None else float(value)


def _fmt(value: float | None, std: float | None = None) -> str:
    if value is None:
        return ""
    return f"{value:.4g}" + ("" if std is None else f" ± {std:.2g}")


COLUMNS = ("row", "setting", "theirs", "ours", "runs", f"theirs within ±{SPREAD:g}σ of ours", "our metric")


def row_cells(row: ReproducedRow) -> list[str]:
    setting = ", ".join(f"{k}={row.reference.settings[k]}" for k in ("T",) if k in row.reference.settings)
    within = {True: "yes", False: "no", None: "n/a"}[row.within]
    runs = f"{len(row.values)}" + (f" ({row.failed} failed)" if row.failed else "")
    runs += f" ({row.waiting} to run)" if row.waiting else ""
    theirs = _fmt(row.reference.value, row.reference.std)
    return [row.label, setting, theirs, _fmt(*row.ours), runs, within, row.metric]


def notes(table: PublishedTable, profile: str | None = None) -> list[str]:
    """What the table's numbers count, and the reading of every setting the paper leaves unstated."""
    shrunk = [
        f"Profile {profile}: every run shrunk to run on a CPU in minutes (sequence length, hidden size,"
        " steps); its numbers are not comparable with theirs."
    ]
    lines = [
        *(shrunk if profile else []),
        f"Theirs: {table.paper} {table.table}, {table.title} "
        f"({'best value during training' if table.take == 'best' else 'value at the end of training'}).",
        f"The rows' settings are the paper's, as stated in {table.stated_in}, except these readings:",
    ]
    lines += [f"Reading of {name}: {why}" for name, why in table.readings.items()]
    if shares_one_rate(table):
        declared = ORTHOGONAL_OPTIMIZER_HYPERPARAMS[0].default
        lines.append(
            "Reading of orth_lr: the orthogonal weights train at each row's lr, one optimizer for every "
            f"weight as the papers' code does (a sweep's declared default is {declared:g})"
        )
    lines += [f"Not a run setting: {name} ({why})" for name, why in table.unused.items()]
    return lines


def shares_one_rate(table: PublishedTable) -> bool:
    """Whether a row of an orthogonal model states no rate of its own for the orthogonal weights,
    so that it runs them at its `lr` (`table_runs.row_params`). Read from what the table states
    alone and the models' declarations: a report reads it without torch or any model's code."""
    load_all()
    for ref in table_rows(table):
        if table.not_runnable is None and MODELS.get(ref.model).orthogonal:
            try:
                stated = stated_settings(table, ref)
            except ValueError:  # a row that does not run says nothing of how it would
                continue
            if "lr" in stated and "orth_lr" not in stated:
                return True
    return False


def to_markdown(
    table: PublishedTable, rows: list[ReproducedRow], title: str, profile: str | None = None
) -> str:
    lines = [f"### {title}", "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(row_cells(row)) + " |" for row in rows]
    lines += ["", *(f"- {line}" for line in notes(table, profile))]
    return "\n".join(lines) + "\n"


def to_records(rows: list[ReproducedRow]) -> list[dict[str, object]]:
    """Plain rows for JSON and CSV."""
    records = []
    for row in rows:
        mean, std = row.ours
        records.append(
            {
                "row": row.label,
                "paper": row.reference.paper,
                "table": row.reference.table,
                "split": row.reference.split,
                "settings": dict(row.reference.settings),
                "published": row.reference.published,
                "theirs": row.reference.value,
                "theirs_std": row.reference.std,
                "metric": row.metric,
                "ours_mean": mean,
                "ours_std": std,
                "ours": row.values,
                "failed": row.failed,
                "to_run": row.waiting,
                "within": row.within,
            }
        )
    return records


def rendered(
    table: PublishedTable, rows: list[ReproducedRow], title: str, profile: str | None
) -> dict[str, str]:
    """The report's files: markdown (with the notes), JSON and CSV."""
    records = to_records(rows)
    buffer = io.StringIO()
    if records:
        writer = csv.DictWriter(buffer, fieldnames=list(records[0]))
        writer.writeheader()
        writer.writerows(
            {k: json.dumps(v) if isinstance(v, dict | list) else v for k, v in r.items()} for r in records
        )
    return {
        "markdown": to_markdown(table, rows, title, profile),
        "json": json.dumps({"notes": notes(table, profile), "rows": records}, indent=2),
        "csv": buffer.getvalue(),
    }


def reproduction_table(title: str, rows: list[ReproducedRow]) -> Table:
    return cells_table(title, COLUMNS, [row_cells(row) for row in rows])
