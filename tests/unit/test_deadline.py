"""One deadline per answer: validated timeouts, the time left, and OutOfTime once it has passed."""
from __future__ import annotations

import math
import time

import pytest

from infoflow_smt.deadline import Deadline, OutOfTime, interrupts_remembered, seconds
from infoflow_smt.errors import InfoflowError, InvalidSpecError
from infoflow_smt.limits import DEFAULT_TIMEOUT, MAX_TIMEOUT


def test_a_fresh_deadline_has_its_time_left():
    deadline = Deadline(30)
    assert 29 < deadline.left() <= 30 and not deadline.passed
    deadline.check("encoding")   # nothing raised
    assert 29_000 < deadline.milliseconds() <= 30_000


def test_expiry_raises_out_of_time_naming_the_stage():
    deadline = Deadline(0.01)
    time.sleep(0.02)
    assert deadline.passed and deadline.left() < 0
    with pytest.raises(OutOfTime, match="the deadline passed during replay") as caught:
        deadline.check("replay")
    assert caught.value.what == "replay"
    assert deadline.milliseconds() == 1     # z3 reads 0 as no limit: never 0


def test_out_of_time_is_not_an_input_error():
    """It becomes UNKNOWN, never INFEASIBLE, and is not the caller's mistake."""
    assert issubclass(OutOfTime, InfoflowError) and not issubclass(OutOfTime, ValueError)


@pytest.mark.parametrize("value", [0, -1, math.inf, math.nan, True, "5", [5], 1e306, 1e308, MAX_TIMEOUT * 2])
def test_a_bad_timeout_is_refused_naming_it(value):
    """A deadline past MAX_TIMEOUT is refused: z3 takes it in milliseconds (1e308 s overflowed inside)."""
    with pytest.raises(InvalidSpecError, match=r"timeout must be a positive number of seconds up to 1000000 .*got"):
        seconds(value)
    with pytest.raises(InvalidSpecError):
        Deadline(value)


def test_timeouts_in_seconds():
    assert seconds(None) == DEFAULT_TIMEOUT and seconds(MAX_TIMEOUT) == MAX_TIMEOUT
    assert Deadline(MAX_TIMEOUT).milliseconds() < 2**32
    assert seconds(2) == 2.0 and isinstance(seconds(2), float)
    with pytest.raises(InvalidSpecError, match="budget must be"):
        seconds(0, subject="budget")


class _RaisesInItsDestructor:
    def __del__(self):
        raise KeyboardInterrupt   # where a Ctrl-C lands when z3 frees a term


def test_a_remembered_interrupt_in_a_destructor_prints_nothing_and_is_raised_again(monkeypatch):
    import signal
    import sys
    import threading

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers are installed on the main thread only")
    reported = []
    monkeypatch.setattr(sys, "unraisablehook", reported.append)
    deadline = Deadline(60)
    with interrupts_remembered():
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
        obj = _RaisesInItsDestructor()
        del obj   # dropped by Python: the remembered interrupt stands for it
        with pytest.raises(KeyboardInterrupt):
            deadline.check("solving")
    assert reported == []


def test_an_unremembered_exception_in_a_destructor_still_reaches_the_hook(monkeypatch):
    import sys

    reported = []
    monkeypatch.setattr(sys, "unraisablehook", reported.append)
    with interrupts_remembered():
        obj = _RaisesInItsDestructor()
        del obj
    assert [type(r.exc_value) for r in reported] == [KeyboardInterrupt]


def test_a_sigterm_swallowed_by_a_destructor_still_ends_the_command():
    """Python drops an exception raised in ``__del__`` (z3 frees its terms there): a SIGTERM that landed there
    let the command run on to its end (a SIGTERM'd minimize ran past 50 s). It is remembered, as Ctrl-C is, and
    the next check raises it; a command's KeyboardInterrupt after it is reported as the SIGTERM it was."""
    from infoflow_smt import deadline as module
    from infoflow_smt.command import Exit, answer
    from infoflow_smt.errors import Terminated

    class Freed:
        def __del__(self):
            module.on_terminate(15, None)

    with interrupts_remembered():
        Freed()   # the handler raises inside a destructor: Python prints it as unraisable and goes on
        assert module.terminated()
        with pytest.raises(Terminated):
            Deadline(5).check("encoding")

        def reraised() -> int:
            raise KeyboardInterrupt   # as code that re-raises any remembered interrupt does (smt/solver.py)
        assert answer(reraised, "prog") == Exit.TERMINATED == 143
    assert not module.terminated()   # the block ends: the next command starts afresh
