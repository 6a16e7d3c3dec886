"""Results from outside the two InfoFlow papers, set beside the model's verdict.

Each ``Published`` result names the paper and what it claims of transformers, the catalogue target (or text)
that states it in the target language, and the instances the solver decides; where the model's answer is not
the paper's, ``note`` names the assumption that differs. The model is never bent to agree: the instances
check the model's own answer (replayed witnesses, explanations), and the table in the report says where it
parts from the paper and why.

Each task is stated in its paper's form (``catalogue``): Match2 and Match3 answer at every position, hop_k is
read at the last position; the shapes the catalogue had under those names before (one answer over all pairs or
triples, read at the output token) are ``max_over_pairs`` and ``max_over_triples``.

k-hop induction agrees with its paper: a selection made by every position for itself (``argmax_t dot(x[t-1],
x[p])``, the next hop from p) is copied with what its winner holds when a later retrieval fetches that winner,
so a chain of hops doubles per layer (pointer doubling, docs/model.md section 2, "One selection at several
hosts"): L layers of one head follow 2**(L-1) - 1 hops, and k hops take ceil(log2(k + 1)) + 1 layers.

>>> from proofs.literature import prove_literature
>>> prove_literature().holds
True
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass

from .harness import (
    Claim,
    FrontierCheck,
    aggregation_exponent,
    architecture,
    exactly,
    general_claim,
    infinite,
    linear,
    observe,
    run_proof,
)
from .result import Evidence, ProofResult

NAME = "literature"
STATEMENT = ("Papers outside InfoFlow, each Theorem as cited in the table below (Sanford, Hsu, Telgarsky 2023 "
             "and 2024, Bhattamishra, Hahn, Blunsom, Kanade 2024), each task in the form its paper states it: the "
             "induction head, nearest neighbour and disjointness are inefficient on the one-layer architectures tried "
             "(T*d*h/E - 1) and efficient on two layers of one head, the paper's Match2, an answer at every position, "
             "is one layer of one head (its prefix form under the causal mask too), the paper's Match3 at every "
             "position is efficient on no architecture tried, and hop_k read at the last position (k = 1, 2, 4) and "
             "k-hop induction at the output token (k = 2, 3, 4, 7) need ceil(log2(k + 1)) + 1 layers of one head, "
             "the paper's O(log k) by pointer doubling.")
WIDTH, INPUT_DIM = 16, 2  # one width for every instance: the one-layer exponent is T*2/16 - 1 = T/8 - 1
MATCH2_AT_LAST = "max(F0(x[T], x[t]) for t in T)"
MATCH3_AT_LAST = "max(F0(x[T], x[s], x[t]) for s in T for t in T)"
# the induction head's answer fetched again by token equality: the same function for distinct tokens
BY_EQUALITY = "x[argmax(-norm(x[u] - x[argmax(dot(x[t-1], x[T]) for t in range(2, T+1))])**2 for u in T)]"


@dataclass(frozen=True)
class Check:
    """One decision: ``target`` on layers of ``heads`` heads must be ``status``, its exponent meeting ``claim``."""

    target: str
    heads: tuple[int, ...]
    status: str
    claim: Claim
    positional: bool = True
    readout: str = "output"   # where the answer is read: the extra output token, or "last" (position T)
    causal: bool = False      # a decoder's mask: an input position sees itself and the positions before it


@dataclass(frozen=True)
class Published:
    """A published result: the paper's claim, the model's verdict, whether they agree, ``note`` (where they
    agree, what the model says beyond the paper, or nothing) and ``differs`` (where the model's answer is not the
    paper's: the assumption that differs; printed in the terminal by ``python -m proofs``)."""

    name: str
    citation: str
    claim: str
    verdict: str
    note: str
    checks: tuple[Check, ...]
    differs: str = ""

    @property
    def agrees(self) -> bool:
        return not self.differs


def _one_layer(heads: tuple[int, ...]) -> Claim:
    """Global aggregation by a head of the layer with the fewest heads (the widest, ``E/h``)."""
    return linear(aggregation_exponent(WIDTH, INPUT_DIM, heads=min(heads)), via="global aggregation")


def _checks(target: str, inefficient: tuple[tuple[int, ...], ...], efficient: tuple[tuple[int, ...], ...],
            positional: bool = True, readout: str = "output", causal: bool = False) -> tuple[Check, ...]:
    return (tuple(Check(target, heads, "infeasible", _one_layer(heads), positional, readout, causal)
                  for heads in inefficient)
            + tuple(Check(target, heads, "feasible", exactly(1), positional, readout, causal) for heads in efficient))


RESULTS = (
    Published(
        "induction_head", "Sanford, Hsu, Telgarsky 2024, arXiv 2408.14332",
        "one layer needs size (heads x width x precision) linear in T; two layers with a constant number of "
        "heads suffice at logarithmic size",
        "one layer inefficient (T*d*h/E - 1) with any heads, the layer that gathers x[t-1] at each candidate missing; "
        "two layers of one head efficient (exponent 1), with positional encoding (x[T] and x[t-1] are positions), "
        "read at the output token or at the last position; no program without it",
        "", _checks("induction_head", ((1,), (4,)), ((1, 1),))
        + _checks("induction_head", ((1,),), ((1, 1),), readout="last")
        + (Check("induction_head", (1, 1), "infeasible", infinite(), positional=False),)),
    Published(
        "hop_k", "Sanford, Hsu, Telgarsky 2024, arXiv 2402.09268",
        "k-hop induction heads (hop_k, read at the last position): depth O(log k) suffices (pointer doubling: about "
        "log2(k) + 2 layers) at small size",
        "read at the last position, k = 1, 2, 4 on 2, 3, 4 layers of one head, one layer fewer inefficient: "
        "ceil(log2(k + 1)) + 1 layers by pointer doubling (layer 1 gathers each x[t-1], then every position makes "
        "the next hop from itself and a retrieval of a hop copies the hops its winner made, so L layers follow "
        "2**(L-1) - 1 hops)",
        "", _checks("hop_k:k=1", ((1,),), ((1, 1),), readout="last")
        + _checks("hop_k", ((1, 1),), ((1, 1, 1),), readout="last")
        + _checks("hop_k:k=4", ((1, 1, 1),), ((1, 1, 1, 1),), readout="last")),
    Published(
        "k_hop_induction", "Sanford, Hsu, Telgarsky 2024, arXiv 2402.09268",
        "depth O(log k) suffices (pointer doubling: about log2(k) + 2 layers) at small size",
        "the same hops read at the extra output token: k = 2 and 3 on 3 layers of one head, k = 4 and 7 on 4, "
        "one layer fewer inefficient, ceil(log2(k + 1)) + 1 layers by pointer doubling as at the last position; the "
        "induction head fetched again by token equality is one selection more, three layers against two",
        "", _checks("k_hop_induction", ((1, 1),), ((1, 1, 1),))
        + _checks("k_hop_induction:k=3", ((1, 1),), ((1, 1, 1),))
        + _checks("k_hop_induction:k=4", ((1, 1, 1),), ((1, 1, 1, 1),))
        + _checks("k_hop_induction:k=7", ((1, 1, 1),), ((1, 1, 1, 1),))
        + _checks(BY_EQUALITY, ((1, 1),), ((1, 1, 1),))),
    Published(
        "match2", "Sanford, Hsu, Telgarsky 2023, arXiv 2306.02896",
        "Match2 (does some t match each position s?) is computed at every position by one self-attention layer of "
        "small size",
        "the paper's Match2 (match2: at every position o, max over t of F0(x[o], x[t])) is one layer of one head; "
        "under the causal mask position o cannot see the later t it asks about (no program at any cost), and the "
        "prefix form a decoder is asked (match2:prefix=true, t <= o) is one layer of one head; read at the last "
        "position, max over t of F0(x[T], x[t]), one layer of one head, with or without positions, in a decoder "
        "too; read at the extra output token, two layers, one of them only to fetch x[T]; one answer over all pairs "
        "(max_over_pairs) two layers of one head (the depth-separation shape)",
        "the model's two layers are for questions the paper does not ask: the extra output token, which starts "
        "empty, and one answer over all pairs",
        _checks("match2", (), ((1,),), positional=False)
        + (Check("match2", (1,), "infeasible", infinite(), positional=False, causal=True),)
        + _checks("match2:prefix=true", (), ((1,),), positional=False, causal=True)
        + _checks(MATCH2_AT_LAST, (), ((1,),), positional=False, readout="last")
        + _checks(MATCH2_AT_LAST, (), ((1,),), readout="last")
        + _checks(MATCH2_AT_LAST, (), ((1,),), positional=False, readout="last", causal=True)
        + _checks("max_over_pairs", ((1,), (4,)), ((1, 1),), positional=False)
        + _checks(MATCH2_AT_LAST, ((1,),), ((1, 1),))),
    Published(
        "match3", "Sanford, Hsu, Telgarsky 2023, arXiv 2306.02896",
        "Match3 (does some pair s, t complete a triple with each position?) needs one-layer size polynomial in T "
        "(proved for one layer only)",
        "the paper's Match3 (match3: at every position o, max over s, t of F0(x[o], x[s], x[t])) is inefficient on "
        "every architecture tried (comparison order 3: o, s held while t is compared), its prefix form under the mask "
        "too; one answer over all triples (max_over_triples) likewise; read at the extra output token, max over s, t "
        "of F0(x[T], x[s], x[t]), three layers of one head (with positional encoding, to fetch x[T]); read at the "
        "last position without positional encoding, inefficient on three layers (each s would need x[T], which no "
        "other position can tell apart)",
        "on one layer, where the paper proves its bound; the model's 'no architecture' goes beyond what the paper "
        "proves (hard attention: one head selects one position per token), and its three layers for one position's "
        "answer read at the output token do not contradict the paper, whose bound is for an answer at every "
        "position",
        _checks("match3", ((1,), (2, 2), (4, 4, 4)), (), positional=False)
        + _checks("match3:prefix=true", ((1,), (2, 2)), (), positional=False, causal=True)
        + _checks("max_over_triples", ((1,), (2, 2), (4, 4, 4)), ())
        + _checks(MATCH3_AT_LAST, ((1,), (2, 2)), ((1, 1, 1),))
        + _checks(MATCH3_AT_LAST, ((1, 1, 1),), (), positional=False, readout="last")),
    Published(
        "disjointness", "Bhattamishra, Hahn, Blunsom, Kanade 2024, arXiv 2406.09347",
        "one layer needs linear size, two layers of logarithmic size suffice",
        "one layer inefficient, two layers of one head efficient (positional encoding tells the two sets apart)",
        "", _checks("disjointness", ((1,), (4,)), ((1, 1),))),
    Published(
        "nearest_neighbor", "Bhattamishra, Hahn, Blunsom, Kanade 2024, arXiv 2406.09347",
        "two layers of logarithmic size suffice (no one-layer bound is stated)",
        "one layer inefficient on the heads tried, two layers of one head efficient",
        "on two layers; the one-layer verdict is the model's prediction, the paper states no one-layer bound",
        _checks("nearest_neighbor", ((1,), (4,)), ((1, 1),))),
)


def _evidence() -> Iterator[Evidence]:
    for result in RESULTS:
        for check in result.checks:
            arch = architecture(check.heads, WIDTH, INPUT_DIM, positional=check.positional)
            asked = dataclasses.replace(arch, readout=check.readout, causal=check.causal)
            yield observe(check.target, asked, check.status, check.claim)


GENERAL = ("Over every architecture at E = 16, d = 2: the paper's Match2 (at every position) is efficient from one "
           "layer of one head on; the induction head and disjointness (with positional encoding) and one answer over "
           "all pairs (without) are efficient exactly from two layers of one head on; the paper's Match3 and one "
           "answer over all triples on none, with or without positional encoding.")


def _general():
    positional = {"embed_dim": WIDTH, "input_dim": INPUT_DIM, "positional": True}
    plain = {"embed_dim": WIDTH, "input_dim": INPUT_DIM}
    return general_claim(GENERAL, [
        FrontierCheck("induction_head", positional, ((2, 1),)),
        FrontierCheck("disjointness", positional, ((2, 1),)),
        FrontierCheck("match2", plain, ((1, 1),)),
        FrontierCheck("max_over_pairs", plain, ((2, 1),)),
        FrontierCheck("match3", plain, ()),
        FrontierCheck("max_over_triples", plain, ()),
        FrontierCheck("max_over_triples", positional, ()),
    ])


def _agreement(result: Published) -> str:
    if result.agrees:
        return "yes" + (f", {result.note}" if result.note else "")
    return f"**no**: {result.differs}"


def notes() -> tuple[str, ...]:
    """The table of published claims beside the model's verdicts, and what a row of it shows."""
    lines = ["| result | paper | the paper's claim | the model's verdict | agree? (else the assumption that differs) |",
             "|---|---|---|---|---|"]
    lines += [f"| `{r.name}` | {r.citation} | {r.claim} | {r.verdict} | {_agreement(r)} |" for r in RESULTS]
    lines += ["", ("The papers bound size (heads, width, bits of precision) for exact answers over discrete tokens; "
                   "the model bounds the exponent of the parameter count in the precision over continuous tokens. "
                   "Agreement here means the same architectures are efficient, not the same quantity.")]
    return tuple(lines)


def differences() -> tuple[str, ...]:
    """Where the model's answer is not a paper's, one sentence each (none at present: every row agrees)."""
    return tuple(f"{r.name} ({r.citation}): {r.differs}" for r in RESULTS if r.differs)


def prove_literature() -> ProofResult:
    """The published results above, on their instances and over every architecture (see ``STATEMENT``)."""
    return run_proof(NAME, STATEMENT, _evidence, _general, notes, differences=differences())
