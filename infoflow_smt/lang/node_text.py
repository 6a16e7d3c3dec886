"""A comparison tree's nodes in the target's own notation: ``min(dot(x[s], x[t]) for t in T)`` for node
``g0.t``. Data-layer words (lang imports nothing above it), so a program can name what its heads select
without the report layer (``Program.named``); infoflow_smt/report/explain.py builds its sentences on these."""
from __future__ import annotations

from infoflow_smt.lang import expr as ex
from infoflow_smt.lang.hosting import HOST
from infoflow_smt.lang.language import domain_to_text, to_text
from infoflow_smt.lang.trees import GroupRef, NodeRef, outermost


def node_text(tree, node: str) -> str:
    """A node's reduction in the target's notation: ``min(dot(x[s], x[t]) for t in T)``."""
    d = tree.nodes[node]
    score = expression_text(tree, d["score"])
    domain = domain_to_text(d["domain"])
    if d["kind"] == "kth":
        return f"kth_largest({d['k']}, {score} for {d['var']} in {domain})"
    return f"{d['sense']}({score} for {d['var']} in {domain})"


HOST_TEXT = "self"   # how a hosted form names its host's position: the position that makes it for itself


def expression_text(tree, e) -> str:
    """An expression of the tree as text, the references spelt out as the reductions they stand for (a
    hosted form's host, ``@``, as ``self``)."""
    return _expression_text(tree, e).replace(HOST, HOST_TEXT)


def _expression_text(tree, e) -> str:
    def expand(node):
        if isinstance(node, NodeRef):
            return ex.Param(f"\x00{node.node}\x01")
        if isinstance(node, GroupRef):
            return ex.Param(f"\x00{outermost(tree, node.group)}\x01")
        if isinstance(node, ex.Content) and isinstance(node.index, GroupRef):
            return ex.Content(ex.VarIndex(f"\x00{outermost(tree, node.index.group)}\x01"))
        return ex.map_children(node, expand)

    text = to_text(expand(e))
    for n in tree.nodes:
        if f"\x00{n}\x01" in text:  # delimited: node g1.t is not a prefix of node g1.t2
            if f"x[\x00{n}\x01]" in text:  # spelt only where used: each spelling spells every node inside it,
                text = text.replace(f"x[\x00{n}\x01]", f"x[{_arg(tree, n)}]")  # so both at every level of a
            text = text.replace(f"\x00{n}\x01", node_text(tree, n))            # chain cost 2**depth
    return text


def _arg(tree, node: str) -> str:
    d = tree.nodes[node]
    return f"{d['sense']}({expression_text(tree, d['score'])} for {d['var']} in {domain_to_text(d['domain'])})"
