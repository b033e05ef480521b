"""Data time as a fraction of step time, and task start-up, for every registered task.

A step is what `trainables.train.train` does per iteration: `task.train_batch()`, the loss, the
backward pass and an Adam step, here for a GRU of 128 units at batch size 128. Data time is the
`train_batch()` part, timed inside the same steps, so the fraction is measured in one run on one
machine state. File tasks read generated files of their data sets' real sizes (see
`tests/corpora.py`), written to a temporary directory.

Start-up is timed three times per task: cold (the first trial of a sweep; file tasks tokenize or
decode their files and write their on-disk cache), new process (a later trial in another
worker: the per-process caches emptied, so file tasks read the on-disk cache) and reused (a
later trial in a worker Tune reused: the per-process caches kept).

    python -m benchmarks.overheads.data_time           # every task, 20 timed steps each
    python -m benchmarks.overheads.data_time --quick   # 5 steps, smaller bAbI and TIMIT sets
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from tests.corpora import (
    PTB_WORDS,
    WIKITEXT2_WORDS,
    write_babi,
    write_ptb,
    write_speech,
    write_wikitext,
    zipf_text,
)
from trainables.cache import clear_process_caches
from trainables.catalog import load_all
from trainables.models.base import RecurrentModel
from trainables.registry import MODELS, TASKS
from trainables.tasks.base import Task

HIDDEN = 128
BATCH = 128


def file_settings(root: Path, quick: bool) -> dict[str, dict[str, Any]]:
    """Settings of the file tasks, pointing at freshly written data of realistic size."""
    started = time.perf_counter()
    ptb = root / "ptb"
    write_ptb(ptb, text=zipf_text(PTB_WORDS, 10_000, seed=0))
    wikitext = write_wikitext(root / "wikitext-2", zipf_text(WIKITEXT2_WORDS, 33_278, seed=10))
    babi_tasks = range(1, 6) if quick else range(1, 21)
    write_babi(root / "babi", babi_tasks, stories=600, test_stories=600)
    babi = root / "babi"
    sizes = (
        {"train_size": 60, "valid_size": 20, "test_size": 20}
        if quick
        else {
            "train_size": 240,
            "valid_size": 60,
            "test_size": 100,
        }
    )
    timit = write_speech(root / "timit", sum(sizes.values()), seconds=3.0, rate=16_000)
    print(f"wrote the data files in {time.perf_counter() - started:.1f} s")
    return {
        "ptb_char": {"data_dir": str(ptb)},
        "ptb_word": {"data_dir": str(ptb)},
        "wikitext2": {"data_dir": str(wikitext)},
        "babi": {"data_dir": str(babi), "tasks": list(babi_tasks)},
        "timit": {"data_dir": str(timit), **sizes},
    }


def build_task(name: str, settings: dict[str, Any], new_process: bool = True) -> tuple[Task, float]:
    """The task as a trial builds it, in a new process (no per-process caches) or a reused one,
    and the seconds it took."""
    if new_process:
        clear_process_caches()
    started = time.perf_counter()
    task = TASKS.get(name).create(settings, batch_size=BATCH, seed=0, device=torch.device("cpu"))
    return task, time.perf_counter() - started


def data_fraction(task: Task, steps: int) -> tuple[float, float]:
    """Mean seconds of `train_batch()` and of a whole training step, over `steps` timed steps."""
    gru = MODELS.get("gru")

    def make_rnn(input_size: int, hidden_size: int | None = None) -> RecurrentModel:
        return gru.create(input_size, hidden_size or HIDDEN)

    network = task.create_network(make_rnn)
    optimizer = torch.optim.Adam(network.parameters(), lr=1e-3)
    network.train()
    data = total = 0.0
    for step in range(steps + 2):  # two untimed warm-up steps
        started = time.perf_counter()
        batch = task.train_batch()
        fetched = time.perf_counter()
        loss = task.loss(network, batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        ended = time.perf_counter()
        if step >= 2:
            data += fetched - started
            total += ended - started
    return data / steps, total / steps


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer steps, smaller bAbI and TIMIT sets")
    parser.add_argument("--tasks", help="comma-separated task names (default: every registered task)")
    args = parser.parse_args()
    load_all()
    steps = 5 if args.quick else 20
    names = args.tasks.split(",") if args.tasks else TASKS.names()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, GRU {HIDDEN}, batch {BATCH}")
    with tempfile.TemporaryDirectory(prefix="sweeper-data-") as tmp:
        settings = file_settings(Path(tmp), args.quick)
        print(
            f"{'task':<14} {'start-up s: cold':>16} {'new process':>12} {'reused':>7} "
            f"{'data ms':>8} {'step ms':>8} {'data/step':>9}"
        )
        for name in names:
            task_settings = settings.get(name, {})
            _, cold = build_task(name, task_settings)
            _, warm = build_task(name, task_settings)
            task, reused = build_task(name, task_settings, new_process=False)
            data, total = data_fraction(task, steps)
            print(
                f"{name:<14} {cold:>16.2f} {warm:>12.2f} {reused:>7.2f} {data * 1e3:>8.2f} "
                f"{total * 1e3:>8.1f} {data / total:>9.1%}",
                flush=True,
            )


if __name__ == "__main__":
    main()
