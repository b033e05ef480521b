"""The report as one HTML file a reader can open anywhere: the ranked table, its notes, and every
figure inline (PNG as data URIs), with nothing to fetch."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from html import escape
from pathlib import Path

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
tr.best td { font-weight: 600; }
figure { margin: 2em 0; }
figure img { max-width: 100%; }
figcaption { color: #555; }
"""


def report_html(
    title: str,
    columns: Sequence[str],
    cells: Sequence[Sequence[str]],
    figures: Sequence[Path] = (),
    notes: Sequence[str] = (),
    best_row: int | None = None,
) -> str:
    """The table (the best model's row, `best_row`, in bold), the notes, then the figures."""
    head = "".join(f"<th>{escape(column)}</th>" for column in columns)
    body = "\n".join(
        ('<tr class="best">' if index == best_row else "<tr>")
        + "".join(f"<td>{escape(cell)}</td>" for cell in row)
        + "</tr>"
        for index, row in enumerate(cells)
    )
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        f"<table><thead><tr>{head}</tr></thead><tbody>\n{body}\n</tbody></table>",
    ]
    if notes:
        parts.append("<ul>" + "".join(f"<li>{escape(note)}</li>" for note in notes) + "</ul>")
    for path in figures:
        data = base64.b64encode(path.read_bytes()).decode()
        parts.append(
            f'<figure><img alt="{escape(path.stem)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{escape(path.stem)}</figcaption></figure>"
        )
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
