"""The counts before the solver (``smt/counting.py``): each says "no" only where z3 says "no" on the full
encoding, with or without anchors, and its reasons are the sentences z3's unsat cores give."""
from __future__ import annotations

import random

import pytest
import z3
from support.generators import DIFFERENTIAL_CASES, random_architecture, random_target, twinned_target

import infoflow_smt as ifs
from infoflow_smt.model import cost
from infoflow_smt.smt import counting, encoder

ARCH = ifs.Architecture(heads=(1, 1, 1), embed_dim=32, input_dim=2)


def chain(n: int) -> str:
    kinds = ["min", "max"]  # alternating: nested reductions of one kind are one joint reduction
    opens = "".join(f"{kinds[i % 2]}(f1(x[v0]) + " if i == 0 else f"{kinds[i % 2]}(dot(x[v{i-1}], x[v{i}]) + "
                    for i in range(n))
    return opens + f"f1(x[v{n - 1}])" + "".join(f" for v{i} in T)" for i in reversed(range(n)))


def _bounded(enc: encoder.Encoding) -> list[int]:
    return [i for i, level in enumerate(enc.levels) if cost.is_bounded(level)]


def _shortfall(text: str, heads: tuple[int, ...]) -> counting.Shortfall | None:
    enc = encoder.encode(ifs.catalogue.as_target(text), ARCH.with_heads(heads), anchors=False)
    return counting.shortfall(enc, heads, _bounded(enc))


def test_intrinsic_dimension_needs_its_inner_selections_made_at_the_inputs_before_the_last_layer():
    found = _shortfall("intrinsic_dimension:D=3", (1, 1, 1))
    assert found is not None and set(map(str, found.core)) == {"budget:1:in", "budget:2:in", "goal", "level"}
    assert _shortfall("intrinsic_dimension:D=3", (1, 1, 1, 1)) is None  # three heads before the last layer
    assert _shortfall("intrinsic_dimension:D=4", (2, 2, 1)) is None


def test_a_chain_of_dependent_selections_needs_as_many_layers():
    found = _shortfall(chain(4), (3, 3, 3))
    assert found is not None and set(map(str, found.core)) == {"initial", "goal", "level"}
    assert _shortfall(chain(4), (1, 1, 1, 1)) is None


def test_no_count_applies_when_a_global_aggregation_is_allowed():
    enc = encoder.encode(ifs.catalogue.get("intrinsic_dimension", D=3), ARCH, anchors=False)
    assert counting.shortfall(enc, (1, 1, 1), list(range(len(enc.levels)))) is None


def test_a_counted_no_is_explained_in_the_sentences_of_an_unsat_core():
    verdict = ifs.decide("intrinsic_dimension:D=3", ARCH)
    assert verdict.status is ifs.Status.INFEASIBLE and verdict.stats.solver_calls >= 1  # the best exponent
    text = " ".join(map(str, verdict.explanation))
    assert "Layer 1 gives each input position 1 head, while 3 selections can only be made at the input" in text
    assert "After layer 3 the output token must know" in text
    deep = ifs.decide(chain(4), ARCH)
    assert "needs a chain of 4 dependent selections" in " ".join(map(str, deep.explanation))


def _cases():
    for case in DIFFERENTIAL_CASES[:120]:
        yield ifs.catalogue.as_target(case.text), case.arch
    for i in range(80):
        rng = random.Random(90_000 + i)
        positional = rng.random() < 0.3
        text = twinned_target(rng, positional) if i % 2 else random_target(rng, positional)
        arch = random_architecture(rng, positional)
        yield ifs.catalogue.as_target(text), arch.with_heads(tuple(rng.randint(1, 2) for _ in range(rng.randint(1, 4))))
    for D in range(1, 6):
        for L in range(1, D + 2):
            yield ifs.catalogue.get("intrinsic_dimension", D=D), ARCH.with_heads((1,) * L)


@pytest.fixture(scope="module")
def counted() -> list:
    """Every case where a count says no, with z3's answers on the encodings without and with anchors."""
    found = []
    for target, arch in _cases():
        enc = encoder.encode(target, arch, anchors=False)
        anchored = arch.positional and arch.layers >= 2
        short = counting.shortfall(enc, arch.heads, _bounded(enc), anchored)
        if short is None:
            continue
        answers = [_efficient(enc, arch)]
        if anchored:
            answers.append(_efficient(encoder.encode(target, arch, anchors=True), arch))
        found.append((target.text, arch.heads, short.count, answers))
    return found


def _efficient(enc: encoder.Encoding, arch) -> z3.CheckSatResult:
    excluded = [x for i, x in enumerate(enc.excluded_levels()) if i not in _bounded(enc)]
    return enc.solver.check(*enc.assumptions(arch.heads), *excluded)


def test_a_count_says_no_only_where_z3_says_no_on_the_full_encoding(counted):
    wrong = [c for c in counted if any(a != z3.unsat for a in c[3])]
    assert not wrong, wrong


def test_the_counts_say_no_often_in_the_cases(counted):
    assert len(counted) >= 30, len(counted)  # the test above must compare, not skip
    assert any("known after layer" in c[2] for c in counted) and any("heads for" in c[2] for c in counted)
