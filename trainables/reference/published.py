"""The papers' published result tables, as typed data the report can put beside our own numbers.

The numbers live in `results.yaml`, one entry per table cell, so that a reviewer can check each one
against the paper without reading code. This module loads that file once, rejects any entry that is
malformed or whose `value` disagrees with the printed number times the table's scale (the check that
catches transcription slips), and offers two look-ups.

An entry's `value` and `std` are already in the units our trainables report (the printed number
times `scale`: a table headed "Loss x1e-3" has scale 0.001, a percentage column 0.01), while
`published` keeps the cell exactly as printed so a comparison can always quote the paper verbatim.
`std` is None where the paper prints a single number. `split` is "unstated" where the paper does not
say which split a number comes from, rather than guessing.

Each table has one `PublishedTable` entry: which metric of ours counts what its numbers count, and
what `sweeper reproduce` runs for it, with every unstated setting's reading spelled out.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from importlib import resources
from types import MappingProxyType
from typing import Any

import yaml

try:  # libyaml's safe loader where PyYAML was built with it: a tenth of the pure-Python parse of
    # this file, which every driver and report reads
    from yaml import CSafeLoader as SafeLoader
except ImportError:
    from yaml import SafeLoader

__all__ = [
    "SPLITS",
    "PublishedTable",
    "Reference",
    "ReferenceDataError",
    "all_references",
    "all_tables",
    "published_table",
    "references_for",
    "row_label",
    "table_rows",
]

#: Which data split a number was measured on; "unstated" when the paper does not say.
SPLITS = frozenset({"train", "valid", "test", "unstated"})

_DATA_FILE = "results.yaml"
_PUBLISHED = re.compile(r"^\s*(?P<mean>-?[\d,]*\.?\d+)\s*%?\s*(?:±\s*(?P<std>[\d,]*\.?\d+)\s*%?)?\s*$")


class ReferenceDataError(ValueError):
    """`results.yaml` is malformed; the message names the offending entry."""


@dataclass(frozen=True)
class Reference:
    """One published number, with everything needed to judge whether our run is comparable to it.

    `settings` holds the experiment settings the paper states for this number (T, hidden_size,
    rho, iterations, batch_size, optimizer, lr, seeds, babi_task, ...), so the report can flag
    where our sweep differs. List-valued settings (per-layer sizes) are tuples.
    """

    paper: str
    citation: str
    table: str
    task: str
    model: str
    model_settings: Mapping[str, Any]
    metric: str
    split: str
    value: float
    std: float | None
    scale: float
    published: str
    settings: Mapping[str, Any]
    higher_is_better: bool
    note: str | None = None


@dataclass(frozen=True)
class PublishedTable:
    """One table of a paper: what its numbers count, and the runs that reproduce it.

    `metric` is our metric that counts what the table's numbers count (`valid_loss`,
    `valid_accuracy_all_steps`, `test_bpc`, ...); `take` says whether the paper's number is the best
    value during training (`best`) or the value at its end (`last`). `objective`/`mode` is what the
    runs optimize and report as their best value. `settings` (our names; `task.` for task settings)
    apply to every row over the row's own, `per_model` to one model's rows. Every value a run uses is
    either the paper's or a reading: the rows' own settings are stated where `stated_in` says, a
    table-level value the paper states is listed under `stated` (setting → where), and `readings`
    explains every value the paper does not state (setting → why; `model.setting` for one model's).
    `unused` names the row settings that are not run settings and why; `not_runnable` says why no run
    can be built.
    """

    paper: str
    table: str
    task: str
    title: str
    metric: str
    take: str
    objective: str
    mode: str
    settings: Mapping[str, Any]
    per_model: Mapping[str, Mapping[str, Any]]
    readings: Mapping[str, str]
    unused: Mapping[str, str]
    not_runnable: str | None
    stated_in: str | None = None
    paper_settings: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def key(self) -> tuple[str, str]:
        return self.paper, self.table


# `citation` comes from the file's `papers` section, so it is not repeated in every entry.
_OPTIONAL = {"note"}
_ENTRY_FIELDS = {f.name for f in fields(Reference)} - {"citation"}
_REQUIRED = _ENTRY_FIELDS - _OPTIONAL


def all_references() -> list[Reference]:
    """Every transcribed number, in file order (paper, then table, then row)."""
    return list(_load())


def all_tables() -> list[PublishedTable]:
    """Every published table, in file order."""
    return list(_load_tables())


def published_table(paper: str, table: str) -> PublishedTable:
    """The table named `table` ("Table 2", or "2") of `paper`; KeyError names the choices."""
    wanted = table if table.lower().startswith("table") else f"Table {table}"
    for entry in _load_tables():
        if entry.paper == paper and entry.table.lower() == wanted.lower():
            return entry
    choices = ", ".join(f"{t.paper} {t.table!r}" for t in _load_tables())
    raise KeyError(f"no table {table!r} of paper {paper!r}; the tables are: {choices}")


def table_rows(table: PublishedTable) -> list[Reference]:
    """The table's published rows in file order; a row's index here is its identity."""
    return [r for r in _load() if (r.paper, r.table) == table.key]


def row_label(ref: Reference) -> str:
    """The row as the paper names it: the model, and its variant where the table has several."""
    variant = ", ".join(f"{k}={v}" for k, v in ref.model_settings.items())
    return f"{ref.model} ({variant})" if variant else ref.model


def references_for(task: str, **settings: Any) -> list[Reference]:
    """The numbers for `task` whose settings include every given one, e.g. `references_for("copying", T=1000)`.

    An entry that does not state a given setting does not match: a paper number whose sequence
    length is unknown must not be shown as the number for T=1000.
    """
    wanted = {key: _freeze(value) for key, value in settings.items()}
    return [
        ref
        for ref in _load()
        if ref.task == task
        and all(key in ref.settings and ref.settings[key] == value for key, value in wanted.items())
    ]


def _load() -> tuple[Reference, ...]:
    return _load_all()[1]


def _load_tables() -> tuple[PublishedTable, ...]:
    return _load_all()[0]


@functools.cache
def _load_all() -> tuple[tuple[PublishedTable, ...], tuple[Reference, ...]]:
    """Parse and validate the data file once; every caller shares the immutable result."""
    text = resources.files(__package__).joinpath(_DATA_FILE).read_text(encoding="utf-8")
    return _parse(yaml.load(text, Loader=SafeLoader))


def _parse(data: Any) -> tuple[tuple[PublishedTable, ...], tuple[Reference, ...]]:
    if not isinstance(data, dict) or set(data) != {"papers", "tables", "references"}:
        raise ReferenceDataError(
            f"{_DATA_FILE}: expected exactly the top-level keys 'papers', 'tables' and 'references'"
        )
    papers = data["papers"]
    if not isinstance(papers, dict) or not all(isinstance(v, str) and v for v in papers.values()):
        raise ReferenceDataError(f"{_DATA_FILE}: 'papers' must map each paper id to its citation")
    for name in ("tables", "references"):
        if not isinstance(data[name], list):
            raise ReferenceDataError(f"{_DATA_FILE}: '{name}' must be a list of entries")
    tables = tuple(_table(index, raw, papers) for index, raw in enumerate(data["tables"]))
    references = tuple(_entry(index, raw, papers) for index, raw in enumerate(data["references"]))
    described = {t.key: t for t in tables}
    if len(described) != len(tables):
        raise ReferenceDataError(f"{_DATA_FILE}: a table is described twice under 'tables'")
    for index, ref in enumerate(references):
        table = described.get((ref.paper, ref.table))
        if table is None:
            raise ReferenceDataError(
                f"{_DATA_FILE} entry {index}: {ref.paper} {ref.table} has no entry under 'tables'"
            )
        if table.task != ref.task:
            raise ReferenceDataError(
                f"{_DATA_FILE} entry {index}: task {ref.task!r} is not its table's {table.task!r}"
            )
    return tables, references


_TABLE_FIELDS = {
    "paper",
    "table",
    "task",
    "title",
    "ours",
    "settings",
    "per_model",
    "readings",
    "unused",
    "not_runnable",
    "stated_in",
    "stated",
}
_OURS_FIELDS = {"metric", "take", "objective", "mode"}


def _where(kind: str, index: int, raw: Any, keys: tuple[str, ...], known: set[str]) -> str:
    """How messages name the entry; a non-mapping or an unknown field is refused here."""
    if not isinstance(raw, dict):
        raise ReferenceDataError(f"{_DATA_FILE} {kind} {index}: expected a mapping, got {type(raw).__name__}")
    where = f"{_DATA_FILE} {kind} {index} ({' '.join(str(raw.get(k, '?')) for k in keys)})"
    unknown = set(raw) - known
    if unknown:
        raise ReferenceDataError(f"{where}: unknown field(s) {sorted(unknown)}")
    return where


def _table(index: int, raw: Any, papers: Mapping[str, str]) -> PublishedTable:
    where = _where("table", index, raw, ("paper", "table"), _TABLE_FIELDS)
    for name in ("paper", "table", "task", "title"):
        if not isinstance(raw.get(name), str) or not raw[name]:
            raise ReferenceDataError(f"{where}: {name} must be a non-empty string")
    if raw["paper"] not in papers:
        raise ReferenceDataError(f"{where}: paper {raw['paper']!r} is not listed under 'papers'")
    ours = raw.get("ours")
    if not isinstance(ours, dict) or set(ours) != _OURS_FIELDS:
        raise ReferenceDataError(f"{where}: ours must give exactly {sorted(_OURS_FIELDS)}")
    if ours["take"] not in ("best", "last") or ours["mode"] not in ("min", "max"):
        raise ReferenceDataError(f"{where}: ours.take must be best or last, ours.mode min or max")
    not_runnable = raw.get("not_runnable")
    runnable_fields = ("settings", "readings", "unused")
    if not_runnable is not None:
        if not isinstance(not_runnable, str) or any(
            name in raw for name in (*runnable_fields, "per_model", "stated", "stated_in")
        ):
            raise ReferenceDataError(f"{where}: not_runnable is a reason, given instead of run settings")
    else:
        if not isinstance(raw.get("stated_in"), str) or not raw["stated_in"]:
            raise ReferenceDataError(f"{where}: stated_in must say where the paper states the rows' settings")
        stated = raw.get("stated", {})
        if not isinstance(stated, dict) or not all(isinstance(v, str) and v for v in stated.values()):
            raise ReferenceDataError(f"{where}: stated must map settings to where the paper states them")
        for name in runnable_fields:
            if not isinstance(raw.get(name), dict):
                raise ReferenceDataError(f"{where}: {name} must be a mapping (or say why under not_runnable)")
        per_model = raw.get("per_model", {})
        if not isinstance(per_model, dict) or not all(isinstance(v, dict) for v in per_model.values()):
            raise ReferenceDataError(f"{where}: per_model must map models to settings")
        if not all(isinstance(v, str) and v for v in (*raw["readings"].values(), *raw["unused"].values())):
            raise ReferenceDataError(f"{where}: readings and unused must map names to explanations")
    return PublishedTable(
        paper=raw["paper"],
        table=raw["table"],
        task=raw["task"],
        title=raw["title"],
        metric=ours["metric"],
        take=ours["take"],
        objective=ours["objective"],
        mode=ours["mode"],
        settings=_freeze(raw.get("settings") or {}),
        per_model=_freeze(raw.get("per_model") or {}),
        readings=_freeze(raw.get("readings") or {}),
        unused=_freeze(raw.get("unused") or {}),
        not_runnable=not_runnable,
        stated_in=raw.get("stated_in"),
        paper_settings=_freeze(raw.get("stated") or {}),
    )


def _entry(index: int, raw: Any, papers: Mapping[str, str]) -> Reference:
    where = _where("entry", index, raw, ("paper", "table", "task", "model"), _ENTRY_FIELDS)
    missing = _REQUIRED - set(raw)
    if missing:
        raise ReferenceDataError(f"{where}: missing field(s) {sorted(missing)}")

    for name in ("paper", "table", "task", "model", "metric", "split", "published"):
        if not isinstance(raw[name], str) or not raw[name]:
            raise ReferenceDataError(f"{where}: {name} must be a non-empty string")
    if raw["paper"] not in papers:
        raise ReferenceDataError(f"{where}: paper {raw['paper']!r} is not listed under 'papers'")
    if raw["split"] not in SPLITS:
        raise ReferenceDataError(f"{where}: split must be one of {sorted(SPLITS)}, got {raw['split']!r}")
    for name in ("value", "scale"):
        if not _is_number(raw[name]):
            raise ReferenceDataError(f"{where}: {name} must be a number")
    if raw["std"] is not None and not (_is_number(raw["std"]) and raw["std"] >= 0):
        raise ReferenceDataError(f"{where}: std must be a non-negative number or null")
    if not isinstance(raw["higher_is_better"], bool):
        raise ReferenceDataError(f"{where}: higher_is_better must be true or false")
    for name in ("settings", "model_settings"):
        if not isinstance(raw[name], dict) or not all(isinstance(key, str) for key in raw[name]):
            raise ReferenceDataError(f"{where}: {name} must be a mapping with string keys")
    note = raw.get("note")
    if note is not None and not isinstance(note, str):
        raise ReferenceDataError(f"{where}: note must be a string")
    _check_against_published(where, raw)

    return Reference(
        paper=raw["paper"],
        citation=papers[raw["paper"]],
        table=raw["table"],
        task=raw["task"],
        model=raw["model"],
        model_settings=_freeze(raw["model_settings"]),
        metric=raw["metric"],
        split=raw["split"],
        value=float(raw["value"]),
        std=None if raw["std"] is None else float(raw["std"]),
        scale=float(raw["scale"]),
        published=raw["published"],
        settings=_freeze(raw["settings"]),
        higher_is_better=raw["higher_is_better"],
        note=note,
    )


def _check_against_published(where: str, raw: Mapping[str, Any]) -> None:
    """`value` and `std` must equal the printed numbers times `scale`: the guard against slips in the units."""
    match = _PUBLISHED.match(raw["published"])
    if match is None:
        raise ReferenceDataError(f"{where}: cannot read a number (± std) from published {raw['published']!r}")
    printed_std = match["std"]
    if (printed_std is None) != (raw["std"] is None):
        raise ReferenceDataError(f"{where}: std must be given exactly when published prints one")
    pairs = [("value", match["mean"])] + ([("std", printed_std)] if printed_std is not None else [])
    for name, printed in pairs:
        expected = float(printed.replace(",", "")) * raw["scale"]
        if not math.isclose(raw[name], expected, rel_tol=1e-9, abs_tol=1e-15):
            raise ReferenceDataError(
                f"{where}: {name} {raw[name]!r} != published {printed} x scale {raw['scale']} = {expected!r}"
            )


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _freeze(value: Any) -> Any:
    """Read-only copies, because every caller shares the cached entries."""
    if isinstance(value, dict):
        return MappingProxyType({key: _freeze(item) for key, item in value.items()})
    if isinstance(value, list):
        return tuple(_freeze(item) for item in value)
    return value
