"""Worker processes that die with their parent, and a pool that is torn down on any interruption.

Why: ``python -m experiments run --workers 2`` trains in child processes. Killed with SIGKILL, a parent
cannot clean up, and its children (about 320 MB each) and multiprocessing's resource tracker used to live on
indefinitely. Each child therefore asks the kernel to send it SIGKILL when its parent dies
(``prctl(PR_SET_PDEATHSIG)`` on Linux; a watchdog thread that polls the parent's pid elsewhere), and ignores
SIGINT: Ctrl-C in a terminal reaches the whole process group, and the parent alone decides what happens
(it ends the pool and reports in one line). The resource tracker exits by itself once no process holds
its pipe, that is once the parent and the children are gone.

>>> with worker_pool(1) as pool:
...     pool.submit(abs, -3).result()
3
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor

_PR_SET_PDEATHSIG = 1      # linux/prctl.h
_WATCHDOG_S = 0.5          # poll interval of the fallback watchdog


def _watchdog(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(_WATCHDOG_S)
    os._exit(1)


def die_with_parent(parent: int) -> None:
    """Make this process end when ``parent`` does (call it first thing in a child)."""
    armed = False
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            armed = libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
        except (OSError, AttributeError):
            armed = False
    if not armed:
        threading.Thread(target=_watchdog, args=(parent,), daemon=True, name="parent-watchdog").start()
    if os.getppid() != parent:   # the parent died before the signal was armed
        os._exit(1)


def _init_worker(parent: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # the parent handles Ctrl-C and ends the pool
    die_with_parent(parent)


def terminate(pool: ProcessPoolExecutor) -> None:
    """End a pool now: cancel what has not started, kill the workers, reap them."""
    # ``_processes`` is the executor's own table of workers; the public API (3.11) can only wait for them.
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        with contextlib.suppress(Exception):
            p.kill()
    for p in processes:
        with contextlib.suppress(Exception):
            p.join(timeout=5)


@contextlib.contextmanager
def worker_pool(workers: int) -> Iterator[ProcessPoolExecutor]:
    """A spawn-context process pool whose workers die with this process and ignore Ctrl-C.

    Leaving the block normally waits for the pool; leaving it by any exception (KeyboardInterrupt, the
    SIGTERM handler's exception, an error in a job) kills the workers first, so nothing outlives it.
    """
    import multiprocessing

    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_init_worker, initargs=(os.getpid(),))
    try:
        yield pool
    except BaseException:
        terminate(pool)
        raise
    pool.shutdown(wait=True)
