"""Depth separation (paper 1, Theorem 1): ``min_{s,t} <x_s, x_t>`` needs two layers.

One layer cannot make a selection that ranges over ``t`` for each ``s`` and then one over ``s``: the output
token can only gather the whole sequence, and decoding ``T`` tokens costs ``T*d*h/E - 1`` (Theorem 3, in a
head of width ``E/h``), for every number of heads. Two layers of one head each suffice with exponent 1: every input position ``s``
retrieves its best partner ``t`` in layer 1, the output token retrieves the best ``s`` in layer 2.

>>> from proofs.depth_separation import prove_depth_separation
>>> prove_depth_separation().holds
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

NAME = "depth_separation"
STATEMENT = ("Paper 1 (InfoFlow, Yu et al. 2026), Theorem 1: min_{s,t} <x_s, x_t> is inefficient for every "
             "one-layer transformer with h = 1..8 heads (best exponent T*d*h/E - 1, a head of width E/h decoding "
             "T tokens, linear in T) and efficient, "
             "with exponent 1, for two layers of one head each.")
TARGET = "min_pairwise_dot"
CHAIN = "chain of 2 dependent selections"  # the reason one layer fails: two selections, one after the other

# (E, d) pairs with different slopes d/E, so the one-layer exponent is checked as a law, not a constant
ONE_LAYER_WIDTHS = ((16, 2), (64, 4), (12, 3))
HEADS = range(1, 9)

# two layers: the theorem's (1, 1) at several widths, then more heads or layers, which never hurt
# (model.md's metamorphic law), and positional encoding, which the construction does not need
TWO_LAYERS = (
    architecture((1, 1), 16, 2),
    architecture((1, 1), 64, 4),
    architecture((1, 1), 4, 8),
    architecture((1, 1), 32, 1, positional=True),
    architecture((2, 3), 32, 2),
    architecture((1, 1, 1), 24, 3),
)

# the instance at E < d again with the rank rule, and at the narrowest width that holds the rank
RANK_AWARE = (architecture((1, 1), 4, 8, rank_aware=True), architecture((1, 1), 8, 8, rank_aware=True))


def _evidence() -> Iterator[Evidence]:
    for E, d in ONE_LAYER_WIDTHS:
        for h in HEADS:
            yield observe(TARGET, architecture((h,), E, d), "infeasible", linear(aggregation_exponent(E, d, heads=h)),
                          mentions=CHAIN)
    # positions do not help one layer either: the selection still ranges over T candidates for each s
    yield observe(TARGET, architecture((2,), 32, 2, positional=True), "infeasible",
                  linear(aggregation_exponent(32, 2, heads=2)), mentions=CHAIN)
    for arch in TWO_LAYERS:
        yield observe(TARGET, arch, "feasible", exactly(1))
    # E = 4 < d = 8 above keeps the papers' abstraction of the head's rank (its verdict carries the note);
    # under the rank rule (docs/model.md, "Head width and rank") layer 1's retrieval needs a head d = 8 wide
    for arch in RANK_AWARE:
        if arch.embed_dim < arch.input_dim:
            yield observe(TARGET, arch, "infeasible", linear(aggregation_exponent(arch.embed_dim, arch.input_dim)),
                          mentions="cannot hold the rank-8 score")
        else:
            yield observe(TARGET, arch, "feasible", exactly(1))


GENERAL = ("Over every architecture of L layers of h heads (any L, any h) at a constant width: no one-layer "
           "architecture is efficient, and every architecture from two layers of one head on is: the frontier is "
           "exactly {(2, 1)}.")


def _general():
    return general_claim(GENERAL, [FrontierCheck("min_pairwise_dot", {"embed_dim": E, "input_dim": d}, ((2, 1),))
                                   for E, d in ((16, 2), (64, 4))])


def prove_depth_separation() -> ProofResult:
    """Theorem 1 of paper 1 on several one- and two-layer architectures, and over every architecture
    (see ``STATEMENT`` and ``GENERAL``)."""
    return run_proof(NAME, STATEMENT, _evidence, _general)
