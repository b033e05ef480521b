"""The time loops of the orthogonal models: the plain loops, and the fused Triton scans that replace
them on a GPU.

The `kernel` setting (`choice`) picks the implementation: `loop`, the plain one, which a CPU runs
and every fast path is tested against, or `fused`, one Triton launch per direction (`fused`) on the
path `plan` chooses from the hidden size, the batch and the device. `kernel: auto` checks each
fused variant against the loop at its first use (`self_check`). This `__init__` imports nothing,
so importing a model never imports Triton; `choice.fused_scans` imports `fused` when a model first
runs fused.

Which model runs where (files here unless named otherwise; "fits on chip" is
`plan.fits_on_chip`: on an H100, up to 128 units, or 64 with `kernel_precision: tf32x3` where the
cell has more than one matrix to hold):

    model               kernel: loop                       kernel: fused: path     fused kernels
    eurnn               models/modrelu.py, modrelu_scan    givens                  reset_after_kernels.py
    scornn              models/modrelu.py, modrelu_scan    rows where U fits on    reset_after_kernels.py
                                                           chip, else split
    goru,               loop.py, reset_after_scan          givens where the gate   reset_after_kernels.py
    goru_noreset,                                          matrices fit on chip,
    goru_noupdate                                          else split
    ncgru reset: after  loop.py, reset_after_scan          rows where U_c, U_r,    reset_after_kernels.py
                                                           U_u fit on chip, else
                                                           split
    ncgru reset: before loop.py, reset_before_scan         rows where U_c, U_r,    reset_before_kernels.py
    (the default)                                          U_u fit on chip, else
                                                           split
    lstm, gru           no scan here: torch.nn.LSTM / torch.nn.GRU (cuDNN on a GPU), models/rnn.py

Every fused path goes through `fused.py` (the autograd functions and the launches), `plan.py`
(the path and grid) and `kernel_parts.py` (the Triton helpers both kernel files share); the split
path's barrier is `kernel_parts.grid_sync` on the device and `barrier.py` on the host.

The orthogonal matrices themselves are built once per forward pass, outside the scan, by the
parametrizations in models/orthogonal.py, as the same `kernel` setting says
(`choice.build_matrix`): `loop` by the ATen ops there, the reference; `fused` by Triton
kernels, imported at their first use, in float32 or float64; `auto` by those on CUDA once each has
agreed with its ATen build in the process (`self_check.build_verdict`), else, and on a CPU, by
the ATen ops. A build that fails its check adds `+aten-matrix:…` to the trial's `kernel` metric.

    matrix                      models                      kernel: loop (ATen)         kernel: fused
    Givens M, dL/dθ             eurnn, goru and ablations   models/orthogonal.py,       givens_matrix.py,
                                                            GivensRotations.rotate      givens_kernels.py
    scaled Cayley U (eq. 2/4)   scornn, ncgru               models/orthogonal.py,       cayley_matrix.py,
                                                            scaled_cayley               cayley_kernels.py
"""
