"""Questions asked afresh: among equal witnesses (and equal cores) z3 returns one that depends on what the
target's z3 context answered before (the questions ``decide`` keeps for the next call of the same target),
so a result meant to be the same in every run asks with nothing kept."""
from __future__ import annotations

import threading

from infoflow_smt.smt.solver import forget_recent


def on_a_new_thread(work):
    """``work()`` on a new thread, with no recent answer to reuse (each target's questions then make a z3
    context of their own); its result, or the exception it raised."""
    outcome = []

    def run() -> None:
        forget_recent()   # a recent answer is kept per thread identity, which a new thread may reuse
        try:
            outcome.append((True, work()))
        except BaseException as err:  # noqa: BLE001 - handed to the caller's thread
            outcome.append((False, err))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    done, value = outcome[0]
    if not done:
        raise value
    return value
