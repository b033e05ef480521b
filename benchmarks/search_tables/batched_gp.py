"""Optuna's GP sampler with its acquisition optimized from every start at once (greenlet, a
dependency of the service), against the sequential fallback Optuna takes without greenlet.

`GPSampler` optimizes its acquisition by L-BFGS-B from several starting points; with greenlet it
steps all of them together, one batched evaluation of the acquisition per step, and without it
optimizes them one after another (warning that suggestions may be slower). Both reach the same
points: replayed `+gp` sweeps are identical either way
(`tests/benchmarks/search_tables/test_batched_gp.py` compares every trial), so `tpe_speed
--speedup batched_gp` measures only what greenlet saves. Installed is Optuna as the service ships
it; uninstalled, the fallback.
"""

from __future__ import annotations

from optuna._gp import batched_lbfgsb

BATCHED = batched_lbfgsb._greenlet_imports


class _Unavailable:
    """What Optuna's import guard says when greenlet did not import."""

    def is_successful(self) -> bool:
        return False


def install() -> None:
    if not BATCHED.is_successful():
        raise RuntimeError("greenlet does not import: Optuna's GP sampler can only optimize sequentially")
    batched_lbfgsb._greenlet_imports = BATCHED


def uninstall() -> None:
    batched_lbfgsb._greenlet_imports = _Unavailable()
