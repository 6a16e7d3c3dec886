"""The rank of a selection's score: how many dimensions a head's query and key need to compute it.

A retrieval head ranks candidates ``t`` for a selector ``s`` by ``<W_Q h_s, W_K h_t>``: a head of width ``n``
computes the scores ``sum_{k <= n} phi_k(s) psi_k(t)`` of functions of what the two positions hold, so the
fewest such products that make a score, its rank as a bilinear form between the two sides, is the width it
needs (docs/model.md, "Head width and rank"). The rank is computed exactly, in three steps:

1. **Expansion.** The score's additive terms are expanded into one polynomial whose variables, the *atoms*,
   are each held by a side: the coordinates of a vector (a token ``x[s]``, ``x[t-1]``, a fixed position's
   ``x[T]``, a token another selection chose, a sum or mean of tokens) and opaque scalars (a smooth function
   of what a side holds, ``f1(x[s])``, ``f2(x[t], x[t-1])``; a ``norm``; a quotient by, or a fractional
   power of, what is not a constant; the value of another selection or aggregate). ``dot``, ``bilinear`` and
   ``+ - * / **`` are expanded over coordinates. The matrix of ``bilinear(A, ., .)``, the vector of
   ``dot(a1, .)`` and an opaque scalar that reads no side are fixed random numbers: the realization draws
   them at random, so they are generic (``A`` of full rank, no coincidence among them).
2. **Sides.** Each monomial is a selector monomial times a candidate monomial. One without a candidate atom
   shifts every candidate's score alike, which softmax ignores: it counts nothing. An opaque atom that
   reads both sides (``f2(x[s], x[t])``, ``f1(x[s] + x[t])``, ``norm(x[s] - x[t])``) left in the score makes
   it no bilinear form of bounded rank: ``None``.
3. **Rank.** The coefficients make a matrix, selector monomials by candidate monomials. Distinct monomials in
   distinct atoms are linearly independent functions (an uninterpreted smooth function obeys no polynomial
   identity with the coordinates), so the score's rank is that matrix's rank, bounded by nothing else. It is
   taken modulo the prime ``P`` (Gaussian elimination on integers), which for random coefficients is the
   rank over the reals but with a chance of order (matrix side) / ``P``.

Who holds what follows the model's reads: a sub-expression that reads the candidate's variable (or a
selection made for the candidate) is the candidate's; any other read (the selector's variables, a fixed
position, a selection made for the selector or for no one) is the selector's.
``infoflow_smt/verify/rank_measure.py`` measures the same rank on numbers and shares nothing with this count.

A score too large to count (an expansion past ``MAX_TERMS`` monomials, as ``dot(x[s], x[t])**6`` at
``d = 32``; a matrix past ``MAX_CELLS`` entries, or whose elimination passes ``MAX_ELIMINATION`` updates) is
not counted: ``None``, as for no bounded rank, so the rank rule rules its retrieval out at every width.

>>> import infoflow_smt as ifs
>>> from infoflow_smt.lang.trees import comparison_tree
>>> tree = comparison_tree(ifs.parse_target("min(dot(x[s], x[t])**2 for s in T for t in T)"))
>>> [score_rank(tree, "g0.t", d) for d in (2, 4, 8)]   # the symmetric square: d (d + 1) / 2
[3, 10, 36]
"""
from __future__ import annotations

import random
from fractions import Fraction
from functools import lru_cache

import networkx as nx
import numpy as np

from infoflow_smt.lang import expr as ex
from infoflow_smt.lang.trees import GroupRef, NodeRef, free_variables, walk

P = 2_147_483_647           # the prime 2**31 - 1: a product of two residues fits numpy's int64
MAX_TERMS = 1 << 20         # monomials one polynomial of the expansion may have
MAX_CELLS = 1 << 24         # entries of the matrix of coefficients (int64: 128 MB)
MAX_ELIMINATION = 1 << 31   # entries the elimination may update, all steps together
SELECTOR, CANDIDATE, BOTH = 1, 2, 3   # the sides an atom reads, as bits

Monomial = tuple[int, ...]   # atom numbers, sorted, an atom repeated for its power
Poly = dict[Monomial, int]   # monomial -> coefficient modulo P, never 0


class _Uncounted(Exception):
    """The score is no bilinear form of bounded rank, or is too large to count (module docstring)."""


def score_rank(tree: nx.DiGraph, node: str, input_dim: int) -> int | None:
    """The dimensions a head needs to make selection ``node`` of ``tree`` with tokens of dimension
    ``input_dim`` (module docstring), or ``None`` when its score is no bilinear form of bounded rank in what
    the two sides hold."""
    info = tree.nodes[node]
    refs = tuple(sorted(_references(tree, info["var"], info["terms"]).items(), key=repr))
    return _rank(tuple(info["terms"]), info["var"], refs, input_dim)


def _references(tree: nx.DiGraph, candidate: str, terms) -> dict:
    """Each reference to another node or group in ``terms``: (whether the candidate holds it, whether its
    value is a vector); everything else the count needs is in the terms themselves."""
    groups, found = tree.graph["groups"], {}
    for _, term in terms:
        for sub in walk(term):
            if isinstance(sub, NodeRef):
                data = tree.nodes[sub.node]
                reads, group = data["bound"] | {data["var"]}, groups[data["group"]]
            elif isinstance(sub, GroupRef):
                reads, group = free_variables(sub, groups), groups[sub.group]
            else:
                continue
            found[sub] = (candidate in reads, not group.kind.is_selection and _is_vector(group.body, tree))
    return found


def _is_vector(e, tree: nx.DiGraph) -> bool:
    if isinstance(e, (ex.Content, ex.Param)):
        return True
    if isinstance(e, ex.BinOp):
        return _is_vector(e.left, tree) or _is_vector(e.right, tree)
    if isinstance(e, ex.Neg):
        return _is_vector(e.operand, tree)
    if isinstance(e, (GroupRef, NodeRef)):
        group = tree.graph["groups"][e.group if isinstance(e, GroupRef) else tree.nodes[e.node]["group"]]
        return not group.kind.is_selection and _is_vector(group.body, tree)
    return False


@lru_cache(maxsize=4096)
def _rank(terms: tuple, candidate: str, refs: tuple, d: int) -> int | None:
    """The count of ``score_rank`` on what it depends on (cached: every encoding of a target asks again)."""
    expansion = _Expansion(candidate, dict(refs), d)
    try:
        score: Poly = {}
        for sign, term in terms:
            _, coordinates = expansion.value(term)
            score = _add(score, coordinates[0], sign)  # a token compared as a number (d = 1): its coordinate
        return _matrix_rank(_coefficients(score, expansion.sides))
    except _Uncounted:
        return None


# ---- step 1: the expansion -------------------------------------------------------------------------------
Value = tuple[bool, list[Poly]]   # (whether a d-vector, its coordinates; a scalar has one)


class _Expansion:
    """Sub-expressions of one score as polynomials in atoms, a method per construct (``visit_Call``, ...)."""

    def __init__(self, candidate: str, refs: dict, d: int):
        self.candidate, self.refs, self.d = candidate, refs, d
        self.atoms: dict[object, int] = {}
        self.sides: list[int] = []   # per atom number: SELECTOR, CANDIDATE or BOTH

    def value(self, e) -> Value:
        return getattr(self, f"visit_{type(e).__name__}")(e)

    def atom(self, key, side: int) -> Poly:
        if side == 0:   # reads no side: a generic constant
            return _constant(_draw("constant", repr(key)))
        if key not in self.atoms:
            self.atoms[key] = len(self.sides)
            self.sides.append(side)
        return {(self.atoms[key],): 1}

    def side(self, read) -> int:
        if isinstance(read, (GroupRef, NodeRef)):
            return CANDIDATE if self.refs[read][0] else SELECTOR
        if isinstance(read, (ex.VarIndex, ex.OffsetIndex)):
            return CANDIDATE if read.name == self.candidate else SELECTOR
        return SELECTOR   # a fixed position: held with the selector

    def opaque(self, key, values: list[Value]) -> Poly:
        """A scalar no polynomial writes, of ``values``: an atom of the sides they read."""
        side = 0
        for _, coordinates in values:
            for poly in coordinates:
                for monomial in poly:
                    for a in monomial:
                        side |= self.sides[a]
        return self.atom((key, tuple(_canonical(v) for v in values)), side)

    def visit_Num(self, e: ex.Num) -> Value:
        return False, [_constant(e.value)]

    def visit_Param(self, e: ex.Param) -> Value:
        return True, [{(): c} for c in _parameter("vector", e.name, self.d)[0]]

    def visit_Content(self, e: ex.Content) -> Value:
        side = self.side(e.index)
        return True, [self.atom((e, i), side) for i in range(self.d)]

    def reference(self, e) -> Value:
        side, vector = CANDIDATE if self.refs[e][0] else SELECTOR, self.refs[e][1]
        return vector, [self.atom((e, i), side) for i in range(self.d if vector else 1)]

    visit_GroupRef = visit_NodeRef = reference

    def visit_Neg(self, e: ex.Neg) -> Value:
        vector, coordinates = self.value(e.operand)
        return vector, [_scale(p, P - 1) for p in coordinates]

    def visit_BinOp(self, e: ex.BinOp) -> Value:
        if e.op == "**":
            return self.power(e)
        (a_vector, a), (b_vector, b) = self.value(e.left), self.value(e.right)
        if e.op == "/":
            b = [self.reciprocal(q) for q in b]
        combine = {"+": lambda p, q: _add(p, q, 1), "-": lambda p, q: _add(p, q, -1)}.get(e.op, _multiply)
        size = max(len(a), len(b))
        return a_vector or b_vector, [combine(a[i % len(a)], b[i % len(b)]) for i in range(size)]

    def reciprocal(self, q: Poly) -> Poly:
        if not q:
            raise _Uncounted("a division by zero")
        if set(q) == {()}:
            return {(): pow(q[()], P - 2, P)}
        return self.opaque("1/", [(False, [q])])

    def power(self, e: ex.BinOp) -> Value:
        exponent = _literal(e.right)
        if isinstance(e.left, ex.Call) and e.left.name == "norm" and exponent is not None \
                and exponent >= 0 and exponent % 2 == 0:   # norm(v)**2k = dot(v, v)**k: a polynomial
            square = ex.Call("dot", (e.left.args[0], e.left.args[0]))
            return self.power(ex.BinOp("**", square, ex.Num(exponent / 2)))
        vector, base = self.value(e.left)
        if exponent is not None and float(exponent).is_integer() and exponent >= 0:
            return vector, [_power(p, int(exponent)) for p in base]
        if exponent is not None and float(exponent).is_integer():
            return vector, [_power(self.reciprocal(p), -int(exponent)) for p in base]
        exponents = self.value(e.right)
        return vector, [self.opaque("**", [(False, [p]), exponents]) for p in base]

    def visit_Call(self, e: ex.Call) -> Value:
        if e.name == "dot":
            (_, u), (_, v) = self.value(e.args[0]), self.value(e.args[1])
            return False, [_inner(u, v)]
        if e.name == "bilinear":
            (_, u), (_, v) = self.value(e.args[1]), self.value(e.args[2])
            matrix = _parameter("matrix", e.args[0].name, self.d)
            mapped = [_combination([(u[i], row[j]) for i, row in enumerate(matrix)]) for j in range(self.d)]
            return False, [_inner(mapped, v)]
        return False, [self.opaque(e.name, [self.value(a) for a in e.args])]


def _literal(e) -> float | None:
    if isinstance(e, ex.Num):
        return e.value
    if isinstance(e, ex.Neg) and isinstance(e.operand, ex.Num):
        return -e.operand.value
    return None


def _canonical(value: Value) -> tuple:
    return value[0], tuple(tuple(sorted(p.items())) for p in value[1])


def _draw(*key) -> int:
    """A fixed random non-zero residue for ``key`` (a constant), the same in every process."""
    return random.Random("|".join(map(str, key))).randrange(1, P)


@lru_cache(maxsize=256)
def _parameter(kind: str, name: str, d: int) -> tuple[tuple[int, ...], ...]:
    """The fixed random residues of parameter ``name``: a ``d x d`` matrix, or a vector as one row."""
    rows = d if kind == "matrix" else 1
    rng = random.Random(f"{kind}|{name}|{d}")
    return tuple(tuple(rng.randrange(1, P) for _ in range(d)) for _ in range(rows))


# ---- polynomials modulo P ------------------------------------------------------------------------------
def _constant(value) -> Poly:
    exact = Fraction(value)
    residue = exact.numerator % P * pow(exact.denominator, P - 2, P) % P
    return {(): residue} if residue else {}


def _checked(p: Poly) -> Poly:
    if len(p) > MAX_TERMS:
        raise _Uncounted(f"over {MAX_TERMS} monomials")
    return p


def _add(p: Poly, q: Poly, sign: int) -> Poly:
    return _checked(_accumulate(dict(p), q, sign))


def _accumulate(out: Poly, q: Poly, factor: int) -> Poly:
    """``out += factor * q``, in place."""
    for m, c in q.items():
        total = (out.get(m, 0) + factor * c) % P
        if total:
            out[m] = total
        else:
            out.pop(m, None)
    return out


def _scale(p: Poly, c: int) -> Poly:
    return {m: v * c % P for m, v in p.items()} if c % P else {}


def _combination(parts: list[tuple[Poly, int]]) -> Poly:
    out: Poly = {}
    for p, c in parts:
        _checked(_accumulate(out, p, c))
    return out


def _multiply(p: Poly, q: Poly) -> Poly:
    if len(p) * len(q) > MAX_TERMS:
        raise _Uncounted(f"a product of over {MAX_TERMS} monomials")
    out: Poly = {}
    for m1, c1 in p.items():
        for m2, c2 in q.items():
            m = tuple(sorted(m1 + m2)) if m1 and m2 else m1 or m2
            out[m] = (out.get(m, 0) + c1 * c2) % P
    return {m: c for m, c in out.items() if c}


def _power(p: Poly, n: int) -> Poly:
    result: Poly = {(): 1}
    for _ in range(n):
        result = _multiply(result, p)
    return result


def _inner(u: list[Poly], v: list[Poly]) -> Poly:
    out: Poly = {}
    for a, b in zip(u, v):
        _checked(_accumulate(out, _multiply(a, b), 1))
    return out


# ---- steps 2 and 3: sides and the rank -------------------------------------------------------------------
def _coefficients(score: Poly, sides: list[int]) -> np.ndarray:
    """The matrix of the score's coefficients, selector monomials by candidate monomials (step 2)."""
    rows: dict[Monomial, int] = {}
    columns: dict[Monomial, int] = {}
    entries = []
    for monomial, c in score.items():
        if any(sides[a] == BOTH for a in monomial):
            raise _Uncounted("an opaque function of both sides")
        candidate = tuple(a for a in monomial if sides[a] == CANDIDATE)
        if candidate:
            selector = tuple(a for a in monomial if sides[a] == SELECTOR)
            row, column = rows.setdefault(selector, len(rows)), columns.setdefault(candidate, len(columns))
            entries.append((row, column, c))
    if len(rows) * len(columns) > MAX_CELLS:
        raise _Uncounted(f"a matrix of {len(rows)} x {len(columns)}")
    matrix = np.zeros((len(rows), len(columns)), dtype=np.int64)
    for r, k, c in entries:
        matrix[r, k] = c
    return matrix


def _matrix_rank(m: np.ndarray) -> int:
    """The rank modulo P of a matrix of residues, by Gaussian elimination; a row operation touches only the
    columns where the pivot row is not zero, so a sparse matrix (``dot(x[s], x[t])**k``) reduces fast."""
    m = m.copy() if m.shape[0] <= m.shape[1] else m.T.copy()
    rows, columns = m.shape
    rank = work = 0
    for c in range(columns):
        found = np.flatnonzero(m[rank:, c])
        if found.size == 0:
            continue
        pivot = rank + int(found[0])
        m[[rank, pivot]] = m[[pivot, rank]]
        used = c + np.flatnonzero(m[rank, c:])
        m[rank, used] = m[rank, used] * pow(int(m[rank, c]), P - 2, P) % P   # every product below 2**62
        below = rank + 1 + np.flatnonzero(m[rank + 1:, c])
        work += below.size * used.size
        if work > MAX_ELIMINATION:
            raise _Uncounted(f"a matrix of {rows} x {columns} needs over {MAX_ELIMINATION} steps to reduce")
        if below.size * 4 > (rows - rank - 1) * 3:   # most rows: one slice beats gathering them
            m[rank + 1:, c:] = (m[rank + 1:, c:] - m[rank + 1:, c][:, None] * m[rank, c:][None, :] % P) % P
        elif below.size:
            block = np.ix_(below, used)
            m[block] = (m[block] - m[below, c][:, None] * m[rank, used][None, :] % P) % P
        rank += 1
        if rank == rows:
            break
    return rank
