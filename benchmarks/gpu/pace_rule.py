"""The rule that prices a GPU trial at a spec's own shapes, fitted to the recorded per-shape
figures and checked against them.

Per model, one optimizer step's milliseconds = a + b x T x (H / 128)^q: a fixed part (the
optimizer and the orthogonal update, launches), and the time loop's T sequential steps, each
dearer with the hidden size (batch left out: at these sizes a GPU step is bound by its
sequential launches, and the recorded batches move it less than H does). Fitted by least squares
on the logs to `cells-cuda.json` and `cells-cuda-quick.json` (the fused paths, uncaptured), each
shape then left out in turn and predicted from the others, and the GPU acceptance's paper trials
(never in the fit; their uncaptured figures, timed as the cells are) predicted too: the ratios
recorded / predicted over both bound the price (`within`).

Writes the rule into the service's `sweeper/run/gpu_paces.json` (keeping its packing figures)
and the fit with every check into `results/gpu-pace-rule.json`.

    python -m benchmarks.gpu.pace_rule
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from benchmarks import figures_file

ROOT = Path(__file__).resolve().parents[2]
CELLS = ("benchmarks/results/cells-cuda.json", "benchmarks/results/cells-cuda-quick.json")
ACCEPTANCE = "benchmarks/results/gpu_acceptance-cuda-captured.json"
PACES = ROOT / "sweeper" / "run" / "gpu_paces.json"
RULE = "a step's milliseconds = a + b x T x (H / 128)^q"
HIDDEN = 128.0


def shapes(paths: tuple[str, ...]) -> dict[str, list[tuple[int, int, int, float]]]:
    """Per model, its recorded (B, T, H, step milliseconds) on the fused path."""
    out: dict[str, list[tuple[int, int, int, float]]] = {}
    for path in paths:
        for row in json.loads((ROOT / path).read_text())["figures"]["cells"]:
            out.setdefault(row["model"], []).append((row["B"], row["T"], row["H"], row["step_ms"]))
    return out


def predict(params: np.ndarray, T: np.ndarray, H: np.ndarray) -> np.ndarray:
    a, b, q = params
    return a + b * T * (H / HIDDEN) ** q


def fit(rows: list[tuple[int, int, int, float]]) -> np.ndarray:
    T, H, y = (np.array([r[i] for r in rows], dtype=float) for i in (1, 2, 3))
    result = least_squares(
        lambda p: np.log(predict(p, T, H)) - np.log(y), [1.0, 0.01, 1.0], bounds=([0, 0, 0], [50, 1, 3])
    )
    return result.x


def ms(params: dict[str, float], T: float, H: float) -> float:
    """The rule at one shape (the service computes the same from gpu_paces.json)."""
    return params["a"] + params["b"] * T * (H / HIDDEN) ** params["q"]


def rule_of(rows: list[tuple[int, int, int, float]]) -> dict[str, Any]:
    """The fit on every shape, and each shape left out and predicted from the rest."""
    a, b, q = fit(rows)
    left_out = []
    for index, (B, T, H, recorded) in enumerate(rows):
        rest = rows[:index] + rows[index + 1 :]
        p = fit(rest)
        predicted = float(predict(p, np.array([T]), np.array([H]))[0])
        left_out.append(
            {
                "shape": [B, T, H],
                "recorded_ms": recorded,
                "predicted_ms": predicted,
                "ratio": recorded / predicted,
            }
        )
    ratios = [r["ratio"] for r in left_out]
    return {
        "a": float(a),
        "b": float(b),
        "q": float(q),
        "within": [min(ratios), max(ratios)],
        "left_out": left_out,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "gpu-pace-rule.json")
    parser.add_argument(
        "--paces", type=Path, default=PACES, help="the service's GPU paces to write the rule into"
    )
    args = parser.parse_args(argv)
    recorded = shapes(CELLS)
    paces = json.loads(args.paces.read_text())
    acceptance = json.loads((ROOT / ACCEPTANCE).read_text())["figures"]
    paper = {t["model"]: t for t in acceptance["trials"]}
    checks: dict[str, Any] = {}
    for model, entry in paces["models"].items():
        rows = recorded.get(model)
        if not rows or len(rows) < 4:
            print(
                f"{model}: {len(rows or [])} recorded shapes, too few to fit: priced as {paces['fallback']}"
            )
            entry.pop("rule", None)
            continue
        rule = rule_of(rows)
        trial = paper.get(model)
        if trial is not None and trial.get("uncaptured_ms_per_iteration"):
            predicted = ms(rule, 200, trial["hidden_size"])
            ratio = trial["uncaptured_ms_per_iteration"] / predicted
            rule["paper_trial"] = {
                "shape": [128, 200, trial["hidden_size"]],
                "captured_ms": trial["ms_per_iteration"],
                "uncaptured_ms": trial["uncaptured_ms_per_iteration"],
                "predicted_ms": predicted,
                "ratio": ratio,
            }
            rule["within"] = [min(rule["within"][0], ratio), max(rule["within"][1], ratio)]
        entry["rule"] = {k: rule[k] for k in ("a", "b", "q", "within")}
        checks[model] = rule
        low, high = rule["within"]
        print(
            f"{model}: {rule['a']:.2f} + {rule['b']:.4f} T (H/128)^{rule['q']:.2f} ms; "
            f"each of {len(rows)} shapes left out and the paper trial: recorded {low:.2f}-{high:.2f}x predicted"
        )
    paces["rule"] = f"{RULE}, fitted per model ({' and '.join(CELLS)}; python -m benchmarks.gpu.pace_rule)"
    args.paces.write_text(json.dumps(paces, indent=1) + "\n")
    result = {
        "command": shlex.join(["python", "-m", "benchmarks.gpu.pace_rule", *(argv or sys.argv[1:])]),
        "rule": RULE,
        "device": paces["device"],  # the GPU the fitted figures were timed on (their files name it)
        "machine": figures_file.machine("cpu"),  # where the fit ran: the figures are the same anywhere
        "figures": list(CELLS),
        "models": checks,
        "within_all": [
            min(c["within"][0] for c in checks.values()),
            max(c["within"][1] for c in checks.values()),
        ],
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out} and the rule into {args.paces}")
    return 0 if all(math.isfinite(c["a"]) for c in checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
