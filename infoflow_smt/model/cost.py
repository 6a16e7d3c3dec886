"""The cost laws of InfoFlow (model.md section 2), one function per propagation mode, in sympy.

A cost is the exponent ``a`` in a parameter count growing as ``eps^-a``. Every function returns a sympy
expression in ``T`` (``ifs.T``); ``is_bounded`` says whether it stays bounded as ``T`` grows.
"""
from __future__ import annotations

import enum
from functools import lru_cache

import sympy

from infoflow_smt.symbols import T


class DecodeLaw(enum.Enum):
    """The two readings of Theorem 3 found in the sources.

    shared/reference/papers.md section 3.2, ambiguity 3 (outside this repository).
    """

    SEED = "seed"        # O(eps^(1 - T0 d / E)): exponent T0*d/E - 1 (the project's source summary; default)
    SUMMARY = "summary"  # O(eps^(-T0 d / E)):    exponent T0*d/E     (the machine-written summaries)


def as_law(value) -> DecodeLaw:
    """A ``DecodeLaw`` from itself or its name; anything else is an ``InvalidSpecError`` naming the choices."""
    try:
        return DecodeLaw(value)
    except ValueError:
        from infoflow_smt.errors import InvalidSpecError
        choices = ", ".join(repr(law.value) for law in DecodeLaw)
        raise InvalidSpecError(f"decode_law must be one of {choices}, got {value!r}", "decision") from None


# Theorem 1 of paper 1: a max-position retrieval head is built with O(eps^-1) parameters.
RETRIEVAL_EXPONENT = sympy.Integer(1)


def retrieval() -> sympy.Expr:
    """Max-position retrieval (top-1), Theorem 1: exponent 1, independent of ``T``.

    >>> retrieval()
    1
    """
    return RETRIEVAL_EXPONENT


def average() -> sympy.Expr:
    """Global averaging of per-token values (a linear statistic): exponent 1, like a retrieval.

    A uniform-attention head outputs the mean of its value vectors; when the target uses only that mean
    (or the sum, ``T`` times it), no token is decoded from the aggregate and Theorem 3's cost does not
    arise: one head and a fixed number of parameters per value (docs/model.md, section 2).

    >>> average()
    1
    """
    return RETRIEVAL_EXPONENT


def kth_retrieval(k: int, head_dim) -> sympy.Expr:
    """k-th largest retrieval (k >= 2), Theorem 2 of paper 1: exponent ``(T - k - 1) / (n + 1)``.

    ``head_dim`` is the per-head width ``n = E / h``.

    >>> kth_retrieval(2, 8)
    T/9 - 1/3
    """
    if k < 2:
        raise ValueError(f"k-th retrieval needs k >= 2, got k={k}; k = 1 is max-position retrieval")
    return sympy.expand((T - k - 1) / (sympy.sympify(head_dim) + 1))


@lru_cache(maxsize=4096)
def decode(set_size, input_dim: int, width, law: DecodeLaw = DecodeLaw.SEED) -> sympy.Expr:
    """Decoding a set of ``T0 = set_size`` tokens of dimension ``d`` from a state of ``width`` values (Theorem 3).

    Charged by global aggregation (``T0 = T``) and by specific-position aggregation (``T0`` the size of the
    union of the aggregated sets). ``width`` is the aggregating head's own, ``n = E / h`` in a layer of ``h``
    heads (``Architecture.head_dim``; docs/model.md, "One width per head"). A cost never falls under a
    constant: the law is clamped at ``0`` (``clamp``), where ``T0*d < n`` under the default law.

    >>> decode(T, 2, 32)
    T/16 - 1
    >>> decode(T, 2, 2 * T)
    0
    >>> decode(3, 2, 12, DecodeLaw.SUMMARY)
    1/2
    >>> decode(1, 2, 32)
    0
    """
    return clamp(decode_law(set_size, input_dim, width, law))


def decode_law(set_size, input_dim: int, width, law: DecodeLaw = DecodeLaw.SEED) -> sympy.Expr:
    """Theorem 3's law itself, before the clamp at 0: ``T0*d/n - 1`` (or ``T0*d/n``), ``n = width`` the
    head's; ``set_size`` None is T.

    >>> decode_law(1, 2, 32)
    -15/16
    """
    size = T if set_size is None else sympy.sympify(set_size)
    exponent = size * input_dim / sympy.sympify(width)
    return exponent - 1 if DecodeLaw(law) is DecodeLaw.SEED else exponent


def clamp(exponent) -> sympy.Expr:
    """``max(0, exponent)`` for all large ``T``: an exponent is never below 0 (no cost falls under a
    constant). A number is clamped as it is; an expression in ``T`` by its value for large ``T``.

    >>> clamp(sympy.Rational(-15, 16)), clamp(T / 16 - 1), clamp(-1 / (T + 1))
    (0, T/16 - 1, 0)
    """
    return _clamp(sympy.sympify(exponent))


@lru_cache(maxsize=4096)  # the same few exponents come back in every decision
def _clamp(exponent: sympy.Expr) -> sympy.Expr:
    if not exponent.has(T):
        return sympy.Max(exponent, 0)
    tail = sympy.limit(exponent, T, sympy.oo)
    if tail.is_extended_negative or (tail == 0 and sympy.limit(exponent * T, T, sympy.oo).is_extended_negative):
        return sympy.Integer(0)
    return exponent


@lru_cache(maxsize=4096)
def is_bounded(exponent: sympy.Expr) -> bool:
    """Whether ``exponent`` stays bounded as ``T`` grows: the model's definition of *efficient*.

    >>> is_bounded(sympy.Integer(1)), is_bounded(T / 9 - 1), is_bounded(2 * T / (2 * T) - 1)
    (True, False, True)
    """
    exponent = sympy.sympify(exponent)
    if exponent is sympy.oo:
        return False
    if not exponent.has(T):
        return True
    return bool(sympy.limit(exponent, T, sympy.oo).is_finite)


@lru_cache(maxsize=4096)
def asymptotic_key(exponent: sympy.Expr) -> tuple[float, float]:
    """A sort key that orders exponents by their behaviour for large ``T``: slope first, then offset.

    Exponents in this model are at most linear in ``T`` (``oo`` sorts last).

    >>> sorted([T / 9, sympy.Integer(3), T / 16 - 1], key=asymptotic_key)
    [3, T/16 - 1, T/9]
    """
    exponent = sympy.sympify(exponent)
    if exponent is sympy.oo:
        return (float("inf"), float("inf"))
    slope = sympy.limit(exponent / T, T, sympy.oo)
    rest = sympy.limit(exponent - slope * T, T, sympy.oo)
    return (float(slope), float(rest) if rest.is_finite else float("inf"))


def at(exponent: sympy.Expr, seq_len: int | None) -> sympy.Expr:
    """The exponent at a concrete sequence length (unchanged when ``seq_len`` is None)."""
    return sympy.sympify(exponent) if seq_len is None else sympy.sympify(exponent).subs(T, seq_len)
