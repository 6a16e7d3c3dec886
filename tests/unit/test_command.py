"""infoflow_smt.command, the policy every entry point shares: numbers read once within their bounds, every
error one line with its exit code, and the exit code kept when the reader of standard output leaves."""
from __future__ import annotations

import argparse
import math
import signal
import subprocess
import sys
import time

import pytest

from infoflow_smt.command import SECONDS, WHOLE, BadInput, Bound, Exit, OutputFailed, Terminated, answer
from infoflow_smt.errors import InvalidSpecError, SolverUnknownError, WitnessCheckError
from infoflow_smt.limits import MAX_TIMEOUT


# ---- numbers ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "value"), [("0.5", 0.5), ("60", 60.0), (" 2 ", 2.0), ("1e-3", 0.001),
                                             (str(MAX_TIMEOUT), MAX_TIMEOUT)])
def test_seconds_within_the_limit_are_read(text, value):
    assert SECONDS(text) == value


@pytest.mark.parametrize(("text", "says"), [
    ("1e308", "1e308 is over the limit of 1000000 seconds (infoflow_smt.limits.MAX_TIMEOUT)"),
    ("1e306", "over the limit"), ("inf", "inf is not a finite number of seconds"), ("nan", "not a finite number"),
    ("0", "0 is not above 0 seconds"), ("-1", "is not above 0"), ("1e-400", "is not above 0"),
    ("soon", "'soon' is not a number"), ("9" * 5000, "has 5000 digits, over the limit of 18"),
])
def test_seconds_it_cannot_honour_are_refused_naming_the_value(text, says):
    started = time.perf_counter()
    with pytest.raises(argparse.ArgumentTypeError, match=says.replace("(", r"\(").replace(")", r"\)")):
        SECONDS(text)
    assert time.perf_counter() - started < 0.1


LAYERS = Bound(int, 1, 32, "infoflow_smt.limits.MAX_LAYERS")


@pytest.mark.parametrize(("bound", "text", "says"), [
    (LAYERS, "33", "33 is over the limit of 32 (infoflow_smt.limits.MAX_LAYERS)"),
    (LAYERS, "0", "0 is not at least 1"), (LAYERS, "2.0", "'2.0' is not a whole number"),
    (LAYERS, "1e3", "'1e3' is not a whole number"),
    (WHOLE, str(WHOLE.high + 1),
     f"{WHOLE.high + 1} is over the limit of 999999999999999999 (infoflow_smt.limits.MAX_DIGITS)"),
])
def test_whole_numbers_are_whole_and_bounded(bound, text, says):
    assert LAYERS.read("32") == 32 and WHOLE(str(WHOLE.high)) == WHOLE.high
    with pytest.raises(BadInput, match=f"^--option {says}".replace("(", r"\(").replace(")", r"\)")):
        bound.read(text, "--option")


def test_a_list_is_read_number_by_number():
    betas = Bound(float, 0, 1e6, above=True).several(increasing=True, most=4)
    assert betas("4,16,64") == (4.0, 16.0, 64.0)
    for text, says in [("4,inf", "not a finite number"), ("16,4", "give increasing numbers"),
                       ("1,2,3,4,5", "at most 4 numbers"), ("4,,8", "'' is not a number")]:
        with pytest.raises(argparse.ArgumentTypeError, match=says):
            betas(text)


# ---- errors: one line and its code -------------------------------------------------------------------------------
def _raises(err: BaseException):
    def command() -> int:
        raise err
    return command


@pytest.mark.parametrize(("err", "code", "says"), [
    (BadInput("--heads 0 is not at least 1"), 2, "prog: error: --heads 0 is not at least 1"),
    (InvalidSpecError("x[0] names position 0"), 2, "prog: error: invalid specification: x[0]"),
    (OutputFailed("cannot write to standard output (No space left on device)"), 2, "cannot write"),
    (OSError(13, "Permission denied", "/root/x"), 2, "prog: error: Permission denied: /root/x"),
    (SolverUnknownError("the deadline passed"), 3, "prog: solver returned unknown"),
    (WitnessCheckError("fails its replay"), 4, "prog: internal error"),
    (RuntimeError("a bug"), 4, "internal error (a bug in infoflow_smt"),
    (KeyboardInterrupt(), 130, "prog: interrupted; kept"),
    (Terminated(), 143, "prog: terminated (SIGTERM); kept"),
])
def test_each_error_is_one_line_with_its_exit_code(err, code, says, capsys):
    assert answer(_raises(err), "prog", interrupted="; kept") == code
    out, stderr = capsys.readouterr()
    assert out == "" and stderr.count("\n") == 1 and says in stderr and "Traceback" not in stderr


def test_a_bugs_traceback_only_under_debug(capsys):
    assert answer(_raises(RuntimeError("a bug")), "prog", debug=True) == Exit.INTERNAL
    assert "Traceback" in capsys.readouterr().err


def test_what_a_user_wrote_reaches_the_terminal_escaped(capsys):
    answer(_raises(BadInput("target 'x\x1b[2J\nrm\u202e' is not known")), "prog")
    err = capsys.readouterr().err
    assert err == "prog: error: target 'x\\x1b[2J rm\\u202e' is not known\n"


def test_the_exit_code_is_a_plain_int():
    code = answer(lambda: Exit.NO, "prog")
    assert type(code) is int and code == 1


# ---- the console script: the exit code survives a reader that leaves --------------------------------------------
SCRIPT = """
import sys, time
from infoflow_smt.command import console
def main(argv):
    lines, code = int(argv[0]), int(argv[1])
    if lines < 0:
        time.sleep(30)
    for i in range(lines):
        print("a line of the answer " * 4)
    return code
console(main, "demo")
"""


def _shell(line: str) -> subprocess.CompletedProcess:
    demo = f"{sys.executable} -c '{SCRIPT}'"
    return subprocess.run(["bash", "-c", f"set -o pipefail; {line.replace('demo', demo)}"], capture_output=True,
                          text=True, timeout=60, check=False)


@pytest.mark.parametrize(("line", "code"), [
    ("demo 100000 1 | true", 1),       # infeasible stays infeasible when the reader reads nothing
    ("demo 100000 1 | head -1", 1),    # ... or one line
    ("demo 100000 3 | head -c 10", 3),
    ("demo 100000 0 | true", 0),
    ("demo 3 1 | true", 1),            # all of it sits in the buffer when the reader leaves
])
def test_a_reader_that_leaves_early_keeps_the_exit_code(line, code):
    done = _shell(line)
    assert done.returncode == code and done.stderr == "", done


@pytest.mark.parametrize("line", ["demo 3 1 > /dev/full", "demo 100000 1 > /dev/full", "demo 3 0 >&-"])
def test_a_full_or_closed_standard_output_is_one_line_and_code_2(line):
    done = _shell(line)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "standard output" in done.stderr, done


def test_sigterm_is_one_line_and_code_143():
    process = subprocess.Popen([sys.executable, "-c", SCRIPT, "-1", "0"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)   # started, and asleep in main
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 143 and err == "demo: terminated (SIGTERM)\n", (out, err)


def test_the_limits_are_finite():
    assert math.isfinite(SECONDS.high) and SECONDS.above and SECONDS.low == 0
