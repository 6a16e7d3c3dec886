"""Hypothesis strategies for target texts and expressions, shared by the test modules.

``targets(max_depth)`` draws valid target *texts*: joint and nested min/max/argmin/argmax/kth_largest/
sum/mean over T, S1, S2 and ranges; dot, bilinear, norm, f1, f2, F0; fixed positions x[1], x[2], x[T],
x[T-1]; offsets x[v-1]/x[v+1] only for variables whose range keeps them inside the sequence; random
redundant or missing parentheses. Every drawn text evaluates for any ``T >= 4`` (domains have at least
two positions there, and ``kth_largest`` uses k <= 2) to a finite value for finite inputs (division
only by positive literals, integer powers only).

``arithmetic_exprs()`` draws ``Expr`` trees of + - * / ** and unary minus directly, to test the printer's
parentheses without going through text.
"""
from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

from infoflow_smt.lang.expr import BinOp, Call, Content, FixedIndex, Neg, Num, Param

VARIABLES = ("s", "t", "u", "v", "w", "i", "j")
# domain text -> (may the variable be read as x[v-1], as x[v+1])
DOMAINS = {
    "T": (False, False), "S1": (False, False), "S2": (False, False),
    "range(2, T+1)": (True, False), "range(1, T)": (False, True), "range(2, T)": (True, True),
}
NUMBERS = ("0", "1", "2", "3", "0.5", "1.5", "2.25", "0.001")


@dataclass(frozen=True)
class _Scope:
    """Index variables in scope, with the offsets their domains allow."""

    variables: tuple[tuple[str, bool, bool], ...] = ()

    def names(self) -> tuple[str, ...]:
        return tuple(v for v, _, _ in self.variables)


def _paren(draw, text: str) -> str:
    return f"({text})" if draw(st.booleans()) else text


def _fresh(draw, scope: _Scope, count: int) -> list[tuple[str, str]]:
    free = [v for v in VARIABLES if v not in scope.names()]
    names = draw(st.lists(st.sampled_from(free), min_size=count, max_size=count, unique=True))
    return [(name, draw(st.sampled_from(sorted(DOMAINS)))) for name in names]


def _clauses(bindings: list[tuple[str, str]]) -> str:
    return " ".join(f"for {v} in {d}" for v, d in bindings)


def _inner(scope: _Scope, bindings: list[tuple[str, str]]) -> _Scope:
    return _Scope(scope.variables + tuple((v, *DOMAINS[d]) for v, d in bindings))


def _vector(draw, scope: _Scope, depth: int, ops: int) -> str:
    leaves = ["x[1]", "x[2]", "x[T]", "x[T-1]"]
    for name, minus, plus in scope.variables:
        leaves += [f"x[{name}]"] * 3 + [f"x[{name}-1]"] * minus + [f"x[{name}+1]"] * plus
    choices = ["leaf"] * 3 + ["add", "scale", "neg"] * (ops > 0) + ["argmax", "sum"] * (depth > 0)
    vector = lambda: _paren(draw, _vector(draw, scope, depth, ops - 1))
    choice = draw(st.sampled_from(choices))
    if choice == "leaf":
        return draw(st.sampled_from(leaves))
    if choice == "add":
        op = draw(st.sampled_from(["+", "-"]))
        return f"{vector()} {op} {vector()}"
    if choice == "scale":
        return f"{_paren(draw, _scalar(draw, scope, depth, ops - 1))} * {vector()}"
    if choice == "neg":
        return f"-({_vector(draw, scope, depth, ops - 1)})"
    if choice == "argmax":
        bindings = _fresh(draw, scope, 1)
        body = _scalar(draw, _inner(scope, bindings), depth - 1, 2)
        return f"x[{draw(st.sampled_from(['argmax', 'argmin']))}({body} {_clauses(bindings)})]"
    bindings = _fresh(draw, scope, draw(st.integers(1, 2)))
    body = _vector(draw, _inner(scope, bindings), depth - 1, 2)
    return f"{draw(st.sampled_from(['sum', 'mean']))}({body} {_clauses(bindings)})"


def _scalar(draw, scope: _Scope, depth: int, ops: int) -> str:
    choices = ["number", "dot", "norm", "bilinear", "f"] + ["arith", "neg", "power", "F0"] * (ops > 0)
    choices += ["reduce", "reduce", "select", "kth"] if depth > 0 else []
    choice = draw(st.sampled_from(choices))
    vector = lambda: _vector(draw, scope, depth, max(ops - 1, 0))
    scalar = lambda: _paren(draw, _scalar(draw, scope, depth, ops - 1))
    if choice == "number":
        return draw(st.sampled_from(NUMBERS))
    if choice == "dot":  # a parameter vector may only be a direct argument of dot
        first = draw(st.sampled_from(["a1", "a2"])) if draw(st.booleans()) else vector()
        return f"dot({first}, {vector()})"
    if choice == "norm":
        return f"norm({vector()})"
    if choice == "bilinear":
        return f"bilinear({draw(st.sampled_from(['A1', 'A2']))}, {vector()}, {vector()})"
    if choice == "f":
        return f"f1({vector()})" if draw(st.booleans()) else f"f2({vector()}, {_scalar(draw, scope, 0, 0)})"
    if choice == "arith":
        if draw(st.integers(0, 3)) == 0:  # divide only by a positive literal, so values stay finite
            return f"{scalar()} / {draw(st.sampled_from(['2', '0.5', '1.5', '3']))}"
        return f"{scalar()} {draw(st.sampled_from(['+', '-', '*']))} {scalar()}"
    if choice == "neg":
        return f"-{scalar()}"
    if choice == "power":
        return f"({_scalar(draw, scope, depth, ops - 1)})**{draw(st.sampled_from(['2', '3']))}"
    if choice == "F0":
        return f"F0({_scalar(draw, scope, depth, ops - 1)}, {_scalar(draw, scope, depth, ops - 1)})"
    if choice == "reduce":
        bindings = _fresh(draw, scope, draw(st.integers(1, 3 if depth == 1 else 2)))
        kind = draw(st.sampled_from(["min", "max", "sum", "mean"]))
    else:
        bindings = _fresh(draw, scope, 1)
        kind = draw(st.sampled_from(["argmin", "argmax"])) if choice == "select" else None
    body = _scalar(draw, _inner(scope, bindings), depth - 1, 2)
    if kind is None:
        return f"kth_largest({draw(st.sampled_from(['1', '2']))}, {body} {_clauses(bindings)})"
    return f"{kind}({body} {_clauses(bindings)})"


@st.composite
def targets(draw, max_depth: int = 2) -> str:
    """A valid scalar target text with at most ``max_depth`` nested reductions."""
    return _scalar(draw, _Scope(), max_depth, 2)


_ATOMS = st.one_of(
    st.sampled_from([0.0, 1.0, 2.0, 3.0, 0.5, 1e-3, 2.5e20]).map(Num),
    st.sampled_from([Content(FixedIndex(1)), Content(FixedIndex(0, True)), Content(FixedIndex(2, True))]),
    st.sampled_from([Call("dot", (Param("a1"), Content(FixedIndex(1)))),
                     Call("f1", (Content(FixedIndex(3)),))]),
)


def arithmetic_exprs() -> st.SearchStrategy:
    """Trees of BinOp (+ - * / **) and Neg over non-negative numbers, contents and calls."""
    return st.recursive(
        _ATOMS,
        lambda sub: st.one_of(
            st.builds(Neg, sub),
            st.builds(BinOp, st.sampled_from(["+", "-", "*", "/", "**"]), sub, sub),
        ),
        max_leaves=8,
    )


__all__ = ["DOMAINS", "VARIABLES", "arithmetic_exprs", "targets"]
