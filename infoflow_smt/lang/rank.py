"""The rank of a selection's score: how many dimensions a head's query and key need to compute it.

A retrieval head ranks candidates ``t`` for a selector ``s`` by ``<W_Q h_s, W_K h_t>``, a bilinear form in
what the two positions hold, so the score must be a sum of products of a selector feature and a candidate
feature, one dimension of the head per product (docs/model.md, "Head width and rank"). Counted per term
of the score, ``n`` the token dimension ``d``:

* a term that reads only the selector's variables is the same for every candidate: no dimension;
* a term that reads only the candidate (``f1(x[t])``, ``dot(a1, x[t])``) needs one, shared by all such
  terms (a constant coordinate on the query side times their sum on the key side);
* ``dot(x[s], x[t])`` and ``bilinear(A, x[s], x[t])`` on two token contents are forms of rank ``d`` (``A``
  is drawn at random: generic, so of full rank); several of them add up to one ``d x d`` matrix, so
  together they need ``d`` (the query holds ``x_s`` mapped once, the key ``x_t``);
* a product of factors each of which reads one side only (``f1(x[s]) * f2(x[t])``) needs one;
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
    forms = products = 0
    candidate_only = False
    for _, term in info["terms"]:
        where = sides.of(term)
        if CANDIDATE not in where:
            continue
        if where == {CANDIDATE}:
            candidate_only = True
        elif sides.is_form(term):
            forms += 1
        elif all(len(sides.of(f)) <= 1 for f in _factors(term)):
            products += 1
        else:
            return None
    return (input_dim if forms else 0) + products + (1 if candidate_only else 0)


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

    def is_form(self, term: ex.Expr) -> bool:
        """``dot`` or ``bilinear`` of two token contents, one held by each side (times constants)."""
        factors = _factors(term)
        calls = [f for f in factors if isinstance(f, ex.Call) and f.name in _FORMS]
        if len(calls) != 1 or any(not isinstance(f, ex.Num) for f in factors if f is not calls[0]):
            return False
        contents = [a for a in calls[0].args if not isinstance(a, ex.Param)]
        if len(contents) != 2 or not all(isinstance(a, ex.Content) and not isinstance(a.index, ex.Reduce)
                                         for a in contents):
            return False
        return {frozenset(self.of(a)) for a in contents} == {frozenset({CANDIDATE}), frozenset({SELECTOR})}


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
