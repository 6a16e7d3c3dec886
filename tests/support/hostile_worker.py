"""Runs ``tests/hostile_cases.CASES`` in this process (under the memory limit its parent set) and prints one
JSON line per case: its id, the class of what it raised (or "ok"), the seconds it took."""
from __future__ import annotations

import json
import signal
import sys
import tempfile
import time

import numpy as np
import sympy

import infoflow_smt as ifs

sys.path.insert(0, sys.argv[1])  # tests/, where support/ lives
from support.hostile_cases import CASES

ALARM = int(sys.argv[2])


class Hung(Exception):
    pass


def _alarm(signum, frame):
    raise Hung()


signal.signal(signal.SIGALRM, _alarm)
for case_id, code, _ in CASES:
    scope = {"ifs": ifs, "np": np, "sympy": sympy, "T": ifs.T, "tmp": tempfile.mkdtemp()}
    started = time.perf_counter()
    signal.alarm(ALARM)
    try:
        exec(compile(code, case_id, "exec"), scope)  # noqa: S102 - the project's own test cases
        outcome = "ok"
    except Hung:
        outcome = "hung"
    except BaseException as err:  # noqa: BLE001 - the class of anything raised is the finding
        outcome = type(err).__name__
    finally:
        signal.alarm(0)
    print(json.dumps({"id": case_id, "outcome": outcome, "seconds": round(time.perf_counter() - started, 3)}),
          flush=True)
