"""Fresh z3 contexts, the next one made ahead.

Each target's questions get a z3 context of their own (``solver.Questions``): which of several programs z3
returns, and how long it searches, depend on the terms its context made before. Making a context takes z3
about 10 ms, as long as a small question; ctypes runs it without the GIL, so the next target's context is
made on a thread of its own while this one is asked, and is ready when it is needed.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor

import z3


class _Spare:
    """One context made ahead, per process."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.maker: ThreadPoolExecutor | None = None
        self.next: Future | None = None
        self.pid: int | None = None

    def take(self) -> z3.Context:
        with self.lock:
            if self.pid != os.getpid():   # a forked child holds the maker, not its thread: a maker of its own
                self.maker, self.next, self.pid = ThreadPoolExecutor(1, "z3-context"), None, os.getpid()
            ready = self.next
            try:
                self.next = self.maker.submit(z3.Context)
            except RuntimeError:   # the interpreter is shutting down: no thread may start
                self.next = None
        return ready.result() if ready is not None else z3.Context()


_spare = _Spare()


def fresh() -> z3.Context:
    """A z3 context no question has used."""
    return _spare.take()
