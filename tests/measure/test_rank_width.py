"""``benchmarks/rank_width.py`` (the rank experiment, docs/reproduction.md) at smoke size: it trains, and its
verdict columns say what the rank rule says at a head below, at and above the rank."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "rank_width.py"


def _module():
    spec = importlib.util.spec_from_file_location("rank_width", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def test_the_rank_experiment_runs_and_its_verdicts_follow_the_rule() -> None:
    module = _module()
    lines = module.run(module.RankWidthConfig(budget_s=1.0, n_train=512, n_val=128, seeds=(0,)))
    rows = {int(line.split()[0]): line for line in lines if line[:3].strip().isdigit()}
    assert sorted(rows) == [2, 4, 8]
    assert rows[2].rstrip().endswith("infeasible (2*T - 1)") and "feasible (1)" in rows[2]
    assert all(rows[n].rstrip().endswith("feasible (1)") and "infeasible" not in rows[n] for n in (4, 8))
    assert any("2-core CPU shared with other jobs" in line for line in lines)
