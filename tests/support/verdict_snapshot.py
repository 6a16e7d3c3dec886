"""Print the verdict (status and best exponent) of every question of the regression, differential and
metamorphic sets and of the catalogue on five architectures: one line each, about 2100 lines, in a minute.

Run it before and after a change that must keep every verdict, and compare::

    python tests/support/verdict_snapshot.py > /tmp/after.txt
    diff results/verdict_snapshot.txt /tmp/after.txt

``results/verdict_snapshot.txt`` is its output on the current code; a change that corrects verdicts
rewrites it, and the diff in its commit lists each corrected question.
"""
from __future__ import annotations

import random
import sys
from pathlib import Path

import sympy

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, where support/ lives

import infoflow_smt as ifs
from support.cases import REGRESSION
from support.generators import random_case, random_target

SHAPES = [(1,), (2,), (1, 1), (2, 1), (1, 2), (2, 2)]
CATALOGUE_SHAPES = [(1,), (2,), (1, 1), (2, 2), (4,)]


def line(tag: str, target, arch: ifs.Architecture) -> str:
    try:
        verdict = ifs.decide(target, arch)
    except ifs.InfoflowError as err:
        return f"{tag}\traised {type(err).__name__}: {err}"
    return f"{tag}\t{verdict.status.value}\t{sympy.sympify(verdict.exponent)}"


def lines():
    for case in REGRESSION:
        yield line(f"regression {case.id}", case.target, case.arch)
    for index in range(200):
        case = random_case(index)
        yield line(f"differential {index} {case.text} on {case.arch}", case.text, case.arch)
    for index in range(300):
        rng = random.Random(10_000 + index)  # the metamorphic suite's targets
        text = random_target(rng, rng.random() < 0.3)
        target = ifs.parse_target(text)
        for shape in SHAPES:
            arch = ifs.Architecture(heads=shape, embed_dim=32, input_dim=2, positional=target.needs_positional)
            yield line(f"metamorphic {index} {text} on {arch}", target, arch)
    for name in ifs.catalogue.names():
        for shape in CATALOGUE_SHAPES:
            arch = ifs.Architecture(heads=shape, embed_dim=32, input_dim=2, positional=True)
            yield line(f"catalogue {name} on {arch}", name, arch)


if __name__ == "__main__":
    for text in lines():
        print(text, flush=True)
