"""Causal (decoder-only) architectures: the model's answers under the mask (docs/model.md, "Causal mask"),
checked against the brute force where it is small, and the intrinsic-dimension predictions as a regression set."""
from __future__ import annotations

import json

import pytest

import infoflow_smt as ifs
from infoflow_smt import cli
from infoflow_smt.verify.enumerator import brute_force_decide


def _arch(*heads: int, **options) -> ifs.Architecture:
    return ifs.Architecture(heads=heads, embed_dim=32, input_dim=2, causal=True, **options)


# (target, architecture, efficient): each also decided by the brute force; None: no program the model covers,
# an answer left open (``solver._Session.settled_under_mask``)
SMALL = [
    ("min(dot(x[s], x[t]) for s in T for t in T)", _arch(1, 1), True),      # dot is symmetric: one half
    ("min(dot(x[s], x[t]) for s in T for t in T)", _arch(1), False),
    ("min(bilinear(A1, x[s], x[t]) for s in T for t in T)", _arch(1, 1), False),  # t after s: a second head
    ("min(bilinear(A1, x[s], x[t]) for s in T for t in T)", _arch(2, 1), True),
    ("min(bilinear(A1, x[s], x[t]) for s in T for t in T)", _arch(1, 1, 1), True),
    ("sum(min(dot(x[s], x[t]) for t in T) for s in T)", _arch(2, 2), False),  # s cannot see the t after it
    ("sum(max(f1(x[s], x[t]) for t in range(1, s+1)) for s in T)", _arch(1, 1), True),
]


SUBSETS = "max(f1(x[t]) for t in S1) + max(f2(x[t]) for t in S2) + max(f3(x[t]) for t in S3) + max(f4(x[t]) for t in S4)"


@pytest.mark.parametrize("heads", [(2, 1), (1, 1)])
def test_a_no_the_mask_model_leaves_open_is_unknown(heads) -> None:
    """Four selections over subsets: the inputs can make them over their prefixes of each subset, forms the model
    does not hold (a subset cut at a position is no range), and position T holds them whole: no proof of "no"."""
    verdict = ifs.decide(SUBSETS, _arch(*heads, positional=True))
    assert verdict.status is ifs.Status.UNKNOWN and "infeasible is not established" in verdict.reason_unknown
    assert ifs.decide(SUBSETS, _arch(3, positional=True)).status is ifs.Status.INFEASIBLE
    assert ifs.decide(SUBSETS, _arch(4, positional=True)).status is ifs.Status.FEASIBLE


def test_prefix_maxima_are_collected_by_the_sum_of_their_values():
    """linear_max_sum:D=4 on (2, 1): the output token makes two selections in layer 1 while every input position
    makes the other two over its prefix; in layer 2 one retrieval ranks the positions by the sum of their prefix
    values, which grows until every one is whole, and the winner holds both (issue 37)."""
    verdict = ifs.decide("linear_max_sum:D=4", _arch(2, 1))
    assert verdict.status is ifs.Status.FEASIBLE
    assert any(a.op.mode.name == "COLLECT" and len(a.op.nodes) == 2 for a in verdict.witness.actions)
    assert ifs.decide("linear_max_sum:D=4", _arch(1, 1)).status is ifs.Status.INFEASIBLE


@pytest.mark.parametrize("text, arch, efficient", SMALL, ids=[f"{t} on {a.heads}" for t, a, _ in SMALL])
def test_the_solver_decides_as_the_brute_force_under_a_mask(text, arch, efficient):
    verdict = ifs.decide(text, arch)
    answer = brute_force_decide(text, arch, budget_s=60)
    if efficient is None:
        assert verdict.status is ifs.Status.UNKNOWN and "not established" in verdict.reason_unknown
        assert answer is not None and not answer.feasible
        return
    assert verdict.feasible == efficient
    assert answer is not None and answer.feasible == efficient and answer.exponent == verdict.exponent


def test_an_infeasible_causal_verdict_names_the_mask():
    verdict = ifs.decide("sum(min(dot(x[s], x[t]) for t in T) for s in T)", _arch(2, 2))
    sentences = " ".join(r.sentence for r in verdict.explanation)
    assert "Under the causal mask" in sentences and "the min over t of dot(x[t], x[s]), for each s" in sentences


def _symmetric(D: int) -> str:
    return " + ".join(f"max(bilinear(A{i}, x[s], x[t]) + bilinear(A{i}, x[t], x[s]) for s in T for t in T)"
                      for i in range(1, D + 1))


# docs/model.md, "Causal mask": intrinsic_dimension:D needs (D, D) without the mask; under it, D heads at the
# inputs with symmetric A_i (one ordered half per group), 2D with non-symmetric ones (both sides of each pair)
INTRINSIC = [(D, heads, symmetric, efficient)
             for D in (2, 3)
             for heads, symmetric, efficient in [((D, D), True, True), ((D, D), False, False),
                                                 ((2 * D - 1, D), False, False), ((2 * D, D), False, True),
                                                 ((2 * D, D - 1), False, False), ((D, D - 1), True, False),
                                                 ((D, D, D), False, True)]]


@pytest.mark.parametrize("D, heads, symmetric, efficient", INTRINSIC)
def test_intrinsic_dimension_under_a_causal_mask(D, heads, symmetric, efficient):
    target = ifs.parse_target(_symmetric(D)) if symmetric else ifs.catalogue.get("intrinsic_dimension", D=D)
    verdict = ifs.decide(target, _arch(*heads))
    # settled: none is efficient even with unlimited heads at the output token before the last layer
    assert verdict.status is (ifs.Status.FEASIBLE if efficient else ifs.Status.INFEASIBLE)
    if not symmetric:  # without the mask, (D, D) is enough
        assert ifs.decide(target, ifs.Architecture(heads=(D, D), embed_dim=32, input_dim=2)).feasible


def test_the_cli_takes_causal_and_names_it(capsys):
    code = cli.main(["decide", "min(dot(x[s], x[t]) for s in T for t in T)", "--heads", "1,1", "--causal", "--json"])
    document = json.loads(capsys.readouterr().out)
    assert code == 0 and document["architecture"]["causal"] is True and document["status"] == "feasible"
    code = cli.main(["decide", "min_pairwise_dot", "--heads", "1,1", "--causal"])
    assert code == 0 and "causal mask" in capsys.readouterr().out
    code = cli.main(["decide", "max(f1(x[s], x[t]) for s in S1 for t in S2)", "--heads", "2,2", "--causal"])
    err = capsys.readouterr().err
    assert code == 2 and "under a causal mask" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("heads, status", [((1, 1, 1, 1), "feasible"), ((2, 2), "feasible"), ((3, 1), "feasible"),
                                            ((1, 3), "feasible"), ((4,), "feasible"), ((3,), "infeasible"),
                                            ((1, 1, 1), "feasible"), ((2, 1), "feasible"), ((1, 1), "infeasible")])
def test_under_a_mask_the_covered_programs_make_selections_with_no_bound_variable_at_the_output(heads, status):
    # docs/model.md, "Causal mask": the output token's own selections, and those the inputs make over their
    # prefixes and a prefix collection brings
    target = ifs.catalogue.get("linear_max_sum", D=4)
    assert ifs.decide(target, _arch(*heads)).status.value == status
    if len(heads) > 1 and status == "feasible":  # efficient without the mask too: (2L - 1) h >= D
        assert ifs.decide(target, ifs.Architecture(heads=heads, embed_dim=32, input_dim=2)).feasible


def test_the_masked_spelling_is_no_readout_and_the_explanation_says_nothing_of_one():
    # the mask's ordered halves are another spelling of the same question at the output token
    verdict = ifs.decide("min(bilinear(A1, x[s], x[t]) for s in T for t in T)", _arch(1, 1))
    assert verdict.status.value == "infeasible"
    assert not any(r.constraint == "readout" or "last position" in r.sentence for r in verdict.explanation)


# ---- an answer at every position under the mask (docs/model.md, "Causal mask"): position o sees x[1..o] ------
def _narrow(*heads: int, **options) -> ifs.Architecture:
    return ifs.Architecture(heads=heads, embed_dim=8, input_dim=2, causal=True, **options)


# (target, architecture, efficient, computable): computable False where the answer reads after o (exponent oo)
PER_POSITION = [
    ("max(F0(x[o], x[t]) for t in T)", _narrow(1), False, False),                 # o's selection over every t
    ("max(F0(x[o], x[t]) for t in range(1, o+1))", _narrow(1), True, True),       # ... over what o sees
    ("f1(x[o]) + max(f1(x[t]) for t in T)", _narrow(1, 1), False, False),         # made for no one: all of T
    ("dot(x[o], x[1])", _narrow(1, positional=True), True, True),                 # position 1: everyone sees it
    ("dot(x[o], x[2])", _narrow(1, 1, positional=True), False, False),            # position 2: o = 1 does not
    ("dot(x[o], x[o-1])", _narrow(1, positional=True), True, True),               # an offset back
    ("f1(x[o]) + f1(x[o+1])", _narrow(1, 1, positional=True), False, False),      # ... and forward
    ("x[argmax(dot(x[t-1], x[o]) for t in range(1, o+1))]", _narrow(1, positional=True), False, True),
    ("x[argmax(dot(x[t-1], x[o]) for t in range(1, o+1))]", _narrow(1, 1, positional=True), True, True),  # induction
    ("max(F0(x[o], x[argmax(dot(x[t], x[u]) for u in range(1, t+1))]) for t in range(1, o+1))", _narrow(1, 1),
     True, True),                                                                  # nested, its range in t's prefix
    ("max(F0(x[o], x[argmax(dot(x[t], x[u]) for u in T)]) for t in range(1, o+1))", _narrow(1, 1), False, False),
    ("min(bilinear(A1, x[s], x[t]) + f1(x[o]) for s in range(1, o+1) for t in range(1, o+1))", _narrow(1, 1),
     False, True),                                                                 # a pair over o's prefix: both
    ("min(bilinear(A1, x[s], x[t]) + f1(x[o]) for s in range(1, o+1) for t in range(1, o+1))", _narrow(2, 1),
     True, True),                                                                  # sides, two heads in layer 1
]


@pytest.mark.parametrize("text, arch, efficient, computable", PER_POSITION,
                         ids=[f"{t} on {a.heads}{' positional' if a.positional else ''}" for t, a, _, _ in PER_POSITION])
def test_an_answer_at_every_position_under_the_mask_is_decided_as_the_brute_force(text, arch, efficient, computable):
    verdict = ifs.decide(text, arch)
    answer = brute_force_decide(text, arch, budget_s=60)
    assert verdict.feasible == efficient and answer is not None and answer.feasible == efficient
    assert (str(verdict.exponent) != "oo") == computable


@pytest.mark.parametrize("text, read", [("max(F0(x[o], x[t]) for t in T)", "the max over t of F0(x[o], x[t])"),
                                         ("f1(x[o]) + max(f1(x[t]) for t in T)", "the max over t of f1(x[t])")])
def test_an_answer_that_reads_after_its_position_is_named(text, read):
    verdict = ifs.decide(text, _narrow(1, 1))
    sentences = " ".join(r.sentence for r in verdict.explanation)
    assert "position o cannot see it" in sentences and read in sentences
    assert "global aggregation" not in sentences  # no input position aggregates under the mask


def _wide(*heads: int, **options) -> ifs.Architecture:
    return ifs.Architecture(heads=heads, embed_dim=8, input_dim=2, **options)


# "earlier than me": range(1, o) is empty at o = 1, which is asked nothing (docs/model.md, "Answers at every
# position"); (target, architecture, efficient)
EARLIER = [
    ("max(F0(x[o], x[t]) for t in range(1, o))", _narrow(1, positional=True), True),   # the decoder's question
    ("max(F0(x[o], x[t]) for t in range(1, o))", _narrow(1, positional=False), False),  # itself from the rest: positions
    ("max(F0(x[o], x[t]) for t in range(1, o))", _wide(1, positional=True), True),
    ("max(F0(x[o], x[t]) for t in range(1, o))", _wide(1, positional=False), False),    # earlier from later: positions
    ("x[argmax(dot(x[t-1], x[o]) for t in range(2, o))]", _narrow(1, 1, positional=True), True),  # induction
    ("x[argmax(dot(x[t-1], x[o]) for t in range(2, o))]", _narrow(1, positional=True), False),
    ("kth_largest(2, F0(x[o], x[t]) for t in range(1, o+1))", _narrow(1, positional=True), False),  # from o = 2
    ("min(dot(x[s], x[t]) + f1(x[o]) for s in range(1, o) for t in range(1, s))", _narrow(1, 1, positional=True),
     True),                                                                # a pair before o, from o = 3
    ("max(F0(x[o], x[t]) for t in range(1, o)) + max(f1(x[t]) for t in T)", _wide(1, 1, positional=True), True),
    ("max(F0(x[o], x[t]) for t in range(1, o)) + max(f1(x[t]) for t in T)", _wide(1, positional=True), False),
    # read at the last position under the mask: every prefix of length >= 2 answers (a length-1 one has no value)
    ("kth_largest(2, F0(x[T], x[t]) for t in T)", _narrow(1, 1, readout="last"), False),
]


@pytest.mark.parametrize("text, arch, efficient", EARLIER,
                         ids=[f"{t} on {a.heads}{' positional' if a.positional else ''}{' causal' if a.causal else ''}"
                              for t, a, _ in EARLIER])
def test_earlier_than_me_is_decided_as_the_brute_force(text, arch, efficient):
    verdict = ifs.decide(text, arch)
    answer = brute_force_decide(text, arch, budget_s=60)
    assert verdict.feasible == efficient and answer is not None and answer.feasible == efficient
    if not arch.causal:  # under the mask the solver's best exponent also counts prefix aggregation (below)
        assert answer.exponent == verdict.exponent


def test_an_answer_asked_nowhere_is_refused_in_one_line():
    with pytest.raises(ifs.InvalidSpecError, match="asks no position for an answer"):
        ifs.decide("max(F0(x[o], x[t]) for t in range(o, o))", _narrow(1, positional=True))


def test_the_best_exponent_counts_an_input_position_aggregating_its_prefix():
    """Position o holding x[1..o] computes any answer that reads nothing after o: at T*d/E - 1 (E = 8, d = 2),
    never efficient at the mask's constant width; the checkers replay no such program (none is shown)."""
    text = "min(dot(x[s], x[t]) + f1(x[o]) for s in range(1, o+1) for t in range(1, o+1))"
    verdict = ifs.decide(text, _narrow(1))
    assert verdict.status is ifs.Status.INFEASIBLE and str(verdict.exponent) == "T/4 - 1"
    assert verdict.best_program is None and "aggregate its prefix" in " ".join(r.sentence for r in verdict.explanation)
    assert str(ifs.decide("max(F0(x[o], x[t]) for t in T)", _narrow(1)).exponent) == "oo"  # reads after o


# ---- read at the last position under the mask: position p answers for the sequence cut at p ------------------
LAST = [
    ("max(F0(x[T], x[t]) for t in T)", _narrow(1, readout="last"), True),        # Match2, one layer in a decoder
    ("max(F0(x[T], x[t]) for t in T)", _narrow(1, positional=True), False),      # the output token: it fetches x[T]
    ("min(dot(x[s], x[t]) for s in T for t in T)", _narrow(1, 1, readout="last"), True),
    ("min(dot(x[s], x[t]) for s in T for t in T)", _narrow(1, readout="last"), False),
    ("min(bilinear(A1, x[s], x[t]) for s in T for t in T)", _narrow(1, 1, readout="last"), False),
    ("min(bilinear(A1, x[s], x[t]) for s in T for t in T)", _narrow(2, 1, readout="last"), True),
    ("max(F0(x[T], x[s], x[t]) for s in T for t in T)", _narrow(2, 2, readout="last"), False),  # Match3: order 3
]


@pytest.mark.parametrize("text, arch, efficient", LAST, ids=[f"{t} on {a}" for t, a, _ in LAST])
def test_read_at_the_last_position_under_the_mask_is_decided_as_the_brute_force(text, arch, efficient):
    verdict = ifs.decide(text, arch)
    answer = brute_force_decide(text, arch, budget_s=60)
    assert verdict.feasible == efficient and answer is not None and answer.feasible == efficient


def test_match2_at_the_output_token_under_the_mask_needs_two_layers():
    assert not ifs.decide("max(F0(x[T], x[t]) for t in T)", _narrow(1, positional=True)).feasible
    assert ifs.decide("max(F0(x[T], x[t]) for t in T)", _narrow(1, 1, positional=True)).feasible


def test_read_at_the_last_position_under_the_mask_says_how():
    verdict = ifs.decide("max(F0(x[T], x[t]) for t in T)", _narrow(1, readout="last"))
    note = verdict.explanation[0].sentence
    assert "sequence cut at p" in note and "max(F0(x[o], x[t]) for t in range(1, o+1))" in note
    plain = ifs.decide("min(dot(x[s], x[t]) for s in T for t in T)", _narrow(1, 1))  # the mask's own spelling
    assert not any(r.constraint == "readout" for r in plain.explanation)


def test_under_the_mask_position_t_told_apart_is_the_reader_that_sees_everything():
    """A decoder read at its last token with positional encoding: position T is a class of its own, which sees
    every position (issue 41). The induction head is two layers of one head, one is not."""
    induction = "x[argmax(dot(x[t], x[T]) for t in range(1, T)) + 1]"
    arch = lambda heads: ifs.Architecture(heads=heads, positional=True, causal=True, readout="last")
    assert ifs.decide(induction, arch((1, 1))).status is ifs.Status.FEASIBLE
    assert ifs.decide(induction, arch((1,))).status is ifs.Status.INFEASIBLE


@pytest.mark.parametrize("text, positional, status", [
    ("mean(f1(x[t]) for t in T)", False, ifs.Status.FEASIBLE),   # each position averages its prefix
    ("sum(f1(x[t]) for t in T)", False, ifs.Status.INFEASIBLE),  # the count p is unknown without positions
    ("sum(f1(x[t]) for t in T)", True, ifs.Status.FEASIBLE),     # with them, p times the prefix mean
])
def test_a_prefix_mean_is_one_causal_head_and_a_prefix_sum_needs_positions(text, positional, status):
    arch = ifs.Architecture(heads=(1,), positional=positional, causal=True, readout="last")
    verdict = ifs.decide(text, arch)
    assert verdict.status is status, verdict
    if status is ifs.Status.FEASIBLE:
        assert verdict.exponent == 1 and any(a.op.mode.name == "AVERAGE" for a in verdict.witness.actions)


def test_the_cli_reads_at_the_last_position_under_the_mask(capsys):
    code = cli.main(["decide", "max(F0(x[T], x[t]) for t in T)", "--heads", "1", "--causal", "--readout", "last",
                     "--json"])
    document = json.loads(capsys.readouterr().out)
    assert code == 0 and document["status"] == "feasible" and document["per_position"]
    assert document["architecture"]["causal"] is True and document["architecture"]["readout"] == "last"
    code = cli.main(["decide", "max(F0(x[T], x[t]) for t in T)", "--heads", "1", "--causal", "--readout", "last"])
    out = capsys.readouterr().out
    assert code == 0 and "causal mask" in out and "answer read at the last position T" in out
    code = cli.main(["decide", "max(F0(x[T], x[t]) for t in T)", "--heads", "1", "--causal", "--readout", "last",
                     "--positional"])
    assert code == 0 and "answer read at the last position T" in capsys.readouterr().out
