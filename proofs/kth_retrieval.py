"""k-th largest retrieval (paper 1, Theorem 2): only the largest is cheap to retrieve.

A head retrieving the k-th largest position (``k >= 2``) costs ``(T - k - 1)/(n + 1)`` with per-head width
``n = E/h``; the other way to reach it at one layer is to gather the whole sequence, ``T*d/n - 1``
(Theorem 3, at the same width). The solver must report the cheaper of the two for large ``T``, whichever it
is. Both read one width, so the k-th retrieval is the cheaper whenever ``d >= 1`` (a slope ``1/(n+1)``
against ``d/n``); under the former rule, which decoded at the full ``E``, a narrow head made aggregation the
cheaper on the last two architectures below. The largest (``k = 1``) is one
max-position retrieval, exponent 1.

>>> from proofs.kth_retrieval import prove_kth_retrieval
>>> prove_kth_retrieval().holds
True
"""
from __future__ import annotations

from collections.abc import Iterator

import sympy

from infoflow_smt.model import cost

from .harness import (
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

NAME = "kth_retrieval"
STATEMENT = ("Paper 1 (InfoFlow, Yu et al. 2026), Theorem 2: the k-th largest retrieval (k = 2, 3) is "
             "inefficient at one layer, its best exponent the cheaper of (T-k-1)/(n+1) with n = E/h and "
             "global aggregation T*d/n - 1, while the largest (k = 1) is efficient with exponent 1 at one head.")

# (heads, E, d): the k-th retrieval beats aggregation on every one (1/(n+1) < d/n at one width n = E/h); on
# the last two aggregation would win if it decoded at the full E (d/E < 1/(n+1))
KTH_ARCHITECTURES = (
    architecture((1,), 8, 4),
    architecture((2,), 16, 4),
    architecture((1,), 64, 1, positional=True),
    architecture((3,), 32, 2),
    architecture((4,), 16, 2),
)
MAX_ARCHITECTURES = (
    architecture((1,), 32, 2),
    architecture((1,), 4, 8),
    architecture((1,), 8, 1, positional=True),
    architecture((3,), 16, 4),
)


def kth_exponent(k: int, arch) -> sympy.Expr:
    """Theorem 2's cost of one k-th largest retrieval head on ``arch``'s (single) layer.

    >>> kth_exponent(2, architecture((1,), 8, 4))
    T/9 - 1/3
    """
    n = sympy.sympify(arch.embed_dim) / arch.heads[0]
    return sympy.expand((T - k - 1) / (n + 1))


def predicted(k: int, arch) -> tuple[sympy.Expr, str]:
    """The cheaper of the two one-layer routes for large ``T``, and which one it is."""
    routes = {"k-th retrieval": kth_exponent(k, arch),
              "global aggregation": aggregation_exponent(arch.embed_dim, arch.input_dim, heads=arch.heads[0])}
    # cost.asymptotic_key only orders exponents (slope, then offset); the laws themselves are written above
    name = min(routes, key=lambda r: cost.asymptotic_key(routes[r]))
    return routes[name], name


def _evidence() -> Iterator[Evidence]:
    for k in (2, 3):
        for arch in KTH_ARCHITECTURES:
            exponent, route = predicted(k, arch)
            yield observe(f"kth_largest:k={k}", arch, "infeasible", linear(exponent, via=route))
    for arch in MAX_ARCHITECTURES:
        yield observe("max_retrieval", arch, "feasible", exactly(1))


GENERAL = ("Over every architecture at a constant width, depth never helps the k-th largest as the model decides "
           "it: for k = 2 and 3 no number of layers or heads is efficient, while the largest is efficient from one "
           "layer of one head on.")


def _general():
    checks = [FrontierCheck(f"kth_largest:k={k}", {"embed_dim": E, "input_dim": d}, ())
              for k in (2, 3) for E, d in ((8, 4), (32, 2))]
    return general_claim(GENERAL, checks + [FrontierCheck("max_retrieval", {"embed_dim": 32, "input_dim": 2}, ((1, 1),))])


def prove_kth_retrieval() -> ProofResult:
    """Theorem 2 of paper 1 for k = 1, 2, 3 on several one-layer architectures, and over every
    architecture (see ``STATEMENT`` and ``GENERAL``)."""
    return run_proof(NAME, STATEMENT, _evidence, _general)
