"""The pages a person opens, opened in a real browser (headless Chromium, `tests.browser`):
`report.html` and the MLflow answer view `sweeper ui` serves. Each test reads what the page shows
after its scripts ran (the winner's row), that every image on it loaded, that it logged no error,
and that its screenshot is not blank; the other tests read the same pages as text only."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import optuna
import pytest
from mlflow.tracking import MlflowClient
from optuna.trial import TrialState

from sweeper.store.database import Store
from tests.browser import CHROMIUM, Page, chromium_page, distinct_colours
from tests.helpers import FinishedSweep, cli_env, free_port, run_cli, wait_until_healthy

# both read the session's `finished_sweep`, a launch on a real Ray
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="chromium is not on PATH (`.ci/run` installs Debian's: apt-get install chromium)",
    ),
]

MIN_COLOURS = 100  # a blank page has one colour, bare text a few dozen; a table and figures hundreds

# MLflow's UI asks the server who is signed in; one without MLflow's basic-auth app answers 404,
# which the UI takes for "no login" and the browser logs as a failed load all the same
MLFLOW_OWN_ERRORS = ("/ajax-api/2.0/mlflow/users/current",)

# the answer view's rows as the grid draws them: a row's cells by column id, across the grid's
# pinned and scrolled parts, which hold a row each
ROWS = """[...new Set([...document.querySelectorAll('.ag-row[row-index]')].map(r => r.getAttribute('row-index')))]
  .sort((a, b) => a - b).map(index => {
    const cells = {};
    for (const row of document.querySelectorAll(`.ag-row[row-index="${index}"]`))
      for (const cell of row.querySelectorAll('[col-id]')) cells[cell.getAttribute('col-id')] = cell.innerText.trim();
    return cells;
  })"""


def best_values(sweep: FinishedSweep) -> dict[str, float]:
    """Each model's best objective, read from its study (the sweep minimises `valid_loss`)."""
    store = Store(sweep.storage)
    try:
        record = store.get_sweep(sweep.name)
        return {
            s.model: min(
                t.value
                for t in optuna.load_study(study_name=s.study_name, storage=store.optuna).get_trials()
                if t.state == TrialState.COMPLETE
            )
            for s in record.studies
        }
    finally:
        store.dispose()


def assert_seen_whole(page: Page, screenshot: Path, known_errors: tuple[str, ...] = ()) -> None:
    """Every image on the page loaded, a screenshot that is not blank, and no error logged but the
    `known_errors` (substrings) since the page opened."""
    images = page.images()
    assert images, "the page shows no image"
    assert all(image["complete"] and image["width"] > 0 for image in images), images
    png = page.screenshot(screenshot)  # read last: its answer also brings in the latest events
    assert distinct_colours(png) > MIN_COLOURS, f"a blank screenshot: {screenshot}"
    errors = [e for e in page.errors if not any(known in e for known in known_errors)]
    assert not errors, errors


def test_report_html_shows_the_winners_row_first_and_every_figure(finished_sweep, tmp_path):
    out = tmp_path / "report"
    done = run_cli(
        ["report", finished_sweep.name, "--storage", finished_sweep.storage, "--out", str(out)],
        finished_sweep.cwd,
    )
    assert done.returncode == 0, done.stderr
    best = best_values(finished_sweep)
    winner = min(best, key=best.get)
    with chromium_page((out / "report.html").as_uri()) as page:
        rows = page.evaluate(
            "[...document.querySelectorAll('tbody tr')].map(tr => ({"
            " cells: [...tr.cells].map(td => td.innerText.trim()),"
            " weight: Number(getComputedStyle(tr.cells[0]).fontWeight) }))"
        )
        assert [row["cells"][0] for row in rows] == sorted(best, key=best.get)  # one per model, best first
        assert rows[0]["cells"][0] == winner and rows[0]["weight"] >= 600  # the winner's, in bold
        assert f"{best[winner]:.5g}" in rows[0]["cells"]
        assert all(row["weight"] < 600 for row in rows[1:])
        shown = page.evaluate("[...document.querySelectorAll('figure img')].map(img => img.alt)")
        assert sorted(shown) == sorted(p.stem for p in out.glob("*.png")) and shown  # every figure written
        assert all(image["shown"] > 0 for image in page.images())  # and drawn on the page
        assert_seen_whole(page, tmp_path / "report.png")


@pytest.fixture
def served_ui(finished_sweep: FinishedSweep, tmp_path: Path) -> Iterator[str]:
    """`sweeper ui` on the finished sweep, on loopback ports of its own; yields the MLflow URL it
    printed (the answer view), and stops it as a process manager does (SIGTERM)."""
    port, dashboard = free_port(), free_port()
    log = tmp_path / "ui.log"
    args = ["ui", finished_sweep.name, "--storage", finished_sweep.storage]
    args += ["--port", str(port), "--dashboard-port", str(dashboard)]
    with log.open("w") as out:  # a file, not a pipe: the servers' logs never fill it and block them
        process = subprocess.Popen(
            [sys.executable, "-m", "sweeper.cli", *args],
            cwd=finished_sweep.cwd,
            env=cli_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_until_healthy(f"http://127.0.0.1:{port}", process, log.read_text)
        (url,) = [
            line.split(": ", 1)[1] for line in log.read_text().splitlines() if line.startswith("MLflow UI: ")
        ]
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_the_mlflow_answer_view_shows_the_winners_row_first_and_its_figure(
    finished_sweep, served_ui, tmp_path
):
    """The page `sweeper ui` prints: the study runs, best first, the winner's verdict on its row;
    then the comparison figure the sweep's end logged on its `report` run. The window is wide: the
    grid draws only the columns in view, and the verdict's is its last."""
    best = best_values(finished_sweep)
    winner = min(best, key=best.get)
    with chromium_page(served_ui, window=(2200, 1000)) as page:
        page.wait_for(f"document.querySelector('.ag-row[row-index=\"{len(best) - 1}\"]') !== null", 60)
        rows = page.evaluate(ROWS)
        assert [row["tags.`model`"] for row in rows] == sorted(best, key=best.get)  # the studies, best first
        assert rows[0]["attributes.`Run Name`"].endswith(f"/{winner}")
        assert float(rows[0]["metrics.`best_objective`"]) == pytest.approx(best[winner])
        verdicts = [row["tags.`sweeper.verdict`"] for row in rows]
        assert verdicts[0].startswith("winner") and not any(v.startswith("winner") for v in verdicts[1:])
        assert all(0 < float(row["metrics.`p_best`"]) < 1 for row in rows)  # the odds beside each
        assert_seen_whole(page, tmp_path / "answer-view.png", MLFLOW_OWN_ERRORS)

        client = MlflowClient(finished_sweep.tracking)
        (experiment,) = [e for e in client.search_experiments() if e.name == finished_sweep.name]
        (report,) = client.search_runs(
            [experiment.experiment_id], filter_string="tags.`sweeper.role` = 'report'"
        )
        base = served_ui.split("/#/")[0]
        run = f"{base}/#/experiments/{experiment.experiment_id}/runs/{report.info.run_id}"
        page.open(f"{run}/artifacts/learning-curves.png")
        page.wait_for(
            "[...document.images].some(img => img.alt === 'learning-curves.png' && img.naturalWidth > 0)", 30
        )
        assert_seen_whole(page, tmp_path / "comparison.png", MLFLOW_OWN_ERRORS)
