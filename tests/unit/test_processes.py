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


def test_a_script_without_a_main_guard_runs_its_pool_once(tmp_path):
    # spawn runs the parent's main script in each worker to find what it defines; unguarded, the script
    # would start its pool again in every worker, which multiprocessing refuses (the pool breaks)
    script = tmp_path / "unguarded.py"
    script.write_text("import os\nfrom infoflow_smt.processes import worker_pool\nprint('started', flush=True)\n"
                      "with worker_pool(2) as pool:\n"
                      "    pids = {pool.submit(os.getpid).result(timeout=60) for _ in range(4)}\n"
                      "    print('workers', os.getpid() not in pids)\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["started", "workers", "True"]   # the script ran once: not in the workers
    import __main__
    assert getattr(__main__, "__spec__", "missing") != "missing"   # this process's main is left as it was


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


# ---- deaf to Ctrl-C from the first instruction -------------------------------------------------------------
STARTING_POOL = """
import time
from infoflow_smt import processes
if __name__ == "__main__":   # a spawned worker runs this file again, as __mp_main__
    with processes.worker_pool(2) as pool:
        futures = [pool.submit(time.sleep, 0.5) for _ in range(2)]
        print([f.result(timeout=120) for f in futures], flush=True)
"""


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as stat:
                if entry.isdigit() and int(stat.read().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry))
        except (OSError, ValueError):
            continue
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")
def test_a_worker_hit_by_ctrl_c_while_it_starts_says_nothing(tmp_path):
    """Ctrl-C reaches the workers too (the terminal signals the whole group), and may come while a worker is
    still starting, before its initializer runs: it must neither print a traceback nor die."""
    script = tmp_path / "pool.py"
    script.write_text(STARTING_POOL)
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    hits = 0
    while parent.poll() is None:   # SIGINT to every child, from its first moments to the end of its job
        for child in _children(parent.pid):
            try:
                os.kill(child, signal.SIGINT)
                hits += 1
            except ProcessLookupError:
                pass
        time.sleep(0.002)
    out, err = parent.communicate(timeout=60)
    assert hits > 10, "the workers were never signalled"
    assert parent.returncode == 0 and out.strip() == "[None, None]", err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err


def test_a_process_of_the_pool_starts_with_ctrl_c_blocked(tmp_path):
    """The mask a worker starts with (read before any initializer): SIGINT blocked."""
    # the probe is a module of its own: a worker imports what it runs by name, not from the main script
    (tmp_path / "mask_probe.py").write_text("import signal\n"
                                            "def blocked(queue):\n"
                                            "    queue.put(signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, []))\n")
    script = tmp_path / "mask.py"
    script.write_text("import signal, sys\n"
                      "from infoflow_smt import processes\n"
                      "from mask_probe import blocked\n"
                      "if __name__ == '__main__':\n"
                      "    context = processes._DeafSpawnContext()\n"
                      "    queue = context.SimpleQueue()\n"
                      "    process = context.Process(target=blocked, args=(queue,))\n"
                      "    process.start()\n"
                      "    print(queue.get(), signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, []))\n"
                      "    process.join()\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and done.stdout.split() == ["True", "False"], done.stderr   # the parent: unblocked
