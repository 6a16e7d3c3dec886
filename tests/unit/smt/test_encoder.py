"""The encoder on its own: operation names, the names an encoding declares and uses, growth, the builder."""
from __future__ import annotations

import re

import pytest
import z3

import infoflow_smt as ifs
from infoflow_smt.lang import expr as ex
from infoflow_smt.model import cost
from infoflow_smt.model.program import Mode, Offset
from infoflow_smt.model.vocabulary import PositionClass
from infoflow_smt.smt import encoder
from infoflow_smt.smt.encoder import OperationName

A1 = PositionClass.fixed(ex.FixedIndex(1))

# (target, architecture, anchors): selections, a k-th retrieval, specific positions with anchors and
# gathers, a width that grows with T, an average
CASES = [
    ("min_pairwise_dot", ifs.Architecture(heads=(2, 1), embed_dim=32, input_dim=2, positional=True), True),
    ("kth_largest:k=2", ifs.Architecture(heads=(1, 2), embed_dim=8, input_dim=2), True),
    ("specific_positions", ifs.Architecture(heads=(2, 2), embed_dim=32, input_dim=2, positional=True), True),
    ("triangle_center", ifs.Architecture(heads=(2, 2), embed_dim=2 * ifs.T, input_dim=2), False),
    ("mean(f1(x[t]) for t in T)", ifs.Architecture(heads=(2,), embed_dim=8, input_dim=4), True),  # averaging
]
DECLARATION = re.compile(r"^\(declare-const \|([^|]+)\| (Bool|Int)\)$")


def _encode(index: int) -> encoder.Encoding:
    target, arch, anchors = CASES[index]
    return encoder.encode(ifs.catalogue.as_target(target), arch, anchors=anchors)


def _declared(enc: encoder.Encoding) -> dict[str, str]:
    found = [DECLARATION.match(line) for line in enc.text.split("\n")]
    names = [m.group(1) for m in found if m]
    assert len(names) == len(set(names)), "a name declared twice"
    return {m.group(1): m.group(2) for m in found if m}


# ---- operation names ----------------------------------------------------------------------------------
def test_operation_names_read_as_their_smt_text():
    assert OperationName(Mode.RETRIEVE, node="g0..t").text == "RETRIEVE:g0..t"
    assert OperationName(Mode.KTH, node="g1.s-t.s").text == "KTH:g1.s-t.s"
    assert OperationName(Mode.POSITIONS, slot=3).text == "POSITIONS#3"
    assert (encoder.GLOBAL_AGGREGATION.text, encoder.GLOBAL_AVERAGING.text) == ("AGGREGATE", "AVERAGE")
    assert OperationName(Mode.KTH, node="x").selects and not OperationName(Mode.POSITIONS, slot=1).selects


@pytest.mark.parametrize("kwargs, match", [
    ({"mode": Mode.RETRIEVE}, "RETRIEVE operation with node None"),
    ({"mode": Mode.AGGREGATE, "node": "g0..t"}, "AGGREGATE operation with node 'g0..t'"),
    ({"mode": Mode.POSITIONS}, "POSITIONS operation with slot None"),
    ({"mode": Mode.POSITIONS, "slot": 0}, "POSITIONS operation with slot 0"),
    ({"mode": Mode.AVERAGE, "slot": 1}, "AVERAGE operation with slot 1"),
    ({"mode": Mode.IDLE}, "IDLE operation"),
])
def test_an_operation_name_that_names_nothing_is_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        OperationName(**kwargs)


def test_operation_names_sort_as_their_text():
    names = [OperationName(Mode.POSITIONS, slot=2), encoder.GLOBAL_AVERAGING, OperationName(Mode.KTH, node="b"),
             OperationName(Mode.RETRIEVE, node="a"), encoder.GLOBAL_AGGREGATION, OperationName(Mode.POSITIONS, slot=1)]
    assert [n.text for n in sorted(names)] == sorted(n.text for n in names)


@pytest.mark.parametrize("index", range(len(CASES)))
def test_each_operation_variable_is_named_by_its_operation_and_reads_back_as_it(index: int):
    enc = _encode(index)
    for (layer, c, name), var in enc.ops.items():
        assert var == f"op:{layer}:{c}:{name.text}"
        op = encoder._op(enc, lambda v: True, layer, c, name)
        assert op.mode is name.mode
        if name.selects:
            assert op.node == enc.nodes[name.node].node
        if name.mode is Mode.POSITIONS:
            assert op.positions == tuple(enc.sources[(layer, c, name)])
            assert all(v.startswith(f"src:{layer}:{c}:{name.slot}:") for v in enc.sources[(layer, c, name)].values())
    for (layer, c, name), var in enc.kept.items():
        assert var == f"keep:{layer}:{c}:{name.text}" and (layer, encoder.IN, name) in enc.ops


def test_the_cases_hold_every_kind_of_operation():
    kinds = {name.mode for i in range(len(CASES)) for _, _, name in _encode(i).ops}
    assert kinds == {Mode.RETRIEVE, Mode.KTH, Mode.AGGREGATE, Mode.AVERAGE, Mode.POSITIONS}
    assert _encode(0).kept and _encode(2).gathers  # anchors that keep the inputs' heads, gathers charged


# ---- names declared and used ---------------------------------------------------------------------------
@pytest.mark.parametrize("index", range(len(CASES)))
def test_an_encoding_declares_every_name_its_assertions_use(index: int):
    enc = _encode(index)
    declared = _declared(enc)
    used = {name for line in enc.text.split("\n") if line.startswith("(assert")
            for name in re.findall(r"\|([^|]*)\|", line)}
    assert used and used <= set(declared), sorted(used - set(declared))[:5]


@pytest.mark.parametrize("index", range(len(CASES)))
def test_the_names_the_solver_reads_back_are_bare_declared_names(index: int):
    enc = _encode(index)
    declared = _declared(enc)
    booleans = [*enc.ops.values(), *enc.kept.values(), *enc.tracked.values(), *enc.heads.values(),
                *enc.depth.values(), *enc.level_vars]
    booleans += [v for srcs in enc.sources.values() for v in srcs.values()]
    booleans += [v for per_order in enc.order_vars.values() for v in per_order.values()]
    booleans += [v for facts in enc.facts.values() for v in facts]
    booleans += [v for _, acts, _, whole in enc.gathers for v in (acts, whole)]
    integers = [g for _, _, g, _ in enc.gathers] + ([enc.gather_cap] if enc.gather_cap else [])
    assert {declared.get(n) for n in booleans} == {"Bool"}
    assert {declared.get(n) for n in integers} <= {"Int"}
    assert str(enc.var(enc.depth[1])) == enc.depth[1] and enc.var(enc.depth[1]).sort().name() == "Bool"


# ---- growth ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("index, more", [(0, (1,)), (2, (2,)), (3, (1, 2))])
def test_growing_an_encoding_gives_the_fresh_encoding(index: int, more: tuple[int, ...]):
    target, arch, anchors = CASES[index]
    large = arch.with_heads(arch.heads + more)
    grown = _encode(index)
    assert encoder.grow(grown, large)
    fresh = encoder.encode(ifs.catalogue.as_target(target), large, anchors=anchors)
    assert sorted(grown.text.split("\n")) == sorted(fresh.text.split("\n"))
    assert (grown.ops, grown.kept, grown.sources, grown.facts, grown.gathers) == (
        fresh.ops, fresh.kept, fresh.sources, fresh.facts, fresh.gathers)
    assert max(layer for layer, _, _ in grown.ops) == large.layers


# ---- size ------------------------------------------------------------------------------------------------
def _subset_selections(k: int) -> str:
    return " + ".join(f"min(f{i}(x[t]) for t in S{i})" for i in range(1, k + 1))


def test_an_encoding_grows_about_quadratically_with_the_subset_selections_it_sums():
    """k selections make k anchors, so k + 2 classes, each with an operation per selection and a source per
    fixed position: quadratic. Only what a class gains from the fixed positions it gathers is cubic (each of
    its k node facts lists the k anchors), with a small factor: a doubling multiplied the text by 3.2 and 3.9
    from 4 to 8 to 16 (by 6.1 from 32 to 64 before the shared terms: every retrieval and every class copied
    what the candidates hold, and each head count the head budget's sum). The widest class's size, copied
    into each anchor's, once made it exponential: 10 times from 4 to 8 selections, a MemoryError at 16."""
    arch = ifs.Architecture(heads=(2, 2), embed_dim=32, input_dim=2, positional=True)
    sizes = []
    for k in (4, 8, 16):  # one at a time: an exponential encoding fails at 8, before 16 exhausts memory
        enc = encoder.encode(ifs.parse_target(_subset_selections(k)), arch, portable=True)
        assert len(enc.anchors) == k
        sizes.append(len(enc.text))
        assert len(sizes) == 1 or sizes[-1] < 4.5 * sizes[-2], sizes
    assert sizes[-1] < 1_900_000, sizes  # 1.62 MB (2.58 MB before)


# ---- the builder ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("index", range(len(CASES)))
def test_a_builder_has_all_its_state_once_constructed(index: int):
    target, arch, anchors = CASES[index]
    builder = encoder._Builder(ifs.catalogue.as_target(target), arch, cost.DecodeLaw.SEED, None, anchors,
                               False, None)
    made = set(vars(builder))
    assert builder.size[(encoder.OUT, 0)] == "0" and builder.whole[(encoder.IN, 0)] == encoder.FALSE
    assert builder.references(encoder.IN) == builder.fixed_sources + [Offset(k) for k in builder.enc.offsets]
    enc = builder.build()
    # the builder lets go of its encoding (the encoding holds the builder, to grow: no reference cycle)
    assert set(vars(builder)) == made - {"enc"} and enc._builder is builder


# ---- answers at every position ------------------------------------------------------------------------
def test_a_per_position_goal_is_stated_at_every_input_class():
    target = ifs.parse_target("max(F0(x[o], x[t]) for t in T) + max(f1(x[t]) for t in T)")
    needs = encoder.goal_needs(target)
    assert [n.kind for n in needs] == ["group", "group"]  # the one made for o, and the one made for nobody
    arch = ifs.Architecture(heads=(2, 2), embed_dim=8, input_dim=2, positional=True)
    enc = encoder.encode(target, arch)
    assert enc.anchors and encoder.answering_classes(enc) == enc.inputs  # the anchors answer too
    assert list(map(str, encoder.answering_classes(encoder.encode(ifs.parse_target("max(f1(x[t]) for t in T)"), arch)))) == ["out"]


def test_an_anchor_whose_answer_is_not_defined_is_asked_nothing():
    """Position 1 has no answer to ``max(... for t in range(1, o))`` (no position before it): its class, a1,
    is no answering class; the anchors after it are (docs/model.md, "Answers at every position")."""
    target = ifs.parse_target("max(F0(x[o], x[t]) for t in range(1, o)) + max(f1(x[t]) for t in T) "
                              "+ min(f1(x[t]) for t in T)")
    enc = encoder.encode(target, ifs.Architecture(heads=(2, 2), embed_dim=8, input_dim=2, positional=True))
    assert list(map(str, enc.anchors)) == ["a1", "a2"]
    assert list(map(str, encoder.answering_classes(enc))) == ["in", "a2"]


def test_read_at_the_last_position_with_positions_the_goal_is_stated_at_position_T():
    arch = ifs.Architecture(heads=(1,), embed_dim=8, input_dim=2, positional=True, readout="last")
    enc = encoder.encode(ifs.parse_target("max(F0(x[T], x[t]) for t in T)"), arch)
    assert enc.anchors == {encoder.LAST_CLASS: ex.FixedIndex(0, True)} and encoder.answering_classes(enc) == [encoder.LAST_CLASS]


# ---- reading a program back ------------------------------------------------------------------------------
def test_an_anchor_that_keeps_an_operation_and_also_runs_it_runs_it_once():
    """The encoding counts what an operation gains once per class (``acts`` is op or keep), so a model may
    set both; read back twice, the anchor's sets were counted twice and the witness cost more than its model
    (a sum of eight subset selections was reported at exponent 9/8 instead of 1)."""
    target = ifs.parse_target(_subset_selections(2))
    arch = ifs.Architecture(heads=(2, 2), embed_dim=32, input_dim=2, positional=True)
    enc = encoder.encode(target, arch)
    node = next(key for key, info in enc.nodes.items() if info.node == "g0.t")
    name = OperationName(Mode.RETRIEVE, node=node)
    both = [enc.var(enc.ops[(1, encoder.IN, name)]), enc.var(enc.ops[(1, A1, name)]),
            enc.var(enc.kept[(1, A1, name)])]
    assert enc.solver.check(*enc.assumptions((2, 2)), *both) == z3.sat
    program = encoder.extract(enc, enc.solver.model(), (2, 2))
    at_anchor = [a for a in program.at(1, ex.FixedIndex(1)) if a.op.mode is Mode.RETRIEVE and a.op.node == "g0.t"]
    at_inputs = [a for a in program.at(1, "input") if a.op.mode is Mode.RETRIEVE and a.op.node == "g0.t"]
    assert not at_anchor and len(at_inputs) == 1  # the kept input head is the anchor's only one
