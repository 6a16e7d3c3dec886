"""The rank a score needs in a head (``verify/score_rank.py``), measured: the rank of its bilinear form, not a
count of its text (issue 37, item 5), and None for a score that is no bilinear form of bounded rank."""
from __future__ import annotations

import pytest

from infoflow_smt.lang.realization import Realization
from infoflow_smt.verify import flow_program as fp
from infoflow_smt.verify.score_rank import rank


@pytest.mark.parametrize(("score", "d", "expected"), [
    ("dot(x[t], x[p])", 3, 3),
    ("bilinear(A1, x[p], x[t-1])", 4, 4),
    ("dot(x[p], x[t]) + dot(a1, x[p]) * dot(a2, x[t])", 8, 8),       # I + a1 a2^T: rank 8, not 9
    ("dot(x[p] + x[p-1], x[t] + x[t-1])", 8, 8),                      # one form of sums, not four
    ("dot(x[p], x[t]) + dot(x[p-1], x[t-1])", 2, 4),
    ("dot(x[p], x[t])**2", 2, 3),                                     # symmetric tensors of order 2
    ("dot(x[p], x[t])**2", 4, 10),
    ("f1(x[p]) * f2(x[t]) + f1(x[p])", 2, 1),                         # a selector term moves every candidate alike
    ("dot(x[t], x[T]) + f2(x[t])", 3, 4),                             # a fixed position is held by the selector
])
def test_the_rank_of_a_bilinear_form(score: str, d: int, expected: int) -> None:
    head = fp.retrieval(score, "t", "range(2, T+1)")
    assert rank(head.body, head.variable, d, Realization(0)) == expected


@pytest.mark.parametrize("score", ["f1(x[p] + x[t])", "F0(x[p], x[t])", "dot(x[p], x[t]) * f1(x[t] + x[p])"])
def test_a_score_that_is_no_bilinear_form_has_no_bounded_rank(score: str) -> None:
    head = fp.retrieval(score)
    assert rank(head.body, head.variable, 2, Realization(0)) is None
