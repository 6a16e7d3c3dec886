"""The encoding's nodes (infoflow_smt/smt/nodes.py): operation names and what nodes read."""
from __future__ import annotations

import pytest

import infoflow_smt as ifs
from infoflow_smt.model.program import Mode
from infoflow_smt.smt import encoder
from infoflow_smt.smt.nodes import GLOBAL_AGGREGATION, OperationName


def test_operation_names_say_what_they_do():
    assert OperationName(Mode.RETRIEVE, node="g0..t").text == "RETRIEVE:g0..t"
    assert OperationName(Mode.POSITIONS, slot=2).text == "POSITIONS#2"
    assert GLOBAL_AGGREGATION.text == "AGGREGATE" and not GLOBAL_AGGREGATION.selects
    with pytest.raises(ValueError):
        OperationName(Mode.RETRIEVE)


def test_hosted_nodes_are_known_by_every_input_position_for_itself():
    enc = encoder.encode(ifs.catalogue.get("k_hop_induction", k=3),
                         ifs.Architecture(heads=(1, 1, 1), embed_dim=32, input_dim=2, positional=True))
    hosted = [i for i in enc.nodes.values() if i.hosted]
    assert hosted and all(len(i.bound) == 1 for i in hosted)
    assert enc.hosts.copies and {a for _, a, _ in enc.hosts.copies} <= {i.key for i in hosted}
    assert enc.hosts.groups(enc.nodes) >= {i.group for i in hosted}
