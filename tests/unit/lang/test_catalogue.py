"""The catalogue: names, specs, parameters and their errors (the Target it builds: test_target.py)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from infoflow_smt.errors import InvalidSpecError
from infoflow_smt.lang import catalogue
from infoflow_smt.lang.language import parse_target_expr, to_text
from infoflow_smt.lang.target import Target

EXPECTED_NAMES = ("min_pairwise_dot", "max_retrieval", "kth_largest", "d_retrieval", "linear_max_sum",
                  "intrinsic_dimension", "triangle_center", "specific_positions", "induction_head", "k_hop_induction",
                  "hop_k", "match2", "match3", "max_over_pairs", "max_over_triples", "disjointness", "nearest_neighbor")
# the entries from outside the two papers: each cites its arXiv paper (proofs/literature.py holds the claims)
LITERATURE = tuple(n for n in EXPECTED_NAMES[8:] if not n.startswith("max_over_"))


def test_names_and_entries():
    assert catalogue.names() == EXPECTED_NAMES
    assert tuple(catalogue.ENTRIES) == EXPECTED_NAMES
    for name, entry in catalogue.ENTRIES.items():
        assert entry.name == name and entry.source and entry.summary
        with pytest.raises(dataclasses.FrozenInstanceError):
            entry.name = "other"
    with pytest.raises(TypeError):
        catalogue.ENTRIES["new"] = None


@pytest.mark.parametrize("name", EXPECTED_NAMES)
def test_every_entry_builds_a_canonical_target(name):
    target = catalogue.get(name)
    assert isinstance(target, Target)
    assert target.name == name
    assert to_text(parse_target_expr(target.text)) == target.text
    assert catalogue.parse_spec(name) == target
    assert name in catalogue.describe(name) and "source:" in catalogue.describe(name)


@pytest.mark.parametrize("name, params, text", [
    ("min_pairwise_dot", {}, "min(dot(x[s], x[t]) for s in T for t in T)"),
    ("max_retrieval", {}, "max(f1(x[t]) for t in T)"),
    ("kth_largest", {"k": 3}, "kth_largest(3, f1(x[t]) for t in T)"),
    ("d_retrieval", {"D": 3},
     "F0(min(f1(x[t]) for t in S1), min(f2(x[t]) for t in S2), min(f3(x[t]) for t in S3))"),
    ("d_retrieval", {"D": 1, "subsets": False}, "F0(min(f1(x[t]) for t in T))"),
    ("linear_max_sum", {"D": 2}, "max(dot(a1, x[t]) for t in T) + max(dot(a2, x[t]) for t in T)"),
    ("intrinsic_dimension", {"D": 1}, "max(bilinear(A1, x[s], x[t]) for s in T for t in T)"),
    ("triangle_center", {}, "min(norm(x[a] + x[b] + x[c])**2 for a in T for b in T for c in T)"),
    ("triangle_center", {"squared": False}, "min(norm(x[a] + x[b] + x[c]) for a in T for b in T for c in T)"),
    ("specific_positions", {}, "x[1] + x[2] + x[3]"),
    ("specific_positions", {"positions": (4, 1)}, "x[4] + x[1]"),
    ("induction_head", {}, "x[argmax(dot(x[t-1], x[T]) for t in range(2, T+1))]"),
    ("k_hop_induction", {"k": 1}, "x[argmax(dot(x[t1-1], x[T]) for t1 in range(2, T+1))]"),
    ("k_hop_induction", {}, ("x[argmax(dot(x[t2-1], x[argmax(dot(x[t1-1], x[T]) for t1 in range(2, T+1))]) "
                            "for t2 in range(2, T+1))]")),
    ("hop_k", {"k": 1}, "x[argmax(dot(x[t1-1], x[T]) for t1 in range(2, T+1))]"),
    ("match2", {}, "max(F0(x[o], x[t]) for t in T)"),   # the paper's: an answer at every position o
    ("match2", {"prefix": True}, "max(F0(x[o], x[t]) for t in range(1, o+1))"),
    ("match3", {}, "max(F0(x[o], x[s], x[t]) for s in T for t in T)"),
    ("match3", {"prefix": True}, "max(F0(x[o], x[s], x[t]) for s in range(1, o+1) for t in range(1, o+1))"),
    ("max_over_pairs", {}, "max(F0(x[s], x[t]) for s in T for t in T)"),
    ("max_over_triples", {}, "max(F0(x[r], x[s], x[t]) for r in T for s in T for t in T)"),
    ("disjointness", {}, "max(dot(x[s], x[t]) for s in S1 for t in S3)"),
    ("nearest_neighbor", {}, "x[argmin(norm(x[t-1] - x[T])**2 for t in range(2, T))]"),
])
def test_texts(name, params, text):
    assert catalogue.get(name, **params).text == text


@pytest.mark.parametrize("spec, name, text_start", [
    ("min_pairwise_dot", "min_pairwise_dot", "min(dot"),
    ("intrinsic_dimension:D=3", "intrinsic_dimension:D=3", "max(bilinear(A1"),
    ("kth_largest:k=2", "kth_largest", "kth_largest(2,"),  # k=2 is the default: omitted
    ("kth_largest:k=5", "kth_largest:k=5", "kth_largest(5,"),
    ("d_retrieval:D=3,subsets=false", "d_retrieval:D=3,subsets=false", "F0(min(f1(x[t]) for t in T)"),
    ("d_retrieval: subsets = FALSE , D = 3", "d_retrieval:D=3,subsets=false", "F0("),
    ("linear_max_sum:D=4", "linear_max_sum", "max(dot(a1"),
    ("triangle_center:squared=false", "triangle_center:squared=false", "min(norm"),
    ("specific_positions:positions=1,5,2", "specific_positions:positions=1,5,2", "x[1] + x[5] + x[2]"),
])
def test_parse_spec(spec, name, text_start):
    target = catalogue.parse_spec(spec, seed=4)
    assert target.name == name
    assert target.text.startswith(text_start)
    assert target.seed == 4
    assert catalogue.parse_spec(name, seed=4) == target  # the canonical spec reproduces the target


@pytest.mark.parametrize("name", LITERATURE)
def test_literature_entries_cite_their_paper(name):
    assert "arXiv " in catalogue.entry(name).source


def test_the_papers_tasks_are_stated_in_the_papers_form():
    """Match2 and Match3 answer at every position (they name o); hop_k is read at the last position, where the
    paper reads it, and an architecture that leaves its readout out reads it there (model.defaults)."""
    import infoflow_smt as ifs
    assert catalogue.get("match2").per_position and catalogue.get("match3", prefix=True).per_position
    assert not catalogue.get("max_over_pairs").per_position
    assert catalogue.entry("hop_k").readout == "last" and catalogue.stated_readout(catalogue.get("hop_k", k=3)) == "last"
    assert catalogue.stated_readout(catalogue.get("k_hop_induction")) == "output"
    assert catalogue.stated_readout(ifs.parse_target("max(f1(x[t]) for t in T)")) == "output"
    assert catalogue.get("hop_k", k=4).normal_form == catalogue.get("k_hop_induction", k=4).normal_form
    from infoflow_smt.model.defaults import settled
    assert settled(ifs.Architecture(heads=(1, 1)), catalogue.get("hop_k")).readout == "last"
    assert settled(ifs.Architecture(heads=(1, 1), readout="output"), catalogue.get("hop_k")).readout == "output"


def test_k_hop_induction_nests_one_hop_per_k():
    for k in (1, 3, 16):
        target = catalogue.get("k_hop_induction", k=k)
        assert target.text.count("argmax(") == k and f"t{k}" in target.text
    with pytest.raises(InvalidSpecError, match="k must be >= 1 and <= 16"):
        catalogue.get("k_hop_induction", k=17)


def test_k_hop_induction_hops_from_the_token_each_hop_found():
    """Evaluated on a sequence whose hops are known: the first hop from x[T] lands after the earlier copy of
    x[T], the second after the earlier copy of what the first found."""
    a, b, c, d = np.eye(4)
    seq = np.array([[c, a, b, d, a]])  # x[T] = a; x[t-1] = a at t = 3 (x[3] = b); x[t-1] = b at t = 4 (x[4] = d)
    assert np.allclose(catalogue.get("induction_head").evaluate(seq)[0], b)
    assert np.allclose(catalogue.get("k_hop_induction", k=2).evaluate(seq)[0], d)


def test_disjointness_compares_two_complementary_halves():
    """S1 and S3 partition the positions, so the largest inner product is 1 exactly when an element of one
    set (a one-hot code) is also in the other."""
    codes = np.eye(8)
    meet = np.array([[codes[0], codes[1], codes[2], codes[0]]])       # S1 = {1, 2}, S3 = {3, 4}: 0 is in both
    apart = np.array([[codes[0], codes[1], codes[2], codes[3]]])
    target = catalogue.get("disjointness")
    assert target.evaluate(meet)[0] == pytest.approx(1.0) and target.evaluate(apart)[0] == pytest.approx(0.0)


def test_get_names_in_canonical_form():
    assert catalogue.get("intrinsic_dimension", D=3).name == "intrinsic_dimension:D=3"
    assert catalogue.get("d_retrieval", subsets=False, D=2).name == "d_retrieval:subsets=false"
    assert catalogue.get("d_retrieval", D="5").name == "d_retrieval:D=5"


def test_parse_spec_falls_back_to_text():
    target = catalogue.parse_spec("max(f1(x[t])  for t in T)", seed=2)
    assert target.name is None and target.seed == 2
    assert target.text == "max(f1(x[t]) for t in T)"
    with pytest.raises(InvalidSpecError, match="unbound index variable 'u'"):
        catalogue.parse_spec("max(f1(x[u]) for t in T)")


@pytest.mark.parametrize("call, message", [
    (lambda: catalogue.get("min_pairwise_dots"),
     "unknown catalogue target 'min_pairwise_dots'; did you mean min_pairwise_dot"),
    (lambda: catalogue.parse_spec("intrinsic_dim:D=3"), "did you mean intrinsic_dimension"),
    (lambda: catalogue.parse_spec("zzz"), "unknown catalogue target 'zzz'; known: min_pairwise_dot"),
    (lambda: catalogue.get("intrinsic_dimension", E=3),
     "unknown parameter 'E' of intrinsic_dimension; parameters: D"),
    (lambda: catalogue.get("max_retrieval", k=3), "unknown parameter 'k' of max_retrieval; parameters: none"),
    (lambda: catalogue.get("intrinsic_dimension", D=0), "D must be >= 1 and <= 64, got 0"),
    (lambda: catalogue.get("intrinsic_dimension", D=1000), "got 1000"),
    (lambda: catalogue.get("kth_largest", k=0), "k must be >= 1"),
    (lambda: catalogue.get("kth_largest", k=2.5), "k must be an integer, got 2.5"),
    (lambda: catalogue.get("kth_largest", k=True), "k must be an integer, got True"),
    (lambda: catalogue.parse_spec("intrinsic_dimension:D=three"), "D must be an integer, got 'three'"),
    (lambda: catalogue.parse_spec("d_retrieval:subsets=maybe"), "subsets must be true or false, got 'maybe'"),
    (lambda: catalogue.parse_spec("specific_positions:positions=1,0"), "positions must be >= 1, got 0"),
    (lambda: catalogue.get("specific_positions", positions=()), "non-empty list of positions"),
    (lambda: catalogue.parse_spec("kth_largest:k=2,k=3"), "parameter 'k' given twice"),
    (lambda: catalogue.parse_spec("kth_largest:,k=2"), "expected key=value, got ''"),
    (lambda: catalogue.parse_spec("max_retrieval:seed=3"), "unknown parameter 'seed'"),
    (lambda: catalogue.parse_spec(3), "target spec must be a str, got int"),
    (lambda: catalogue.describe("nope"), "unknown catalogue target 'nope'"),
    (lambda: catalogue.get("kth_largest", seed="a"), "seed must be an integer"),
])
def test_errors(call, message):
    with pytest.raises(InvalidSpecError, match=message):
        call()


def test_all_parameter_problems_at_once():
    with pytest.raises(InvalidSpecError) as caught:
        catalogue.parse_spec("d_retrieval:D=0,subsets=maybe,E=1")
    assert len(caught.value.problems) == 3
