"""Named sub-expressions: ``p = E; ...; target`` parses as the target with every name written out, is refused in
one line per problem where a name cannot stand for its expression, and ``to_named_text`` prints a target back
with its nested selections named, in text that parses to the same expression."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from support.strategies import targets

from infoflow_smt import catalogue, parse_target
from infoflow_smt.errors import InvalidSpecError
from infoflow_smt.lang.language import parse_target_expr, to_named_text, to_text


def chain(k: int) -> str:
    text = "x[T]"
    for hop in range(1, k + 1):
        text = f"x[argmax(dot(x[t{hop}-1], {text}) for t{hop} in range(2, T+1))]"
    return text


@pytest.mark.parametrize(("named", "written_out"), [
    ("p = argmax(dot(x[t-1], x[T]) for t in range(2, T+1)); x[p]", "x[argmax(dot(x[t-1], x[T]) for t in range(2, T+1))]"),
    (("p1 = argmax(dot(x[t1-1], x[T]) for t1 in range(2, T+1))\np2 = argmax(dot(x[t2-1], x[p1]) for t2 in range(2, T+1))\n"
     "x[p2]"), chain(2)),
    ("m = max(f1(x[t]) for t in T); m * 2 + m", "max(f1(x[t]) for t in T) * 2 + max(f1(x[t]) for t in T)"),
    ("q = x[T]; max(dot(q, x[t]) for t in T)", "max(dot(x[T], x[t]) for t in T)"),
    # the token after a named winner is the shifted selection, as x[argmax(...) + 1] is
    ("p = argmax(dot(x[t], x[T]) for t in range(1, T)); x[p + 1]", "x[argmax(dot(x[t], x[T]) for t in range(1, T)) + 1]"),
    # a definition's own variable that the place it is used binds is renamed there (t -> t2)
    ("a = argmax(f1(x[t]) for t in T); max(dot(x[a], x[t]) for t in T)",
     "max(dot(x[argmax(f1(x[t2]) for t2 in T)], x[t]) for t in T)"),
    ("a = max(F0(x[o], x[t]) for t in T); a", "max(F0(x[o], x[t]) for t in T)"),   # o is every position's own
])
def test_a_name_stands_for_its_expression(named, written_out):
    assert parse_target_expr(named) == parse_target_expr(written_out)


@pytest.mark.parametrize(("text", "message"), [
    ("p = max(f1(x[t]) for t in T); x[p]", "'p' names a value, not a position"),
    ("a = 1; b = 2; a", "'b' is defined but never used"),
    ("a = 1", "the text ends with a definition"),
    ("x = 1; x[1]", "'x' cannot be used as a name for an expression"),
    ("o = 1; o", "name 'o' names the answering position"),
    ("max = 1; max", "'max' is reserved"),
    ("p = max(f1(x[s]) for t in T); p", "unbound index variable 's'"),          # a definition reads only its own
    ("a = b = 1; a", "a definition names one expression"),
    ("a = max(f1(x[t]) for t in T); a(x[1])", "'a' names an expression defined before and cannot be used as a function"),
    ("a = 1; max(f1(x[a]) for a in T)", "cannot be used as an index variable"),
    ("a = 1; a = 2; a", "'a' names an expression defined before"),
    ("import os; 1", "syntax error"),                                            # statements: definitions only
    ("a = 1; print(a); a", "only the last line is the target"),
])
def test_a_name_that_cannot_stand_for_its_expression_is_refused(text, message):
    with pytest.raises(InvalidSpecError, match=message):
        parse_target_expr(text)


def test_names_that_double_at_every_link_are_refused_before_anything_is_built():
    links = "\n".join(f"a{i} = a{i - 1} + a{i - 1}" for i in range(1, 40))
    with pytest.raises(InvalidSpecError, match="with its names written out has about .* characters, over the limit"):
        parse_target_expr(f"a0 = max(f1(x[t]) for t in T)\n{links}\na39")


def test_a_chain_of_names_past_the_nesting_limit_is_refused():
    hops = "\n".join(f"p{i} = argmax(dot(x[t-1], x[p{i - 1}]) for t in range(2, T+1))" for i in range(1, 34))
    with pytest.raises(InvalidSpecError, match="over the limit of"):
        parse_target_expr(f"p0 = argmax(dot(x[t-1], x[T]) for t in range(2, T+1))\n{hops}\nx[p33]")


@pytest.mark.parametrize("k", [1, 2, 8, 32])
def test_a_chain_prints_back_with_each_hop_named_once(k):
    expr = parse_target_expr(chain(k))
    named = to_named_text(expr)
    assert parse_target_expr(named) == expr
    assert named.count("argmax") == k and len(named) < 65 * k   # linear: each hop once
    assert (named == to_text(expr)) == (k == 1)                 # nothing nested, nothing named


def test_names_avoid_the_names_a_target_uses():
    expr = parse_target_expr("x[argmax(dot(p1, x[argmax(f1(x[t]) for t in T)]) + f2(x[u]) for u in T)]")
    named = to_named_text(expr)
    assert named.startswith("q1 = ") and parse_target_expr(named) == expr


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(targets(max_depth=3))
def test_every_target_prints_back_named_as_itself(text):
    expr = parse_target_expr(text)
    assert parse_target_expr(to_named_text(expr)) == expr


@pytest.mark.parametrize("spec", ["k_hop_induction:k=3", "k_hop_induction:k=16", "induction_head", "max_over_pairs"])
def test_the_named_definitions_of_a_tree_read_back_as_the_same_function(spec):
    from infoflow_smt.lang.node_text import named_target
    target = catalogue.parse_spec(spec)
    named = named_target(target)
    if named is None:   # nothing nested: the target is shown whole
        assert "p1" not in str(target)
        return
    output, definitions = named
    text = "; ".join([*(f"{n} = {t}" for n, t, hosted in definitions if not hosted), output])
    assert parse_target(text).normal_form == target.normal_form


def test_thousands_of_definitions_are_read_in_one_pass():
    """Each definition's size is read off its position (not by cutting its text out of the whole): 2,500
    definitions, each unused, are refused with every one named."""
    text = ";".join(f"a{i}=1" for i in range(2500)) + ";1"
    with pytest.raises(InvalidSpecError, match="'a2499' is defined but never used"):
        parse_target_expr(text)
