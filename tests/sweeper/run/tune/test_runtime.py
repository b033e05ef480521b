from __future__ import annotations

import gc
import signal
import sys
import time

import pytest

from sweeper.run.tune.runtime import lost_interrupts_delivered


class InterruptedWhileCollected:
    """Stands for any finalizer that is running when the Ctrl-C's KeyboardInterrupt is raised."""

    def __del__(self) -> None:
        raise KeyboardInterrupt


@pytest.fixture
def python_sigint_handler():
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_a_ctrl_c_swallowed_by_a_finalizer_is_delivered_again(python_sigint_handler, capfd):
    with pytest.raises(KeyboardInterrupt), lost_interrupts_delivered():
        InterruptedWhileCollected()
        gc.collect()
        time.sleep(1)  # the Ctrl-C comes back from a timer thread
        pytest.fail("the interrupt was lost")
    assert "Exception ignored" not in capfd.readouterr().err


def test_other_unraisable_errors_still_reach_the_previous_hook(python_sigint_handler):
    seen = []
    previous, sys.unraisablehook = sys.unraisablehook, seen.append
    try:
        with lost_interrupts_delivered():

            class Broken:
                def __del__(self) -> None:
                    raise ValueError("in a finalizer")

            Broken()
            gc.collect()
        assert sys.unraisablehook == seen.append  # restored on the way out
    finally:
        sys.unraisablehook = previous
    assert [u.exc_type for u in seen] == [ValueError]
