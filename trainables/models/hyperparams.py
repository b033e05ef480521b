"""The models' declared settings, each declared once: the registry validates a trial's values
against these, the constructors take their defaults from them, and the parametrizations
(`orthogonal`) check their arguments against the same ranges. No torch here, so a spec is
checked without it."""

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
MODRELU_EPS = Hyperparam(
    "modrelu_eps",
    "float",
    0.0,
    low=0.0,
    high=1.0,
    help="ε added to |z| in modReLU (GORU code 1e-3, EUNN 1e-2, scoRNN and NC-GRU 0)",
)
KERNEL = Hyperparam(
    "kernel",
    "categorical",
    "auto",
    choices=("auto", "fused", "loop"),
    help="time loop and matrix builds: fused Triton kernels (CUDA; the loop's in float32), the plain "
    "ones, or auto: fused where they can run",
)
KERNEL_PRECISION = Hyperparam(
    "kernel_precision",
    "categorical",
    "ieee",
    choices=("ieee", "tf32x3", "tf32"),
    help="operands of the fused kernels' products: IEEE float32, three TF32 products "
    "(about float32's accuracy) or one (about 1e-3, faster); the loop ignores it",
)
KERNEL_SETTINGS = (KERNEL, KERNEL_PRECISION)
# NC-GRU's own
NCGRU_ORTHOGONAL = Hyperparam(
    "orthogonal",
    "categorical",
    "rc",
    choices=("c", "rc", "ruc"),
    help="which recurrent weights are scaled Cayley matrices: U_c, U_r and U_c, or all three",
)
NCGRU_RESET = Hyperparam(
    "reset",
    "categorical",
    "before",
    choices=("before", "after"),
    help="reset gate before the candidate's product (eq. 19) or after it (the PTB code)",
)
NCGRU_INIT = Hyperparam(
    "init",
    "categorical",
    "paper",
    choices=("paper", "synthetic_code", "ptb_code"),
    help="initial weights: paper (A as stated, the rest torch.nn.GRU's), the authors' "
    "synthetic-task code or their PTB code",
)
