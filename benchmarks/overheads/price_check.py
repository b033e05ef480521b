"""A sweep's price against what it spent: the README's main command (the denoise smoke sweep) run
in a fresh folder, its price as launch recorded it beside each study's trials' time (`status
--json`: from the searcher's suggestion to the trial's end) and, within it, the trainables' own
wall time (each trial's `wall_time`): the part the price models, the rest being the sweep's hand-off
of a trial to and from its worker. Per study and in all, written to `results/price-smoke.json`.

    python -m benchmarks.overheads.price_check [--config configs/denoise.yaml] [--profile smoke]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.overheads.contention import ROOT, launch


def trainable_seconds(storage: str) -> dict[str, float]:
    """Each study's trials' own wall time (`final_metrics.wall_time`), by model."""
    import optuna

    seconds: dict[str, float] = {}
    for summary in optuna.get_all_study_summaries(storage, include_best_trial=False):
        study = optuna.load_study(study_name=summary.study_name, storage=storage)
        model = summary.study_name.rsplit("/", 1)[-1]
        seconds[model] = sum(
            t.user_attrs.get("final_metrics", {}).get("wall_time", 0.0) for t in study.trials
        )
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / "denoise.yaml")
    parser.add_argument("--profile", default="smoke")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "price-smoke.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        _, status = launch(str(args.config.resolve().relative_to(ROOT)), args.profile, Path(folder))
        trained = trainable_seconds(f"sqlite:///{Path(folder) / 'sweeper.db'}")
    rows = []
    for study in status["studies"]:
        low, high = study["predicted_worker_hours"]
        spent, training = study["seconds"] / 3600, trained[study["model"]] / 3600
        rows.append(
            {
                "model": study["model"],
                "priced": [low, high],
                "spent": spent,
                "spent_over_high": spent / high,
                "training": training,
                "training_over_high": training / high,
            }
        )
    low, high = sum(r["priced"][0] for r in rows), sum(r["priced"][1] for r in rows)
    spent, training = sum(r["spent"] for r in rows), sum(r["training"] for r in rows)
    result = {
        "command": f"sweeper launch {args.config.relative_to(ROOT)} --profile {args.profile}",
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "python": platform.python_version(),
        "studies": rows,
        "priced_worker_hours": [low, high],
        "spent_worker_hours": spent,
        "spent_over_high": spent / high,
        "training_worker_hours": training,
        "training_over_high": training / high,
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    for r in rows:
        print(
            f"{r['model']:>14}: priced {r['priced'][0] * 3600:.1f}-{r['priced'][1] * 3600:.1f} s, "
            f"spent {r['spent'] * 3600:.1f} s, training {r['training'] * 3600:.1f} s"
        )
    print(
        f"in all: priced {low * 3600:.0f}-{high * 3600:.0f} s, spent {spent * 3600:.0f} s ({spent / high:.2f}x the "
        f"high end), of which training {training * 3600:.0f} s ({training / high:.2f}x)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
