"""``x[argmax(...) + c]``: the token c positions after the selected one, read as the shifted selection."""
from __future__ import annotations

import numpy as np
import pytest

import infoflow_smt as ifs
from infoflow_smt.errors import InvalidSpecError
from infoflow_smt.lang import catalogue
from infoflow_smt.lang.language import parse_target_expr, to_text

# (the + c spelling, the offset form it is read as: also its canonical text)
SHIFTS = [
    ("x[argmax(dot(x[t], x[T]) for t in range(1, T)) + 1]", "x[argmax(dot(x[t-1], x[T]) for t in range(2, T+1))]"),
    ("x[argmin(f1(x[t]) for t in range(2, T+1)) - 1]", "x[argmin(f1(x[t+1]) for t in range(1, T))]"),
    ("x[argmin(f1(x[t]) for t in range(3, T+1)) + -2]", "x[argmin(f1(x[t+2]) for t in range(1, T-1))]"),
    ("x[argmax(f1(x[t-1], x[t]) for t in range(2, T-1)) + 2]",
     "x[argmax(f1(x[t-3], x[t-2]) for t in range(4, T+1))]"),
    ("x[argmax(f1(x[t]) for t in range(1, T)) + 0]", "x[argmax(f1(x[t]) for t in range(1, T))]"),
    # a range bounded by an enclosing variable, and an inner range bounded by the selection's variable
    (("max(f2(x[s], x[argmax(f1(x[t], x[s]) + max(f1(x[u]) for u in range(1, t)) for t in range(1, s)) + 1]) "
      "for s in T)"),
     ("max(f2(x[s], x[argmax(f1(x[t-1], x[s]) + max(f1(x[u]) for u in range(1, t-1)) for t in range(2, s+1))]) "
      "for s in T)")),
    ("max(f2(x[s], x[argmax(f1(x[t], x[s]) for t in range(s+1, T+1)) - 1]) for s in T)",
     "max(f2(x[s], x[argmax(f1(x[t+1], x[s]) for t in range(s, T))]) for s in T)"),
]


@pytest.mark.parametrize("text, offset_form", SHIFTS)
def test_a_shifted_selection_is_read_in_the_offset_form(text, offset_form):
    expr = parse_target_expr(text)
    assert expr == parse_target_expr(offset_form)
    assert to_text(expr) == offset_form  # the printer writes the offset form
    assert parse_target_expr(to_text(expr)) == expr


def test_the_induction_head_written_with_plus_one_is_the_catalogues():
    written = parse_target_expr("x[argmax(dot(x[t], x[T]) for t in range(1, T)) + 1]")
    assert written == catalogue.parse_spec("induction_head").expr


def _selected(text: str, X: np.ndarray) -> np.ndarray:
    """The position the selection ``text`` (an argmax/argmin as a value) picks in each sequence of ``X``."""
    return ifs.parse_target(text).evaluate(X).astype(int)


# (the selection, c, every enclosing variable fixed by hand so the reference stays a plain numpy read)
EVALUATED = [
    ("argmax(dot(x[t], x[T]) for t in range(1, T))", 1),
    ("argmin(f1(x[t]) for t in range(2, T+1))", -1),
    ("argmax(f1(x[t-1], x[t]) for t in range(3, T-1))", 2),
    ("argmin(dot(x[t], x[1]) + x[t] * x[t] for t in range(4, T))", -3),
]


@pytest.mark.parametrize("selection, c", EVALUATED)
@pytest.mark.parametrize("d", [1, 3])
def test_the_shifted_spelling_reads_the_token_c_after_the_selected_one(selection, c, d):
    if "x[t] * x[t]" in selection and d > 1:
        selection = selection.replace("x[t] * x[t]", "norm(x[t])")
    X = np.random.default_rng(7).standard_normal((64, 9, d))
    X[:8, :, :] = np.round(X[:8, :, :])  # ties: the first candidate wins on both sides
    picked = _selected(selection, X)
    expected = X[np.arange(len(X)), picked - 1 + c]
    sign = f"+ {c}" if c > 0 else f"- {-c}"
    got = ifs.parse_target(f"x[{selection} {sign}]").evaluate(X)
    assert np.allclose(got, expected, rtol=0, atol=0)


def test_a_nested_shift_reads_the_token_after_the_selection_at_every_binding():
    X = np.random.default_rng(3).standard_normal((32, 7, 2))
    got = ifs.parse_target("sum(f2(x[s], x[argmax(dot(x[t], x[s]) for t in range(1, s)) + 1]) for s in range(2, T+1))",
                           seed=4).evaluate(X)
    expected = 0.0
    for s in range(2, 8):
        picked = ifs.parse_target(f"argmax(dot(x[t], x[{s}]) for t in range(1, {s}))").evaluate(X).astype(int)
        pair = np.stack([X[:, s - 1], X[np.arange(len(X)), picked]], axis=1)
        expected = expected + ifs.parse_target("f2(x[1], x[2])", seed=4).evaluate(pair)
    assert np.allclose(got, expected, rtol=1e-12, atol=1e-12)


ARCHITECTURES = [ifs.Architecture(heads=h, embed_dim=32, input_dim=2, positional=p)
                 for h in [(1,), (1, 1), (2, 1)] for p in (False, True)]


@pytest.mark.parametrize("arch", ARCHITECTURES, ids=str)
def test_the_induction_head_gets_one_verdict_however_written(arch):
    spellings = ["x[argmax(dot(x[t], x[T]) for t in range(1, T)) + 1]",
                 "x[argmax(dot(x[u-1], x[T]) for u in range(2, T+1))]",
                 "induction_head"]
    verdicts = {(v.status, str(v.exponent)) for v in (ifs.decide(text, arch) for text in spellings)}
    assert len(verdicts) == 1, verdicts


@pytest.mark.parametrize("heads", [(1,), (1, 1), (1, 1, 1)], ids=str)
def test_the_shift_is_decided_as_the_offset_form_under_a_causal_mask(heads):
    arch = ifs.Architecture(heads=heads, embed_dim=32, input_dim=2, positional=True, causal=True)
    a = ifs.decide("max(f2(x[s], x[argmax(dot(x[t], x[s]) for t in range(1, s)) + 1]) for s in range(2, T+1))",
                   arch)
    b = ifs.decide("max(f2(x[s], x[argmax(dot(x[v-1], x[s]) for v in range(2, s+1))]) for s in range(2, T+1))",
                   arch)
    assert (a.status, str(a.exponent)) == (b.status, str(b.exponent))


# a shift that could leave the sequence, or that the language cannot write, is refused in one line
REFUSED = [
    ("x[argmax(dot(x[t], x[T]) for t in T) + 1]", r"x\[argmax\(...\) \+ 1\]: .*position T.*range\(1, T\)"),
    ("x[argmin(f1(x[t]) for t in T) - 1]", r"x\[argmin\(...\) - 1\]: .*position 1.*range\(2, T\+1\)"),
    ("x[argmax(f1(x[t]) for t in T) + 2]", r"range\(1, T-1\)"),
    ("x[argmax(f1(x[t]) for t in S1) + 1]", "named subset"),
    ("x[argmax(f1(x[t]) for t in range(1, T-2)) + 4]", "runs up to T-3"),
    ("x[argmin(f1(x[t]) for t in range(2, T)) - 2]", "starts at 2, so the selected position - 2 can be 0"),
    ("max(f2(x[s], x[argmax(f1(x[t]) for t in range(1, s+1)) + 1]) for s in T)", "at s = T .* can be T\\+1"),
    ("max(f2(x[s], x[argmax(f1(x[t]) for t in range(s-1, T)) + 1]) for s in T)", "below position 1 at s = 1"),
    ("max(f2(x[s], x[argmax(f1(x[t]) for t in range(s, T)) - 1]) for s in T)", "at s = 1 .* can be 0"),
    ("x[argmax(f1(x[t]) for t in range(1, T)) + 100]", "offset 100 is over the limit"),
    ("x[max(f1(x[t]) for t in T) + 1]", "unsupported index"),
    ("x[argmax(f1(x[t]) for t in T) + T]", "unsupported index"),
]


@pytest.mark.parametrize("text, message", REFUSED)
def test_a_shift_that_can_leave_the_sequence_is_refused_in_one_line(text, message):
    with pytest.raises(InvalidSpecError, match=message) as caught:
        parse_target_expr(text)
    assert "\n" not in str(caught.value)
