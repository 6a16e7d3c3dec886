"""The independent search (``verify/flow_search.py``) finds, by itself, the programs issue 37 derived by hand
(pointer doubling, a fixed position working for itself, one selection at several hosts, a previous-token head
under the mask), and finds none for the known "no"s."""
from __future__ import annotations

import pytest

import infoflow_smt as ifs
from infoflow_smt.verify import flows
from infoflow_smt.verify.flow_search import search

A = ifs.Architecture
FOUND = {
    "pointer doubling": (ifs.catalogue.get("k_hop_induction", k=3), A(heads=(1, 1, 1), input_dim=2, positional=True)),
    "position 3 works for itself": (
        "max(bilinear(A1, x[3], x[t]) for t in T) + max(bilinear(A2, x[3], x[t]) for t in T)",
        A(heads=(2, 1), input_dim=2, positional=True)),
    "one selection at several hosts": (
        "min(dot(x[a], x[b]) for a in T for b in T) + max(min(dot(x[a], x[b]) for b in T) for a in T)",
        A(heads=(1, 2), input_dim=2)),
    "previous token under the mask": (
        "f2(x[argmax(f1(x[t]) for t in range(2, T+1)) - 1])", A(heads=(1, 1), input_dim=2, positional=True, causal=True)),
}
NOT_FOUND = {
    "min_pairwise_dot on one layer": (ifs.catalogue.get("min_pairwise_dot"), A(heads=(4,), input_dim=2)),
    "intrinsic dimension 2 on (1, 2)": (ifs.catalogue.get("intrinsic_dimension", D=2), A(heads=(1, 2), input_dim=2)),
    "intrinsic dimension 2 on (2, 1)": (ifs.catalogue.get("intrinsic_dimension", D=2), A(heads=(2, 1), input_dim=2)),
    "second largest on one layer": ("kth_largest(2, f1(x[t]) for t in T)", A(heads=(2,), input_dim=2)),
    "k-hop 3 on two layers": (ifs.catalogue.get("k_hop_induction", k=3), A(heads=(1, 1), input_dim=2, positional=True)),
}


def _target(spec) -> ifs.Target:
    return spec if isinstance(spec, ifs.Target) else ifs.parse_target(spec)


@pytest.fixture(scope="module")
def found() -> dict:
    return {name: search(_target(t), arch, budget_s=60) for name, (t, arch) in FOUND.items()}


@pytest.mark.parametrize("name", FOUND)
def test_the_search_finds_the_programs_of_issue_37(found, name: str) -> None:
    result = found[name]
    target, arch = FOUND[name]
    assert result.program is not None, result.describe()
    assert result.program.is_efficient
    assert flows.check(result.program, _target(target), arch, seq_lens=(9, 16), samples=60, seed=11).passed


def test_pointer_doubling_is_found_as_the_issue_derives_it(found) -> None:
    """Layer 1 gathers the previous token (the search may take the next one too, for a hop re-indexed by one),
    layer 2 makes the hop hosted at every position and the first hop at the output token, and layer 3 the
    second hop, whose winner hands over its own hop, the third."""
    lines = found["pointer doubling"].describe().splitlines()
    assert len(lines) == 5, lines
    assert lines[0].startswith("layer 1, head 1, at every input position p: gathers x[p-1]")
    assert lines[1] == "layer 1, head 1, at the output token: gathers x[T]"
    assert lines[2].startswith("layer 2, head 1, at every input position p: retrieves the argmax") and "x[p])" in lines[2]
    assert lines[3] == ("layer 2, head 1, at the output token: retrieves the argmax over t1 in range(2, T+1) of "
                        "dot(x[t1-1], x[T])")
    assert lines[4].startswith("layer 3, head 1, at the output token: retrieves the argmax")
    assert "x[argmax(dot(x[t1-1], x[T]) for t1 in range(2, T+1))]" in lines[4]


def test_the_fixed_position_makes_both_selections_and_the_output_gathers_it(found) -> None:
    lines = found["position 3 works for itself"].describe().splitlines()
    assert lines[-1] == "layer 2, head 1, at the output token: gathers x[3]"
    assert all("x[p]" in line for line in lines[:-1]) and len(lines) == 3


@pytest.mark.parametrize("name", NOT_FOUND)
def test_the_search_finds_nothing_for_the_known_noes(name: str) -> None:
    target, arch = NOT_FOUND[name]
    result = search(_target(target), arch, budget_s=60)
    assert result.program is None and result.exhausted, result.describe()
    assert result.describe() == "none found within the bounds (every program searched)"


def test_a_width_that_grows_with_the_length_is_refused() -> None:
    with pytest.raises(ifs.InvalidSpecError, match="the search covers a constant width, got embed_dim=2\\*T"):
        search(_target("max(f1(x[t]) for t in T)"), A(heads=(1,), embed_dim=2 * ifs.T))
