"""The rank rule (``Architecture(rank_aware=True)``) on random targets: solver vs brute force vs interpreter.

The solver counts a score's rank exactly from its text (``infoflow_smt/lang/rank.py``); the brute force and
the interpreter measure it on numbers (``infoflow_smt/verify/rank_measure.py``). Widths are drawn small (a
head 1 to 4 wide, tokens of dimension 2 or 3), so that the rule rules retrievals out on most cases; each
case is a random target of the differential set (``support.generators``), or a random score of forms,
products of forms and functions (``random_score``), so a failure reproduces from its index.
"""
from __future__ import annotations

import random

import pytest
from support.generators import random_target

import infoflow_smt as ifs
from infoflow_smt.lang.rank import score_rank
from infoflow_smt.lang.trees import comparison_tree, selection_nodes
from infoflow_smt.verify.enumerator import brute_force_decide, enumerate_programs, replay_length
from infoflow_smt.verify.rank_measure import measured_rank

SEARCH_BUDGET_S = 6   # a case whose enumeration runs longer is skipped (its witness still replays)


def rank_case(index: int) -> tuple[str, ifs.Architecture]:
    rng = random.Random(10_000 + index)
    positional = rng.random() < 0.3
    text = random_target(rng, positional)
    heads = tuple(rng.choice([1, 2]) for _ in range(rng.choice([1, 2, 2])))
    arch = ifs.Architecture(heads=heads, embed_dim=rng.choice([2, 3, 4, 6]), input_dim=rng.choice([2, 3]),
                            positional=positional, rank_aware=True)
    return text, arch


CASES = list(range(24))


@pytest.mark.parametrize("index", CASES)
def test_solver_brute_force_and_interpreter_agree_under_the_rank_rule(index: int) -> None:
    text, arch = rank_case(index)
    target = ifs.parse_target(text)
    verdict = ifs.decide(target, arch)
    assert verdict.status is not ifs.Status.UNKNOWN, f"{text} on {arch}: {verdict.reason_unknown}"
    if verdict.witness is not None:
        report = ifs.check(verdict.witness, target, arch, seq_len=replay_length(target, arch), samples=4, seed=1)
        assert report.ok, f"{text} on {arch}\n{verdict.witness}\n{report}"
    found = enumerate_programs(target, arch, budget_s=SEARCH_BUDGET_S)
    if found is None:
        pytest.skip(f"the enumeration ran past {SEARCH_BUDGET_S} s: {text} on {arch}")
    assert verdict.feasible == (found.found is not None), f"{text} on {arch}\n{verdict}\n{found.found}"
    if verdict.feasible:  # the best exponent too (of infeasible verdicts: see the report of issue 22's rank work)
        brute = brute_force_decide(target, arch, budget_s=SEARCH_BUDGET_S)
        if brute is not None:
            assert str(verdict.exponent) == str(brute.exponent), f"{text} on {arch}\n{verdict}\n{brute.program}"


def test_the_rule_binds_on_some_cases_and_not_on_others() -> None:
    """Without cases where the rule changes the verdict, the agreement above would show nothing."""
    changed = []
    for index in CASES[:12]:
        text, arch = rank_case(index)
        papers = ifs.Architecture(heads=arch.heads, embed_dim=arch.embed_dim, input_dim=arch.input_dim,
                                  positional=arch.positional)
        changed.append(ifs.decide(text, arch).status != ifs.decide(text, papers).status)
    assert any(changed) and not all(changed)


@pytest.mark.parametrize("index", range(40))
def test_counted_and_measured_ranks_agree_on_random_scores(index: int) -> None:
    """``lang/rank.py`` (the encoder's count) and ``rank_measure`` (the checkers' measure) give every
    selection of a random target the same rank, ``None`` included."""
    rng = random.Random(20_000 + index)
    target = ifs.parse_target(random_target(rng, rng.random() < 0.3))
    d = rng.choice([1, 2, 3, 5])
    tree = comparison_tree(target)
    for node, data in tree.nodes(data=True):
        if data["kind"] in ("top1", "kth"):
            assert score_rank(tree, node, d) == measured_rank(tree, node, target.realization, d), \
                f"{target.text}: node {node} at d={d}"


def _vector(rng: random.Random, side: str) -> str:
    """A vector one side holds: its token, the one before it, a fixed position's (the selector's), or a sum."""
    held = {"s": ["x[s]", "x[s-1]", "x[T]", "x[1]"], "t": ["x[t]", "x[t-1]"]}[side]
    vector = rng.choice(held)
    if rng.random() < 0.25:
        vector += f" {rng.choice('+-')} {rng.choice(['', '2*'])}{rng.choice(held[:3])}"
    return vector


def _factor(rng: random.Random) -> str:
    """A form between the two sides, a vector's projection, a function of one side, or now and then a
    function of both (no bounded rank)."""
    roll = rng.random()
    if roll < 0.35:
        return f"dot({_vector(rng, 's')}, {_vector(rng, 't')})"
    if roll < 0.5:
        return f"bilinear(A{rng.randint(1, 2)}, {_vector(rng, 's')}, {_vector(rng, 't')})"
    if roll < 0.6:
        return f"dot(a{rng.randint(1, 2)}, {_vector(rng, rng.choice('st'))})"
    if roll < 0.75:
        return f"f{rng.randint(1, 3)}({_vector(rng, rng.choice('st'))})"
    if roll < 0.85:
        side = rng.choice("st")
        return f"dot({_vector(rng, side)}, {_vector(rng, side)})"
    if roll < 0.92:
        return f"f2({_vector(rng, 't')}, {_vector(rng, 't')})"
    s, t = _vector(rng, "s"), _vector(rng, "t")
    return rng.choice([f"f2({s}, {t})", f"f1({s} + {t})"])


def random_score(index: int) -> tuple[str, int]:
    """Random score ``index`` over a selector ``s`` and a candidate ``t``: a sum of 1 to 3 products of 1 to 3
    factors (``_factor``), now and then squared; and a token dimension of 1 to 3."""
    rng = random.Random(30_000 + index)
    terms = []
    for _ in range(rng.choice([1, 2, 3])):
        term = " * ".join(_factor(rng) for _ in range(rng.choice([1, 1, 2, 2, 3])))
        terms.append(f"({term})**2" if rng.random() < 0.25 else term)
    body = terms[0] + "".join(f" {rng.choice('+-')} {rng.choice(['', '3*', '0.5*'])}{t}" for t in terms[1:])
    return f"min({body} for s in range(2, T+1) for t in range(2, T+1))", rng.choice([1, 2, 3])


# forms that share dimensions in no one vector (issue 37's examples), and products of forms
RANK_EXAMPLES = [
    ("min(dot(x[s], x[t]) + dot(a1, x[s]) * dot(a2, x[t]) for s in T for t in T)", 8, 8),
    ("min(dot(x[s] + x[s-1], x[t] + x[t-1]) for s in range(2, T+1) for t in range(2, T+1))", 8, 8),
    ("min(dot(x[s], x[t])**2 for s in T for t in T)", 2, 3),
    ("min(dot(x[s], x[t])**2 for s in T for t in T)", 4, 10),
    # the candidate's quadratic monomials, x_t x_t^T symmetric: d (d + 1) / 2, not d^2
    ("min(bilinear(A1, x[s], x[t]) * dot(x[s-1], x[t]) for s in range(2, T+1) for t in T)", 3, 6),
    ("min(dot(x[s], x[t])**3 + f1(x[t]) * f2(x[s]) for s in T for t in T)", 2, 5),
]


@pytest.mark.parametrize("text, d, rank", RANK_EXAMPLES)
def test_counted_and_measured_ranks_agree_on_the_issues_examples(text: str, d: int, rank: int) -> None:
    target = ifs.parse_target(text)
    tree = comparison_tree(target, {"g0": ("s", "t")})
    assert score_rank(tree, "g0.t", d) == measured_rank(tree, "g0.t", target.realization, d) == rank


@pytest.mark.parametrize("index", range(40))
def test_counted_and_measured_ranks_agree_on_random_products_of_forms(index: int) -> None:
    """The two ranks of every selection of ``random_score(index)``, ``None`` included."""
    text, d = random_score(index)
    target = ifs.parse_target(text)
    tree = comparison_tree(target)
    for node in selection_nodes(tree):
        assert score_rank(tree, node, d) == measured_rank(tree, node, target.realization, d), \
            f"{text}: node {node} at d={d}"


def test_the_random_scores_reach_every_kind_of_rank() -> None:
    """Without products of forms, ranks above 2d and scores of no bounded rank, the agreement above would
    show little."""
    seen = []
    for index in range(40):
        text, d = random_score(index)
        tree = comparison_tree(ifs.parse_target(text))
        seen += [(score_rank(tree, node, d), d) for node in selection_nodes(tree)]
    assert any(rank is None for rank, _ in seen) and any(rank is not None and rank > 2 * d + 1 for rank, d in seen)


# Architectures as wide as the rank (8, 2, 3, 10) and one narrower: the first feasible, the second not
RANK_VERDICTS = [
    ("min(dot(x[s], x[t]) + dot(a1, x[s]) * dot(a2, x[t]) for s in T for t in T)", (1, 1), 8, 8, True),
    ("min(dot(x[s], x[t]) + dot(a1, x[s]) * dot(a2, x[t]) for s in T for t in T)", (1, 1), 7, 8, False),
    ("min(dot(x[s] + x[s-1], x[t] + x[t-1]) for s in range(2, T+1) for t in range(2, T+1))", (1, 1, 1), 2, 2, True),
    ("min(dot(x[s] + x[s-1], x[t] + x[t-1]) for s in range(2, T+1) for t in range(2, T+1))", (1, 1, 1), 1, 2, False),
    ("min(dot(x[s], x[t])**2 for s in T for t in T)", (1, 1), 3, 2, True),
    ("min(dot(x[s], x[t])**2 for s in T for t in T)", (1, 1), 2, 2, False),
    ("min(dot(x[s], x[t])**2 for s in T for t in T)", (1, 1), 10, 4, True),
    ("min(dot(x[s], x[t])**2 for s in T for t in T)", (1, 1), 9, 4, False),
]


@pytest.mark.parametrize("text, heads, width, d, feasible", RANK_VERDICTS)
def test_solver_and_brute_force_agree_on_the_issues_rank_examples(text, heads, width, d, feasible) -> None:
    arch = ifs.Architecture(heads=heads, embed_dim=width, input_dim=d, rank_aware=True, positional="x[s-1]" in text)
    target = ifs.parse_target(text)
    verdict = ifs.decide(target, arch)
    assert verdict.feasible is feasible, str(verdict)
    found = enumerate_programs(target, arch, budget_s=60)
    assert found is not None and (found.found is not None) is feasible, f"{text} on {arch}\n{verdict}"
    if feasible:
        report = ifs.check(verdict.witness, target, arch, seq_len=replay_length(target, arch), samples=4, seed=1)
        assert report.ok, str(report)


def test_a_head_as_wide_as_the_rank_holds_it_and_a_narrower_one_does_not() -> None:
    def status(width: int) -> ifs.Status:
        arch = ifs.Architecture(heads=(1, 1), embed_dim=width, input_dim=4, rank_aware=True)
        return ifs.decide("min_pairwise_dot", arch).status

    assert (status(3), status(4)) == (ifs.Status.INFEASIBLE, ifs.Status.FEASIBLE)


def test_the_verdict_names_the_rank_that_rules_a_head_out() -> None:
    arch = ifs.Architecture(heads=(1, 1), embed_dim=4, input_dim=8, rank_aware=True)
    verdict = ifs.decide("min_pairwise_dot", arch)
    assert "A head of width 4 (E / h = 4 / 1) in layer 1 cannot hold the rank-8 score" in str(verdict)
    assert "rank-aware" in str(verdict) and verdict.to_json()["architecture"]["rank_aware"] is True


def test_a_score_of_no_bounded_rank_is_ruled_out_for_every_width() -> None:
    arch = ifs.Architecture(heads=(1, 1), embed_dim=1024, input_dim=2, rank_aware=True)
    verdict = ifs.decide("min(f1(x[s] + x[t]) for s in T for t in T)", arch)
    assert verdict.status is ifs.Status.INFEASIBLE
    assert "no bilinear form of bounded rank" in str(verdict)


# ---- the metamorphic laws under the rule ----------------------------------------------------------------
def _no_worse(small: ifs.Verdict, large: ifs.Verdict) -> None:
    if small.feasible:
        assert large.feasible, f"{small}\n--- became ---\n{large}"


def _with(arch: ifs.Architecture, **changes) -> ifs.Architecture:
    fields = {"heads": arch.heads, "embed_dim": arch.embed_dim, "input_dim": arch.input_dim,
              "positional": arch.positional, "rank_aware": arch.rank_aware}
    return ifs.Architecture(**(fields | changes))


@pytest.mark.parametrize("index", range(6))
def test_adding_a_layer_never_hurts_under_the_rule(index: int) -> None:
    text, arch = rank_case(index)
    _no_worse(ifs.decide(text, arch), ifs.decide(text, _with(arch, heads=(1,) + arch.heads)))


@pytest.mark.parametrize("index", range(6))
def test_widening_never_hurts_under_the_rule(index: int) -> None:
    text, arch = rank_case(index)
    _no_worse(ifs.decide(text, arch), ifs.decide(text, _with(arch, embed_dim=4 * arch.embed_dim)))


def test_a_head_more_can_hurt_under_the_rule_and_covers_says_so() -> None:
    """At a fixed E a second head halves every head: the law "adding a head never hurts" fails, so neither
    witness reuse nor a sweep's inference may go from one head count to another (``Architecture.covers``)."""
    one = ifs.Architecture(heads=(1, 1), embed_dim=8, input_dim=8, rank_aware=True)
    two = _with(one, heads=(2, 1))
    assert ifs.decide("min_pairwise_dot", one).feasible and not ifs.decide("min_pairwise_dot", two).feasible
    assert not two.covers(one) and _with(two, rank_aware=False).covers(_with(one, rank_aware=False))
    assert _with(one, heads=(1, 1, 1)).covers(one)   # a layer more, idle, still covers


def test_a_sweep_under_the_rule_infers_nothing_across_head_counts() -> None:
    archs = [ifs.Architecture(heads=(h,) * L, embed_dim=8, input_dim=8, rank_aware=True)
             for L in (1, 2) for h in (1, 2)]
    cells = {c.architecture.heads: c for c in ifs.sweep(["min_pairwise_dot"], archs, cache=False, workers=1).cells}
    assert cells[(1, 1)].status is ifs.Status.FEASIBLE and cells[(2, 2)].status is ifs.Status.INFEASIBLE
    assert not cells[(2, 2)].inferred


def test_decide_all_under_the_rule_needs_a_head_width() -> None:
    with pytest.raises(ifs.InvalidSpecError, match="rank_aware=True needs head_dim"):
        ifs.decide_all("min_pairwise_dot", rank_aware=True)
    assert ifs.decide_all("min_pairwise_dot", head_dim=8, input_dim=8, rank_aware=True).shapes == ((2, 1),)
    assert ifs.decide_all("min_pairwise_dot", head_dim=4, input_dim=8, rank_aware=True).none


def test_the_cli_takes_the_rule_and_names_it(tmp_path) -> None:
    import json
    import subprocess
    import sys

    command = [sys.executable, "-m", "infoflow_smt", "decide", "min_pairwise_dot", "--heads", "1,1",
               "--embed-dim", "4", "--input-dim", "8", "--rank-aware"]
    text = subprocess.run(command, capture_output=True, text=True, check=False)
    assert text.returncode == 1 and "rank-aware" in text.stdout and "rank-8 score" in text.stdout
    record = json.loads(subprocess.run(command + ["--json"], capture_output=True, text=True, check=False).stdout)
    assert record["architecture"]["rank_aware"] is True and record["status"] == "infeasible"
