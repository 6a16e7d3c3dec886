"""A comparison tree's nodes in the target's own notation: ``min(dot(x[s], x[t]) for t in T)`` for node
``g0.t``. Data-layer words (lang imports nothing above it), so a program can name what its heads select
without the report layer (``Program.named``); infoflow_smt/report/explain.py builds its sentences on these.

**Names.** A selection whose winner's token another selection reads (``x[argmax(...)]`` inside a score: a
hop of k-hop induction) would be spelt out in full inside every selection after it, so a chain of ``k`` such
selections reads as text of about ``k**2`` characters. The named texts give each of them a short name
instead, ``p1``, ``p2``, ... innermost first, and then every other selection whose winner the target reads,
each defined once (``definitions``) in the language's own syntax (``p1 = argmax(...); x[p2]``, docs/model.md,
section 1: "Named sub-expressions"):

>>> import infoflow_smt as ifs
>>> from infoflow_smt.lang.trees import comparison_tree, outermost
>>> tree = comparison_tree(ifs.catalogue.get("k_hop_induction", k=2))
>>> [f"{name} = {text}" for name, text, _ in definitions(tree)]
['p1 = argmax(dot(x[T], x[t1-1]) for t1 in range(2, T+1))', 'p2 = argmax(dot(x[t2-1], x[p1]) for t2 in range(2, T+1))']
>>> named_node_text(tree, outermost(tree, "g0")), named_output_text(tree)
('argmax(dot(x[t2-1], x[p1]) for t2 in range(2, T+1))', 'x[p2]')

Every text of a tree is made once and kept beside the tree (trees are read-only), so naming costs time linear
in the text it writes: each node's text is built from its score's text with the texts of the nodes it reads
put in, never spelt out again.
"""
from __future__ import annotations

import re
import weakref

import networkx as nx

from infoflow_smt.lang import expr as ex
from infoflow_smt.lang.hosting import HOST
from infoflow_smt.lang.language import domain_to_text, fresh_prefix, to_text
from infoflow_smt.lang.trees import GroupRef, NodeRef, outermost, walk

HOST_TEXT = "self"   # how a hosted form names its host's position: the position that makes it for itself
_REFERENCE = re.compile("(x\\[)?\x00([^\x01]*)\x01(\\])?")   # a node put in a score's text (module docstring)


def node_text(tree, node: str) -> str:
    """A node's reduction in the target's notation, every node it reads spelt out:
    ``min(dot(x[s], x[t]) for t in T)``."""
    return _texts(tree).node(node, named=False)


def expression_text(tree, e) -> str:
    """An expression of the tree as text, the references spelt out as the reductions they stand for (a
    hosted form's host, ``@``, as ``self``)."""
    return _texts(tree).expression(e, named=False)


def named_node_text(tree, node: str) -> str:
    """A node's reduction with the winners it reads by their names (``x[p1]``; ``definitions``)."""
    return _texts(tree).node(node, named=True)


def named_expression_text(tree, e) -> str:
    """An expression of the tree with the winners it reads by their names (``node_names``)."""
    return _texts(tree).expression(e, named=True)


def node_names(tree) -> dict[str, str]:
    """The name of every selection whose winner's token a score reads (module docstring): node -> ``p1``, ...,
    innermost first, the target's own selections before the hosted forms."""
    return _texts(tree).names


def definitions(tree) -> list[tuple[str, str, bool]]:
    """``(name, text, hosted)`` for every named selection, innermost first: each text reads only names defined
    before it. The target's own definitions, then ``x[...]`` of the output (``named_output_text``), are target
    text the parser reads back as the same function; a hosted one reads ``self`` (the position that makes it)."""
    texts = _texts(tree)
    return [(name, texts.node(n, named=True, own_name=False), bool(tree.nodes[n]["hosted"]))
            for n, name in texts.names.items()]


def named_output_text(tree) -> str:
    """What the output reads, with the named selections by their names (``x[p8]`` for k-hop induction)."""
    return named_expression_text(tree, tree.graph["output"])


def named_target(target) -> tuple[str, list[tuple[str, str, bool]]] | None:
    """The target as its verdict shows it where a selection reads another's winner: what it reads with the
    selections by name (``x[p8]``) and the definitions of the names (``definitions``); None when nothing is named
    (the target is then shown whole).

    >>> import infoflow_smt as ifs
    >>> named_target(ifs.catalogue.get("k_hop_induction", k=2))[0], named_target(ifs.catalogue.get("induction_head"))
    ('x[p2]', None)
    """
    from infoflow_smt.lang.trees import comparison_tree
    tree = comparison_tree(target)
    named = definitions(tree)
    return (named_output_text(tree), named) if named else None


# ---- the texts of one tree, each made once ------------------------------------------------------------
_KEPT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _texts(tree) -> _Texts:
    texts = _KEPT.get(tree)
    if texts is None:
        texts = _KEPT[tree] = _Texts(tree)
    return texts


class _Texts:
    """Every text of one tree, made on first use and kept (``_KEPT``: as long as the tree lives)."""

    def __init__(self, tree):
        self.tree = tree
        self.made: dict[tuple[str, bool, bool], str] = {}
        self.names = _names(tree)

    def node(self, node: str, named: bool, own_name: bool = False) -> str:
        """``node``'s reduction (``own_name``: its name, if it has one, instead)."""
        if own_name and named and node in self.names:
            return self.names[node]
        key = (node, named, False)
        if key not in self.made:
            d = self.tree.nodes[node]
            score = self.expression(d["score"], named)
            domain = domain_to_text(d["domain"])
            self.made[key] = (f"kth_largest({d['k']}, {score} for {d['var']} in {domain})" if d["kind"] == "kth"
                              else f"{d['sense']}({score} for {d['var']} in {domain})")
        return self.made[key]

    def winner(self, node: str, named: bool) -> str:
        """What ``x[...]`` holds for the winner of ``node``: its name, or its selection spelt as argmax/argmin."""
        if named and node in self.names:
            return self.names[node]
        d = self.tree.nodes[node]
        if d["kind"] == "kth":
            return self.node(node, named)
        key = (node, named, True)
        if key not in self.made:
            self.made[key] = (f"{d['sense']}({self.expression(d['score'], named)} for {d['var']} in "
                              f"{domain_to_text(d['domain'])})")
        return self.made[key]

    def expression(self, e, named: bool) -> str:
        """``e`` as text: its references put in as placeholders, printed, then each placeholder replaced once
        by the text of the node it stands for (made once per node: ``node``, ``winner``)."""
        tree = self.tree

        def mark(item):
            if isinstance(item, NodeRef):
                return ex.Param(f"\x00{item.node}\x01")
            if isinstance(item, GroupRef):
                return ex.Param(f"\x00{outermost(tree, item.group)}\x01")
            if isinstance(item, ex.Content) and isinstance(item.index, GroupRef):
                return ex.Content(ex.VarIndex(f"\x00{outermost(tree, item.index.group)}\x01"))
            return ex.map_children(item, mark)

        def put(found: re.Match) -> str:
            opened, node, closed = found.groups()
            if opened and closed:
                return f"x[{self.winner(node, named)}]"
            return (opened or "") + self.node(node, named) + (closed or "")

        return _REFERENCE.sub(put, to_text(mark(e))).replace(HOST, HOST_TEXT)


def _names(tree) -> dict[str, str]:
    """node -> name for the selections whose winner's token a score reads, and then for every selection whose
    winner the target reads (the output's too: ``x[p8]``), numbered innermost first (a node after every node it
    reads), the target's own before the hosted forms. None where no score reads a winner."""
    if not any(_winners(d["score"], tree) for _, d in tree.nodes(data=True) if d["kind"] not in ("output", "fixed")):
        return {}
    read = set(_winners(tree.graph["output"], tree))
    for _, d in tree.nodes(data=True):
        if d["kind"] not in ("output", "fixed"):
            read |= _winners(d["score"], tree)
    order = [n for n in nx.dfs_postorder_nodes(tree) if n in read]
    order = [n for n in order if not tree.nodes[n]["hosted"]] + [n for n in order if tree.nodes[n]["hosted"]]
    prefix = fresh_prefix(_used_names(tree))
    return {n: f"{prefix}{i}" for i, n in enumerate(order, start=1)}


def _winners(e, tree) -> set[str]:
    """The nodes whose winner's token ``e`` reads (``x[GroupRef]``)."""
    return {outermost(tree, leaf.index.group) for leaf in walk(e)
            if isinstance(leaf, ex.Content) and isinstance(leaf.index, GroupRef)}


def _used_names(tree) -> set[str]:
    """Every name the tree's texts use (variables, parameters, functions), which a fresh name must avoid."""
    used = set()
    for _, d in tree.nodes(data=True):
        if d["kind"] in ("output", "fixed"):
            continue
        used |= {d["var"], *d["bound"]}
        for _, term in d["terms"]:
            for leaf in walk(term):
                if isinstance(leaf, (ex.Param, ex.Call)):
                    used.add(leaf.name)
                elif isinstance(leaf, ex.Content) and isinstance(leaf.index, (ex.VarIndex, ex.OffsetIndex)):
                    used.add(leaf.index.name)
    return used
