"""Why sweeper preloads its trial workers and gives Tune's actors no runtime environment.

Each variant starts its own local Ray in a subprocess, waits for it to settle, then times one
actor (1 CPU) from creation until its first method, which imports torch, `torch._dynamo` and Ray
Tune as a trial does, has returned. Variants:

- Tune's way: Ray's defaults, and the actor carries a runtime environment of `env_vars`, as Tune
  gives every trainable (`ray.tune.execution.class_cache`): a new worker starts for it.
- preloaded, Tune's env: Ray's idle workers import those modules while they wait
  (`preload_python_modules`), but the actor's runtime environment still needs a new worker.
- preloaded, no env (sweeper): the same idle workers, and an actor without a runtime
  environment of its own, which Ray hands an idle, preloaded worker.

Ratios are against Tune's way in the same run; each variant also prints the resident memory of
an idle worker, which the preload raises.

    python -m benchmarks.overheads.worker_start
"""

from __future__ import annotations

import json
import subprocess
import sys

from sweeper.run.tune.workers import PRELOAD_MODULES, TUNE_ACTOR_ENV_VARS

PRELOAD = {"preload_python_modules": list(PRELOAD_MODULES)}
VARIANTS = {
    "Tune's way": ({}, {"env_vars": TUNE_ACTOR_ENV_VARS}),
    "preloaded, Tune's env": (PRELOAD, {"env_vars": TUNE_ACTOR_ENV_VARS}),
    "preloaded, no env (sweeper)": (PRELOAD, None),
}

PROBE = """
import json, os, sys, time
import ray, psutil  # Ray puts its bundled psutil on the path
system_config, runtime_env = json.loads(sys.argv[1])
ray.init(include_dashboard=False, log_to_driver=False, _system_config=system_config)
time.sleep(10)  # prestarted workers import their modules meanwhile
idle = [p.memory_info().rss for p in psutil.process_iter() if p.name().startswith("ray::IDLE")]

@ray.remote(num_cpus=1)
class Trial:
    def first_line(self):
        import torch, torch._dynamo, ray.tune  # what a trial needs before its first step
        return os.getpid()

started = time.perf_counter()
actor = Trial.options(runtime_env=runtime_env).remote() if runtime_env else Trial.remote()
ray.get(actor.first_line.remote())
print(json.dumps([time.perf_counter() - started, max(idle, default=0) / 2**20]))
ray.shutdown()
"""


def actor_start(system_config: dict, runtime_env: dict | None) -> tuple[float, float]:
    """Seconds from an actor's creation until its first method has returned, in a fresh Ray, and
    the resident memory (MiB) of an idle worker before it."""
    out = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps([system_config, runtime_env])],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    results = {name: actor_start(*settings) for name, settings in VARIANTS.items()}
    baseline, idle_baseline = results["Tune's way"]
    for name, (seconds, idle) in results.items():
        print(
            f"{name:<28} {seconds:5.2f} s   {seconds / baseline:.2f}x Tune's way   "
            f"idle worker {idle:4.0f} MiB ({idle / idle_baseline:.1f}x)"
        )


if __name__ == "__main__":
    main()
