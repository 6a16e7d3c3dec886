"""Random feasible targets compiled and checked: ``random_target`` texts (tests/support/generators.py),
each on the first of a fixed list of architectures (1 to 3 layers of h <= 4 heads, E = 32, d = 2) where
``ifs.decide`` finds it feasible; each compiles or is refused with a reason class, and every compiled one must
reach NMSE <= 1e-3 at T = 8 and 64 at the largest beta.

    python benchmarks/compile_random.py [--count 300] [--out results/compile_random_2core.txt]
"""
from __future__ import annotations

import argparse
import collections
import os
import random
import re
import sys
import time

import torch

import experiments
import infoflow_smt as ifs
from infoflow_smt.errors import CompileRefusal
from infoflow_smt.machine import cpu_model

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from support.fresh import on_a_new_thread
from support.generators import random_target

SHAPES = ((1,), (2,), (1, 1), (4,), (2, 2), (1, 1, 1), (4, 4), (2, 2, 2), (4, 4, 4))
BETAS, SEQ_LENS, SAMPLES, GOAL = (16, 256, 4096), (8, 64), 32, 1e-3


_CALL = re.compile(r"\b(f\d+)\(((?:[^()]|\((?:[^()]|\([^()]*\))*\))*)\)")


def plain(text: str) -> bool:
    """Built only from ``dot``, ``bilinear`` and one-token functions (every ``f_i`` reads one token, no
    sum of tokens, no retrieved token): the class the issue says should never be refused at E = 32, d = 2."""
    for _, args in _CALL.findall(text):
        tokens = set(re.findall(r"x\[[^\]]+\]", args))
        if len(tokens) > 1 or "arg" in args or re.search(r"x\[[^\]]+\]\s*[+\-]", args):
            return False
    return True


def feasible(text: str):
    """The first architecture of ``SHAPES`` where the target is feasible, decided in a z3 context of its own
    (``support.fresh``): the figures should not depend on the order of the targets."""
    return on_a_new_thread(lambda: _first_feasible(text))


def _first_feasible(text: str):
    target = ifs.parse_target(text)
    d = 1 if target.reads_tokens_as_numbers else 2
    positional = bool(target.needs_positional)
    for heads in SHAPES:
        arch = ifs.Architecture(heads=heads, embed_dim=32, input_dim=d, positional=positional)
        try:
            verdict = ifs.decide(target, arch, timeout=10)
        except ifs.InfoflowError:
            return None
        if verdict.feasible:
            return verdict
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    started = time.perf_counter()
    reasons, failed, passed, lines, index = collections.Counter(), [], 0, [], 0
    reasons_plain = collections.Counter()
    while passed + len(failed) + sum(reasons.values()) < args.count:
        rng = random.Random(index)
        index += 1
        verdict = feasible(random_target(rng, rng.random() < 0.35))
        if verdict is None:
            continue
        label = f"{verdict.target.text} on {verdict.architecture}"
        try:
            result = experiments.check_compiled(verdict, BETAS, SEQ_LENS, SAMPLES)
        except CompileRefusal as refusal:
            reasons[refusal.reason] += 1
            if plain(verdict.target.text):
                reasons_plain[refusal.reason] += 1
            mark = "PLAIN " if plain(verdict.target.text) else ""
            lines.append(f"REFUSED {mark}({refusal.reason}: {refusal.term}) {label}")
            print(lines[-1], flush=True)
            continue
        except Exception as err:  # noqa: BLE001 -- a crash is a compiler bug: counted and shown, not hidden
            failed.append(label)
            lines.append(f"ERROR  {type(err).__name__}: {err}  {label}")
            print(lines[-1], flush=True)
            continue
        worst = max(result.nmse[-1])
        if worst <= GOAL:
            passed += 1
        else:
            failed.append(label)
        lines.append(f"{'ok    ' if worst <= GOAL else 'MISS  '} NMSE {worst:.2e} at beta {BETAS[-1]}  {label}")
        print(lines[-1], flush=True)
        _write(args.out, started, index, passed, failed, reasons, reasons_plain, lines)
    _write(args.out, started, index, passed, failed, reasons, reasons_plain, lines, final=True)


def _write(out, started, index, passed, failed, reasons, reasons_plain, lines, final=False) -> None:
    """The summary and every line so far (rewritten after each target: a stopped run keeps its figures)."""
    total = passed + len(failed) + sum(reasons.values())
    refused = sum(reasons.values())
    summary = [(f"machine: {cpu_model()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; betas {BETAS}, "
                f"T {SEQ_LENS}, {SAMPLES} inputs"),
               (f"{total} random feasible targets (from {index} generated{'' if final else ', run in progress'}): "
                f"{passed + len(failed)} compiled, {passed} reach NMSE <= {GOAL:g} at T = 8 and 64, "
                f"{len(failed)} do not"),
               (f"refused: {refused} ({100 * refused / max(total, 1):.1f} %): "
                + (", ".join(f"{r} {n}" for r, n in reasons.most_common()) or "none")),
               (f"refused though built only from dot, bilinear and one-token functions (PLAIN, target 0): "
                f"{sum(reasons_plain.values())}: "
                + (", ".join(f"{r} {n}" for r, n in reasons_plain.most_common()) or "none")),
               f"{time.perf_counter() - started:.0f} s", ""]
    text = "\n".join(summary + lines)
    if final:
        print(text)
    if out:
        with open(out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
