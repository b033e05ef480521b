"""Every GPU figure of the fused scans from one command, written as one JSON.

On a GPU (torch and Triton present; pydantic carried, see benchmarks/README.md) it runs, in order:
the kernel tests on CUDA; each path's error against the float64 loop per precision; µs per step
of each scan (from T and 2T); each orthogonal cell's forward+backward against cuDNN's nn.GRU of
the same shape, per precision, with cuDNN as it runs by default (TF32 allowed) and under
NVIDIA_TF32_OVERRIDE=0, and the peak memory; the precisions' effect on orthogonality and on a
copying run at T = 1000; one paper-scale denoise trial per model through `sweeper train`
(ms/iteration against GRU's), with the training step captured in a CUDA graph and without; trials
per hour at 1, 2, 4, 8 trials per GPU for GRU and GORU; and the grids each scan launches. The
kernels are compiled first, in parallel processes, so no timing holds a compilation.

    python -m benchmarks.gpu.acceptance --out DIR          # on a GPU, in under 8 minutes
    python -m benchmarks.gpu.acceptance --out DIR --cpu-check   # the same plan, tiny, in Triton's interpreter

`--cpu-check` runs the whole plan at tiny shapes on the CPU under TRITON_INTERPRET=1 and writes
the same JSON shape (its times measure the interpreter, not a GPU); its trials and the precisions'
training run train on the adding task, whose sequences are T long (denoise's and copying's are
T + 20: the interpreter's time grows with the steps); the grids are planned for a 132-SM H100
either way. It runs in one process: the kernel tests through `pytest.main`, each `sweeper train`
through the command's own code (Click's runner), the packed trials one after another; on a GPU
each of those is a process of its own, so that each trial has the device alone.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if "--cpu-check" in sys.argv:  # before anything imports Triton
    os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402

from benchmarks import figures_file  # noqa: E402
from benchmarks.gpu import paper_trial, sections  # noqa: E402
from trainables.catalog import load_all  # noqa: E402

GPU_SHAPES = [(128, 200, 128), (50, 1000, 190), (32, 100, 512), (32, 50, 2048)]
TINY_SHAPES = [(3, 4, 16), (2, 3, 24)]  # the interpreter is slow: one shape of all cells, one of EURNN
TINY_HIDDEN = {model: {**sizes, "hidden_size": 12} for model, sizes in paper_trial.PAPER_HIDDEN.items()}
TINY_HIDDEN["ncgru"] = {"hidden_size": 12, "rho": 4}
CPU_CHECK_PARTS = 3  # the GPU run warms in up to 8 processes; --cpu-check runs the first share
CAPTURES = (True, False)  # each trial's step in a CUDA graph where it can be, and never


def setup_for(args: argparse.Namespace) -> sections.Setup:
    if args.cpu_check:
        return sections.Setup(
            torch.device("cpu"), TINY_SHAPES, reps=1, precision_steps=3, copying_iterations=1, precision_task="adding",
            trial_iterations=2, trial_task="adding", trial_T=5, packing_iterations=2, packings=(1, 2), paper_hidden=TINY_HIDDEN,
            tests_filter="test_plan.py or self_check", tiny=True,
        )  # fmt: skip
    if not torch.cuda.is_available():
        sys.exit("no CUDA device is visible: run on a GPU, or with --cpu-check")
    return sections.Setup(
        torch.device("cuda"), GPU_SHAPES, reps=args.reps, precision_steps=1000, copying_iterations=args.copying_iterations, precision_task="copying",
        trial_iterations=args.trial_iterations, trial_task="denoise", trial_T=200, packing_iterations=args.packing_iterations,
        packings=(1, 2, 4, 8), paper_hidden=paper_trial.PAPER_HIDDEN, tests_filter=args.tests_filter, tiny=False,
    )  # fmt: skip


def warm(setup: sections.Setup, part: int, parts: int) -> None:
    """Compile the kernels of every cell, shape and precision this run times (a share of them)."""
    configs = [
        (name, shape, precision)
        for shape in setup.shapes
        for name in sections.cells_at(shape, setup)
        for precision in sections.PRECISIONS
    ]
    for name, (B, _, n), precision in configs[part::parts]:
        model = sections.cell(name, n, setup, precision)
        sections.forward_backward(model, torch.randn(2, B, sections.INPUT_SIZE, device=setup.device))()
        sections.forward_only(model, torch.randn(2, B, sections.INPUT_SIZE, device=setup.device))()
    sections.synchronize(setup.device)


def compile_all(setup: sections.Setup, command: list[str]) -> dict:
    """Fill Triton's on-disk cache from parallel processes, so the timed runs load, not compile.
    Under `--cpu-check` the interpreter compiles nothing: this process warms one process's share
    of the configs (`CPU_CHECK_PARTS`), so the warming code runs; the cells section runs them all."""
    parts = max(1, min(8, (os.cpu_count() or 2) // 2)) if setup.cuda else CPU_CHECK_PARTS
    started = time.perf_counter()
    if not setup.cuda:
        failures = []
        try:
            warm(setup, 0, parts)
        except Exception as exc:  # the JSON says what failed; the plan goes on
            failures.append(f"{type(exc).__name__}: {exc}")
        return {"processes": 0, "seconds": time.perf_counter() - started, "failures": failures}
    warming = [[*command, "--warm", f"{part}/{parts}"] for part in range(parts)]
    processes = [
        subprocess.Popen(c, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for c in warming
    ]
    failures = [
        out[-2000:] for process in processes if (out := process.communicate()[0]) and process.returncode
    ]
    return {"processes": parts, "seconds": time.perf_counter() - started, "failures": failures}


def sweeper_train(model: str, setup: sections.Setup, iterations: int, extra: dict[str, object]) -> list[str]:
    settings = {
        **setup.paper_hidden[model], "iterations": iterations, "eval_every": max(1, iterations // 2),
        "batch_size": 4 if setup.tiny else 128, "lr": 1e-3, "optimizer": "adam", "T": setup.trial_T,
        "valid_size": 4 if setup.tiny else 256, "test_size": 4 if setup.tiny else 256, **extra,
    }  # fmt: skip
    command = [sys.executable, "-m", "sweeper.cli", "train", "--task", setup.trial_task, "--model", model]
    command += ["--device", str(setup.device)]
    for key, value in settings.items():
        command += ["--set", f"{key}={value}"]
    return command


def run_commands(setup: sections.Setup, commands: list[list[str]]) -> list[tuple[int, str]]:
    """Each `sweeper train` command's exit code and output: run at once, each in its process, on a
    GPU; one after another in this process under `--cpu-check`."""
    if setup.cuda:
        running = [subprocess.Popen(c, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for c in commands]  # fmt: skip
        outputs = [process.communicate()[0] for process in running]
        return [(process.returncode, output) for process, output in zip(running, outputs, strict=True)]
    from click.testing import CliRunner

    from sweeper.cli import main as sweeper_main

    results = []
    for command in commands:
        done = CliRunner().invoke(sweeper_main, command[command.index("train") :])
        results.append((done.exit_code, done.output))
    return results


def ms_per_iteration(output: str, iterations: int) -> float:
    """Between the run's two reports (one evaluation included): the steady loop, start-up excluded."""
    reports = [paper_trial.last_report(line) for line in output.splitlines() if line.startswith("step ")]
    walls = [float(r["wall_time"]) for r in reports if "valid_loss" in r]
    half = max(1, iterations // 2)
    return (
        1000 * (walls[-1] - walls[0]) / (iterations - half)
        if len(walls) > 1
        else 1000 * walls[-1] / iterations
    )


def trials(setup: sections.Setup) -> list[dict]:
    """One paper-scale denoise trial per model in a `sweeper train` process of its own, against GRU's,
    each twice: the training step captured in a CUDA graph (`capture: true`, the default) and
    uncaptured (`capture: false`); one after another on a GPU (each has it alone), two at a time
    under `--cpu-check` (where neither captures)."""
    models = ["gru", *(m for m in setup.paper_hidden if m != "gru")]
    runs = [(model, capture) for model in models for capture in CAPTURES]
    at_once = 2 if setup.tiny else 1
    outputs: dict[tuple[str, bool], tuple[int, str, float]] = {}
    for first in range(0, len(runs), at_once):
        started = time.perf_counter()
        batch = runs[first : first + at_once]
        commands = [sweeper_train(m, setup, setup.trial_iterations, {**({"kernel": "fused"} if setup.tiny and m not in ("gru", "lstm") else {}), "capture": capture}) for m, capture in batch]  # fmt: skip
        for run, (code, output) in zip(batch, run_commands(setup, commands), strict=True):
            outputs[run] = (code, output, time.perf_counter() - started)
    rows: list[dict] = []
    for model in models:
        code, output, process_s = outputs[(model, True)]
        if code != 0:
            rows.append({"model": model, "error": output[-1500:]})
            continue
        final = paper_trial.last_report(output)
        ms = ms_per_iteration(output, setup.trial_iterations)
        gru = rows[0].get("ms_per_iteration", ms) if rows else ms
        rows.append({
            "model": model, **setup.paper_hidden[model], "kernel": final.get("kernel", "torch"),
            "path": final.get("kernel_path", "torch"), "capture": final.get("capture", ""), "ms_per_iteration": ms,
            "times_gru": ms / gru, "met": model in ("gru", "lstm") or ms / gru <= 1.5, "process_s": process_s,
            **uncaptured(*outputs[(model, False)], setup, ms),
        })  # fmt: skip
    return rows


def uncaptured(code: int, output: str, process_s: float, setup: sections.Setup, captured_ms: float) -> dict:
    """The same trial's figures with `capture: false`, and what the graph saves per iteration."""
    if code != 0:
        return {"uncaptured_error": output[-1500:]}
    ms = ms_per_iteration(output, setup.trial_iterations)
    return {
        "uncaptured_ms_per_iteration": ms,
        "graph_speedup": ms / captured_ms,
        "uncaptured_process_s": process_s,
    }


def packing(setup: sections.Setup) -> list[dict]:
    """Trials per hour with k trials sharing the GPU (the configs' fractions 1/k), GRU and GORU."""
    rows = []
    for model in ("gru", "goru"):
        for per_gpu in setup.packings:
            started = time.perf_counter()
            kernel = {"kernel": "fused"} if setup.tiny and model == "goru" else {}
            command = sweeper_train(model, setup, setup.packing_iterations, kernel)
            done = run_commands(setup, [command] * per_gpu)
            if any(code for code, _ in done):
                rows.append({"model": model, "per_gpu": per_gpu, "error": "a trial failed"})
                continue
            loops = [float(paper_trial.last_report(output)["wall_time"]) for _, output in done]
            wall = time.perf_counter() - started
            rows.append({
                "model": model, "per_gpu": per_gpu, "iterations": setup.packing_iterations,
                "trials_per_hour": per_gpu * 3600 / max(loops), "trials_per_hour_with_startup": per_gpu * 3600 / wall,
            })  # fmt: skip
        base = next(
            (r for r in rows if r["model"] == model and r["per_gpu"] == 1 and "trials_per_hour" in r), None
        )
        for row in rows:
            if base and row["model"] == model and "trials_per_hour" in row:
                row["times_one_per_gpu"] = row["trials_per_hour"] / base["trials_per_hour"]
    return rows


def summary(document: dict) -> None:
    if document["mode"] == "cpu-check":
        print(
            "\n(--cpu-check: times of Triton's interpreter, not of a GPU; the plan and the JSON are checked)"
        )
    print("\ncell fwd+bwd against nn.GRU (ieee; target ≤ 1.0 at the first shape, ≤ 1.5 elsewhere)")
    for row in document["cells"]:
        if row["precision"] == "ieee":
            print(f"  {row['model']:<14}{row['shape']!s:<18}{row['fwd_bwd_ms']:9.2f} ms  ×{row['times_gru']:5.2f}  {'met' if row['met'] else 'MISSED'}  {row['path']}")  # fmt: skip
    print("paper-scale trials, ms/iteration (× GRU), the step captured (capture: true) and not (off)")
    for row in document["trials"]:
        off = f"  off {row['uncaptured_ms_per_iteration']:9.2f}  graph ×{row['graph_speedup']:5.2f}" if "graph_speedup" in row else "  off failed"  # fmt: skip
        print(f"  {row['model']:<14}" + (f"{row['ms_per_iteration']:9.2f}  ×{row['times_gru']:5.2f}  {row['capture']:<14}{off}" if "ms_per_iteration" in row else " failed"))  # fmt: skip
    tests = document["tests"]
    print(f"kernel tests on {tests['device']}: {tests['passed']} passed, {tests['failures']} failed, {tests['errors']} errors")  # fmt: skip
    print("section seconds: " + ", ".join(f"{k} {v:.0f}" for k, v in document["seconds"].items()))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--out", type=Path, required="--gru-times" not in sys.argv and "--warm" not in sys.argv
    )
    parser.add_argument(
        "--cpu-check", action="store_true", help="tiny shapes on the CPU, in Triton's interpreter"
    )
    parser.add_argument("--reps", type=int, default=10, help="timed runs per figure (median)")
    parser.add_argument("--trial-iterations", type=int, default=300)
    parser.add_argument("--packing-iterations", type=int, default=200)
    parser.add_argument("--copying-iterations", type=int, default=100)
    parser.add_argument("--tests-filter", default="", help="pytest -k expression for the kernel tests")
    parser.add_argument(
        "--gru-times", action="store_true", help=argparse.SUPPRESS
    )  # one nn.GRU pass, as JSON
    parser.add_argument("--warm", help=argparse.SUPPRESS)  # PART/PARTS: compile a share of the kernels
    args = parser.parse_args()
    load_all()
    setup = setup_for(args)
    command = [
        sys.executable,
        "-m",
        "benchmarks.gpu.acceptance",
        *(["--cpu-check"] if args.cpu_check else []),
    ]
    if args.gru_times:
        print(json.dumps(sections.gru_times(setup)))
        return
    if args.warm:
        part, parts = (int(v) for v in args.warm.split("/"))
        warm(setup, part, parts)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    seconds: dict[str, float] = {}
    document: dict[str, object] = {"mode": "cpu-check" if args.cpu_check else "gpu"}

    name = f"gpu_acceptance-{'cpu-check' if args.cpu_check else 'cuda'}"
    path = args.out / f"{name}.json"

    def timed(section: str, run):  # type: ignore[no-untyped-def]
        """Run one section and rewrite the JSON with what is measured so far: a run cut off by a
        time limit still leaves every finished section's figures (`complete` says whether all ran)."""
        started = time.perf_counter()
        document[section] = run()
        seconds[section] = time.perf_counter() - started
        print(f"{section}: {seconds[section]:.0f} s", flush=True)
        figures_file.write(name, str(setup.device), {**document, "seconds": seconds, "complete": False}, path)
        return document[section]

    timed("compile", lambda: compile_all(setup, command))
    timed("tests", lambda: sections.kernel_tests(setup, args.out))
    timed("errors", lambda: sections.errors(setup))
    timed("steps", lambda: sections.steps(setup))
    gru_default = timed("gru", lambda: sections.gru_times(setup))
    gru_strict = timed("gru strict", lambda: sections.strict_gru_times(setup, command)) if setup.cuda else {}
    timed("cells", lambda: sections.cells(setup, gru_default, gru_strict))
    timed("precision", lambda: sections.precision_effects(setup))
    timed("trials", lambda: trials(setup))
    timed("packing", lambda: packing(setup))
    document["grids"] = sections.grids(setup)
    document["notes"] = setup.notes
    document["seconds"] = seconds
    document["complete"] = True
    figures_file.write(name, str(setup.device), document, path)
    summary(document)


if __name__ == "__main__":
    main()
