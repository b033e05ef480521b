"""A sweep's price against what it spent: a config's profile (by default the README's main
command, the denoise smoke sweep) launched in a fresh folder, its price as launch recorded it
beside what each study's trials spent in their workers (`status --json`'s `worker_seconds`: what
the price prices) and their time from the searcher's suggestion to their end (`seconds`: a wait
for a free worker and the hand-off included). Per study and in all, written as JSON.

    python -m benchmarks.overheads.price_check                                  # results/price-smoke.json
    python -m benchmarks.overheads.price_check --config configs/copying.yaml --out benchmarks/results/price-copying-smoke.json
    python -m benchmarks.overheads.price_check --max-trials 12 --out benchmarks/results/price-denoise-12.json
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from benchmarks import figures_file
from benchmarks.overheads.contention import ROOT, launch


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / "denoise.yaml")
    parser.add_argument("--profile", default="smoke")
    parser.add_argument("--max-trials", type=int, help="trials per study, instead of the profile's")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "price-smoke.json")
    args = parser.parse_args()
    extra = [] if args.max_trials is None else ["--max-trials", str(args.max_trials)]
    with tempfile.TemporaryDirectory() as folder:
        _, status = launch(str(args.config.resolve().relative_to(ROOT)), args.profile, Path(folder), *extra)
    rows = []
    for study in status["studies"]:
        low, high = study["predicted_worker_hours"]
        workers, suggested = study["worker_seconds"] / 3600, study["seconds"] / 3600
        rows.append(
            {
                "model": study["model"],
                "priced": [low, high],
                "iterations": study["steps"],  # what its trials ran, against the price's range
                "in_workers": workers,
                "in_workers_over_high": workers / high,
                "in_range": low <= workers <= high,
                "from_suggestion": suggested,
                "from_suggestion_over_high": suggested / high,
            }
        )
    low, high = sum(r["priced"][0] for r in rows), sum(r["priced"][1] for r in rows)
    workers, suggested = sum(r["in_workers"] for r in rows), sum(r["from_suggestion"] for r in rows)
    result = {
        "command": " ".join(
            [
                "sweeper launch",
                str(args.config.resolve().relative_to(ROOT)),
                "--profile",
                args.profile,
                *extra,
            ]
        ),
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "python": platform.python_version(),
        "machine": figures_file.machine("cpu"),  # the price and the trials' seconds are this machine's
        "studies": rows,
        "priced_worker_hours": [low, high],
        "in_workers_hours": workers,
        "in_workers_over_high": workers / high,
        "studies_in_range": sum(r["in_range"] for r in rows),
        "from_suggestion_hours": suggested,
        "from_suggestion_over_high": suggested / high,
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    for r in rows:
        print(
            f"{r['model']:>14}: priced {r['priced'][0] * 3600:.1f}-{r['priced'][1] * 3600:.1f} s, "
            f"{r['iterations']:,} iterations, "
            f"in its workers {r['in_workers'] * 3600:.1f} s ({'within' if r['in_range'] else 'outside'} the price), "
            f"from suggestion to end {r['from_suggestion'] * 3600:.1f} s"
        )
    print(
        f"in all: priced {low * 3600:.0f}-{high * 3600:.0f} s, in the workers {workers * 3600:.0f} s "
        f"({workers / high:.2f}x the high end; {result['studies_in_range']} of {len(rows)} studies within their price), "
        f"from suggestion to end {suggested * 3600:.0f} s ({suggested / high:.2f}x)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
