"""Head count (paper 2, Yu, Bao, Jiang, Yu, Li, ICLR 2026, Theorem 2): one layer needs ``h >= D`` heads.

The D-retrieval target ``F0(min_{t in S_1} f_1(x_t), ..., min_{t in S_D} f_D(x_t))`` needs ``D``
selections over all positions, each of which only the output token can make; one layer gives it ``h``
heads, one max-position retrieval each (Theorem 2(1): ``h = D`` suffices, exponent 1). With ``h < D``
some minimum can reach the output only through global aggregation, ``T*d/E - 1`` (Theorem 2(2): a lower
bound linear in ``T``). The same holds without subsets (every ``S_i`` all positions) and, then, without
positional encoding.

>>> from proofs.head_count import prove_head_count
>>> prove_head_count().holds
True
"""
from __future__ import annotations

from collections.abc import Iterator

from .harness import (
    FrontierCheck,
    aggregation_exponent,
    architecture,
    exactly,
    general_claim,
    linear,
    observe,
    run_proof,
)
from .result import Evidence, ProofResult

NAME = "head_count"
STATEMENT = ("Paper 2 (Yu, Bao, Jiang, Yu, Li, ICLR 2026), Theorem 2(1)-(2): at one layer the D-retrieval "
             "target (D = 2..5) is efficient, with exponent 1, iff h >= D, and costs T*d/E - 1 otherwise, "
             "with subsets and positional encoding, without subsets, and without positional encoding.")

# the paper's variants: subsets S_i need positions to tell them apart; without subsets, positions are optional
VARIANTS = ((True, True), (False, True), (False, False))  # (subsets, positional)
# one (E, d) per D, so that the widths vary across the proof; every D is tried at h = 1 .. D + 1
WIDTHS = {2: (32, 2), 3: (12, 4), 4: (64, 1), 5: (30, 3)}


def _spec(D: int, subsets: bool) -> str:
    return f"d_retrieval:D={D}" + ("" if subsets else ",subsets=false")


def _evidence() -> Iterator[Evidence]:
    for D, (E, d) in WIDTHS.items():
        for subsets, positional in VARIANTS:
            for h in range(1, D + 2):
                arch = architecture((h,), E, d, positional=positional)
                if h >= D:
                    yield observe(_spec(D, subsets), arch, "feasible", exactly(1))
                else:
                    yield observe(_spec(D, subsets), arch, "infeasible",
                                  linear(aggregation_exponent(E, d), via="global aggregation"),
                                  mentions="gives the output token")  # the reason: its head budget


GENERAL = ("Over every architecture of one layer: D-retrieval is efficient exactly from h = D heads on (every "
           "one-layer point of the frontier is (1, D)), in each of the three variants, for every h.")


def _one_layer_point(D: int):
    return lambda frontier: [s for s in frontier.shapes if s[0] == 1] == [(1, D)]


def _general():
    checks = [FrontierCheck(_spec(D, subsets), {"embed_dim": E, "input_dim": d, "positional": positional},
                            test=_one_layer_point(D), expected=f"one one-layer point, (1, {D})")
              for D, (E, d) in WIDTHS.items() if D <= 3 for subsets, positional in VARIANTS]
    return general_claim(GENERAL, checks)


def prove_head_count() -> ProofResult:
    """Theorem 2(1)-(2) of paper 2 for D = 2..5 and h = 1..D+1, and over every one-layer architecture
    (see ``STATEMENT`` and ``GENERAL``)."""
    return run_proof(NAME, STATEMENT, _evidence, _general)
