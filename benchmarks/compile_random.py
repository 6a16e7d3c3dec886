"""Every feasible verdict on random targets, compiled and checked against the whole criterion (docs/compile.md).

The targets come from ``compile_targets.draw`` (a generator of this benchmark's own: scalar and vector tokens,
functions of two tokens, fixed positions, offsets, subsets, selected contents, hosted witnesses, the causal
mask). Each is decided on several architectures (1 to 3 layers of 1 or 2 heads, 4 layers for the hosted
chains, E = 32; positions as ``infoflow decide`` infers them, and on where the target does not need them); every
FEASIBLE verdict is compiled and checked (``check_compiled`` at T = 8 and 64) and counted as one of:

* ``holds``: the criterion holds;
* ``slow``: it compiles and its NMSE falls with beta, but the criterion fails (the beta reaching 1e-3 grows too
  fast with T, or the NMSE falls too slowly);
* ``wrong``: it compiles and at some T the NMSE at the largest beta is above 1e-3 and not a tenth of what it is
  at the smallest: a model of another function;
* ``refused``: ``CompileRefusal`` with its class (the classes docs/compile.md explains);
* ``crash``: any other exception (a compiler bug).

    python benchmarks/compile_random.py --seed 1 --count 300 [--out results/compile_random_seed1_2core.txt]
"""
from __future__ import annotations

import argparse
import collections
import os
import random
import sys
import time
import traceback

import torch

import infoflow_smt as ifs
from infoflow_smt.errors import CompileRefusal
from infoflow_smt.lang.trees import needs_positional
from infoflow_smt.machine import cpu_model

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from compile_targets import draw
from support.fresh import on_a_new_thread

import experiments

SHAPES = ((1,), (2,), (1, 1), (2, 1), (1, 2), (1, 1, 1))
CHAIN_SHAPES = ((1, 1, 1, 1),)
BETAS, SEQ_LENS, GOAL = (16, 256, 4096), (8, 64), 1e-3
TIMEOUT = 20.0
OUTCOMES = ("holds", "slow", "wrong", "refused", "crash")


def architectures(text: str, d: int, causal: bool, hosted: bool) -> list[ifs.Architecture]:
    """The architectures a target is decided on: positions as ``infoflow decide`` infers them and, where the
    target does not need them, also with positions (a witness may then use positional heads)."""
    target = ifs.parse_target(text)
    inferred = bool(needs_positional(target, True)) if causal else bool(target.needs_positional)
    found = []
    for heads in SHAPES + (CHAIN_SHAPES if hosted else ()):
        for positional in ([True] if inferred else [False, True]):
            found.append(ifs.Architecture(heads=heads, embed_dim=32, input_dim=d, positional=positional,
                                          causal=causal))
    return found


def decided(text: str, arch: ifs.Architecture):
    """The verdict, decided in a z3 context of its own (the witness among equal ones must not depend on the
    order of the questions); None where the target cannot be asked on this architecture."""
    try:
        return on_a_new_thread(lambda: ifs.decide(text, arch, timeout=TIMEOUT))
    except ifs.InfoflowError:
        return None


def judge(verdict) -> tuple[str, str]:
    """(outcome, detail) of one feasible verdict."""
    try:
        result = experiments.check_compiled(verdict, BETAS, SEQ_LENS)
    except CompileRefusal as refusal:
        return "refused", f"{refusal.reason}: {str(refusal).splitlines()[0][:240]}"
    except Exception as err:  # noqa: BLE001 -- a crash is a compiler bug: counted and shown, not hidden
        where = traceback.extract_tb(err.__traceback__)[-1]
        return "crash", f"{type(err).__name__}: {str(err)[:160]} ({os.path.basename(where.filename)}:{where.lineno})"
    worst = max(result.nmse[-1])
    if result.holds:
        return "holds", f"NMSE {worst:.2e} at beta {BETAS[-1]}"
    flat = [j for j in range(len(SEQ_LENS)) if result.nmse[-1][j] > GOAL and
            result.nmse[-1][j] > result.nmse[0][j] / 10]
    failures = "; ".join(result.failures)
    return ("wrong" if flat else "slow"), f"NMSE {worst:.2e} at beta {BETAS[-1]}: {failures}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", type=int, default=100, help="targets drawn (each on several architectures)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    started = time.perf_counter()
    counts, classes, by_shape, lines = collections.Counter(), collections.Counter(), {}, []
    decisions = collections.Counter()
    for index in range(args.count):
        rng = random.Random(1_000_003 * args.seed + index)
        d = draw(rng)
        try:
            archs = architectures(d.text, d.input_dim, d.causal, d.shape == "hosted")
        except ifs.InfoflowError as err:
            lines.append(f"[{index}] NOT A TARGET ({str(err).splitlines()[0][:120]}) {d.text}")
            continue
        for arch in archs:
            verdict = decided(d.text, arch)
            status = "refused by decide" if verdict is None else verdict.status.value
            decisions[status] += 1
            if verdict is None or not verdict.feasible:
                continue
            outcome, detail = judge(verdict)
            counts[outcome] += 1
            by_shape.setdefault(d.shape, collections.Counter())[outcome] += 1
            if outcome == "refused":
                classes[detail.split(":")[0]] += 1
            lines.append(f"[{index}] {outcome.upper():<8} {d.shape:<10} {detail}  |  {d.text} on {arch}")
            print(lines[-1], flush=True)
        _write(args, started, index + 1, counts, classes, by_shape, decisions, lines)
    _write(args, started, args.count, counts, classes, by_shape, decisions, lines, final=True)


def _write(args, started, drawn, counts, classes, by_shape, decisions, lines, final=False) -> None:
    """The summary and every line so far (rewritten after each target: a stopped run keeps its figures)."""
    feasible = sum(counts.values())
    share = lambda n: f"{100 * n / max(feasible, 1):.1f} %"
    summary = [
        (f"machine: {cpu_model()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; seed {args.seed}; "
        f"check_compiled at T {SEQ_LENS}, betas {BETAS}; decide timeout {TIMEOUT:g} s"),
        f"{drawn} targets drawn{'' if final else ' (run in progress)'}; decisions: "
        + ", ".join(f"{k} {v}" for k, v in sorted(decisions.items())),
        f"{feasible} feasible verdicts: " + ", ".join(f"{o} {counts[o]} ({share(counts[o])})" for o in OUTCOMES),
        "refused by class: " + (", ".join(f"{r} {n}" for r, n in classes.most_common()) or "none"),
        "by shape: " + "; ".join(f"{s} " + " ".join(f"{o} {c[o]}" for o in OUTCOMES if c[o])
                                 for s, c in sorted(by_shape.items())),
        f"{time.perf_counter() - started:.0f} s", ""]
    text = "\n".join(summary + lines)
    if final:
        print("\n".join(summary))
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
