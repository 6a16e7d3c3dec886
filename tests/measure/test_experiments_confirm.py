"""``experiments.confirm``: a decided case checked against trained networks, by its trend over T.

Where a test trains, the budget is a few seconds, so the NMSE figures mean little: those tests check what
confirm promises (the neighbours it picks, every length trained, the budget kept, the rule stated, the table
and its JSON, a target text no catalogue entry has). The judging is tested with the training replaced by
figures written out here (``_train_lengths``), so each row's agreement is known in advance.
"""
from __future__ import annotations

import json
import math
import os
import re
import time
from types import SimpleNamespace

import pytest

pytest.importorskip("torch")
import torch._dynamo  # noqa: F401  (the first AdamW imports it: seconds under load, outside any budget)

import experiments
import infoflow_smt as ifs
from experiments.confirmation import confirming, neighbours, run, schedule
from experiments.confirmation.confirming import COMPILE_BETAS, COMPILE_SAMPLES
from experiments.confirmation.table import NOT_COMPILED
from experiments.confirmation.trend import DEFAULT_THRESHOLD
from experiments.training.trainer import TrainConfig

TEXT = "max(f1(x[t]) + f2(x[t]) for t in T)"   # no catalogue entry has this target


def test_neighbours_of_a_two_layer_verdict() -> None:
    v = ifs.decide("intrinsic_dimension:D=2", ifs.Architecture((2, 2), 16, 4), seq_len=16)
    rows = neighbours.neighbours(v, 16)
    roles = [(role, tuple(n.architecture.heads), n.status.value) for role, n in rows]
    assert roles[0] == ("decided", (2, 2), "feasible")
    assert roles[1][0].startswith("one head fewer, layer ") and roles[1][2] == "infeasible"
    assert roles[1][1] in ((1, 2), (2, 1))
    assert roles[2] == ("one layer fewer", (2,), "infeasible")


def test_an_infeasible_verdict_gets_a_stronger_neighbour() -> None:
    v = ifs.decide("linear_max_sum:D=3", ifs.Architecture((2,), 16, 4), seq_len=16)
    rows = neighbours.neighbours(v, 16)
    assert [tuple(n.architecture.heads) for _, n in rows] == [(2,), (1,), (3,)]
    assert rows[-1][0] == "one head more per layer" and rows[-1][1].status is ifs.Status.FEASIBLE


def test_confirm_a_target_text_within_its_budget() -> None:
    v = ifs.decide(TEXT, ifs.Architecture((1, 1), 8, 2), seq_len=6)
    start = time.perf_counter()
    result = experiments.confirm(v, budget="6s")
    wall = time.perf_counter() - start
    assert wall < 6 + 4, f"budget 6 s, took {wall:.1f} s"          # the deadline stops training at once
    assert [r.heads for r in result.rows] == [(1, 1), (1,)]
    assert result.target == v.target.text and result.seq_len == 6 and result.seq_lens == (6,)
    assert result.threshold == DEFAULT_THRESHOLD
    assert all(r.steps >= 20 and r.nmse == r.nmse and len(r.cells) == 1 for r in result.rows)
    text = str(result)
    assert "threshold fixed before training: efficient = best validation NMSE < 0.01" in text
    assert "one length (T = 6) cannot show a trend" in text
    assert "decided" in text and "one layer fewer" in text and "agreement:" in text
    assert ("model: token MLP (ReLU, hidden 32), residual, no LayerNorm, GELU FFN, hidden 128, inverse "
            "temperature 1, GELU readout, hidden 32") in text   # a target text gets the general family
    doc = json.loads(json.dumps(result.to_json()))  # JSON-ready
    assert doc["threshold"] == DEFAULT_THRESHOLD and doc["budget_s"] == 6.0 and doc["seq_lens"] == [6]
    assert [row["heads"] for row in doc["rows"]] == [[1, 1], [1]]
    assert {"status", "exponent", "nmse", "agree", "measured_efficient", "cells"} <= set(doc["rows"][0])


def test_confirm_trains_every_length_within_its_budget() -> None:
    v = ifs.decide("min_pairwise_dot", ifs.Architecture((1, 1), 8, 2))
    start = time.perf_counter()
    result = experiments.confirm(v, budget="8s", seq_len=(4, 8, 16), against=[(2,)])
    wall = time.perf_counter() - start
    assert wall < 8 + 6, f"budget 8 s, took {wall:.1f} s"
    assert result.seq_lens == (4, 8, 16) and result.seq_len == 16
    assert [(r.role, r.heads) for r in result.rows] == [("decided", (1, 1)), ("one layer fewer", (1,)),
                                                       ("asked for", (2,))]
    for row in result.rows:
        assert [c.seq_len for c in row.cells] == [4, 8, 16] and all(c.steps >= 1 for c in row.cells)
        assert all(c.nmse == c.nmse for c in row.cells) and row.nmse == row.cells[-1].nmse
    assert result.recipe["n_train"].keys() == {4, 8, 16}
    # d = 2, E = 8: one layer of one head costs T/4 - 1, 0 and 1 at T = 4 and 8, not above (1, 1)'s 1; one
    # layer of two heads aggregates in a head of width 4, T/2 - 1: 1 at T = 4, 3 at T = 8
    assert [c.exponent for c in result.rows[1].cells] == [0.0, 1.0, 3.0]
    assert [c.exponent for c in result.rows[2].cells] == [1.0, 3.0, 7.0]
    assert result.rows[1].judgement.unseparated == (4, 8) and result.rows[2].judgement.unseparated == (4,)


def test_confirm_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    from experiments.__main__ import main

    code = main(["confirm", TEXT, "--heads", "1", "--embed-dim", "8", "--input-dim", "2", "--seq-len", "6",
                 "--budget", "3s", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code in (0, 1) and doc["rows"][0]["heads"] == [1] and doc["seq_len"] == 6 and doc["seq_lens"] == [6]


def test_confirm_command_line_with_lengths_and_more_architectures(capsys: pytest.CaptureFixture[str]) -> None:
    from experiments.__main__ import main

    code = main(["confirm", "min_pairwise_dot", "--heads", "1,1", "--embed-dim", "8", "--input-dim", "2",
                 "--seq-len", "16,4", "--against", "2", "--budget", "4s", "--json"])
    doc = json.loads(capsys.readouterr().out)
    good, total = doc["agreement"]
    assert code == (0 if good == total and total > 0 else 1)   # a table that judges nothing confirms nothing
    assert doc["seq_lens"] == [4, 16] and [row["heads"] for row in doc["rows"]] == [[1, 1], [1], [2]]
    assert [cell["seq_len"] for cell in doc["rows"][2]["cells"]] == [4, 16]
    assert doc["rows"][1]["cells"][0]["separates"] is False and doc["rows"][1]["cells"][1]["separates"] is True


# ---- the judging, on figures written out here ------------------------------------------------------------

MPD = ifs.decide("min_pairwise_dot", ifs.Architecture((1, 1), 16, 4))   # T d / E - 1 = 1, 3, 7 at T = 8, 16, 32
FIGURES = {(1, 1): (1e-3, 1.2e-3, 1.5e-3),     # flat, below the threshold: agrees
           (1,): (1e-2, 3e-2, 9e-2),          # rises 9x: agrees
           (2,): (1e-3, 1.1e-3, 1.3e-3)}      # as good as (1, 1) at T = 32, and flat: disagrees


def fake_training(figures: dict) -> object:
    def train(verdict, lengths, verdicts, setup, budget_s, start, dev, seeds, workers, threads):
        metrics = {T: [[SimpleNamespace(nmse_best=figures[tuple(v.architecture.heads)][i], steps=100 * T)]
                       for v in verdicts] for i, T in enumerate(lengths)}   # run.train_lengths
        return metrics, {"lr": 1e-2, "weight_decay": 1e-2, "batch_size": 128, "steps": 100, "planned_s": 1.0,
                         "n_train": {T: 1000 for T in lengths}}
    return train


def test_rows_are_judged_by_their_trend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run, "train_lengths", fake_training(FIGURES))
    monkeypatch.setattr(confirming, "compiled_checker", lambda: None)     # nothing compiled
    result = experiments.confirm(MPD, budget=60, against=[(1,), (2,)])
    assert result.seq_lens == (8, 16, 32) and result.control == "decided, 1,1"
    assert [(r.heads, r.agree) for r in result.rows] == [((1, 1), True), ((1,), True), ((2,), False)]
    assert result.agreement == (2, 3) and result.rows[2].role == "asked for"
    assert "rises 9.0x from T = 8 to 32 (>= 4x)" in result.rows[1].judgement.reason
    assert "0.9x the control at T = 32 (< 4x)" in result.rows[2].judgement.reason
    assert result.rows[1].judgement.unseparated == (8,)   # one head: T/4 - 1 = 1 = 1 at T = 8
    assert result.rows[2].judgement.unseparated == ()     # two heads of width 8: T/2 - 1 = 3 at T = 8
    text = str(result)
    assert "1.00e-02 [1]=" in text and "3.00e-02 [3] " in text and "rule fixed before training" in text
    assert "solver, exponent: decided for all large T" in text and result.decided_at is None
    assert text.count(NOT_COMPILED) == 1 and text.count("none: infeasible") == 2
    doc = json.loads(json.dumps(result.to_json()))
    assert doc["agreement"] == [2, 3] and doc["rows"][1]["unseparated"] == [8]
    assert [c["compiled_nmse"] for c in doc["rows"][0]["cells"]] == [None, None, None]
    assert doc["rows"][0]["compiled"] == NOT_COMPILED and doc["rule"]["rise_factor"] == 4.0


def test_the_compiled_witness_is_reported_beside_the_trained_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def check_compiled(verdict, betas, seq_lens, samples):
        calls.append((tuple(verdict.architecture.heads), tuple(betas), tuple(seq_lens), samples))
        return SimpleNamespace(at=lambda b, T: 1e-4 / b * T)

    monkeypatch.setattr(run, "train_lengths", fake_training(FIGURES))
    monkeypatch.setattr(confirming, "compiled_checker", lambda: check_compiled)
    result = experiments.confirm(MPD, budget=60, against=[(2,)])
    assert calls == [((1, 1), COMPILE_BETAS, (8, 16, 32), COMPILE_SAMPLES)]    # infeasible rows: nothing to compile
    beta = max(COMPILE_BETAS)
    assert [c.compiled_nmse for c in result.rows[0].cells] == [1e-4 / beta * T for T in (8, 16, 32)]
    assert result.rows[0].compiled == f"beta {beta:g}" and result.rows[1].compiled == "none: infeasible"
    assert f"<= {1e-4 / beta * 32:.1e}" in str(result)


def test_a_refused_compilation_names_its_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    def check_compiled(verdict, betas, seq_lens, samples):
        raise ifs.InvalidSpecError("score f1(x[s] + x[t]) is not a sum of products\nslot 0..0: the constant 1",
                                   subject="compile")

    monkeypatch.setattr(run, "train_lengths", fake_training(FIGURES))
    monkeypatch.setattr(confirming, "compiled_checker", lambda: check_compiled)
    result = experiments.confirm(MPD, budget=60)
    row = result.rows[0]
    assert row.compiled.startswith("refused: ") and "f1(x[s] + x[t])" in row.compiled
    assert "slot" not in row.compiled   # the reason's first line; the allocation after it is left out
    assert all(c.compiled_nmse is None for c in row.cells)
    text = str(result)                  # too long for its column: the column says so, the reason is below
    assert "refused (below)" in text and f"compiled: {row.compiled}" in text


def test_the_real_compiled_witness_fills_the_column() -> None:
    """With the real ``experiments.check_compiled``: the decided row's compiled NMSE at every length."""
    how, by_length = confirming._compiled(MPD, (8, 16))
    assert how == f"beta {max(COMPILE_BETAS):g}" and set(by_length) == {8, 16}
    assert all(0 <= nmse < 1e-2 for nmse in by_length.values()), by_length


def test_the_compiled_checker_is_experiments_check_compiled() -> None:
    assert confirming.compiled_checker() is experiments.check_compiled


def test_a_verdict_at_one_T_is_confirmed_at_that_T(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run, "train_lengths", fake_training({(1, 1): (1e-3,), (1,): (2e-2,)}))
    v = ifs.decide("min_pairwise_dot", ifs.Architecture((1, 1), 16, 4), seq_len=16)
    result = experiments.confirm(v, budget=60)
    assert result.seq_lens == (16,)
    assert [r.agree for r in result.rows] == [True, True]          # 20x the efficient row at T = 16
    assert "one length cannot show a trend" in result.rows[1].judgement.reason
    # the solver's row at one T: its exponent is a number there, and the table says what the status compares
    assert result.decided_at == 16 and result.to_json()["decided_at"] == 16
    assert ("solver, exponent: decided at T = 16, where every cost is a number: the status still says whether "
            "some program's cost stays bounded as T grows") in str(result)


def test_a_table_that_judges_no_row_says_so_and_exits_1(monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    # one layer of one head and its stronger neighbour, one layer of two: both infeasible, so no control shows
    # that the training teaches the target, however their errors rise with T
    from experiments.__main__ import main

    monkeypatch.setattr(run, "train_lengths", fake_training({(1,): (0.1, 0.5, 0.97), (2,): (0.1, 0.4, 0.9)}))
    monkeypatch.setattr(confirming, "compiled_checker", lambda: None)
    code = main(["confirm", "min_pairwise_dot", "--heads", "1", "--embed-dim", "16", "--input-dim", "4",
                 "--budget", "60s"])
    out = capsys.readouterr().out
    assert code == 1 and "agreement: 0/0 judged rows" in out
    assert "nothing judged: no row's measurements could be set against its verdict" in out
    assert out.count("no efficient row trained beside it") == 2


# ---- budgets too small to train, and verdicts the solver could not give --------------------------------

def test_a_machine_slower_than_its_probes_cuts_every_remaining_job_a_little_not_the_last_one_to_nothing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # six jobs probed at 1 ms a step run at 1.4 ms; the plan (200 steps each) fits 1.2 s, the budget 1.45 s.
    # Without re-planning the sixth job would start with 0.05 s left and train a handful of steps.
    def slow_training(data, cfgs, seeds, recipe, device, deadline):
        done = 0
        while done < recipe.steps and time.perf_counter() < deadline:
            time.sleep(0.014)
            done += 10
        return [SimpleNamespace(steps=min(done, recipe.steps))] * len(cfgs)

    monkeypatch.setattr(run, "train_models", slow_training)
    jobs = {(T, k): [(k, SimpleNamespace(), 0)] for T in (8, 16, 32) for k in range(2)}
    probed = {job: (1e-3, 0.0) for job in jobs}
    recipes = {T: TrainConfig() for T in (8, 16, 32)}
    end = time.perf_counter() + 1.45
    metrics = run._train_planned({T: None for T in recipes}, jobs, recipes, probed, 200, end, None)
    steps = [m.steps for job in jobs for m in metrics[job]]
    assert steps[0] == 200 and min(steps) >= 100, steps
    assert time.perf_counter() <= end + 0.05


def test_a_budget_too_small_to_train_is_refused_naming_the_value_and_the_minimum() -> None:
    from experiments.confirmation.schedule import minimum_budget

    with pytest.raises(ifs.InvalidSpecError, match=r"budget 1e-09 s is too small to train: .* at least 3\.6 s"):
        experiments.confirm(MPD, budget=1e-9)
    assert minimum_budget(3) == pytest.approx(3.6) and minimum_budget(1) < 3   # the "3s" command line above


def test_the_command_line_refuses_a_tiny_budget_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from experiments.__main__ import main

    code = main(["confirm", "min_pairwise_dot", "--heads", "1", "--budget", "1e-9"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "1e-09" in err and "at least" in err


def test_an_unknown_verdict_is_said_and_exits_3_without_training(monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from experiments.__main__ import main

    hard = ifs.decide("triangle_center", ifs.Architecture((8, 8, 8), 64, 4), timeout=0.001)
    assert hard.status.value == "unknown"
    monkeypatch.setattr(ifs, "decide", lambda *args, **kwargs: hard)
    monkeypatch.setattr(run, "train_lengths", lambda *args: pytest.fail("an unknown verdict trained"))
    code = main(["confirm", "triangle_center", "--heads", "8,8,8", "--embed-dim", "64", "--budget", "5s"])
    out = capsys.readouterr().out
    assert code == 3 and "nothing to confirm" in out and "agreement" not in out


def test_an_undecided_neighbour_is_named_and_not_judged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run, "train_lengths", fake_training({**FIGURES, (8, 8, 8): (1, 1, 1)}))
    monkeypatch.setattr(confirming, "compiled_checker", lambda: None)
    unknown = ifs.decide("triangle_center", ifs.Architecture((8, 8, 8), 64, 4), timeout=0.001)
    real = neighbours.decide
    monkeypatch.setattr(neighbours, "decide", lambda target, arch, seq_len: unknown
                        if tuple(arch.heads) == (1,) else real(target, arch, seq_len))
    result = experiments.confirm(MPD, budget=60)
    named = "one layer fewer (8,8,8)"      # the unknown verdict stands for the one-layer neighbour
    assert result.undecided == (named,) and result.to_json()["undecided"] == [named]
    assert f"undecided by the solver (unknown, not judged): {named}" in str(result)
    assert result.wall_s >= 0 and result.rows[1].agree is None


# ---- seeds and worker processes -------------------------------------------------------------------------

def test_a_cell_is_the_best_of_its_seeds_and_every_seed_is_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    # seed 3 of the decided row stalls at T = 32 (1.4e-2), seed 4 does not; seed 4 of (1,) diverged at T = 8
    per_seed = {(1, 1): ((1e-3, 1.2e-3, 1.4e-2), (9e-4, 1.1e-3, 2e-3)),
                (1,): ((1e-2, 3e-2, 9e-2), (math.nan, 2.9e-2, 8e-2))}

    def train(verdict, lengths, verdicts, setup, budget_s, start, dev, seeds, workers, threads):
        assert seeds == (3, 4) and workers == 1
        metrics = {T: [[SimpleNamespace(nmse_best=per_seed[tuple(v.architecture.heads)][s][i], steps=100 + s)
                        for s in range(2)] for v in verdicts] for i, T in enumerate(lengths)}
        return metrics, {"lr": 1e-2, "weight_decay": 1e-2, "batch_size": 128, "steps": 100, "planned_s": 1.0,
                         "n_train": {T: 1000 for T in lengths}, "seeds": list(seeds), "workers": workers}

    monkeypatch.setattr(run, "train_lengths", train)
    monkeypatch.setattr(confirming, "compiled_checker", lambda: None)
    result = experiments.confirm(MPD, budget=60, seed=3, seeds=2, workers=1)
    decided, one_layer = result.rows
    assert [c.nmse for c in decided.cells] == [9e-4, 1.1e-3, 2e-3] and decided.agree is True
    assert decided.cells[-1].seed_nmse == (1.4e-2, 2e-3) and all(c.steps == 100 for c in decided.cells)
    assert one_layer.cells[0].nmse == 1e-2     # the seed that diverged (NaN) is not the best
    text = str(result)
    assert "seeds: 3, 4 for every model at every T; a cell is the best of them" in text
    assert "seeds: T = 8 1.0e-03 / 9.0e-04; T = 16 1.2e-03 / 1.1e-03; T = 32 1.4e-02 / 2.0e-03" in text
    doc = json.loads(json.dumps(result.to_json()))
    assert doc["rows"][0]["cells"][2]["seed_nmse"] == [1.4e-2, 2e-3] and doc["recipe"]["seeds"] == [3, 4]


@pytest.mark.parametrize("options, message", [
    ({"seeds": 0}, "seeds must be an integer from 1 to 64, got 0"),
    ({"seeds": True}, "seeds must be an integer from 1 to 64, got True"),
    ({"seeds": 2.0}, "seeds must be an integer from 1 to 64, got 2.0"),
    ({"workers": 0}, "workers must be an integer from 1 to 256, got 0"),
    ({"seed": -1}, "seed must be an integer >= 0, got -1"),
])
def test_bad_seeds_and_workers_are_refused_naming_the_value(options: dict, message: str) -> None:
    with pytest.raises(ifs.InvalidSpecError, match=re.escape(message)):
        experiments.confirm(MPD, budget=60, **options)


def test_the_command_line_refuses_zero_seeds_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from experiments.__main__ import main

    code = main(["confirm", "min_pairwise_dot", "--heads", "1", "--seeds", "0"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--seeds" in err and "0" in err


def test_jobs_are_dealt_to_workers_longest_first_and_each_share_runs_shortest_T_first() -> None:
    probed = {(8, "a"): (1.0, 0.0), (8, "b"): (0.2, 0.0), (16, "a"): (2.0, 0.0), (16, "b"): (0.3, 0.0),
              (32, "a"): (4.0, 0.0), (32, "b"): (0.5, 0.0)}
    shares = schedule.shares(probed, 2)
    assert shares == [[(32, "a")], [(8, "a"), (8, "b"), (16, "a"), (16, "b"), (32, "b")]]   # 4.0 and 4.0 a step
    assert schedule.shares(probed, 1) == [list(probed)]
    assert sorted(map(len, schedule.shares(probed, 8))) == [1] * 6                 # no empty share


def test_a_job_trains_the_same_in_a_worker_process_as_here() -> None:
    from dataclasses import replace

    import torch

    from experiments.tables.profiles import confirm_setup
    from experiments.training.data import make_dataset

    data = make_dataset("min_pairwise_dot", 4, 2, 256, 64)
    cfg = replace(confirm_setup("min_pairwise_dot")[0], input_dim=2, seq_len=4, heads=(1,), embed_dim=8,
                  output_dim=1)
    job = (4, cfg.batch_key())
    share = ({4: data}, {job: [(0, cfg, 0), (0, cfg, 1)]}, {4: TrainConfig(batch_size=32)},
             {job: (1e-3, 0.0)}, 30, time.time() + 120, torch.device("cpu"), 1)
    here = run._train_share(*share)[job]
    with run._pool(2) as pool:
        there = run._map(pool, run._train_share, [share])[0][job]
    assert [m.steps for m in here] == [30, 30]
    assert [m.nmse_best for m in there] == [m.nmse_best for m in here]   # the same models, bit for bit
    assert here[0].nmse_best != here[1].nmse_best                           # two seeds, two models


def test_confirm_in_two_processes_with_two_seeds() -> None:
    v = ifs.decide("min_pairwise_dot", ifs.Architecture((1, 1), 8, 2))
    start = time.perf_counter()
    result = experiments.confirm(v, budget="20s", seq_len=(4, 8), seeds=2, workers=2)
    wall = time.perf_counter() - start
    assert wall < 20 + 8, f"budget 20 s, took {wall:.1f} s"
    assert result.recipe["workers"] == 2 and result.recipe["seeds"] == [0, 1]
    for row in result.rows:
        for cell in row.cells:
            assert len(cell.seed_nmse) == 2 and cell.nmse == min(cell.seed_nmse) and cell.steps >= 1
    assert "in 2 processes" in str(result) and "seeds: 0, 1 for every model at every T" in str(result)


def test_a_short_budget_trains_in_this_process_and_a_long_one_in_one_per_core() -> None:
    cpu = SimpleNamespace(type="cpu")
    assert run.default_workers(cpu, run.POOL_MIN_BUDGET_S - 1) == 1
    assert run.default_workers(cpu, run.POOL_MIN_BUDGET_S) == len(os.sched_getaffinity(0))
