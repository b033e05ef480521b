"""The README's map of model and task names to files says what the registries say."""

from __future__ import annotations

import re
from pathlib import Path

from trainables.catalog import load_all
from trainables.registry import MODELS, TASKS

README = Path(__file__).parents[1] / "README.md"


def test_every_built_in_model_and_task_is_mapped_to_the_file_that_defines_it() -> None:
    load_all()
    text = README.read_text()
    section = text[text.index("### Where things are") : text.index("### Your own models and tasks")]
    mapped: dict[str, str] = {}
    for row in section.splitlines():
        cells = [c.strip() for c in row.strip("|").split("|")]
        if len(cells) == 5 and cells[1].startswith("`trainables/"):
            for names, path in ((cells[0], cells[1]), (cells[3], cells[4])):
                for name in re.findall(r"`([a-z0-9_]+)`", names):
                    mapped[name] = path.strip("`")
    built_in = {e.name: e.defined_in for e in (*MODELS, *TASKS) if e.defined_in.startswith("trainables/")}
    assert mapped == built_in
