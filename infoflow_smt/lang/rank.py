"""The rank of a selection's score: how many dimensions a head's query and key need to compute it.

A retrieval head ranks candidates ``t`` for a selector ``s`` by ``<W_Q h_s, W_K h_t>``, a bilinear form in
what the two positions hold, so the score must be a sum of products of a selector feature and a candidate
feature, one dimension of the head per product (docs/model.md, "Head width and rank"). Counted per term
of the score, ``n`` the token dimension ``d``:

* a term that reads only the selector's variables is the same for every candidate: no dimension;
* a term that reads only the candidate (``f1(x[t])``, ``dot(a1, x[t])``) needs one, shared by all such
  terms (a constant coordinate on the query side times their sum on the key side); more generally the
  separable terms, a selector factor (``1`` for a term that reads the candidate alone) times a candidate
  factor, share a dimension through a shared factor (``f1(x[t]) + c * f1(x[t])`` needs one): they need the
  fewest factors touching every term, counted as for the forms below;
* ``dot(u, v)`` and ``bilinear(A, u, v)`` of a vector ``u`` one side holds and a vector ``v`` the other
  holds (``x[s]``, ``x[t-1]``, a sum of tokens, a token another selection chose) are forms of rank ``d``
  (``A`` is drawn at random: generic, so of full rank). Several forms share dimensions through a shared
  vector: ``dot(x[s], x[t]) + bilinear(A, x[s], x[t-1])`` needs ``d`` (the query holds ``x_s`` mapped once),
  ``dot(x[s], x[t]) + dot(x[s-1], x[t-1])`` needs ``2d``. Generically the forms need ``d`` times the fewest
  vectors that touch every form (a minimum vertex cover of the graph whose edges are the forms and whose
  vertices are their vectors, the size of its maximum matching by Konig's theorem);
* a product of factors each of which reads one side only (``f1(x[s]) * f2(x[t])``) is such a term; a form
  times such factors is a form of the scaled vectors (``dot(x[s], x[t]) * f1(x[t])``: rank ``d``);
* anything else that reads both sides (``f2(x[s], x[t])``, ``f1(x[s] + x[t])``, a value another selection
  computed from both) is no bilinear form of bounded rank: ``score_rank`` says ``None``, the model's cost
  law is silent on it, and so is the rank note.

The paper's cost law abstracts this rank away (a retrieval costs exponent 1 whatever the head width); the
rank is what the note of ``report.explain.narrow_heads`` compares with the head width ``E / h_l``.
"""
from __future__ import annotations

import networkx as nx

from infoflow_smt.lang import expr as ex
from infoflow_smt.lang.trees import GroupRef, NodeRef, free_variables, walk

_FORMS = ("dot", "bilinear")


def score_rank(tree: nx.DiGraph, node: str, input_dim: int) -> int | None:
    """The dimensions a head needs to make selection ``node`` of ``tree`` (module docstring), or ``None``
    when its score is not a bilinear form in what the two sides hold."""
    info = tree.nodes[node]
    sides = _Sides(tree, info["var"], info["bound"])
    forms: list[tuple[object, object]] = []       # (the selector's vector, the candidate's)
    separable: list[tuple[object, object]] = []   # (the selector's factors, the candidate's)
    for _, term in info["terms"]:
        where = sides.of(term)
        if CANDIDATE not in where:
            continue
        factors = [f for f in _factors(term) if not isinstance(f, ex.Num)]
        if sides.form(term) is not None:
            forms.append(sides.form(term))
        elif all(len(sides.of(f)) <= 1 for f in factors):
            parts = ([f for f in factors if sides.of(f) == {side}] for side in (SELECTOR, CANDIDATE))
            separable.append(tuple(tuple(sorted(map(repr, part))) for part in parts))
        else:
            return None
    return input_dim * _cover(forms) + _cover(separable)


def _cover(edges: list[tuple[object, object]]) -> int:
    """The fewest selector or candidate parts touching every (selector part, candidate part) edge: the size
    of a maximum matching (Konig's theorem)."""
    graph = nx.Graph()
    selectors = {(SELECTOR, u) for u, _ in edges}
    graph.add_nodes_from(selectors)
    graph.add_edges_from(((SELECTOR, u), (CANDIDATE, v)) for u, v in edges)
    return len(nx.bipartite.hopcroft_karp_matching(graph, top_nodes=selectors)) // 2


CANDIDATE, SELECTOR = "candidate", "selector"


class _Sides:
    """Which side of a head must hold a sub-expression of one node's score: the candidate's (it reads the
    node's variable) and/or the selector's (it reads the selector's variables, a fixed position's content,
    or a value another reduction computed without the candidate)."""

    def __init__(self, tree: nx.DiGraph, candidate: str, selector: frozenset[str]):
        self.tree, self.candidate, self.selector = tree, candidate, selector
        self.groups = tree.graph["groups"]

    def of(self, e) -> set[str]:
        found = set()
        for sub in walk(e):
            reads = self.reads(sub)
            if self.candidate in reads:
                found.add(CANDIDATE)
            elif reads & self.selector or _held(sub):
                found.add(SELECTOR)
        return found

    def reads(self, e) -> frozenset[str]:
        if isinstance(e, NodeRef):
            return self.tree.nodes[e.node]["bound"] | {self.tree.nodes[e.node]["var"]}
        return free_variables(e, self.groups)

    def form(self, term: ex.Expr) -> tuple[object, object] | None:
        """``dot`` or ``bilinear`` of two vectors, one held by each side, times constants and factors that
        each read one side (``dot(x[s], x[t]) * f1(x[t])`` is ``<x_s, f1(x_t) x_t>``, still of rank ``d``): (the
        selector's vector with its side's factors, the candidate's), else None."""
        factors = _factors(term)
        calls = [f for f in factors if isinstance(f, ex.Call) and f.name in _FORMS]
        if len(calls) != 1:
            return None
        scales = [f for f in factors if f is not calls[0] and not isinstance(f, ex.Num)]
        if any(len(self.of(f)) > 1 for f in scales):
            return None
        vectors = calls[0].args[1:] if calls[0].name == "bilinear" else calls[0].args
        if len(vectors) != 2 or any(isinstance(a, ex.Param) for a in vectors):
            return None
        sides = [frozenset(self.of(a)) for a in vectors]
        if set(sides) != {frozenset({CANDIDATE}), frozenset({SELECTOR})}:
            return None
        selector, candidate = vectors if sides[0] == {SELECTOR} else tuple(reversed(vectors))
        return tuple((repr(vector), tuple(sorted(repr(f) for f in scales if self.of(f) == {side})))
                     for vector, side in ((selector, SELECTOR), (candidate, CANDIDATE)))


def _held(e) -> bool:
    """A value some position must hold though it reads no variable: a fixed position's content, a group's
    or another node's value."""
    return isinstance(e, (GroupRef, NodeRef)) or (isinstance(e, ex.Content) and isinstance(e.index, ex.FixedIndex))


def _factors(e: ex.Expr) -> list[ex.Expr]:
    if isinstance(e, ex.BinOp) and e.op == "*":
        return _factors(e.left) + _factors(e.right)
    if isinstance(e, ex.Neg):
        return _factors(e.operand)
    return [e]
