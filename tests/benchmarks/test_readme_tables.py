"""The benchmarks README's generated tables: each equals what `benchmarks.readme_tables` renders
from the results' JSON, every table the module renders is placed in the README, and a table made
stale (one figure changed) is caught and named, then rewritten."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmarks import readme_tables


def test_the_readme_tables_are_what_the_results_give() -> None:
    assert {page.name: readme_tables.check(page) for page in readme_tables.PAGES} == {
        page.name: [] for page in readme_tables.PAGES
    }


def test_every_table_rendered_is_placed_in_one_page_once_and_every_page_is_linked() -> None:
    placed = [
        m["name"] for page in readme_tables.PAGES for m in readme_tables.MARKED.finditer(page.read_text())
    ]
    assert sorted(placed) == sorted(readme_tables.TABLES)
    for page in readme_tables.PAGES[1:]:
        assert f"]({page.name})" in readme_tables.README.read_text()


def test_a_stale_table_is_caught_named_and_rewritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fresh = readme_tables.render(readme_tables.README.with_name("replays.md").read_text())
    table = readme_tables.TABLES["replayed-first"]()
    figure = re.search(r"\d+\.\d+x", table)
    assert figure is not None
    changed = table.replace(figure[0], f"{float(figure[0][:-1]) + 1:.2f}x", 1)
    readme = tmp_path / "README.md"
    readme.write_text(fresh.replace(table, changed, 1))

    assert readme_tables.check(readme) == ["replayed-first"]
    assert readme_tables.main(["--check", "--readme", str(readme)]) == 1
    assert "replayed-first" in capsys.readouterr().out

    assert readme_tables.main(["--readme", str(readme)]) == 0
    assert readme.read_text() == fresh
    assert readme_tables.main(["--check", "--readme", str(readme)]) == 0


def test_a_table_the_module_does_not_know_fails_loudly() -> None:
    with pytest.raises(KeyError, match="nowhere"):
        readme_tables.render("<!-- table: nowhere -->\n<!-- /table -->\n")
