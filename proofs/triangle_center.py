"""Triangle center (paper 1, Experiment 2): a comparison of order 3 is beyond every fixed architecture.

``min_{a,b,c} ||x_a + x_b + x_c||^2`` must compare candidates ``c`` while two other positions ``a, b`` are
held fixed. A token plays one position, so no retrieval makes that selection, however many layers and
heads there are; only a token holding the whole sequence can, and gathering it costs ``T*d*h/E - 1`` (a
head of width ``E/h``, cheapest in the layer of fewest heads) at any fixed width ``E``. The solver must say inefficient on every architecture tried, large ones included,
with that exponent, and give the comparison order as the reason.

>>> from proofs.triangle_center import prove_triangle_center
>>> prove_triangle_center().holds
True
"""
from __future__ import annotations

from collections.abc import Iterator

from .harness import (
    FrontierCheck,
    aggregation_exponent,
    architecture,
    general_claim,
    linear,
    observe,
    run_proof,
)
from .result import Evidence, ProofResult

NAME = "triangle_center"
STATEMENT = ("Paper 1 (InfoFlow, Yu et al. 2026), Experiment 2: the triangle center "
             "min_{a,b,c} ||x_a + x_b + x_c||^2 has comparison order 3 and is inefficient on every fixed "
             "(L, h, E) tried, up to 4 layers of 8 heads, with best exponent T*d*h/E - 1.")

# (spec, architecture): the paper's three configurations ((2,2) E=24, (4,4) E=24 and E=48, d = 2), then
# more layers, heads and width, positions, and the unsquared norm (the sources differ on the square)
CASES = (
    ("triangle_center", architecture((1,), 32, 2)),
    ("triangle_center", architecture((2, 2), 24, 2)),
    ("triangle_center", architecture((4, 4), 24, 2)),
    ("triangle_center", architecture((4, 4), 48, 2)),
    ("triangle_center", architecture((8, 8, 8), 64, 2)),
    ("triangle_center", architecture((8, 8, 8, 8), 64, 2)),
    ("triangle_center", architecture((8, 8, 8, 8), 256, 4)),
    ("triangle_center", architecture((3, 3, 3), 48, 3, positional=True)),
    ("triangle_center:squared=false", architecture((4, 4, 4, 4), 64, 2)),
)


def _evidence() -> Iterator[Evidence]:
    for spec, arch in CASES:
        yield observe(spec, arch, "infeasible",
                      linear(aggregation_exponent(arch.embed_dim, arch.input_dim, heads=min(arch.heads)),
                             via="global aggregation"),
                      mentions="comparison order 3")


GENERAL = ("Over every architecture: the triangle center, squared or not, is inefficient for every number of layers "
           "and heads at every constant width, with or without positional encoding.")


def _general():
    return general_claim(GENERAL, [
        FrontierCheck(spec, {"embed_dim": E, "input_dim": 2, "positional": positional}, ())
        for spec in ("triangle_center", "triangle_center:squared=false") for E, positional in ((24, False), (48, True))])


def prove_triangle_center() -> ProofResult:
    """Experiment 2 of paper 1 on fixed architectures up to 4 layers x 8 heads, and over every
    architecture (see ``STATEMENT`` and ``GENERAL``)."""
    return run_proof(NAME, STATEMENT, _evidence, _general)
