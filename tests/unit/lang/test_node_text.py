"""A tree's nodes in the target's own notation: a nested reduction is spelt out, never left as a node name."""
from __future__ import annotations

import pytest

from infoflow_smt import parse_target
from infoflow_smt.lang.node_text import node_text
from infoflow_smt.lang.trees import comparison_tree


@pytest.mark.parametrize(("text", "node", "words"), [
    ("max(x[t] for t in T)", "g0.t", "max(x[t] for t in T)"),
    ("min(dot(x[s], x[t]) for s in T for t in T)", "g0.t", "min(dot(x[s], x[t]) for t in T)"),
    ("min(dot(x[s], x[t]) for s in T for t in T)", "g0.s", "min(min(dot(x[s], x[t]) for t in T) for s in T)"),
    ("kth_largest(2, x[t] for t in T)", "g0.t", "kth_largest(2, x[t] for t in T)"),
])
def test_a_node_reads_as_the_reduction_it_computes(text, node, words):
    tree = comparison_tree(parse_target(text))
    assert node_text(tree, node) == words and "g0." not in node_text(tree, node)
