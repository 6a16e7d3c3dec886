"""The cost laws at known points (docs/model.md, "Information sets and the modes"), and as decide applies them."""
from __future__ import annotations

import pytest
import sympy

import infoflow_smt as ifs
from infoflow_smt.errors import InvalidSpecError
from infoflow_smt.model import cost
from infoflow_smt.model.cost import DecodeLaw
from infoflow_smt.symbols import T


def test_retrieval_and_averaging_cost_1_at_every_length():
    assert cost.retrieval() == 1 and cost.average() == 1
    assert not cost.retrieval().has(T)


@pytest.mark.parametrize("k, head_dim, seq_len, value", [
    (2, 8, 30, 3),            # (T - k - 1) / (n + 1) = 27 / 9
    (3, 4, 24, 4),            # 20 / 5
    (2, T, 64, sympy.Rational(61, 65)),   # a width growing with T keeps it bounded
])
def test_kth_retrieval_law(k, head_dim, seq_len, value):
    assert cost.kth_retrieval(k, head_dim).subs(T, seq_len) == value


def test_kth_retrieval_needs_k_at_least_2():
    with pytest.raises(ValueError, match="k = 1 is max-position retrieval"):
        cost.kth_retrieval(1, 8)


@pytest.mark.parametrize("size, d, width, law, value", [
    (T, 2, 32, DecodeLaw.SEED, T / 16 - 1),           # global aggregation: T0 d / E - 1
    (T, 2, 32, DecodeLaw.SUMMARY, T / 16),            # the summaries' reading: T0 d / E
    (64, 2, 32, DecodeLaw.SEED, 3),
    (3, 2, 12, DecodeLaw.SUMMARY, sympy.Rational(1, 2)),
    (3, 2, 32, DecodeLaw.SEED, sympy.Rational(-13, 16)),   # the law itself may fall under 0 ...
])
def test_decode_law_values(size, d, width, law, value):
    assert sympy.simplify(cost.decode_law(size, d, width, law) - value) == 0


def test_no_decoding_cost_falls_under_a_constant():
    assert cost.decode(3, 2, 32) == 0                  # ... the cost does not: clamped at 0
    assert cost.decode(T, 2, 2 * T) == 0               # a width growing as T: 2T/2T - 1 = 0
    assert cost.decode(T, 2, 32) == T / 16 - 1         # growing exponents are left as they are
    assert cost.clamp(-1 / (T + 1)) == 0 and cost.clamp(sympy.Integer(2)) == 2


def test_boundedness_is_the_definition_of_efficient():
    assert cost.is_bounded(sympy.Integer(1)) and cost.is_bounded(2 * T / (2 * T) - 1)
    assert not cost.is_bounded(T / 9 - 1) and not cost.is_bounded(sympy.oo)


def test_exponents_sort_by_their_growth():
    ordered = sorted([sympy.oo, T / 9, sympy.Integer(3), T / 16 - 1, T / 16], key=cost.asymptotic_key)
    assert ordered == [3, T / 16 - 1, T / 16, T / 9, sympy.oo]


def test_an_exponent_at_a_concrete_length():
    assert cost.at(T / 16 - 1, 64) == 3 and cost.at(T / 16 - 1, None) == T / 16 - 1


def test_a_decode_law_by_name_or_a_named_refusal():
    assert cost.as_law("summary") is DecodeLaw.SUMMARY and cost.as_law(DecodeLaw.SEED) is DecodeLaw.SEED
    with pytest.raises(InvalidSpecError, match="decode_law must be one of 'seed', 'summary', got 'paper'"):
        cost.as_law("paper")


# ---- the laws as decide applies them ------------------------------------------------------------------
def test_concrete_length_gives_a_number():
    arch = ifs.Architecture(heads=(4,), embed_dim=16, input_dim=2)
    v = ifs.decide("min_pairwise_dot", arch, seq_len=64)
    # the aggregating head decodes from its own width, n = E/h = 16/4
    assert v.status is ifs.Status.INFEASIBLE and v.exponent == 64 * 2 / sympy.Integer(16 // 4) - 1
    assert ifs.decide("min_pairwise_dot", ifs.Architecture(heads=(1, 1), embed_dim=16, input_dim=2),
                      seq_len=10**6).exponent == 1


def test_a_cost_below_a_constant_at_a_given_length_counts_as_0():
    # a global aggregation by a head of width E/h = 48/2 costs T/12 - 1: -1/3 at T = 8, reported as 0
    arch = ifs.Architecture(heads=(2, 2), embed_dim=48, input_dim=2)
    at_8 = ifs.decide("triangle_center", arch, seq_len=8)
    assert at_8.status is ifs.Status.INFEASIBLE and at_8.exponent == 0
    assert any("-1/3 at T = 8" in str(r) and "counts as 0" in str(r) for r in at_8.explanation)
    assert ifs.decide("triangle_center", arch, seq_len=32).exponent == sympy.Rational(5, 3)
    assert ifs.decide("triangle_center", arch).exponent == ifs.T / 12 - 1


def test_decode_law_is_a_named_option():
    arch = ifs.Architecture(heads=(1,), embed_dim=4, input_dim=2, positional=True)
    seed = ifs.decide("specific_positions", arch)
    summary = ifs.decide("specific_positions", arch, decode_law="summary")
    assert summary.exponent - seed.exponent == 1
