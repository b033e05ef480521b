"""Optuna's TPE with its truncated normals' CDF and log-CDF computed on whole arrays, for the
replay.

TPE's acquisition (`_truncnorm.logpdf`), its draws (`ppf`, whose Newton steps call the log-CDF
again) and every Gaussian mass go through `_truncnorm._log_ndtr`, which calls a Python function
per element, and `_truncnorm._ndtr`, which evaluates Optuna's own polynomial `erf` piece by piece:
together about a third of a replayed TPE suggestion. SciPy's `log_ndtr` and `ndtr` compute the
same functions in C. The CDFs agree to an ulp; the log-CDFs to a few ulps below 0, to 1e-7
relative where Optuna's is least precise (just below 6, where it takes the logarithm of 1 - 1e-9)
and past 37, where Optuna's is a subnormal number and SciPy's zero.

Replayed sweeps are identical with and without them (tests/benchmarks/search_tables/test_fast_tpe.py
replays both and compares every trial), so the replay's figures are those of Optuna's own
arithmetic; the service's sweeps, whose time is training, keep Optuna as it ships.
"""

from __future__ import annotations

import numpy as np
from optuna.samplers._tpe import _truncnorm
from scipy.special import log_ndtr, ndtr

PLAIN = {"_log_ndtr": _truncnorm._log_ndtr, "_ndtr": _truncnorm._ndtr}
# where each pair is compared before the replay relies on it: both tails, the branches' edges
CHECKED = np.concatenate([np.linspace(-40.0, 40.0, 4001), [-20.0, -1e-3, 0.0, 1e-3, 6.0, 6.0001]])
# how far apart each pair may lie, (relative, absolute): at 6 Optuna's own log-CDF is good to
# about 6e-8, and far in its right tail below what a double holds; Optuna's CDF is an absolute
# formula (0.5 + 0.5 erf), 0 where SciPy's is a tiny positive number
TOLERANCE = {"_log_ndtr": (1e-6, 1e-300), "_ndtr": (0.0, 1e-15)}


def vectorized_log_ndtr(a: np.ndarray) -> np.ndarray:
    return log_ndtr(np.asarray(a, dtype=float))


def vectorized_ndtr(a: np.ndarray) -> np.ndarray:
    return ndtr(np.asarray(a, dtype=float))


FAST = {"_log_ndtr": vectorized_log_ndtr, "_ndtr": vectorized_ndtr}


def install() -> None:
    """Route Optuna's TPE through the vectorized functions, once each has been checked against
    Optuna's own on `CHECKED`."""
    for name, fast in FAST.items():
        plain, got = PLAIN[name](CHECKED), fast(CHECKED)
        relative, absolute = TOLERANCE[name]
        off = np.abs(got - plain) > absolute + relative * np.abs(plain)
        if off.any():
            at = float(CHECKED[off][0])
            raise RuntimeError(
                f"SciPy's {name.strip('_')} differs from Optuna's at {at:g} ({got[off][0]!r} against "
                f"{plain[off][0]!r}): this Optuna's TPE cannot be replayed faster"
            )
    for name, fast in FAST.items():
        setattr(_truncnorm, name, fast)


def uninstall() -> None:
    for name, plain in PLAIN.items():
        setattr(_truncnorm, name, plain)
