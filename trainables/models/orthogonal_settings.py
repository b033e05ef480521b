"""The orthogonal models' declared settings, each declared once: the registry validates a trial's
values against these, the constructors take their defaults from them, and the parametrizations
(`orthogonal`) check their arguments against the same ranges."""

from __future__ import annotations

from trainables.hyperparams import Hyperparam

LAYOUT = Hyperparam(
    "layout",
    "categorical",
    "auto",
    choices=("auto", "fft", "tunable"),
    help="Givens layout of U: fft (log2 n layers), tunable (capacity layers), auto: fft when n is a power of two",
)
CAPACITY = Hyperparam(
    "capacity",
    "int",
    2,
    low=1,
    high=4096,
    help="layers of the tunable layout (n reaches all of SO(n)); ignored by fft",
)
GIVENS_HYPERPARAMS: tuple[Hyperparam, ...] = (LAYOUT, CAPACITY)
RHO = Hyperparam(
    "rho", "int", 0, low=0, high=65536, at_most="hidden_size", help="entries −1 in the Cayley scaling D"
)
NEUMANN_ORDER = Hyperparam(
    "neumann_order",
    "int",
    2,
    low=0,
    high=3,
    help="Neumann series order of the inverse update; 0 computes the exact inverse every step",
)
RESET_INTERVAL = Hyperparam(
    "reset_interval",
    "int",
    50,
    low=1,
    high=10**6,
    help="optimizer steps between exact recomputations of the inverse",
)
