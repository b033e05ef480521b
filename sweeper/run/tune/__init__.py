"""Ray and Ray Tune: starting or joining Ray and driving one Tune run (`runtime`), the trial
function the workers run (`trial`), warm worker processes (`workers`), the patches to Tune's
private behaviour (`patches`), trial checkpoints (`checkpoints`), the live display
(`progress`), and what of a driver-side object Tune may pickle (`driver_state`).

Imports no other part of `sweeper.run`; `trial` and what it imports stay light, since every
trial process imports them.
"""
