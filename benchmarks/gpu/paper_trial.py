"""One paper-scale trial per model, through `sweeper train`, against GRU's in the same run.

Denoise at T = 200 for 10,000 iterations, batch 128, each model at the hidden size the papers
compared it at (NC-GRU paper Table 2 and its text; GORU paper Figure 4 for EURNN and the GORU
ablations at GORU's size). Each model trains in a `sweeper train` process of its own, as a user
runs it; *train s* is the loop's own clock (the last report's `wall_time`), *process s* adds the
start-up. The path column says which implementation ran the time loop (`kernel` of the report),
the capture column whether a CUDA graph replayed the training step (`capture` of the report);
`--capture both` runs every model with the step captured (`capture: true`) and uncaptured
(`false`), each against GRU's with the same setting.

    python -m benchmarks.gpu.paper_trial --device cuda              # the paper's scale, on a GPU
    python -m benchmarks.gpu.paper_trial --device cuda --capture both   # the graph's saving per model
    python -m benchmarks.gpu.paper_trial --iterations 200 --quick   # a short check, on a CPU too
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import figures_file

ROOT = Path(__file__).resolve().parents[2]
PAPER_HIDDEN = {  # denoise, T = 200
    "gru": {"hidden_size": 100},
    "lstm": {"hidden_size": 90},
    "eurnn": {"hidden_size": 512},
    "goru": {"hidden_size": 128},
    "goru_noreset": {"hidden_size": 128},
    "goru_noupdate": {"hidden_size": 128},
    "scornn": {"hidden_size": 200},
    "ncgru": {"hidden_size": 118, "rho": 50},
}


def last_report(output: str) -> dict[str, str]:
    """The key=value pairs of the last `step …` line `sweeper train` printed."""
    lines = [line for line in output.splitlines() if line.startswith("step ")]
    if not lines:
        return {}
    return dict(part.split("=", 1) for part in lines[-1].split()[2:] if "=" in part)


def run(model: str, capture: bool, args: argparse.Namespace) -> dict:
    settings = {
        **PAPER_HIDDEN[model],
        "iterations": args.iterations,
        "eval_every": max(1, args.iterations // 10),
        "batch_size": 128,
        "lr": 1e-3,
        "optimizer": "adam",
        "capture": capture,
    }
    command = [sys.executable, "-m", "sweeper.cli", "train", "--task", "denoise", "--model", model]
    command += ["--device", args.device, "--set", f"T={args.T}", "--set", "valid_size=256"]
    for key, value in settings.items():
        command += ["--set", f"{key}={value}"]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False)
    process_s = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{model} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    final = last_report(done.stdout)
    return {
        "model": model,
        **PAPER_HIDDEN[model],
        "path": final.get("kernel", "torch"),
        "capture_setting": capture,
        "capture": final.get("capture", ""),
        "train_s": float(final["wall_time"]),
        "process_s": process_s,
        "valid_loss": float(final["valid_loss"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", default="cuda", help="cuda, cpu, ...")
    parser.add_argument("--iterations", type=int, default=10_000)
    parser.add_argument("--T", type=int, default=200)
    parser.add_argument("--models", nargs="+", default=list(PAPER_HIDDEN), choices=list(PAPER_HIDDEN))
    parser.add_argument(
        "--capture",
        choices=("on", "off", "both"),
        default="on",
        help="the training step in a CUDA graph where it can be (on), never (off), or each model both ways",
    )
    parser.add_argument("--quick", action="store_true", help="T = 50: a short check of the script")
    parser.add_argument(
        "--out", type=Path, help="figures file [default: benchmarks/results/paper_trial-DEVICE.json]"
    )
    args = parser.parse_args()
    if args.quick:
        args.T = min(args.T, 50)
    models = ["gru", *(m for m in args.models if m != "gru")]
    print(f"denoise T={args.T}, {args.iterations:,} iterations, batch 128, on {args.device}")
    print(
        f"{'model':<15}{'hidden':>7}{'path':>24}{'capture':>16}{'train s':>10}{'× gru':>7}{'process s':>11}"
        f"{'valid loss':>12}"
    )
    captures = {"on": (True,), "off": (False,), "both": (True, False)}[args.capture]
    rows = []
    for model in models:
        for capture in captures:
            row = run(model, capture, args)
            gru = next((r for r in rows if r["model"] == "gru" and r["capture_setting"] == capture), row)
            row["times_gru"] = row["train_s"] / gru["train_s"]
            rows.append(row)
            print(
                f"{model:<15}{row['hidden_size']:>7}{row['path']:>24}{row['capture']:>16}{row['train_s']:>10.1f}"
                f"{row['times_gru']:>7.2f}{row['process_s']:>11.1f}{row['valid_loss']:>12.4f}",
                flush=True,
            )
    quick = "-quick" if args.quick or args.iterations < 10_000 else ""
    figures_file.write(
        f"paper_trial-{args.device.split(':')[0]}{quick}", args.device, {"T": args.T, "rows": rows}, args.out
    )


if __name__ == "__main__":
    main()
