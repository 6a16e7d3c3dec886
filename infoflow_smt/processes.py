"""Worker processes that die with their parent.

A pool's workers are spawned (no z3 or torch state crosses a fork) and ask the kernel to kill them when the
process that started them dies (Linux ``prctl(PR_SET_PDEATHSIG)``), with a watchdog thread where that call
is missing. So a sweep killed with SIGKILL or SIGTERM leaves no worker behind, and with the workers gone
multiprocessing's resource tracker sees its pipe close and exits too. Workers ignore Ctrl-C (the terminal
sends it to the whole process group): the parent alone decides, and a pool left by an exception, an
interrupt included, kills its workers instead of waiting for their jobs.

A worker is deaf to Ctrl-C from its first instruction, not only from its initializer on: the parent starts it
with SIGINT blocked (a blocked signal stays blocked across fork and exec), so a Ctrl-C during the second or
more a spawned worker spends importing (torch under ``experiments``) stays pending instead of printing a
KeyboardInterrupt traceback; the initializer then ignores SIGINT, which discards a pending one, and unblocks
it. multiprocessing's resource tracker starts the same way. A worker does not import the parent's main
script (``_main_left_out``): its jobs are this package's functions, imported by name.
"""
from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import multiprocessing.context
import os
import signal
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor

_PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """Called first in every worker: end this process when ``parent`` ends; leave Ctrl-C to the parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # a Ctrl-C pending since the start is discarded here ...
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})   # ... and the processes it starts inherit SIG_IGN
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0 and os.getppid() == parent:
            return
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # the parent is already gone
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


class _DeafProcess(multiprocessing.context.SpawnProcess):
    """A spawned process that starts with SIGINT blocked: it is deaf to Ctrl-C before any of its code runs.
    It does not run the parent's main script (``_main_left_out``)."""

    def start(self) -> None:
        # blocked in this thread only, for the moment of the spawn: a Ctrl-C meant for the parent goes to
        # another of its threads or waits until the mask is restored; it is never lost
        before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            with _main_left_out():
                super().start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, before)


@contextlib.contextmanager
def _main_left_out():
    """The parent's ``__main__`` hidden from the spawn's preparation while a worker starts, so the worker does
    not run the caller's script again: spawn does that to find what the script defines, and a script that
    calls a sweep or ``confirm`` without an ``if __name__ == "__main__":`` guard then starts the work again in
    every worker, which fails. A worker here runs only functions of this package, imported by name."""
    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    saved = {key: main.__dict__[key] for key in ("__file__", "__spec__") if key in main.__dict__}
    main.__dict__.pop("__file__", None)
    main.__spec__ = None   # spawn reads it as an attribute: None says "not run as a module"
    try:
        yield
    finally:
        main.__dict__.pop("__spec__", None)
        main.__dict__.update(saved)


class _DeafSpawnContext(multiprocessing.context.SpawnContext):
    Process = _DeafProcess


_POOLS: dict[int, ProcessPoolExecutor] = {}   # kept between calls: a spawned worker takes a second to start


@contextlib.contextmanager
def worker_pool(workers: int):
    """A pool of ``workers`` spawned processes that die with this one (a context manager). The pool is kept
    for the next call in this process (idle workers cost memory, not time); a pool left by an exception, an
    interrupt included, is killed and forgotten. Its jobs are functions importable by name: a worker does
    not run the main script (``_main_left_out``), so what only that script defines is not there."""
    pool = _POOLS.get(workers)
    if pool is None or getattr(pool, "_broken", False):
        pool = _POOLS[workers] = ProcessPoolExecutor(workers, mp_context=_DeafSpawnContext(),
                                                     initializer=die_with_parent, initargs=(os.getpid(),))
    try:
        yield pool
    except BaseException:
        _POOLS.pop(workers, None)
        # shutdown() would wait for the running jobs (minutes); the executor keeps its processes in a private
        # attribute, the only handle on them
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            process.kill()
        pool.shutdown(wait=True, cancel_futures=True)  # quick with the workers gone; frees the pool's queues
        raise
