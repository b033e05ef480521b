"""docs/fidelity.md is generated from the data the reproductions run from, and says all of it."""

from __future__ import annotations

from pathlib import Path

from sweeper.papers.fidelity import render
from sweeper.papers.table_runs import NotReproducible, plan
from trainables.reference.published import all_tables

PAGE = Path(__file__).parents[3] / "docs" / "fidelity.md"


def test_the_page_is_what_the_data_renders() -> None:
    assert PAGE.read_text() == render(), "regenerate: python -m sweeper.papers.fidelity > docs/fidelity.md"


def test_the_page_names_every_table_and_every_reading() -> None:
    page = PAGE.read_text()
    for table in all_tables():
        assert f"### {table.table}: {table.title}" in page
        if table.not_runnable is not None:
            assert table.not_runnable in page
            continue
        try:
            rows = plan(table.paper, table.table).rows
        except NotReproducible as exc:  # every row refused, each with its reason
            assert f"Not run: {exc}." in page
            continue
        for key, why in table.readings.items():
            assert why in page, (table.key, key)
        for row in rows:
            assert f"- {row.label}: {row.parameters.text()}" in page


def test_a_table_that_runs_the_orthogonal_weights_at_lr_says_so() -> None:
    from sweeper.papers.outcome import notes, shares_one_rate
    from trainables.reference.published import all_tables

    ncgru = [t for t in all_tables() if t.paper == "ncgru"]
    runnable = [t for t in ncgru if t.not_runnable is None]
    assert runnable and all(shares_one_rate(t) for t in runnable)
    assert any(
        line.startswith("Reading of orth_lr: the orthogonal weights train at each row's lr")
        for line in notes(ncgru[0])
    )


def test_a_report_reads_the_tables_notes_from_the_declarations_without_the_tasks_code() -> None:
    """`sweeper report` renders a reproduction's notes in a fresh process, where only what a table
    states and the models' declarations are known: no task's code (nor its data) is loaded."""
    import subprocess
    import sys

    script = (
        "from sweeper.papers.outcome import notes\n"
        "from trainables.reference.published import all_tables\n"
        "import sys\n"
        "print(sum(len(notes(t)) for t in all_tables()))\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('trainables.tasks.'))\n"
        "assert loaded == ['trainables.tasks.declared', 'trainables.tasks.settings'], loaded\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout) > 0
