"""Ctrl-C stops a z3 check under way (``smt.cancel``), and leaves the context usable."""
import os
import signal
import threading
import time

import pytest
import z3

from infoflow_smt.smt import cancel


def _pigeons(ctx: z3.Context, seconds: float) -> z3.Solver:
    """Eleven pigeons in ten holes: unsat, and far beyond ``seconds`` of z3's search."""
    solver = z3.Solver(ctx=ctx)
    holes = [z3.Int(f"p{i}", ctx) for i in range(11)]
    solver.add(z3.Distinct(*holes), *[z3.And(h >= 0, h < 10) for h in holes])
    solver.set("timeout", int(seconds * 1000))
    return solver


@pytest.fixture
def main_thread_default_handler():
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        pytest.skip("the runner replaced Python's SIGINT handler")


def _ctrl_c_after(seconds: float) -> threading.Timer:
    timer = threading.Timer(seconds, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    return timer


def test_ctrl_c_stops_a_long_check_at_once(main_thread_default_handler):
    ctx = z3.Context()
    solver = _pigeons(ctx, 30)
    timer = _ctrl_c_after(0.3)
    started = time.perf_counter()
    with pytest.raises(KeyboardInterrupt), cancel.interruptible(ctx):
        solver.check()
    timer.join()
    assert time.perf_counter() - started < 1.5
    easy = z3.Solver(ctx=ctx)
    easy.add(z3.Int("y", ctx) > 1)
    assert easy.check() == z3.sat, "an interrupt must not stay behind in the context"


def test_an_interrupt_that_finds_no_check_leaves_nothing_behind():
    # the watcher may interrupt a context whose check has just ended
    ctx = z3.Context()
    ctx.interrupt()
    solver = _pigeons(ctx, 0.5)
    started = time.perf_counter()
    assert solver.check() == z3.unknown and solver.reason_unknown() == "timeout"
    assert time.perf_counter() - started > 0.4


def test_a_callers_own_handler_keeps_its_meaning(main_thread_default_handler):
    # a handler that does not raise means "not now": the check is left to end on its own
    seen = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: seen.append(signum))
    try:
        ctx = z3.Context()
        solver = _pigeons(ctx, 1.0)
        timer = _ctrl_c_after(0.2)
        with cancel.interruptible(ctx):
            result = solver.check()
        timer.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert result == z3.unknown and solver.reason_unknown() == "timeout" and seen == [signal.SIGINT]


def test_a_wakeup_descriptor_the_caller_set_stays(main_thread_default_handler):
    import socket
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    signal.set_wakeup_fd(writer.fileno())
    try:
        with cancel.interruptible(z3.Context()):
            assert signal.set_wakeup_fd(writer.fileno()) == writer.fileno()
        assert signal.set_wakeup_fd(writer.fileno()) == writer.fileno()
    finally:
        signal.set_wakeup_fd(-1)
        reader.close()
        writer.close()


def test_checks_off_the_main_thread_are_left_alone():
    done = []
    thread = threading.Thread(target=lambda: done.append(_in_block()))
    thread.start()
    thread.join()
    assert done == [[]]


def _in_block() -> list:
    with cancel.interruptible(z3.Context()):
        return list(cancel._running)
