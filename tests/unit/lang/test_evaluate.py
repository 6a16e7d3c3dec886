"""The reference evaluator against plain-Python loops, its shapes and errors (the random functions and
subsets it reads: test_realization.py)."""
from __future__ import annotations

import itertools
import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.strategies import targets

from infoflow_smt.deadline import Deadline, OutOfTime
from infoflow_smt.errors import InvalidSpecError
from infoflow_smt.lang import catalogue, evaluate
from infoflow_smt.lang.evaluate import evaluate_expr
from infoflow_smt.lang.expr import (
    AllPositions,
    Binding,
    Call,
    Content,
    FixedIndex,
    Reduce,
    ReduceKind,
    VarIndex,
)
from infoflow_smt.lang.language import parse_target_expr
from infoflow_smt.lang.realization import Realization
from infoflow_smt.lang.target import parse_target


def _X(batch=3, T=5, d=2, seed=0):
    return np.random.default_rng(seed).normal(size=(batch, T, d))


def _in_subset(t: int, i: int) -> bool:
    """The documented subset rule, restated independently: t in S_i iff (t - i) % 4 in (0, 1)."""
    return (t - i) % 4 in (0, 1)


# ---- catalogue targets against brute-force loops (positions 1-based in the text, 0-based in X) ----------
def _ref_min_pairwise_dot(X, R):
    return [min(x[s] @ x[t] for s in range(len(x)) for t in range(len(x))) for x in X]


def _ref_max_retrieval(X, R):
    f1 = R.function("f1", X.shape[2])
    return [max(f1(x[t]) for t in range(len(x))) for x in X]


def _ref_kth_largest(X, R, k=2):
    f1 = R.function("f1", X.shape[2])
    return [sorted((f1(x[t]) for t in range(len(x))), reverse=True)[k - 1] for x in X]


def _ref_d_retrieval(X, R, D=2, subsets=True):
    d = X.shape[2]
    F0 = R.function("F0", D)
    out = []
    for x in X:
        mins = [min(R.function(f"f{i}", d)(x[t - 1]) for t in range(1, len(x) + 1)
                    if not subsets or _in_subset(t, i)) for i in range(1, D + 1)]
        out.append(F0(np.array(mins)))
    return out


def _ref_linear_max_sum(X, R, D=4):
    a = [R.vector(f"a{i}", X.shape[2]) for i in range(1, D + 1)]
    return [sum(max(a[i] @ x[t] for t in range(len(x))) for i in range(D)) for x in X]


def _ref_intrinsic_dimension(X, R, D=2):
    A = [R.matrix(f"A{i}", X.shape[2]) for i in range(1, D + 1)]
    pairs = lambda x: itertools.product(range(len(x)), repeat=2)
    return [sum(max(x[s] @ A[i] @ x[t] for s, t in pairs(x)) for i in range(D)) for x in X]


def _ref_triangle_center(X, R, squared=True):
    power = 2 if squared else 1
    return [min(np.sqrt(np.sum((x[a] + x[b] + x[c]) ** 2)) ** power
                for a, b, c in itertools.product(range(len(x)), repeat=3)) for x in X]


def _ref_specific_positions(X, R, positions=(1, 2, 3)):
    return [sum(x[p - 1] for p in positions) for x in X]


REFERENCES = [
    ("min_pairwise_dot", {}, _ref_min_pairwise_dot),
    ("max_retrieval", {}, _ref_max_retrieval),
    ("kth_largest", {}, _ref_kth_largest),
    ("kth_largest", {"k": 4}, lambda X, R: _ref_kth_largest(X, R, k=4)),
    ("d_retrieval", {}, _ref_d_retrieval),
    ("d_retrieval", {"D": 3, "subsets": False}, lambda X, R: _ref_d_retrieval(X, R, D=3, subsets=False)),
    ("d_retrieval", {"D": 4}, lambda X, R: _ref_d_retrieval(X, R, D=4)),
    ("linear_max_sum", {}, _ref_linear_max_sum),
    ("intrinsic_dimension", {"D": 3}, lambda X, R: _ref_intrinsic_dimension(X, R, D=3)),
    ("triangle_center", {}, _ref_triangle_center),
    ("triangle_center", {"squared": False}, lambda X, R: _ref_triangle_center(X, R, squared=False)),
    ("specific_positions", {}, _ref_specific_positions),
    ("specific_positions", {"positions": (2, 5)}, lambda X, R: _ref_specific_positions(X, R, (2, 5))),
]


@pytest.mark.parametrize("name, params, reference", REFERENCES)
@pytest.mark.parametrize("seed", [0, 7])
def test_catalogue_targets_match_brute_force(name, params, reference, seed):
    target = catalogue.get(name, seed=seed, **params)
    X = _X(batch=4, T=6, d=3, seed=seed)
    expected = np.array(reference(X, target.realization), dtype=float)
    np.testing.assert_allclose(target.evaluate(X), expected, rtol=1e-10, atol=1e-12)


def test_argmax_index_against_brute_force():
    target = parse_target("x[argmax(dot(x[s-1], x[T]) for s in range(2, T+1))]")
    X = _X(batch=5, T=7, d=2)
    expected = []
    for x in X:
        best = max(range(2, 8), key=lambda s: x[s - 2] @ x[6])
        expected.append(x[best - 1])
    np.testing.assert_allclose(target.evaluate(X), np.array(expected))


def test_argmax_as_a_value_is_the_position_and_ties_go_first():
    X = np.zeros((2, 4, 1))
    X[0, :, 0] = [1.0, 3.0, 3.0, 0.0]  # tie between positions 2 and 3
    X[1, :, 0] = [5.0, 1.0, 2.0, 0.5]
    values = parse_target("argmax(dot(x[t], x[t]) for t in T)").evaluate(X)
    assert values.tolist() == [2.0, 1.0]
    assert parse_target("argmin(dot(x[t], x[t]) for t in T)").evaluate(X).tolist() == [4.0, 4.0]


def test_nested_reduction_against_brute_force():
    target = parse_target("min(max(g(x[s], x[t]) for t in S1) + dot(x[s], x[s]) for s in range(1, T))")
    X = _X(batch=3, T=6, d=2)
    g = target.realization.function("g", 4)
    expected = [min(max(g(np.concatenate([x[s - 1], x[t - 1]])) for t in range(1, 7) if _in_subset(t, 1))
                    + x[s - 1] @ x[s - 1] for s in range(1, 6)) for x in X]
    np.testing.assert_allclose(target.evaluate(X), expected)


def test_sum_and_mean_of_vectors():
    X = _X(batch=2, T=5, d=3)
    np.testing.assert_allclose(parse_target("sum(x[t] for t in T)").evaluate(X), X.sum(axis=1))
    got = parse_target("mean(x[t-1] for t in range(2, T+1))").evaluate(X)
    np.testing.assert_allclose(got, X[:, :4].mean(axis=1))


def test_scalar_times_vector_broadcasts():
    X = _X(batch=2, T=3, d=2)
    got = parse_target("dot(x[1], x[2]) * x[3] + 1").evaluate(X)
    expected = np.einsum("bi,bi->b", X[:, 0], X[:, 1])[:, None] * X[:, 2] + 1
    np.testing.assert_allclose(got, expected)


# ---- shapes, env, errors ----------------------------------------------------------------------------------
def test_shapes():
    X = _X(batch=6, T=4, d=5)
    assert parse_target("max(f1(x[t]) for t in T)").evaluate(X).shape == (6,)
    assert parse_target("x[1] + x[T]").evaluate(X).shape == (6, 5)
    assert parse_target("3").evaluate(X).shape == (6,)
    assert parse_target("dot(a1, x[2]) * x[1]").evaluate(X).shape == (6, 5)


def test_env_binds_free_variables():
    expr = Call("dot", (Content(VarIndex("t")), Content(FixedIndex(1))))
    X = _X(batch=3, T=4, d=2)
    t = np.array([1, 4, 2])
    got = evaluate_expr(expr, X, Realization(0), env={"t": t})
    np.testing.assert_allclose(got, [X[b, t[b] - 1] @ X[b, 0] for b in range(3)])
    with pytest.raises(InvalidSpecError, match="unbound index variable 't'"):
        evaluate_expr(expr, X, Realization(0))


@pytest.mark.parametrize("text, T, message", [
    ("x[T-5]", 3, r"x\[T-5\] reads position -2, outside 1..3 \(seq_len=3\)"),
    ("x[4]", 3, r"x\[4\] reads position 4"),
    ("kth_largest(3, f1(x[t]) for t in S1)", 4, r"needs 1 <= k <= 2 candidates at seq_len=4, got k=3"),
    ("min(f1(x[t]) for t in range(3, 2))", 5, r"domain of t \(range\(3, 2\)\) is empty at seq_len=5"),
    ("min(f1(x[t]) for t in S3)", 2, "is empty at seq_len=2"),
])
def test_evaluation_errors(text, T, message):
    with pytest.raises(InvalidSpecError, match=message):
        parse_target(text).evaluate(_X(T=T))


def test_offsets_outside_the_sequence_read_padding():
    X = _X(T=4)
    got = parse_target("x[argmax(dot(x[s-1], x[T]) for s in T)]").evaluate(X)
    for b in range(X.shape[0]):
        scores = [0.0] + [X[b, s - 2] @ X[b, 3] for s in range(2, 5)]
        np.testing.assert_allclose(got[b], X[b, int(np.argmax(scores))])


def test_a_selection_of_tokens_needs_scalar_tokens():
    expr = Reduce(ReduceKind.MAX, Content(VarIndex("t")), (Binding("t", AllPositions()),))
    with pytest.raises(InvalidSpecError, match="needs scalar tokens .input_dim=1., got input_dim=2"):
        evaluate_expr(expr, _X(), Realization(0))
    X = np.random.default_rng(0).standard_normal((4, 6, 1))
    np.testing.assert_allclose(evaluate_expr(expr, X, Realization(0)), X[:, :, 0].max(axis=1))


def test_input_validation_lists_every_problem():
    target = parse_target("x[1]")
    with pytest.raises(InvalidSpecError, match="numpy array, got list"):
        target.evaluate([[[1.0]]])
    with pytest.raises(InvalidSpecError, match=r"shape \(batch, T, d\), got shape \(2, 3\)"):
        target.evaluate(np.zeros((2, 3)))
    with pytest.raises(InvalidSpecError, match=r"T >= 1 and d >= 1, got shape \(2, 0, 3\)"):
        target.evaluate(np.zeros((2, 0, 3)))
    bad = np.full((2, 2), np.nan)
    with pytest.raises(InvalidSpecError) as caught:
        target.evaluate(bad)
    assert len(caught.value.problems) == 2  # wrong shape and non-finite values, together
    with pytest.raises(InvalidSpecError, match="dtype bool"):
        target.evaluate(np.zeros((1, 2, 2), dtype=bool))


# ---- chunking --------------------------------------------------------------------------------
CHUNKED = [
    "min(norm(x[a] + x[b] + x[c])**2 for a in T for b in T for c in T)",
    "kth_largest(3, f1(x[t]) for t in T) + mean(dot(x[s], x[t]) for s in T for t in S2)",
    "x[argmax(dot(x[s], x[1]) for s in T)] - x[argmin(dot(x[s], x[2]) for s in T)]",
    "max(min(f1(x[s], x[t]) for t in range(2, T)) for s in T)",
    "argmax(dot(x[t], x[t]) for t in T)",
]


@pytest.mark.parametrize("text", CHUNKED)
@pytest.mark.parametrize("budget", [1, 5, 37])
def test_chunked_equals_unchunked(text, budget, monkeypatch):
    X = _X(batch=3, T=6, d=2)
    X[:, 4] = X[:, 1]  # repeated tokens create ties, which must break the same way in every chunking
    target = parse_target(text)
    whole = target.evaluate(X)
    monkeypatch.setattr(evaluate, "_BUDGET", budget)
    np.testing.assert_allclose(target.evaluate(X), whole, rtol=1e-12)


def test_three_variable_reduction_at_T64_stays_small():
    X = _X(batch=64, T=64, d=2)
    tracemalloc.start()
    try:
        values = catalogue.get("triangle_center").evaluate(X)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert values.shape == (64,)
    assert peak < 200e6
    row = X[0]
    sums = row[:, None, None, :] + row[None, :, None, :] + row[None, None, :, :]
    assert np.isclose(values[0], (sums ** 2).sum(-1).min())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(targets(), st.integers(4, 6), st.integers(0, 3))
def test_generated_targets_evaluate_to_one_number_per_sequence(text, T, seed):
    X = _X(batch=2, T=T, d=2, seed=seed)
    values = parse_target(text, seed=seed).evaluate(X)
    assert values.shape == (2,)
    assert np.isfinite(values).all()


# ---- work: what an evaluation visits, counted before it starts -------------------------------------------
def _chain(n: int) -> str:
    """n dependent selections, each ranking by its distance to the enclosing one's position."""
    text = f"f1(x[v{n - 1}])"
    for i in range(n - 1, 0, -1):
        text = f"{('min', 'max')[i % 2]}(dot(x[v{i - 1}], x[v{i}]) + {text} for v{i} in T)"
    return f"min(f1(x[v0]) + {text} for v0 in T)"


WORK = [
    "min(" + " + ".join(f"f{i}(x[{v}])" for i, v in enumerate("abcdefgh", 1)) + " "
    + " ".join(f"for {v} in T" for v in "abcdefgh") + ")",           # eight independent parts: 8 T
    _chain(4),                                                        # four dependent links: T + 3 T^2
    "min(norm(x[a] + x[b] + x[c])**2 for a in T for b in T for c in T)",
    "x[argmax(dot(x[s], x[argmax(dot(x[t], x[T]) for t in T)]) for s in T)]",
    ("max(f1(x[s]) + min(dot(x[s], x[t]) + min(dot(x[t], x[u]) for u in T) for t in T) for s in T)"
     " + min(dot(x[t], x[u]) for t in T for u in T)"),  # the same reduction twice: one table
]


def _visits(text: str, X: np.ndarray, monkeypatch) -> int:
    """The index tuples evaluating ``text`` on ``X`` visits per input (each slice of the batch counts them
    again: divided by the slices)."""
    visited = []
    reduce = evaluate._reduce

    def counting(e, ctx, lead, env):
        domains = [ctx.realization.domain_positions(b.domain, ctx.seq_len) for b in e.bindings]
        visited.append(int(np.prod(lead[1:])) * int(np.prod([len(d) for d in domains])))
        return reduce(e, ctx, lead, env)

    monkeypatch.setattr(evaluate, "_reduce", counting)
    target = parse_target(text)
    target.evaluate(X)
    slices = -(-X.shape[0] // evaluate._rows_per_slice(target._evaluated, X.shape[1], X.shape[2]))
    return sum(visited) // slices


@pytest.mark.parametrize("text", WORK)
@pytest.mark.parametrize("budget", [evaluate._BUDGET, 64])  # 64: tables over two variables no longer fit
def test_work_is_what_an_evaluation_visits(text, budget, monkeypatch):
    monkeypatch.setattr(evaluate, "_BUDGET", budget)
    X = _X(batch=40, T=7, d=2)
    assert parse_target(text).work(7, 2) == _visits(text, X, monkeypatch)


def test_work_counts_the_enclosing_tuples_when_a_table_does_not_fit(monkeypatch):
    target = parse_target(_chain(4))
    assert target.work(20, 2) == 20 + 3 * 20**2
    monkeypatch.setattr(evaluate, "_BUDGET", 20 * 2 - 1)  # no table over one variable fits: T^k
    assert parse_target(_chain(4)).work(20, 2) == 20 + 20**2 + 20**3 + 20**4


def test_a_large_batch_costs_each_input_what_a_small_one_does(monkeypatch):
    """Evaluated all at once, 200 inputs' tables would not fit (200 x 7 x 2 > 1024): each link of the chain
    would be computed under all enclosing tuples, 7^4 per input where work counts 7 + 3 * 7^2."""
    monkeypatch.setattr(evaluate, "_BUDGET", 1024)
    one, many = _visits(_chain(4), _X(batch=1, T=7), monkeypatch), _visits(_chain(4), _X(batch=200, T=7), monkeypatch)
    assert one == many == parse_target(_chain(4)).work(7, 2) == 7 + 3 * 7**2


def test_a_sum_of_eight_independent_parts_costs_eight_t_at_t_20(monkeypatch):
    assert parse_target(WORK[0]).work(20, 2) == _visits(WORK[0], _X(batch=12, T=20), monkeypatch) == 8 * 20


def test_an_evaluation_stops_at_its_deadline():
    X = _X(batch=20000, T=32)
    with pytest.raises(OutOfTime, match="the target's evaluation"):
        parse_target(_chain(6)).evaluate(X, deadline=Deadline(0.05))


# ---- ranges bounded by an index variable: the definition, tuple by tuple ---------------------------------
def _pairs_min(X, score, pairs):
    return np.array([min(score(x, s, t) for s, t in pairs(len(x))) for x in X])


@pytest.mark.parametrize("text, pairs", [
    ("min(dot(x[s], x[t]) for s in T for t in range(1, s))", lambda n: [(s, t) for s in range(n) for t in range(s)]),
    ("min(dot(x[s], x[t]) for s in T for t in range(1, s+1))",
     lambda n: [(s, t) for s in range(n) for t in range(s + 1)]),
    ("min(dot(x[s], x[t]) for s in T for t in range(s+1, T+1))",
     lambda n: [(s, t) for s in range(n) for t in range(s + 1, n)]),
    ("min(dot(x[s], x[t]) for s in range(2, T+1) for t in range(1, s-1))",
     lambda n: [(s, t) for s in range(1, n) for t in range(s - 1)]),
])
def test_a_joint_reduction_over_a_bounded_range_is_over_its_pairs(text, pairs):
    X = np.random.default_rng(3).standard_normal((4, 6, 2))
    expected = _pairs_min(X, lambda x, s, t: x[s] @ x[t], pairs)
    np.testing.assert_allclose(evaluate_expr(parse_target_expr(text), X, Realization(0)), expected)


def test_a_nested_reduction_over_a_bounded_range_is_per_binding():
    X = np.random.default_rng(4).standard_normal((3, 7, 2))
    text = "sum(mean(f1(x[t]) for t in range(s, T+1)) + max(dot(x[s], x[t]) for t in range(1, s)) for s in range(2, T+1))"
    f1 = Realization(0).function("f1", 2)
    expected = [sum(np.mean([f1(x[t]) for t in range(s, 7)]) + max(x[s] @ x[t] for t in range(s)) for s in range(1, 7))
                for x in X]
    np.testing.assert_allclose(evaluate_expr(parse_target_expr(text), X, Realization(0)), expected)


def test_an_argmax_over_a_bounded_range_picks_per_binding():
    X = np.random.default_rng(5).standard_normal((3, 6, 2))
    text = "sum(x[argmax(dot(x[t], x[s]) for t in range(1, s))] for s in range(2, T+1))"
    expected = [sum(x[max(range(s), key=lambda t: x[t] @ x[s])] for s in range(1, 6)) for x in X]
    np.testing.assert_allclose(evaluate_expr(parse_target_expr(text), X, Realization(0)), expected)


@pytest.mark.parametrize("text", ["sum(min(dot(x[s], x[t]) for t in range(1, s)) for s in T)",
                                  "sum(x[argmax(dot(x[t], x[s]) for t in range(1, s))] for s in T)"])
def test_a_bounded_range_read_where_it_is_empty_is_refused(text):
    with pytest.raises(InvalidSpecError, match="has 0 candidates at s=1"):
        evaluate_expr(parse_target_expr(text), np.ones((2, 5, 2)), Realization(0))


# two ranges bounded by one enclosing variable, and a bounded reduction inside a table made at every binding
# of s (s = 1 included, which range(2, T+1) never takes): the metamorphic suite's masked sample found both
@pytest.mark.parametrize("text", [
    "min(max(dot(x[t], x[s]) + dot(x[p], x[s]) for t in range(1, s) for p in range(1, s)) for s in range(2, T+1))",
    "min(max(f1(x[t]) + dot(x[p], x[s]) for t in T for p in range(1, s)) for s in range(2, T+1))",
    "min(max(f1(x[t]) + max(dot(x[p], x[s]) for p in range(1, s)) for t in T) for s in range(2, T+1))",
])
def test_a_bounded_reduction_read_only_where_it_has_candidates_is_evaluated(text):
    X = np.random.default_rng(6).standard_normal((3, 6, 2))
    f1 = Realization(0).function("f1", 2)
    first = (lambda x, s, t: x[t] @ x[s]) if "dot(x[t]" in text else (lambda x, s, t: f1(x[t]))
    outer = (lambda s: range(s)) if "dot(x[t]" in text else (lambda s: range(6))
    expected = [min(max(first(x, s, t) for t in outer(s)) + max(x[p] @ x[s] for p in range(s)) for s in range(1, 6))
                for x in X]
    np.testing.assert_allclose(evaluate_expr(parse_target_expr(text), X, Realization(0)), expected)


def test_a_read_where_a_tabled_reduction_is_empty_is_still_refused():
    text = "min(max(f1(x[t]) + max(dot(x[p], x[s]) for p in range(1, s)) for t in T) for s in T)"
    with pytest.raises(InvalidSpecError, match="has 0 candidates at s=1"):
        evaluate_expr(parse_target_expr(text), np.ones((2, 5, 2)), Realization(0))
