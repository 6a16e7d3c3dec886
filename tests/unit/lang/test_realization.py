"""The realization behind a target's names: seeded matrices, vectors, smooth functions and subsets."""
from __future__ import annotations

import numpy as np
import pytest

from infoflow_smt.errors import InvalidSpecError
from infoflow_smt.lang.expr import AllPositions, FixedIndex, Range, Subset
from infoflow_smt.lang.realization import Realization, SmoothFunction
from infoflow_smt.lang.target import Target, parse_target


def _X(batch=3, T=5, d=2, seed=0):
    return np.random.default_rng(seed).normal(size=(batch, T, d))


def _in_subset(t: int, i: int) -> bool:
    """The documented subset rule, restated independently: t in S_i iff (t - i) % 4 in (0, 1)."""
    return (t - i) % 4 in (0, 1)


def test_realization_is_deterministic_per_seed_and_name():
    a, b = Realization(3), Realization(3)
    np.testing.assert_array_equal(a.matrix("A1", 4), b.matrix("A1", 4))
    np.testing.assert_array_equal(a.vector("a1", 4), b.vector("a1", 4))
    u = _X(batch=5, T=1, d=3)[:, 0]
    np.testing.assert_array_equal(a.function("f1", 3)(u), b.function("f1", 3)(u))
    assert not np.allclose(a.matrix("A1", 4), Realization(4).matrix("A1", 4))
    assert not np.allclose(a.matrix("A1", 4), a.matrix("A2", 4))
    assert not np.allclose(a.function("f1", 3)(u), a.function("f2", 3)(u))
    target = parse_target("max(f1(x[t]) for t in T)")
    X = _X()
    assert not np.allclose(target.evaluate(X), Target(target.expr, target.text, seed=1).evaluate(X))


def test_realization_shapes_and_scale():
    R = Realization(0)
    assert R.matrix("A", 64).shape == (64, 64)
    assert abs(R.matrix("A", 64).std() * 8 - 1) < 0.1  # entries ~ N(0, 1/d)
    assert R.function("F0", 3)(np.zeros((2, 5, 3))).shape == (2, 5)
    with pytest.raises(InvalidSpecError, match="function of 3 inputs applied to shape"):
        R.function("F0", 3)(np.zeros((2, 4)))
    with pytest.raises(InvalidSpecError, match="dimension d must be an integer >= 1, got 0"):
        R.vector("a", 0)


def test_smooth_function_is_smooth_with_a_minimum_near_its_center():
    f = Realization(0).function("f1", 2)
    grid = np.stack(np.meshgrid(np.linspace(-4, 4, 161), np.linspace(-4, 4, 161)), axis=-1)
    values = f(grid)
    i, j = np.unravel_index(values.argmin(), values.shape)
    assert np.linalg.norm(grid[i, j] - f.center) < 1.0
    assert np.isfinite(values).all()


@pytest.mark.parametrize("T", range(3, 20))
@pytest.mark.parametrize("i", range(1, 9))
def test_subset_rule(T, i):
    mask = Realization(5).subset_mask(f"S{i}", T)
    assert mask.tolist() == [_in_subset(t, i) for t in range(1, T + 1)]
    assert mask.sum() >= T / 4 and mask.any()


def test_subsets_differ_and_s3_is_empty_at_T2():
    R = Realization()
    masks = {tuple(R.subset_mask(f"S{i}", 8)) for i in range(1, 5)}
    assert len(masks) == 4
    assert not R.subset_mask("S3", 2).any()
    with pytest.raises(InvalidSpecError, match="subset names are S1, S2"):
        R.subset_mask("T1", 4)


def test_domain_positions():
    R = Realization()
    assert R.domain_positions(AllPositions(), 4).tolist() == [1, 2, 3, 4]
    assert R.domain_positions(Subset("S2"), 6).tolist() == [2, 3, 6]
    assert R.domain_positions(Range(FixedIndex(2), FixedIndex(-1, True)), 4).tolist() == [2, 3, 4]
    assert R.domain_positions(Range(FixedIndex(1), FixedIndex(9)), 4).tolist() == [1, 2, 3, 4]  # clipped
    assert R.domain_positions(Range(FixedIndex(3), FixedIndex(1, True)), 4).tolist() == []


@pytest.mark.parametrize("name, m", [("f1", 1), ("f1", 2), ("f2", 3), ("F0", 2), ("f4", 4)])
def test_the_least_value_of_a_function_is_below_every_sampled_value_and_reached(name, m):
    f = Realization(3).function(name, m)
    least = f.minimum()
    values = f(np.random.default_rng(1).standard_normal((100_000, m)) * 2)
    assert least is not None and least <= values.min() and values.min() - least < 0.05


def test_no_least_value_is_claimed_where_convexity_is_not_shown():
    steep = SmoothFunction(center=np.zeros(2), weight=np.array([3.0, 0.0]), bias=0.0)
    assert steep.minimum() is None
