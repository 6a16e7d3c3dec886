"""A sweep on a Ray cluster: a local instance started by the test (Ray is the optional ``distributed`` extra,
installed by the README's test command). The cells must be the ones a local sweep decides."""
from __future__ import annotations

import pytest

import infoflow_smt as ifs

ray = pytest.importorskip("ray", reason="the distributed extra: pip install -e '.[distributed]'")


@pytest.fixture(scope="module")
def local_cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


def test_a_small_sweep_on_a_local_ray_cluster_matches_the_local_one(local_cluster, tmp_path):
    grid = [ifs.Architecture(heads=(h,) * L, input_dim=2) for L in (1, 2) for h in (1, 2, 3)]
    targets = ["min_pairwise_dot", "intrinsic_dimension:D=3"]
    on_ray = ifs.sweep(targets, grid, backend="ray", cache=tmp_path / "ray.jsonl")
    here = ifs.sweep(targets, grid, workers=1, cache=False)

    def verdicts(result):
        return [(c.target, c.architecture.heads, c.status, c.exponent, c.inferred) for c in result.cells]
    assert verdicts(on_ray) == verdicts(here)
    assert on_ray.decided > 0 and (tmp_path / "ray.jsonl").read_text().count("\n") == on_ray.decided
