"""Worker processes: spawned, deaf to Ctrl-C, kept between calls, and killed when a pool is left by an error."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from infoflow_smt import processes


def test_a_pool_runs_jobs_in_other_processes_that_ignore_ctrl_c():
    with processes.worker_pool(1) as pool:
        assert pool.submit(os.getpid).result(timeout=60) != os.getpid()
        assert pool.submit(os.getppid).result(timeout=60) == os.getpid()
        assert pool.submit(signal.getsignal, signal.SIGINT).result(timeout=60) == signal.SIG_IGN
    with processes.worker_pool(1) as again:
        assert again is pool   # kept: a spawned worker takes a second to start


def test_a_pool_left_by_an_error_is_killed_and_forgotten():
    with pytest.raises(RuntimeError, match="left"), processes.worker_pool(1) as pool:
        worker = pool.submit(os.getpid).result(timeout=60)
        raise RuntimeError("left by an error")
    with pytest.raises(ProcessLookupError):
        for _ in range(100):   # killed; reaped by shutdown, so the pid is gone
            os.kill(worker, 0)
            time.sleep(0.05)
    with processes.worker_pool(1) as fresh:
        assert fresh is not pool


def test_a_worker_dies_with_its_parent():
    """The parent is SIGKILLed (no clean-up runs): its worker must go too."""
    script = ("import os, sys\n"
              "from infoflow_smt import processes\n"
              "with processes.worker_pool(1) as pool:\n"
              "    print(pool.submit(os.getpid).result(timeout=60), flush=True)\n"
              "    os.kill(os.getpid(), 9)\n")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    worker = int(parent.stdout.readline())
    parent.wait(timeout=60)
    deadline = time.time() + 10
    while time.time() < deadline and _alive(worker):
        time.sleep(0.1)
    assert not _alive(worker), f"worker {worker} outlived its parent"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:   # a zombie waiting for init to reap it is dead
        return stat.read().split(")")[-1].split()[0] != "Z"
