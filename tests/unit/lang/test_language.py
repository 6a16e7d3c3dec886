"""The target language: what parses, what it means structurally, what is refused (and where), round trips."""
from __future__ import annotations

import ast
import builtins

import pytest
from hypothesis import HealthCheck, given, settings
from support.strategies import arithmetic_exprs, targets

from infoflow_smt.errors import InvalidSpecError
from infoflow_smt.lang.expr import (
    AllPositions,
    Binding,
    BinOp,
    Call,
    Content,
    FixedIndex,
    Num,
    OffsetIndex,
    Param,
    Range,
    Reduce,
    ReduceKind,
    Subset,
    VarIndex,
)
from infoflow_smt.lang.language import domain_to_text, parse_target_expr, to_text

# Texts that must parse, and are already canonical.
EXAMPLES = [
    "min(dot(x[s], x[t]) for s in T for t in T)",
    ("max(bilinear(A1, x[s], x[t]) for s in T for t in T)"
     " + max(bilinear(A2, x[s], x[t]) for s in T for t in T)"),
    "min(norm(x[a] + x[b] + x[c])**2 for a in T for b in T for c in T)",
    "F0(min(f1(x[t]) for t in S1), min(f2(x[t]) for t in S2))",
    "kth_largest(2, f1(x[t]) for t in T)",
    "x[1] + x[2] + x[3]",
    "x[argmax(dot(x[s-1], x[T]) for s in T)]",
    "max(dot(a1, x[t]) for t in T) + max(dot(a2, x[t]) for t in T)",
    "sum(x[t] for t in range(2, T+1))",
    "mean(f1(x[t-1], x[t]) for t in range(2, T))",
    "argmin(f1(x[t]) for t in S3) / 2",
    "min(max(g(x[s], x[t]) for t in T) for s in T)",
    "x[T-1] - sum(x[t+2] for t in range(1, T-1))",
    "-x[1]**2",
    "(-x[1])**2",
    "2**-dot(x[1], x[2])",
    "dot(x[1], x[1])**0.5 * 1e-05",
    "max(x[t] for t in T) + min(x[t] for t in T)",   # scalar tokens: decide and evaluate check d = 1
]


@pytest.mark.parametrize("text", EXAMPLES)
def test_examples_parse_and_are_canonical(text):
    expr = parse_target_expr(text)
    assert to_text(expr) == text
    assert parse_target_expr(to_text(expr)) == expr


def test_structure_of_a_joint_reduction():
    assert parse_target_expr("min(dot(x[s], x[t]) for s in T for t in T)") == Reduce(
        ReduceKind.MIN,
        Call("dot", (Content(VarIndex("s")), Content(VarIndex("t")))),
        (Binding("s", AllPositions()), Binding("t", AllPositions())),
    )


def test_structure_of_indices_and_domains():
    expr = parse_target_expr("x[argmax(dot(x[s-1], x[T-2]) for s in range(2, T+1))]")
    assert expr == Content(Reduce(
        ReduceKind.ARGMAX,
        Call("dot", (Content(OffsetIndex("s", -1)), Content(FixedIndex(2, True)))),
        (Binding("s", Range(FixedIndex(2), FixedIndex(-1, True))),),
    ))
    kth = parse_target_expr("kth_largest(3, f1(x[t+1]) for t in S2)")
    assert kth == Reduce(ReduceKind.KTH_LARGEST, Call("f1", (Content(OffsetIndex("t", 1)),)),
                         (Binding("t", Subset("S2")),), k=3)
    assert parse_target_expr("bilinear(A1, x[1], x[T])").args[0] == Param("A1")
    assert parse_target_expr("x[2] * 3") == BinOp("*", Content(FixedIndex(2)), Num(3.0))


@pytest.mark.parametrize("text, canonical", [
    ("min( dot(x[s],x[t]) for s in T for t in T )", "min(dot(x[s], x[t]) for s in T for t in T)"),
    ("(x[1] + x[2]) + x[3]", "x[1] + x[2] + x[3]"),
    ("x[1] + (x[2] + x[3])", "x[1] + (x[2] + x[3])"),
    ("x[1] - (x[2] - x[3])", "x[1] - (x[2] - x[3])"),
    ("(x[1] ** x[2]) ** x[3]", "(x[1]**x[2])**x[3]"),
    ("x[1] ** (x[2] ** x[3])", "x[1]**x[2]**x[3]"),
    ("-(x[1] ** 2)", "-x[1]**2"),
    ("(-x[1]) ** 2", "(-x[1])**2"),
    ("- - x[1]", "-(-x[1])"),
    ("+x[1]", "x[1]"),
    ("2.0 * x[1]", "2 * x[1]"),
    ("x[1] / (x[2] * x[3])", "x[1] / (x[2] * x[3])"),
    ("(x[1] * x[2]) / x[3]", "x[1] * x[2] / x[3]"),
    ("kth_largest(2, (f1(x[t]) for t in T))", "kth_largest(2, f1(x[t]) for t in T)"),
    ("  x[1]", "x[1]"),
])
def test_canonical_text(text, canonical):
    assert to_text(parse_target_expr(text)) == canonical


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(targets())
def test_round_trip_on_generated_targets(text):
    expr = parse_target_expr(text)
    canonical = to_text(expr)
    assert parse_target_expr(canonical) == expr
    assert to_text(parse_target_expr(canonical)) == canonical


@settings(max_examples=300, deadline=None)
@given(arithmetic_exprs())
def test_printer_parentheses_round_trip(expr):
    assert parse_target_expr(to_text(expr)) == expr


def test_numbers_print_as_ints_when_integral():
    assert to_text(Num(2.0)) == "2"
    assert to_text(Num(0.25)) == "0.25"
    assert to_text(Num(-2.0)) == "-2"  # hand-built; the parser itself reads -2 as Neg(Num(2))
    with pytest.raises(InvalidSpecError, match="non-finite"):
        to_text(Num(float("inf")))


def test_domain_text():
    assert domain_to_text(Range(FixedIndex(1), FixedIndex(1, True))) == "range(1, T-1)"


# ---- errors ----------------------------------------------------------------------------------------
ERRORS = [
    ("", "empty target text"),
    ("   ", "empty target text"),
    ("min(x[t] for t in T", "syntax error"),
    ("x[t]", "unbound index variable 't'"),
    ("x", "'x' cannot be used as a value"),
    ("x.shape", "attribute access"),
    ("lambda: 1", "lambda"),
    ("[c for c in T]", "list comprehension"),
    ("{1: 2}", "dict"),
    ("{1}", "set"),
    ("[1]", "list"),
    ("'abc'", "unsupported literal 'abc'"),
    ("f'{x}'", "f-string"),
    ("a < b", "comparison"),
    ("a and b", "boolean operator"),
    ("a if b else c", "if-expression"),
    ("f1(*a)", "starred"),
    ("f1(x[1], k=2)", "keyword arguments"),
    ("(y := 1)", "assignment expression"),
    ("x[1] // 2", "operator //"),
    ("x[1] ^ 2", r"for powers write \*\*"),
    ("not a", "unary operator not"),
    ("min(f1(x[t]) for t in something_else)", "unsupported domain"),
    ("min(f1(x[t]) for t in range(0, T))", "unsupported range bound"),
    ("min(f1(x[t]) for t in T if t)", "'if' filters"),
    ("min(f1(x[t]) for (t, s) in T)", "binds one index variable"),
    ("f1(x[t] for t in T)", "generator expression outside"),
    ("min(f1(x[t]) for t in T for t in T)", "bound twice in one reduction"),
    ("min(max(f1(x[t]) for t in T) for t in T)", "already bound by an enclosing reduction"),
    ("dot(t, x[1]) + max(f1(x[t]) for t in T)", "'t' is used both as an index variable and as a parameter"),
    ("max(f1(x[t]) for t in T) + t(x[1])", "'t' is used both"),
    ("max(f1(x[t], t) for t in T)", "index variable 't' used as a value"),
    ("kth_largest(0, f1(x[t]) for t in T)", "k of kth_largest must be an integer literal >= 1, got 0"),
    ("kth_largest(1.5, f1(x[t]) for t in T)", "got 1.5"),
    ("kth_largest(k, f1(x[t]) for t in T)", "got k"),
    ("kth_largest(1, f1(x[s], x[t]) for s in T for t in T)", "kth_largest takes exactly one 'for' clause"),
    ("kth_largest(f1(x[t]) for t in T)", r"kth_largest takes one generator expression"),
    ("argmax(f1(x[s], x[t]) for s in T for t in T)", "argmax takes exactly one 'for' clause"),
    ("min(f1(x[1]), f1(x[2]))", "min takes one generator expression"),
    ("dot(x[1])", "dot takes 2 arguments, got 1"),
    ("norm(x[1], x[2])", "norm takes 1 argument, got 2"),
    ("bilinear(A1, x[1])", "bilinear takes 3 arguments, got 2"),
    ("bilinear(x[1], x[2], x[3])", "first argument of bilinear must be a matrix name"),
    ("dot(1, x[1])", "argument 1 of dot must be a vector"),
    ("f1()", "needs at least one argument"),
    ("x[0]", "positions are 1-based"),
    ("x[T+1]", r"position T \+ 1 is not inside the sequence"),
    ("x[min(f1(x[t]) for t in T)]", r"only argmin\(...\)/argmax\(...\) can index x"),
    ("x[1:2]", "unsupported index"),
    ("y[1]", "only x can be indexed"),
    ("range(1, T)", "only allowed as a domain"),
    ("abs(x[1])", r"'abs' is not smooth \(not differentiable at 0\)"),
    ("exp(dot(x[1], x[2]))", "'exp' is reserved: it is a particular smooth function"),
    ("S1 + 1", "subset S1 cannot be used as a value"),
    ("T * 2", "'T' cannot be used as a value"),
    ("_secret", "names starting with '_'"),
    ("a1", "parameter 'a1' can only be an argument of dot"),
    ("dot(-a1, x[1]) + f1(b2)", "parameter 'a1' can only.*parameter 'b2' can only"),
    ("max(f1(x[_t]) for _t in T)", "names starting with '_'"),
    ("1e999", "not finite"),
    ("a.b(1)", "only named functions can be called"),
]


@pytest.mark.parametrize("text, message", ERRORS)
def test_documented_errors(text, message):
    with pytest.raises(InvalidSpecError, match=message) as caught:
        parse_target_expr(text)
    assert caught.value.subject == "target"


def test_non_string_input_names_its_type():
    with pytest.raises(InvalidSpecError, match="must be a str, got int"):
        parse_target_expr(42)


def test_all_problems_are_listed_at_once_with_columns():
    text = "x[t] + x[u] + kth_largest(0, f1(x[s]) for s in T) + abs(x[1])"
    with pytest.raises(InvalidSpecError) as caught:
        parse_target_expr(text)
    problems = caught.value.problems
    assert len(problems) == 4
    assert [p.position for p in problems] == [text.index("t]") + 1, text.index("u]") + 1,
                                              text.index("0,") + 1, text.index("abs") + 1]
    assert "'t'" in str(caught.value) and "'u'" in str(caught.value)


def test_columns_count_from_the_users_text():
    # leading whitespace is stripped and kth_largest generators are parenthesized before ast.parse;
    # reported columns still point into the original text
    text = "   kth_largest(2, f1(x[t]) for t in T) + kth_largest(1, f1(x[s]) for s in T) + x[v]"
    with pytest.raises(InvalidSpecError) as caught:
        parse_target_expr(text)
    assert [p.position for p in caught.value.problems] == [text.index("v]") + 1]


def test_syntax_error_position():
    with pytest.raises(InvalidSpecError, match="syntax error") as caught:
        parse_target_expr("x[1] + + * x[2]")
    assert caught.value.problems[0].position is not None


INJECTIONS = [
    "__import__('os').system('touch {path}')",
    "open('{path}', 'w').write('x')",
    "().__class__.__bases__[0].__subclasses__()",
    "(lambda: __import__('os').system('touch {path}'))()",
    "[c for c in ().__class__.__mro__]",
    "eval(\"open('{path}', 'w')\")",
    "exec(\"open('{path}', 'w')\")",
    "getattr(__builtins__, 'open')('{path}', 'w')",
    "min(open('{path}', 'w') for t in T)",
    "kth_largest(1, __import__('os').system('touch {path}') for t in T)",
]


@pytest.mark.parametrize("template", INJECTIONS)
def test_injection_is_rejected_and_never_run(template, tmp_path, monkeypatch):
    target = tmp_path / "pwned"
    text = template.format(path=target)
    imported = []
    real_import = builtins.__import__

    def spy(name, *args, **kwargs):
        imported.append(name)
        return real_import(name, *args, **kwargs)

    def refuse(*args, **kwargs):
        raise AssertionError("the parser must never run code")

    real_compile = builtins.compile

    def only_ast(source, filename, mode, flags=0, *args, **kwargs):
        # ast.parse compiles to a syntax tree only; bytecode would be a step towards running the text
        if not flags & ast.PyCF_ONLY_AST:
            raise AssertionError("the parser must never compile the text to bytecode")
        return real_compile(source, filename, mode, flags, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", spy)
    monkeypatch.setattr(builtins, "eval", refuse)
    monkeypatch.setattr(builtins, "exec", refuse)
    monkeypatch.setattr(builtins, "compile", only_ast)
    with pytest.raises(InvalidSpecError):
        parse_target_expr(text)
    assert not target.exists()
    assert not {"os", "subprocess"} & set(imported)


def test_absurd_nesting_is_an_input_error():
    with pytest.raises(InvalidSpecError):
        parse_target_expr("(" * 500 + "1" + ")" * 500)
    with pytest.raises(InvalidSpecError):
        parse_target_expr("-" * 20000 + "1")
    # Python's own parser or the depth limit refuses it first, depending on the stack left to the caller
    with pytest.raises(InvalidSpecError, match="nested too deeply|operations deep, over the limit"):
        parse_target_expr("1+" * 5000 + "1")


# ---- ranges bounded by an index variable -------------------------------------------------------------
@pytest.mark.parametrize("text, stop", [
    ("min(dot(x[s], x[t]) for s in T for t in range(1, s))", VarIndex("s")),
    ("min(dot(x[s], x[t]) for s in T for t in range(1, s+1))", OffsetIndex("s", 1)),
    ("sum(max(f1(x[t]) for t in range(1, s-2)) for s in T)", OffsetIndex("s", -2)),
])
def test_a_range_may_be_bounded_by_an_enclosing_variable(text, stop):
    e = parse_target_expr(text)
    inner = e.bindings[1] if len(e.bindings) == 2 else e.body.bindings[0]
    assert inner.domain == Range(FixedIndex(1), stop)
    assert parse_target_expr(to_text(e)) == e


def test_a_range_may_start_at_a_variable():
    e = parse_target_expr("max(dot(x[s], x[t]) for s in T for t in range(s+1, T+1))")
    assert e.bindings[1].domain == Range(OffsetIndex("s", 1), FixedIndex(-1, True))
    assert domain_to_text(e.bindings[1].domain) == "range(s+1, T+1)"


@pytest.mark.parametrize("text, message", [
    ("min(dot(x[s], x[t]) for t in range(1, s) for s in T)", "range bound 's' is not an index variable bound"),
    ("min(f1(x[t]) for t in range(1, t))", "range bound 't' is not an index variable bound"),
    ("min(f1(x[t]) for t in range(1, u + 1))", "'u' is not an index variable bound"),
    ("sum(dot(x[s], x[t]) for s in T for t in range(1, s))", "supported in a joint min/max only"),
    ("min(f1(x[t]) for t in range(1, 2 * s))", "unsupported range bound"),
])
def test_a_bad_bound_is_refused_in_one_line(text, message):
    with pytest.raises(InvalidSpecError, match=message) as caught:
        parse_target_expr(text)
    assert "\n" not in str(caught.value)


# ---- the answering position o ---------------------------------------------------------------------------
def test_o_is_the_answering_position_and_no_reduction_binds_it():
    from infoflow_smt.lang.expr import answers_everywhere
    assert answers_everywhere(parse_target_expr("max(F0(x[o], x[t]) for t in T)"))
    assert answers_everywhere(parse_target_expr("x[o-1]"))
    assert not answers_everywhere(parse_target_expr("max(F0(x[T], x[t]) for t in T)"))
    with pytest.raises(InvalidSpecError, match="names the answering position .* cannot be bound by a reduction"):
        parse_target_expr("max(f1(x[o]) for o in T)")
    with pytest.raises(InvalidSpecError, match="used as a value; write x\\[o\\]"):
        parse_target_expr("f1(o)")


# ---- names that mean a function of their own (lang/refused_names.py) ------------------------------------------
NOT_SMOOTH = ["sign", "step", "floor", "ceil", "round", "mod", "heaviside", "abs", "trunc", "frac", "argsort",
              "clip", "where", "relu", "sqrt", "log", "int", "Floor"]
SMOOTH_BUT_PARTICULAR = {"exp": r"exp\(a \+ b\) = exp\(a\) \* exp\(b\)", "sin": r"sin\(a \+ b\)",
                         "cos": r"cos\(a \+ b\)", "tanh": r"tanh\(a \+ b\)", "sigmoid": r"sigmoid\(a\) \+ sigmoid",
                         "gelu": "obeys identities a generic one does not"}


@pytest.mark.parametrize("name", NOT_SMOOTH)
def test_a_function_that_is_not_smooth_is_refused_and_says_why(name):
    """Read as an uninterpreted smooth function, ``sign`` would be another target, and the verdict a false
    "yes" (``max(sign(x[t]) for t in T)`` was FEASIBLE)."""
    with pytest.raises(InvalidSpecError, match=rf"'{name}' is not smooth \(.+\): the model's uninterpreted "
                                               "functions are smooth, and a smooth surrogate would be a different"):
        parse_target_expr(f"max({name}(x[t]) for t in T)")


@pytest.mark.parametrize("name, identity", SMOOTH_BUT_PARTICULAR.items())
def test_a_particular_smooth_function_is_reserved_and_says_why(name, identity):
    with pytest.raises(InvalidSpecError, match=rf"'{name}' is reserved: it is a particular smooth function, and "
                                               rf"the model's verdicts hold for generic .*{identity}.*such as f1"):
        parse_target_expr(f"max({name}(f1(x[t])) for t in T)")


@pytest.mark.parametrize("text, message", [
    ("max(softmax(x[t]) for t in T)", "'softmax' is reserved: it is what an attention head computes"),
    ("max(pow(f1(x[t]), 2) for t in T)", r"'pow' is reserved: write a power as a \*\* b"),
    ("max(len(x[t]) for t in T)", "'len' is reserved: a Python builtin"),
    ("max(f1(x[1]), f1(x[2]))", r"max\(a, b\) of values is not smooth .*max takes one generator expression"),
    ("min(f1(x[1]), f1(x[2]), f1(x[3]))", r"min\(a, b\) of values is not smooth"),
    ("dot(exp, x[1])", "'exp' is reserved and cannot be used as a value"),
])
def test_other_refused_names_say_why(text, message):
    with pytest.raises(InvalidSpecError, match=message):
        parse_target_expr(text)


def test_a_name_like_a_refused_one_is_still_an_uninterpreted_function():
    assert parse_target_expr("max(signal(x[t]) + F0(x[t]) + step2(x[t]) for t in T)") is not None


def test_the_cli_refuses_a_name_that_is_not_smooth_in_one_line_with_exit_2():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "infoflow_smt", "decide", "max(sign(x[t]) for t in T)",
                           "--heads", "1"], capture_output=True, text=True, check=False)
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and "'sign' is not smooth (discontinuous at 0)" in done.stderr
