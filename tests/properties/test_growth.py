"""An encoding grown by layers in place (``encoder.grow``) is the encoding of the larger architecture.

A sweep walks from few layers to many and adds each new layer's constraints to the solver it has. That
must ask z3 exactly what a fresh encoding asks: the same declarations and assertions, line for line (in
another order), and so the same verdicts. Checked on seeded random targets, with and without positions,
anchors, k-th selections and widths that grow with ``T``.
"""
from __future__ import annotations

import random

import pytest
from support.generators import random_case, random_target

import infoflow_smt as ifs
from infoflow_smt.deadline import Deadline
from infoflow_smt.model import cost
from infoflow_smt.smt import encoder
from infoflow_smt.smt.solver import Questions


def _growth(index: int):
    """Target, smaller and larger architecture and anchors of growth case ``index``."""
    rng = random.Random(10_000 + index)
    positional = rng.random() < 0.5
    target = ifs.catalogue.as_target(random_target(rng, positional))
    small = tuple(rng.randint(1, 3) for _ in range(rng.randint(1, 2)))
    # a new layer with more heads than any the encoding has brings a new head width (E/h), so new cost
    # levels, and ``grow`` refuses it (test_growth_that_needs_more_is_refused_and_changes_nothing): the new
    # layers here have at most as many heads, the growth a sweep's walk asks for
    large = small + tuple(rng.randint(1, max(small)) for _ in range(rng.randint(1, 2)))
    arch = ifs.Architecture(heads=small, embed_dim=rng.choice([8, 32, 2 * ifs.T]), input_dim=2,
                            positional=positional)
    return target, arch, arch.with_heads(large), rng.random() < 0.5


def _lines(enc: encoder.Encoding) -> list[str]:
    return sorted(enc.text.split("\n"))


@pytest.mark.parametrize("index", range(60))
def test_a_grown_encoding_asserts_what_a_fresh_one_asserts(index: int):
    target, small, large, anchors = _growth(index)
    grown = encoder.encode(target, small, anchors=anchors)
    before = _lines(grown)
    if not encoder.grow(grown, large):  # it could not: nothing changed, a fresh encoding is built instead
        assert _lines(grown) == before and grown.arch == small
        return
    fresh = encoder.encode(target, large, anchors=anchors)
    assert grown.arch == large
    assert _lines(grown) == _lines(fresh)
    assert (grown.levels, grown.tracked, grown.depth, grown.heads) == (fresh.levels, fresh.tracked,
                                                                       fresh.depth, fresh.heads)


def test_most_growth_cases_grow_in_place():
    grew = sum(encoder.grow(encoder.encode(t, s, anchors=a), lg) for t, s, lg, a in map(_growth, range(60)))
    assert grew >= 30, grew  # the test above must mostly compare, not skip


@pytest.mark.parametrize("target, heads, larger", [
    ("kth_largest:k=2", (2,), (3, 1)),          # more heads in a layer it has
    ("kth_largest:k=2", (1, 1), (1, 1, 9)),     # a k-th retrieval's new width: a new level
    ("min_pairwise_dot", (1, 1), (1, 1, 2)),   # a global aggregation's new width, E/2: a new level
])
def test_growth_that_needs_more_is_refused_and_changes_nothing(target, heads, larger):
    target = ifs.catalogue.as_target(target)
    arch = ifs.Architecture(heads=heads, embed_dim=32, input_dim=2)
    enc = encoder.encode(target, arch)
    text = enc.text
    assert not encoder.grow(enc, arch.with_heads(larger))
    assert enc.text == text and enc.arch == arch


@pytest.mark.parametrize("index", range(0, 200, 5))
def test_questions_asked_along_a_growing_walk_get_the_fresh_verdicts(index: int):
    """Ask one ``Questions`` each prefix of an architecture's layers (the encoding grows a layer at a time)
    and compare with a fresh decision of each prefix."""
    case = random_case(index)
    heads = case.arch.heads + (1,)
    questions = Questions(ifs.catalogue.as_target(case.text), cost.DecodeLaw.SEED)
    for layers in range(1, len(heads) + 1):
        arch = case.arch.with_heads(heads[:layers])
        walked = questions.decide(arch, Deadline(60))
        fresh = ifs.decide(case.text, arch, timeout=60)
        assert (walked.status, walked.exponent) == (fresh.status, fresh.exponent), (case, arch)


def test_an_interrupted_growth_leaves_no_half_grown_encoding(monkeypatch):
    """Ctrl-C while a layer is being added: the next question builds its encoding afresh and gets the
    verdict a fresh session gets (a half-grown solver would lack the new layer's constraints)."""
    target = ifs.catalogue.as_target("min_pairwise_dot")
    arch = ifs.Architecture(heads=(1,), embed_dim=32, input_dim=2)
    questions = Questions(target)
    assert questions.decide(arch, Deadline(60)).status is ifs.Status.INFEASIBLE
    real = encoder._Builder.update_rules

    def interrupted(self, layer):
        real(self, layer)
        raise KeyboardInterrupt

    monkeypatch.setattr(encoder._Builder, "update_rules", interrupted)
    with pytest.raises(KeyboardInterrupt):
        questions.decide(arch.with_heads((1, 1)), Deadline(60))
    monkeypatch.setattr(encoder._Builder, "update_rules", real)
    again = questions.decide(arch.with_heads((1, 1)), Deadline(60))
    fresh = ifs.decide(target, arch.with_heads((1, 1)))
    assert (again.status, again.exponent) == (fresh.status, fresh.exponent) == (ifs.Status.FEASIBLE, 1)
