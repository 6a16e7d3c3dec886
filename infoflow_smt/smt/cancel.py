"""Ctrl-C reaches a z3 check that is under way.

Python runs its SIGINT handler on the main thread between bytecodes, so a signal that lands during a long z3
check (one C call, made with the GIL released) waits for the check's end, up to its time limit. z3's own
handler (its ``ctrl_c`` parameter) would cancel the check, but it swallows a signal that lands just after the
search, so solver.py turns it off. Here the signal wakes a watcher thread instead (``signal.set_wakeup_fd``:
Python's C-level handler writes the signal's number to a socket at once), and the watcher interrupts the
context of the check under way. The check returns unknown, and Python's handler, which has the signal too,
raises KeyboardInterrupt as soon as the check returns. An interrupt that finds the check already over leaves
nothing behind: z3 starts every check afresh (tests/unit/smt/test_cancel.py).
"""
from __future__ import annotations

import contextlib
import signal
import socket
import threading

import z3

from infoflow_smt.deadline import on_interrupt

_lock = threading.Lock()
_running: list[z3.Context] = []     # the context of the check under way on the main thread, if any
_wakeup: socket.socket | None = None   # the end Python's signal handler writes to, once the watcher runs


def _watch(reader: socket.socket) -> None:
    while True:
        received = reader.recv(256)
        if signal.SIGINT in received:
            with _lock:   # held while interrupting, so the context cannot be freed under the call
                for ctx in _running:
                    ctx.interrupt()


def _wakeup_socket() -> socket.socket:
    global _wakeup
    with _lock:
        if _wakeup is None:
            reader, writer = socket.socketpair()
            writer.setblocking(False)    # set_wakeup_fd takes only a non-blocking descriptor
            threading.Thread(target=_watch, args=(reader,), name="infoflow-ctrl-c", daemon=True).start()
            _wakeup = writer
        return _wakeup


def _raises_on_ctrl_c() -> bool:
    """Only where Ctrl-C means KeyboardInterrupt (Python's handler, or the command's) on the main thread: a
    caller's own handler may mean something else, and other threads never receive signals."""
    return (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) in (signal.default_int_handler, on_interrupt))


@contextlib.contextmanager
def interruptible(ctx: z3.Context):
    """Within the block, a Ctrl-C interrupts the checks of ``ctx``. A wakeup descriptor the caller set
    (asyncio sets one) is left in place: its signals must reach it, so then the check runs to its end."""
    if not _raises_on_ctrl_c():
        yield
        return
    previous = signal.set_wakeup_fd(_wakeup_socket().fileno(), warn_on_full_buffer=False)
    if previous != -1:
        signal.set_wakeup_fd(previous)
        yield
        return
    with _lock:
        _running.append(ctx)
    try:
        yield
    finally:
        with _lock:
            _running.remove(ctx)
        signal.set_wakeup_fd(-1)
