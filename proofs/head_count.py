"""Head count (paper 2, Yu, Bao, Jiang, Yu, Li, ICLR 2026, Theorem 2): one layer needs ``h >= D`` heads.

The D-retrieval target ``F0(min_{t in S_1} f_1(x_t), ..., min_{t in S_D} f_D(x_t))`` needs ``D``
selections over all positions, each of which only the output token can make; one layer gives it ``h``
heads, one max-position retrieval each. Paper 2 proves the transition at ``h = D`` with exponents of its own:
``gamma`` for ``h = D`` (Theorem 2(1); ``gamma`` is Assumption 3's rate for approximating ``f_i`` and
``F0``, a symbol the paper leaves open) and a lower bound ``k = (T/4 - s - D + 1)/((n + 1) s + 1) - 1`` for
``h = s < D`` (Theorem 2(2), ``n = E/h``). The model decides the same transition with *its* exponents:
``1`` for a max-position retrieval (paper 1, Theorem 1) and ``T*d*h/E - 1`` for the global aggregation the
missing minimum must use (paper 1, Theorem 3). So what this proof checks is that the solver decides the
model's law and that the law keeps paper 2's transition; the exponents are the model's, and each growing
one is at least paper 2's lower bound for large ``T`` (the notes set the two side by side). The same holds
without subsets (every ``S_i`` all positions) and, then, without positional encoding.

>>> from proofs.head_count import prove_head_count
>>> prove_head_count().holds
True
"""
from __future__ import annotations

from collections.abc import Iterator

import sympy

from .harness import (
    Claim,
    FrontierCheck,
    T,
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
             "target (D = 2..5) is efficient iff h >= D, which the model decides with its own exponents, 1 for "
             "h >= D (paper 1, Theorem 1; paper 2 has gamma) and T*d*h/E - 1 otherwise (paper 1, Theorem 3, a head "
             "of width n = E/h), at "
             "least paper 2's lower bound k = (T/4 - s - D + 1)/((n+1)s + 1) - 1 for large T, with subsets and "
             "positional encoding, without subsets, and without positional encoding.")
GAMMA = sympy.Symbol("gamma", positive=True)  # paper 2's Assumption 3 rate: the paper leaves it a symbol

# the paper's variants: subsets S_i need positions to tell them apart; without subsets, positions are optional
VARIANTS = ((True, True), (False, True), (False, False))  # (subsets, positional)
# one (E, d) per D, so that the widths vary across the proof; every D is tried at h = 1 .. D + 1
WIDTHS = {2: (32, 2), 3: (12, 4), 4: (64, 1), 5: (30, 3)}


def _spec(D: int, subsets: bool) -> str:
    return f"d_retrieval:D={D}" + ("" if subsets else ",subsets=false")


def paper2_exponent(D: int, h: int, E: int) -> sympy.Expr:
    """Paper 2's exponent at one layer of ``h`` heads, per-head width ``n = E/h``: ``gamma`` when
    ``h >= D`` (Theorem 2(1), an upper bound), else the lower bound ``k`` of Theorem 2(2) with ``s = h``.

    >>> paper2_exponent(2, 2, 32), paper2_exponent(3, 1, 12)
    (gamma, T/56 - 17/14)
    """
    if h >= D:
        return GAMMA
    n = sympy.Rational(E, h)
    return sympy.expand((T / 4 - h - D + 1) / ((n + 1) * h + 1) - 1)


def _slope(expr: sympy.Expr) -> sympy.Expr:
    return sympy.limit(sympy.sympify(expr) / T, T, sympy.oo)


def above_lower_bound(E: int, d: int, h: int, lower: sympy.Expr) -> Claim:
    """The model's global aggregation by a head of width ``E/h``, ``T*d*h/E - 1``, and for large ``T`` at least
    paper 2's lower bound."""
    model = linear(aggregation_exponent(E, d, heads=h), via="global aggregation")
    return Claim(f"{model.text[:-1]}, at least paper 2's {lower} for large T)",
                 lambda e: model.test(e) and bool(_slope(e) >= _slope(lower)))


def _evidence() -> Iterator[Evidence]:
    for D, (E, d) in WIDTHS.items():
        for subsets, positional in VARIANTS:
            for h in range(1, D + 2):
                arch = architecture((h,), E, d, positional=positional)
                if h >= D:
                    yield observe(_spec(D, subsets), arch, "feasible", exactly(1))
                else:
                    yield observe(_spec(D, subsets), arch, "infeasible",
                                  above_lower_bound(E, d, h, paper2_exponent(D, h, E)),
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


def notes() -> tuple[str, ...]:
    """Paper 2's exponents beside the model's, per D and h (the same in the three variants)."""
    lines = [("Paper 2's exponents beside the model's (`gamma`: paper 2's Assumption 3 rate, a symbol there; "
             "`n = E/h`). Paper 2's are an upper bound for h >= D and a lower bound below; the model's are its "
             "cost laws (paper 1). They agree on which cells are efficient, not on the exponent:"), "",
             "| D | E, d | h | n | paper 2, Theorem 2 | the model |", "|---|---|---|---|---|---|"]
    for D, (E, d) in WIDTHS.items():
        for h in range(1, D + 2):
            model = 1 if h >= D else aggregation_exponent(E, d, heads=h)
            lines.append(f"| {D} | {E}, {d} | {h} | {sympy.Rational(E, h)} | "
                         f"${sympy.latex(paper2_exponent(D, h, E))}$ | ${sympy.latex(model)}$ |")
    lines += ["", ("The model's exponent 1 for h >= D prices the max-position retrieval (paper 1's O(eps^-1) "
                   "construction) and leaves f_i and F0 unpriced; paper 2's gamma is the rate at which its "
                   "feed-forward blocks approximate them (gamma = 2 for a finite Barron norm). Both are bounded in "
                   "T, which is what the verdict decides.")]
    return tuple(lines)


def prove_head_count() -> ProofResult:
    """Theorem 2(1)-(2) of paper 2 for D = 2..5 and h = 1..D+1, and over every one-layer architecture
    (see ``STATEMENT`` and ``GENERAL``)."""
    return run_proof(NAME, STATEMENT, _evidence, _general, notes, differences=(
        ("Paper 2's exponents (gamma for h >= D, its Theorem 2(2) bound below) are not the model's (1, and "
        "T*d*h/E - 1, paper 1's laws): the two agree on which cells are efficient, not on the exponent (the notes' "
        "table sets them side by side)."),))
