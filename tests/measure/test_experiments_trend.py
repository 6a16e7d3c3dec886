"""``experiments.trend``: the rule ``confirm`` judges a row by, on measured figures written out here.

No training: the cells are what a training would have measured; the exponents of the last tests are the
solver's own (``ifs.decide(..., seq_len=T)``).
"""
from __future__ import annotations

import math

import pytest

import infoflow_smt as ifs
from experiments.confirmation.trend import Cell, TrendRule, judge, judge_rows, unseparated

RULE = TrendRule()   # threshold 1e-2, factors 4


def cells(exponents: tuple[float, ...], nmse: tuple[float, ...], lengths: tuple[int, ...] = (8, 16, 32)) -> tuple:
    return tuple(Cell(T, e, x) for T, e, x in zip(lengths, exponents, nmse))


EFFICIENT = cells((1, 1, 1), (1e-3, 1.5e-3, 2e-3))


def test_a_flat_efficient_row_below_the_threshold_agrees() -> None:
    j = judge(RULE, "feasible", EFFICIENT, None)
    assert j.agree is True and "2.0x across T" in j.reason and "within 4x" in j.reason


def test_an_efficient_row_whose_error_grows_with_T_disagrees() -> None:
    j = judge(RULE, "feasible", cells((1, 1, 1), (1e-4, 5e-4, 9e-3)), None)
    assert j.agree is False and "90.0x" in j.reason and "beyond 4x" in j.reason


def test_an_efficient_row_above_the_threshold_at_one_length_disagrees_naming_it() -> None:
    j = judge(RULE, "feasible", cells((1, 1, 1), (3e-3, 4e-3, 1.2e-2)), None)
    assert j.agree is False and j.reason == "NMSE not below 0.01 at T = 32"


def test_an_inefficient_row_that_rises_with_T_agrees() -> None:
    j = judge(RULE, "infeasible", cells((1, 3, 7), (2e-3, 6e-3, 2e-2)), EFFICIENT)
    assert j.agree is True and "rises 10.0x from T = 8 to 32 (>= 4x)" in j.reason
    assert j.unseparated == (8,) and "T = 8 cannot separate" in j.reason


def test_an_inefficient_row_flat_but_far_above_the_efficient_one_agrees_by_the_gap() -> None:
    j = judge(RULE, "infeasible", cells((1, 3, 7), (2e-2, 2e-2, 2.1e-2)), EFFICIENT)
    assert j.agree is True and "(< 4x)" in j.reason and "10.5x the control at T = 32 (>= 4x)" in j.reason


def test_an_inefficient_row_as_good_as_the_efficient_one_and_flat_disagrees() -> None:
    j = judge(RULE, "infeasible", cells((1, 3, 7), (1e-3, 1.2e-3, 2.5e-3)), EFFICIENT)
    assert j.agree is False


def test_a_length_with_equal_exponents_is_not_counted_for_the_gap() -> None:
    # the case: intrinsic_dimension:D=2 at E = 16, d = 2, T = 16: (2, 1) and (2, 2) both have exponent 1
    ref = cells((1,), (9.3e-4,), (16,))
    j = judge(RULE, "infeasible", cells((1,), (2.3e-3,), (16,)), ref)
    assert j.agree is None and j.unseparated == (16,)
    assert "T = 16 cannot separate" in j.reason and "one length cannot show a trend" in j.reason
    # the same figures where the solver does predict a gap: judged, and a 2.5x gap is not 4x
    assert judge(RULE, "infeasible", cells((3,), (2.3e-3,), (16,)), ref).agree is False


def test_a_lower_exponent_cannot_separate_either() -> None:
    assert unseparated(cells((0, 1, 3), (1, 1, 1)), EFFICIENT) == (8, 16)


def test_lengths_that_do_not_double_twice_have_no_rise_clause() -> None:
    control = cells((1, 1), (3e-3, 9e-3), (16, 32))
    j = judge(RULE, "infeasible", cells((3, 7), (1e-4, 3e-2), (16, 32)), control)
    assert j.agree is False and "rises" not in j.reason      # a 300x rise over one doubling is not counted
    assert j.reason == "3.3x the control at T = 32 (< 4x)"
    assert "not available" in "\n".join(RULE.describe((16, 32), None))


def test_without_a_control_a_failing_row_is_not_judged_whatever_its_trend() -> None:
    # triangle center: infeasible everywhere, so no efficient row shows that the training teaches the target;
    # a rise from 0.1 to 0.97 may be the recipe's, not the architecture's
    for nmse in ((0.1, 0.6, 0.97), (0.5, 0.6, 0.8)):
        j = judge(RULE, "infeasible", cells((0, 1 / 3, 5 / 3), nmse), None)
        assert j.agree is None and j.reason.startswith("no efficient row trained beside it")


def test_beside_a_control_that_failed_its_own_test_nothing_is_judged() -> None:
    # the gap clause against an efficient row that did not learn (5x across T: beyond its own 4x) says nothing
    failed = cells((1, 1, 1), (1e-3, 2e-3, 5e-3))
    j = judge(RULE, "infeasible", cells((1, 3, 7), (2e-2, 5e-2, 9e-2)), failed)
    assert j.agree is None and j.reason == ("its control did not meet its own test (below 0.01 at every T, 5.0x "
                                            "across T (beyond 4x)): not judged")
    assert judge(RULE, "infeasible", cells((1, 3, 7), (2e-2, 5e-2, 9e-2)), EFFICIENT).agree is True


def test_a_row_that_learned_the_target_is_no_yes_to_infeasible() -> None:
    # below the threshold at every T: a rise (12.3x) of an error that stays below it is noise on a learned
    # target; with no control, or one it is not 4x above, it disagrees
    learned = cells((1, 3, 7), (1e-4, 4e-4, 1.23e-3))
    j = judge(RULE, "infeasible", learned, None)
    assert j.agree is False and j.reason == ("below 0.01 at every T: it learned the target at these lengths; no "
                                             "control to set it against")
    as_good = cells((1, 1, 1), (2e-4, 3e-4, 5e-4))
    assert "lengths; 2.5x the control at T = 32 (< 4x)" in judge(RULE, "infeasible", learned, as_good).reason
    # 4x above an agreeing control at a length the solver separates: the gap still says yes
    far_below = cells((1, 1, 1), (1e-5, 2e-5, 3e-5))
    assert judge(RULE, "infeasible", learned, far_below).agree is True
    # where the solver predicts no gap at the longest T, a learned row contradicts nothing: not judged
    assert judge(RULE, "infeasible", cells((1, 1, 1), (1e-4, 4e-4, 1.23e-3)), far_below).agree is None


def test_an_error_near_the_mean_predictors_is_judged_by_what_the_network_still_explains() -> None:
    # from NMSE 0.44 no error can rise 4x (predicting the mean gives 1): 56 % explained at T = 8, 4 % at T = 32.
    # Exponents (0, 1, 1) against the control's 1: T = 32 does not separate, so the gap clause is out
    j = judge(RULE, "infeasible", cells((0, 1, 1), (0.44, 0.9, 0.96)), EFFICIENT)
    assert j.agree is True and "rises 2.2x from T = 8 to 32 (< 4x)" in j.reason
    assert "explains 14.0x less at T = 32 (>= 4x)" in j.reason and "the control" not in j.reason.split(";")[0]
    assert "explains nothing at T = 32 (>= 4x)" in judge(RULE, "infeasible", cells((0, 1, 1), (0.44, 0.9, 1.02)),
                                                       EFFICIENT).reason
    # at the ceiling throughout: it never explained anything, so it has nothing to lose with T
    assert judge(RULE, "infeasible", cells((0, 1, 1), (0.93, 0.93, 0.94)), EFFICIENT).agree is False
    assert judge(RULE, "infeasible", cells((0, 1, 1), (1.01, 1.0, 1.02)), EFFICIENT).agree is False
    assert "(1 - NMSE(T=8)) / (1 - NMSE(T=32)) >= 4" in "\n".join(RULE.describe((8, 16, 32), None))


def test_a_diverged_run_never_passes() -> None:
    nan = math.nan
    assert judge(RULE, "feasible", cells((1, 1, 1), (1e-3, nan, 1e-3)), None).agree is False
    assert judge(RULE, "infeasible", cells((1, 3, 7), (nan, 1e-2, nan)), EFFICIENT).agree is False


def test_a_length_the_budget_cut_short_is_not_judged_whatever_its_error_says() -> None:
    # min_pairwise_dot's infeasible rows at T = 32 once trained 1 of 16594 steps: NMSE 1.05, an untrained
    # network, read as "explains nothing" would count as a yes
    planned = 16594
    row = (Cell(8, 1, 0.935, planned, planned_steps=planned), Cell(16, 3, 0.922, planned, planned_steps=planned),
           Cell(32, 7, 1.05, 1, planned_steps=planned))
    j = judge(RULE, "infeasible", row, EFFICIENT)
    assert j.agree is None and j.reason.startswith("T = 32 trained 1 of its 16594 planned steps")
    assert j.unseparated == (8,)
    cut_efficient = EFFICIENT[:2] + (Cell(32, 1, 2e-2, 8000, planned_steps=planned),)
    assert judge(RULE, "feasible", cut_efficient, None).agree is None
    nearly = EFFICIENT[:2] + (Cell(32, 1, 2e-3, 15335, planned_steps=planned),)   # 92 %: the cosine's tail
    assert judge(RULE, "feasible", nearly, None).agree is True


def test_an_unknown_verdict_is_shown_not_counted() -> None:
    assert judge(RULE, "unknown", EFFICIENT, EFFICIENT).agree is None


def test_a_table_s_control_is_its_first_feasible_row() -> None:
    rising = cells((1, 3, 7), (2e-2, 5e-2, 9e-2))
    at, judgements = judge_rows(RULE, ["infeasible", "feasible", "feasible"], [rising, EFFICIENT, rising])
    assert at == 1 and [j.agree for j in judgements] == [True, True, False]
    assert judge_rows(RULE, ["infeasible"], [rising]) == (None, (judge(RULE, "infeasible", rising, None),))


def test_the_printed_rule_states_its_factors_and_one_length() -> None:
    text = "\n".join(TrendRule(threshold=3e-3, flat_factor=2, rise_factor=8).describe((16,), "decided, 2,2"))
    assert "NMSE < 0.003 at every T and max/min over T <= 2" in text
    assert ">= 8 x the control's (decided, 2,2)" in text and "one length (T = 16) cannot show a trend" in text
    assert "judged only beside its control" in text and "below 0.003 at every T learned the target" in text


@pytest.mark.parametrize(("d", "T", "separates"), [(2, 8, False), (2, 16, False), (2, 32, True),
                                                   (4, 8, False), (4, 16, True), (4, 32, True)])
def test_which_lengths_the_solver_separates_for_intrinsic_dimension(d: int, T: int, separates: bool) -> None:
    from experiments.confirmation.neighbours import exponent_at

    def at(heads: tuple[int, ...]) -> float:
        v = ifs.decide("intrinsic_dimension:D=2", ifs.Architecture(heads, 16, d), seq_len=T)
        return exponent_at(v, T)[0]

    row, ref = Cell(T, at((2, 1)), 1.0), Cell(T, at((2, 2)), 1e-3)
    assert (unseparated((row,), (ref,)) == ()) is separates
