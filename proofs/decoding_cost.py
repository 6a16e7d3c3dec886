"""Decoding cost (paper 1, Theorem 3): gathering ``T0`` tokens into a width-``E`` state costs ``T0*d/E - 1``.

Three consequences, each checked on several widths and input dimensions:

* specific-position aggregation of ``T0`` fixed tokens (positional encoding on) costs ``T0*d/E - 1``,
  bounded in ``T``; each head decodes what it gathers, so ``h`` heads of one layer split the positions and
  the largest part, ``ceil(T0 / h)`` tokens, sets the exponent; without positional encoding no program
  tells the positions apart at all;
* global aggregation of all ``T`` tokens costs ``T*d/E - 1``: inefficient at a fixed width, efficient when
  the width grows like ``T`` (a sum over every position needs exactly that);
* memorization (paper 2, Theorem 2(3)): with ``E = T*d`` one head gathers everything at exponent 0, so
  D-retrieval is efficient at one head, with or without subsets and positions.

Widths are chosen with ``E <= T0*d``: for a wider state the law (the paper's, as the model states it)
gives a negative exponent, which the model does not clamp at 0, and which says nothing a reader can check.

>>> from proofs.decoding_cost import prove_decoding_cost
>>> prove_decoding_cost().holds
True
"""
from __future__ import annotations

from collections.abc import Iterator

from .harness import T, aggregation_exponent, architecture, exactly, infinite, linear, observe, run_proof
from .result import Evidence, ProofResult

NAME = "decoding_cost"
STATEMENT = ("Paper 1 (InfoFlow, Yu et al. 2026), Theorem 3: decoding T0 tokens of dimension d from a width-E "
             "state costs exponent T0*d/E - 1, so specific positions cost 3*d/E - 1 (with positional "
             "encoding), global aggregation of T tokens T*d/E - 1, and with E = T*d memorization makes "
             "D-retrieval efficient at one head (paper 2, Theorem 2(3)).")

# (positions, heads, E, d), one layer: the default three positions at several widths, then more heads (each
# decodes its own part: a single softmax couples what it averages, separate heads do not), then other T0
SPECIFIC: tuple[tuple[tuple[int, ...], tuple[int, ...], int, int], ...] = (
    ((1, 2, 3), (1,), 2, 2),
    ((1, 2, 3), (1,), 4, 2),
    ((1, 2, 3), (1,), 6, 2),
    ((1, 2, 3), (1,), 3, 1),
    ((1, 2, 3), (1,), 8, 4),
    ((1, 2, 3), (1,), 12, 4),
    ((1, 2, 3), (2,), 4, 2),     # parts of 2 and 1 tokens: 2*2/4 - 1 = 0
    ((1, 2, 3), (3,), 2, 2),     # one token per head: 2/2 - 1 = 0
    ((1, 2, 5, 7), (2,), 4, 2),  # parts of 2 and 2 tokens
    ((1, 2), (1,), 2, 2),
    ((1, 2, 5, 7), (1,), 4, 2),
)
# (target text, heads, E, d) for global aggregation: the sum needs every position
SUM = "sum(f1(x[t]) for t in T)"
MEAN = "mean(f1(x[t]) for t in T)"
GLOBAL = (
    (SUM, (1,), 16, 2),
    (MEAN, (2,), 8, 4),
    (SUM, (1, 1), 24, 3),
    (SUM, (1,), T, 2),
    (SUM, (1,), 2 * T, 4),
    (MEAN, (1,), T, 1),
)
# (D, subsets, positional, d) for memorization at E = T*d, one head
MEMORIZE = ((2, True, True, 2), (3, True, True, 3), (4, False, True, 2), (5, False, False, 1), (3, False, False, 4))


def _spec(positions: tuple[int, ...]) -> str:
    return "specific_positions" + ("" if positions == (1, 2, 3) else f":positions={','.join(map(str, positions))}")


def _evidence() -> Iterator[Evidence]:
    for positions, heads, E, d in SPECIFIC:
        largest_part = -(-len(positions) // heads[0])
        yield observe(_spec(positions), architecture(heads, E, d, positional=True), "feasible",
                      exactly(aggregation_exponent(E, d, tokens=largest_part)))
    # telling positions apart needs positions: without them no program exists at any cost
    yield observe("specific_positions", architecture((2,), 6, 2), "infeasible", infinite())
    for text, heads, E, d in GLOBAL:
        exponent = aggregation_exponent(E, d)
        if exponent.has(T):
            yield observe(text, architecture(heads, E, d), "infeasible", linear(exponent, via="global aggregation"))
        else:
            yield observe(text, architecture(heads, E, d), "feasible", exactly(exponent))
    for D, subsets, positional, d in MEMORIZE:
        spec = f"d_retrieval:D={D}" + ("" if subsets else ",subsets=false")
        arch = architecture((1,), d * T, d, positional=positional)
        yield observe(spec, arch, "feasible", exactly(aggregation_exponent(arch.embed_dim, d)))


def prove_decoding_cost() -> ProofResult:
    """Theorem 3 of paper 1 and its consequences (see ``STATEMENT``)."""
    return run_proof(NAME, STATEMENT, _evidence)
