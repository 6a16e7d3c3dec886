"""The command under hostile conditions: a bug exits with its own code (not 1, which means infeasible) in one
line; a reader that leaves early, a closed or full standard output, an absurd range, an answer cut short by
its deadline, and Ctrl-C while the solver runs each end the way docs/cli.md says. Every probe that starts a
process runs under a memory limit and a wall-clock limit."""
from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import threading
import time

import pytest

import infoflow_smt as ifs
from infoflow_smt import cli

MEMORY = 4 * 1024**3   # bytes of address space a probe's process may map


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
    signal.signal(signal.SIGINT, signal.SIG_DFL)   # as a terminal starts it (CI may start us with SIGINT ignored)


def _shell(line: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """``line`` with ``infoflow`` standing for this interpreter's ``python -m infoflow_smt``."""
    command = line.replace("infoflow", f"{sys.executable} -m infoflow_smt")
    return subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=timeout,
                          preexec_fn=_limited, check=False)


def test_a_bug_exits_4_in_one_line_and_shows_its_traceback_only_under_debug(monkeypatch, capsys):
    def broken(args):
        raise RuntimeError("a planted bug")
    monkeypatch.setitem(cli.COMMANDS, "catalogue", broken)
    assert cli.main(["catalogue"]) == cli.INTERNAL_ERROR == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error" in err and "a planted bug" in err and "Traceback" not in err
    assert cli.main(["catalogue", "--debug"]) == 4
    assert "Traceback" in capsys.readouterr().err


def test_a_witness_that_fails_its_replay_is_a_bug_not_an_answer(monkeypatch, capsys):
    def failing(args):
        raise ifs.WitnessCheckError("the solver's program fails its replay")
    monkeypatch.setitem(cli.COMMANDS, "decide", failing)
    assert cli.main(["decide", "max_retrieval", "--heads", "1"]) == 4
    assert capsys.readouterr().err.count("\n") == 1


@pytest.mark.parametrize("argv", [["sweep", "max_retrieval", "--layers", "1..100000000000"],
                                  ["sweep", "max_retrieval", "--heads", "1," * 3000 + "1"],
                                  ["decide", "max_retrieval", "--heads", "1", "--input-dim", "9" * 5000],
                                  ["decide", "max_retrieval", "--heads", "1", "--seq-len", "9" * 5000],
                                  ["minimize", "max_retrieval", "--max-layers", "9" * 5000],
                                  ["decide", "intrinsic_dimension:D=" + "9" * 5000, "--heads", "1"],
                                  ["decide", "max(f1(x[t]) for t in T) / 0", "--heads", "1"],
                                  ["export-smtlib", "max_retrieval", "--heads", "1", "--output", "/dev/null",
                                   "--overwrite"]])
def test_absurd_values_are_refused_in_one_line_before_any_work(argv, capsys):
    started = time.perf_counter()
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and time.perf_counter() - started < 5


def test_an_answer_cut_short_says_so_and_exits_3(capsys):
    code = cli.main(["minimize", "intrinsic_dimension:D=3", "--max-layers", "2", "--max-heads", "2",
                     "--input-dim", "2", "--timeout", "0.01"])
    assert code == 3 and "incomplete" in capsys.readouterr().out


@pytest.mark.parametrize("line, code", [("infoflow catalogue | true", 0),
                                        ("infoflow catalogue >&-", 2),
                                        ("infoflow catalogue > /dev/full", 2)])
def test_standard_output_that_leaves_or_fills_up(line, code):
    done = _shell(f"{line}; exit ${{PIPESTATUS[0]}}")
    assert done.returncode == code, done
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == (code != 0), done.stderr


def test_ctrl_c_while_the_solver_runs_exits_130_within_a_second():
    # minimize asks the solver question after question: a SIGINT lands in a check (z3's own handler) or
    # between them, and the command must end either way
    # (272 architectures, most of them infeasible: seconds of solving even when each answer is fast)
    argv = [sys.executable, "-m", "infoflow_smt", "minimize", "intrinsic_dimension:D=16", "--max-layers", "17",
            "--max-heads", "16", "--input-dim", "2", "--timeout", "120"]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True, preexec_fn=_limited)  # noqa: PLW1509
    time.sleep(3)
    assert process.poll() is None, "the question ended before the signal: the test needs a longer one"
    sent = time.perf_counter()
    os.killpg(process.pid, signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130 and time.perf_counter() - sent < 1.5, (out, err)
    assert err.count("\n") == 1 and "interrupted" in err


def test_ctrl_c_raises_keyboard_interrupt_from_the_api():
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    timer = threading.Timer(2, lambda: os.kill(os.getpid(), signal.SIGINT))
    started = time.perf_counter()
    timer.start()
    with pytest.raises(KeyboardInterrupt):   # 272 architectures: seconds of solving however fast each is
        ifs.minimize("intrinsic_dimension:D=16", 17, 16, input_dim=2, timeout=120)
    timer.join()
    assert time.perf_counter() - started < 3.5
