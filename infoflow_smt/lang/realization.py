"""The concrete meaning of a target's uninterpreted parts, fixed by one integer seed.

A target names parameters (``A1`` in ``bilinear(A1, ., .)``, ``a1`` in ``dot(a1, .)``), uninterpreted
smooth functions (``f1``, ``F0``) and subsets (``S1``). The prover treats them symbolically; to evaluate a
target on numbers (tests, the interpreter, experiments) each gets one fixed random realization, a pure
function of ``(seed, kind, name, shape)``. Random numbers come from ``np.random.default_rng`` seeded by a
BLAKE2 digest of that key: stable across runs, processes and machines (Python's ``hash`` is salted).

>>> r = Realization(seed=0)
>>> r.matrix("A1", 3).shape, bool((r.matrix("A1", 3) == Realization(0).matrix("A1", 3)).all())
((3, 3), True)
>>> r.subset_mask("S1", 8).nonzero()[0] + 1
array([1, 2, 5, 6])
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from infoflow_smt.errors import InvalidSpecError, Problem
from infoflow_smt.lang.expr import AllPositions, Domain, FixedIndex, Range, Subset, VarIndex, domain_variables

_SUBSET = re.compile(r"S([1-9][0-9]*)\Z")


def _fail(message: str) -> InvalidSpecError:
    return InvalidSpecError([Problem(message)], subject="realization")


def _check_size(what: str, value: int, minimum: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise _fail(f"{what} must be an integer >= {minimum}, got {value!r}")


@dataclass(frozen=True)
class SmoothFunction:
    """``f(u) = ||u - center||^2 / m + 0.5 * tanh(weight . u + bias)`` for ``u`` of shape ``(..., m)``.

    Smooth and bounded below; with ``weight ~ N(0, I/m^2)`` the tanh term's curvature (at most
    ``0.385 * |weight|^2``, about ``0.385/m``) is typically below the quadratic's ``2/m``, so ``f`` is
    strictly convex with a single minimizer near ``center``, and its values are non-degenerate (no
    plateaus, ties have probability zero on continuous inputs).
    """

    center: np.ndarray
    weight: np.ndarray
    bias: float

    @property
    def arity(self) -> int:
        return int(self.center.shape[0])

    def __call__(self, u: np.ndarray) -> np.ndarray:
        u = np.asarray(u, dtype=float)
        if u.ndim == 0 or u.shape[-1] != self.arity:
            raise InvalidSpecError([Problem(f"function of {self.arity} inputs applied to shape {u.shape}")],
                                   subject="realization")
        quadratic = np.sum((u - self.center) ** 2, axis=-1) / self.arity
        return quadratic + 0.5 * np.tanh(u @ self.weight + self.bias)

    def minimum(self) -> float | None:
        """The least value of ``f``, by Newton's method from ``center``; None where ``f`` is not shown convex
        (the tanh term's curvature, at most ``0.385 |weight|^2``, not below the quadratic's ``2/m``) or the
        iteration does not settle.

        >>> f = Realization(0).function("f1", 2)
        >>> bool(f.minimum() <= f(np.random.default_rng(0).standard_normal((1000, 2))).min())
        True
        """
        u, m = self.center.astype(float), self.arity
        if 0.385 * float(self.weight @ self.weight) >= 2 / m:  # max of t (1 - t^2) over t in (-1, 1): 0.385
            return None
        for _ in range(100):
            t = np.tanh(u @ self.weight + self.bias)
            grad = 2 * (u - self.center) / m + 0.5 * (1 - t * t) * self.weight
            hessian = 2 * np.eye(m) / m - t * (1 - t * t) * np.outer(self.weight, self.weight)
            step = np.linalg.solve(hessian, grad)
            u = u - step
            if np.abs(step).max() < 1e-14:
                return float(self(u))
        return None


@dataclass(frozen=True)
class Realization:
    """Fixed random parameters, functions and subsets for one seed; every method is deterministic."""

    seed: int = 0

    def _rng(self, kind: str, name: str, *dims: int) -> np.random.Generator:
        key = f"{self.seed}|{kind}|{name}|{','.join(str(int(d)) for d in dims)}".encode()
        return np.random.default_rng(int.from_bytes(hashlib.blake2b(key, digest_size=16).digest(), "little"))

    def matrix(self, name: str, d: int) -> np.ndarray:
        """A ``(d, d)`` matrix with entries ~ N(0, 1/d), as for ``A1`` in ``bilinear(A1, a, b)``.

        >>> Realization(1).matrix("A1", 2).shape
        (2, 2)
        """
        _check_size("dimension d", d)
        return self._rng("matrix", name, d, d).standard_normal((d, d)) / np.sqrt(d)

    def vector(self, name: str, d: int) -> np.ndarray:
        """A ``(d,)`` vector with entries ~ N(0, 1/d), as for ``a1`` in ``dot(a1, x[t])``.

        >>> Realization(1).vector("a1", 4).shape
        (4,)
        """
        _check_size("dimension d", d)
        return self._rng("vector", name, d).standard_normal(d) / np.sqrt(d)

    def function(self, name: str, m: int) -> SmoothFunction:
        """The smooth function ``name`` of ``m`` inputs: maps shape ``(..., m)`` to ``(...)``.

        ``center ~ N(0, I)``, ``weight ~ N(0, I/m^2)``, ``bias ~ N(0, 1)``; see ``SmoothFunction``.

        >>> Realization(0).function("f1", 2)(np.zeros((5, 2))).shape
        (5,)
        """
        _check_size("number of inputs m", m)
        rng = self._rng("function", name, m)
        center = rng.standard_normal(m)
        weight = rng.standard_normal(m) / m
        return SmoothFunction(center, weight, float(rng.standard_normal()))

    def subset_mask(self, name: str, seq_len: int) -> np.ndarray:
        """Membership of positions 1..seq_len in ``S<i>``: t is in S_i iff ``(t - i) % 4 in (0, 1)``.

        Half of the positions (two of every four consecutive), a different half for each ``i mod 4``.
        ``|S_i| >= seq_len / 4`` and S_i is non-empty for every ``seq_len >= 3``; at ``seq_len == 2`` the
        subsets with ``i % 4 == 3`` are empty (positions 1, 2 have residues 2, 3).

        >>> Realization().subset_mask("S2", 5).astype(int)
        array([0, 1, 1, 0, 0])
        """
        match = _SUBSET.match(name) if isinstance(name, str) else None
        if match is None:
            raise _fail(f"subset names are S1, S2, ...; got {name!r}")
        _check_size("seq_len", seq_len)
        t = np.arange(1, seq_len + 1)
        return np.isin((t - int(match.group(1))) % 4, (0, 1))

    def domain_positions(self, domain: Domain, seq_len: int, env: Mapping[str, int] | None = None) -> np.ndarray:
        """The 1-based positions a domain ranges over at ``seq_len``, ascending (may be empty for ranges).

        ``Range`` is half-open, ``[start, stop)`` after resolving T-relative bounds, clipped to 1..seq_len.
        A bound on an index variable (``range(1, s)``) reads its position from ``env``.

        >>> from infoflow_smt.lang.expr import FixedIndex, VarIndex
        >>> Realization().domain_positions(Range(FixedIndex(2), FixedIndex(0, True)), 5)
        array([2, 3, 4])
        >>> Realization().domain_positions(Range(FixedIndex(1), VarIndex("s")), 5, {"s": 3})
        array([1, 2])
        """
        _check_size("seq_len", seq_len)
        if domain_variables(domain):
            missing = sorted(domain_variables(domain) - set(env or {}))
            if missing:
                raise _fail(f"the range's bound reads {', '.join(missing)}, which is not bound")
            start = max(bound_position(domain.start, seq_len, env), 1)
            stop = min(bound_position(domain.stop, seq_len, env), seq_len + 1)
            return np.arange(start, max(start, stop))
        if isinstance(domain, AllPositions):
            return np.arange(1, seq_len + 1)
        if isinstance(domain, Subset):
            return np.flatnonzero(self.subset_mask(domain.name, seq_len)) + 1
        if isinstance(domain, Range):
            start = max(domain.start.resolve(seq_len), 1)
            stop = min(domain.stop.resolve(seq_len), seq_len + 1)
            return np.arange(start, max(start, stop))
        raise InvalidSpecError([Problem(f"not a domain: {domain!r}")], subject="realization")


def bound_position(bound, seq_len: int, env: Mapping | None = None):
    """The position a range bound names: fixed, T-relative, or an index variable's position (from ``env``,
    an integer or an array of them) plus a constant."""
    if isinstance(bound, FixedIndex):
        return bound.resolve(seq_len)
    return env[bound.name] + (0 if isinstance(bound, VarIndex) else bound.offset)
