"""The driver's database cost per trial: Optuna on SQLite as `Store` opens it, against SQLite's defaults.

One cycle is what the searcher does for a trial: ask, suggest a parameter, set the seed
attribute, report an intermediate value, set the final-metrics attribute and tell. Both sides run
the same cycles in the same run, each on a fresh database file in the same folder.

    python -m benchmarks.overheads.sqlite_settings              # 50 cycles each
    python -m benchmarks.overheads.sqlite_settings --cycles 200
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import optuna

from sweeper.store.database import Store


def cycles_ms(storage: optuna.storages.BaseStorage, cycles: int) -> float:
    """Milliseconds per trial cycle on `storage`."""
    study = optuna.create_study(storage=storage)
    started = time.perf_counter()
    for number in range(cycles):
        trial = study.ask()
        trial.suggest_float("lr", 1e-4, 1e-1, log=True)
        trial.set_user_attr("seed", number)
        trial.report(0.5, 10)
        trial.set_user_attr("final_metrics", {"valid_loss": 0.5})
        study.tell(trial, 0.5)
    return (time.perf_counter() - started) / cycles * 1000


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cycles", type=int, default=50)
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="sweeper-database-") as tmp:
        default = cycles_ms(optuna.storages.RDBStorage(f"sqlite:///{Path(tmp) / 'default.db'}"), args.cycles)
        store = Store(f"sqlite:///{Path(tmp) / 'store.db'}")
        tuned = cycles_ms(store.optuna, args.cycles)
        store.dispose()
    print(f"SQLite defaults (rollback journal, fsync per commit): {default:.1f} ms per trial cycle")
    print(f"Store (WAL, synchronous=NORMAL):                      {tuned:.1f} ms per trial cycle")
    print(f"ratio Store / defaults: {tuned / default:.2f}")


if __name__ == "__main__":
    main()
