"""The built-in models, each declared once by name: what it accepts and where its code is.

The code (`"module:Qualname"`) is imported when a trial first builds the model, so a spec is
validated and `sweeper models` lists them without importing torch.
"""

from __future__ import annotations

from trainables.models.hyperparams import (
    GIVENS_HYPERPARAMS,
    KERNEL_SETTINGS,
    MODRELU_EPS,
    NCGRU_INIT,
    NCGRU_ORTHOGONAL,
    NCGRU_RESET,
    NEUMANN_ORDER,
    RESET_INTERVAL,
    RHO,
)
from trainables.registry import declare_model

GIVENS_MODEL = (*GIVENS_HYPERPARAMS, MODRELU_EPS, *KERNEL_SETTINGS)

declare_model("lstm", "trainables.models.rnn:LSTM", description="LSTM (torch.nn.LSTM, fused)")
declare_model("gru", "trainables.models.rnn:GRU", description="GRU (torch.nn.GRU, fused)")
declare_model(
    "eurnn",
    "trainables.models.eurnn:EURNN",
    hyperparams=GIVENS_MODEL,
    orthogonal=True,
    description="EURNN (orthogonal): modReLU(U h + W x), U a product of Givens rotations",
)
declare_model(
    "goru",
    "trainables.models.goru:GORU",
    hyperparams=GIVENS_MODEL,
    orthogonal=True,
    description="GORU: gated orthogonal recurrent unit, Givens U, modReLU",
)
declare_model(
    "goru_noreset",
    "trainables.models.goru:GORUNoReset",
    hyperparams=GIVENS_MODEL,
    orthogonal=True,
    description="GORU without its reset gate (r ≡ 1), a GORU paper ablation",
    ablation_of="goru",
)
declare_model(
    "goru_noupdate",
    "trainables.models.goru:GORUNoUpdate",
    hyperparams=GIVENS_MODEL,
    orthogonal=True,
    description="GORU without its update gate (z ≡ 0), a GORU paper ablation",
    ablation_of="goru",
)
declare_model(
    "scornn",
    "trainables.models.scornn:ScoRNN",
    hyperparams=(RHO, MODRELU_EPS, *KERNEL_SETTINGS),
    orthogonal=True,
    description="scoRNN: modReLU(W x + U h), U = (I + A)^-1 (I − A) D, exact inverse",
)
declare_model(
    "ncgru",
    "trainables.models.ncgru:NCGRU",
    hyperparams=(
        NCGRU_ORTHOGONAL,
        NCGRU_RESET,
        RHO,
        NEUMANN_ORDER,
        RESET_INTERVAL,
        NCGRU_INIT,
        MODRELU_EPS,
        *KERNEL_SETTINGS,
    ),
    orthogonal=True,
    description="NC-GRU: GRU with scaled Cayley U_c (and U_r, U_u), inverse kept by a Neumann series",
)
