"""One deadline for a whole answer: encoding, solving, minimization and replay all spend from it.

>>> d = Deadline(30)
>>> 0 < d.left() <= 30 and not d.passed
True
"""
from __future__ import annotations

import contextlib
import math
import signal
import sys
import threading
import time

from infoflow_smt.errors import InfoflowError, InvalidSpecError, Problem, Terminated
from infoflow_smt.limits import DEFAULT_TIMEOUT, MAX_TIMEOUT


class OutOfTime(InfoflowError):
    """The deadline passed while ``what`` was under way (turned into UNKNOWN, never into INFEASIBLE)."""

    def __init__(self, what: str):
        self.what = what
        super().__init__(f"the deadline passed during {what}")


def seconds(timeout, subject: str = "timeout") -> float:
    """A validated timeout in seconds: a positive number up to ``MAX_TIMEOUT``; None is the default deadline.

    >>> seconds(1e306)
    Traceback (most recent call last):
    ...
    infoflow_smt.errors.InvalidSpecError: invalid decision: timeout must be a positive number of seconds up to 1000000 (infoflow_smt.limits.MAX_TIMEOUT), got 1e+306
    """
    if timeout is None:
        return DEFAULT_TIMEOUT
    ok = isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and math.isfinite(timeout) and timeout > 0
    if not ok or timeout > MAX_TIMEOUT:
        raise InvalidSpecError([Problem(f"{subject} must be a positive number of seconds up to {MAX_TIMEOUT:.0f} "
                                        f"(infoflow_smt.limits.MAX_TIMEOUT), got {timeout!r}")], "decision")
    return float(timeout)


_interrupted = threading.Event()   # Ctrl-C or SIGTERM seen by the command's handlers (``on_interrupt``, ...)
_received = [signal.SIGINT]        # which of the two it was


def on_interrupt(signum, frame) -> None:
    """A SIGINT handler that remembers the interrupt before raising KeyboardInterrupt: Python drops an
    exception raised inside a destructor (z3 frees its terms in ``__del__``), and every ``Deadline.check``
    after that raises it again, so an interrupt is never lost."""
    _received[0] = signal.SIGINT
    _interrupted.set()
    raise KeyboardInterrupt


def on_terminate(signum, frame) -> None:
    """The SIGTERM handler of a command: remembered as a Ctrl-C is (``on_interrupt``), and raised as
    ``Terminated``. Code that re-raises a remembered interrupt as KeyboardInterrupt still ends the command;
    ``terminated`` then tells the two apart."""
    _received[0] = signal.SIGTERM
    _interrupted.set()
    raise Terminated


def interrupt_pending() -> bool:
    return _interrupted.is_set()


def terminated() -> bool:
    """Whether the interrupt remembered is SIGTERM (not Ctrl-C)."""
    return _interrupted.is_set() and _received[0] == signal.SIGTERM


@contextlib.contextmanager
def interrupts_remembered():
    """Within the block, Ctrl-C is remembered as well as raised (``on_interrupt``), when the caller left
    Python's own SIGINT handler in place and runs on the main thread: an API call then raises
    KeyboardInterrupt even when the signal lands in a z3 destructor, which drops the exception. A caller's own
    handler (the command's) is left alone."""
    ours = (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler)
    if not ours:
        yield
        return
    forget_interrupt()
    signal.signal(signal.SIGINT, on_interrupt)
    hook, sys.unraisablehook = sys.unraisablehook, _unraisable_unless_remembered(sys.unraisablehook)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.unraisablehook = hook
        forget_interrupt()


def _unraisable_unless_remembered(hook):
    """``sys.unraisablehook`` that drops a KeyboardInterrupt raised in a destructor once it is remembered
    (the next ``Deadline.check`` raises it again): Python would print it as "Exception ignored in ...", and
    a Ctrl-C must end a command with its one line."""
    def unraisable(info) -> None:
        if not (isinstance(info.exc_value, (KeyboardInterrupt, Terminated)) and _interrupted.is_set()):
            hook(info)
    return unraisable


def forget_interrupt() -> None:
    """Clear a remembered interrupt (a command starts afresh)."""
    _interrupted.clear()


class Deadline:
    """A point in time (``time.monotonic``) by which an answer is due."""

    def __init__(self, timeout=None):
        self.seconds = seconds(timeout)
        self.end = time.monotonic() + self.seconds

    def left(self) -> float:
        return self.end - time.monotonic()

    @property
    def passed(self) -> bool:
        return self.left() <= 0

    def check(self, what: str) -> None:
        """Raise ``OutOfTime`` when the deadline has passed (KeyboardInterrupt after a Ctrl-C, ``Terminated``
        after a SIGTERM)."""
        if _interrupted.is_set():
            raise Terminated if terminated() else KeyboardInterrupt
        if self.passed:
            raise OutOfTime(what)

    def milliseconds(self) -> int:
        """What is left, for a solver's timeout option (at least 1: z3 reads 0 as no limit)."""
        return min(max(1, int(self.left() * 1000)), 2**32 - 1)
