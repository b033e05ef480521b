"""Why sweeper does not turn on Ray's worker prestart: an actor's start, cold and prestarted.

Each variant starts its own local Ray in a subprocess, waits for it to settle, then times one
actor (1 CPU) from creation until its first method, which imports torch and Ray Tune as a trial
does, has returned. Variants:

- cold: Ray's defaults; the actor's worker starts when the actor is created.
- prestarted: `enable_worker_prestart` and `preload_python_modules` (torch, ray.tune), an actor
  without a runtime environment.
- prestarted, Tune's env: the same, but the actor carries a runtime environment of `env_vars`,
  as Tune gives every trainable (`ray.tune.execution.class_cache`).

Ratios are against the cold start of the same run.

    python benchmarks/worker_start.py
"""

from __future__ import annotations

import json
import subprocess
import sys

VARIANTS = {
    "cold": ({}, None),
    "prestarted": ({"enable_worker_prestart": True, "preload_python_modules": ["torch", "ray.tune"]}, None),
    "prestarted, Tune's env": (
        {"enable_worker_prestart": True, "preload_python_modules": ["torch", "ray.tune"]},
        {"env_vars": {"PL_DISABLE_FORK": "1"}},
    ),
}

PROBE = """
import json, os, sys, time
import ray
system_config, runtime_env = json.loads(sys.argv[1])
ray.init(include_dashboard=False, log_to_driver=False, _system_config=system_config)
time.sleep(10)  # prestarted workers import their modules meanwhile

@ray.remote(num_cpus=1)
class Trial:
    def first_line(self):
        import torch, ray.tune  # what a trial needs before its first line
        return os.getpid()

started = time.perf_counter()
actor = Trial.options(runtime_env=runtime_env).remote() if runtime_env else Trial.remote()
ray.get(actor.first_line.remote())
print(json.dumps(time.perf_counter() - started))
ray.shutdown()
"""


def actor_start(system_config: dict, runtime_env: dict | None) -> float:
    """Seconds from an actor's creation until its first method has returned, in a fresh Ray."""
    out = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps([system_config, runtime_env])],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    times = {name: actor_start(*settings) for name, settings in VARIANTS.items()}
    for name, seconds in times.items():
        print(f"{name:<24} {seconds:5.2f} s   {seconds / times['cold']:.2f}x cold")


if __name__ == "__main__":
    main()
