"""The one scale on which the verdict's fallback seed noise (a spread relative to the loss) and
the search tables' replay read an objective's values: a loss, lower is better, compared by ratios.

A minimised objective is its own loss. A maximised one is an accuracy (every maximised metric a
task reports is a share of examples right) and its loss is the share wrong, 1 - value. Compared by
ratios, an accuracy's loss counts as no smaller than `ACCURACY_FLOOR` (`resolved`): closer to 100%
than one example in a thousand, no validation set here resolves, so a leader at 100% and a rival
at 99.95% are level rather than infinitely apart.
"""

from __future__ import annotations

TINY = 1e-12  # a loss of zero stays comparable by ratios
ACCURACY_FLOOR = 1e-3  # one example in a thousand


def as_loss(value: float, mode: str) -> float:
    """`value` as a loss (see the module's docstring)."""
    return max(value if mode == "min" else 1.0 - value, TINY)


def resolved(loss: float, mode: str) -> float:
    """A loss as ratios compare it: an accuracy's no finer than one example in a thousand."""
    return loss if mode == "min" else max(loss, ACCURACY_FLOOR)
