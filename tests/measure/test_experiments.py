"""Tests of the experiment module (experiments/): data, model, batched training, store, CLI, validate.

Kept small: the whole file runs in well under a minute on 2 CPU cores. torch is required (the
``experiments`` extra); without it the module is skipped.
"""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from experiments.__main__ import main as cli_main
from experiments.tables.profiles import get_profile
from experiments.tables.run import plan, run_profile
from experiments.tables.store import ResultStore, store_path
from experiments.training import data as xdata
from experiments.training.network import BatchedTransformer, ModelConfig
from experiments.training.trainer import TrainConfig, train_models

SMOKE = get_profile("smoke")
SMOKE_RUNS = sum(len(job.runs) for job in plan(SMOKE))


# --- data -------------------------------------------------------------------------------------------

def test_dataset_is_deterministic_and_records_seeds() -> None:
    a = xdata.make_dataset("linear_max_sum:D=2", 6, 3, 20, 10, seed=5, target_seed=2)
    b = xdata.make_dataset("linear_max_sum:D=2", 6, 3, 20, 10, seed=5, target_seed=2)
    c = xdata.make_dataset("linear_max_sum:D=2", 6, 3, 20, 10, seed=6, target_seed=2)
    assert np.array_equal(a.X_train, b.X_train) and np.array_equal(a.y_val, b.y_val)
    assert not np.array_equal(a.X_train, c.X_train)
    assert (a.target, a.target_seed, a.data_seed) == ("linear_max_sum:D=2", 2, 5)
    assert a.fingerprint() == b.fingerprint() != c.fingerprint()


def test_labels_come_from_the_target_definition() -> None:
    from infoflow_smt.lang import catalogue

    ds = xdata.make_dataset("intrinsic_dimension:D=2", 5, 2, 16, 8, seed=0, target_seed=3)
    expected = catalogue.parse_spec("intrinsic_dimension:D=2", seed=3).evaluate(ds.X_train)
    assert np.allclose(ds.y_train, expected)
    assert ds.distribution is xdata.Distribution.GAUSSIAN


def test_labels_from_a_process_pool_are_identical(monkeypatch: pytest.MonkeyPatch) -> None:
    serial = xdata.make_dataset("triangle_center", 6, 2, 40, 10, seed=1)
    monkeypatch.setattr(xdata, "_POOL_WORTH_S", 0.0)  # force the pool even for cheap labels
    pooled = xdata.make_dataset("triangle_center", 6, 2, 40, 10, seed=1, label_workers=2)
    assert np.array_equal(serial.y_train, pooled.y_train) and np.array_equal(serial.y_val, pooled.y_val)


def test_triangle_center_inputs_are_clamped() -> None:
    ds = xdata.make_dataset("triangle_center", 8, 2, 200, 50, seed=0)
    assert ds.distribution is xdata.Distribution.CLAMPED_GAUSSIAN
    norms = np.linalg.norm(np.concatenate([ds.X_train, ds.X_val]), axis=-1)
    assert norms.min() >= 0.2 - 1e-9 and norms.max() <= 4.0 + 1e-9
    assert (norms > 3.99).any() and (norms < 0.21).any()  # both ends bite with variance 2


@pytest.mark.parametrize("seq_len", [3, 8, 64])
def test_nearest_neighbor_inputs_have_a_margin(seq_len: int) -> None:
    ds = xdata.make_dataset("nearest_neighbor", seq_len, 2, 300, 50, seed=0)
    assert ds.distribution is xdata.Distribution.NEAREST_MARGIN
    X = np.concatenate([ds.X_train, ds.X_val])
    distances = np.linalg.norm(X[:, : seq_len - 2] - X[:, -1:], axis=-1)   # the examples x[1..T-2] to x[T]
    order = np.sort(distances, axis=1)
    assert order[:, 0].max() < 5 * xdata.MARGIN_NOISE                       # one example near the query ...
    if seq_len > 3:
        assert order[:, 1].min() >= xdata.MARGIN_RADIUS                       # ... every other one kept away
    nearest = distances.argmin(axis=1)
    labels = X[np.arange(len(X)), nearest + 1]                               # the token after it
    assert np.allclose(np.concatenate([ds.y_train, ds.y_val]), labels)


def test_the_margin_inputs_are_deterministic_and_the_rest_stays_gaussian() -> None:
    a, b = (xdata.sample_inputs(xdata.Distribution.NEAREST_MARGIN, 400, 16, 2, np.random.default_rng(3))
            for _ in range(2))
    assert np.array_equal(a, b)
    rest = a[:, : 16 - 2].reshape(-1, 2)   # examples, most drawn once; the redrawn ones are a few per cent
    assert abs(rest.mean()) < 0.05 and abs(rest.std() - 1) < 0.1


# --- model ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("heads", [(1,), (2, 3), (3, 1, 2)])
@pytest.mark.parametrize("switches", [{}, {"positional": True, "residual": True, "layernorm": True},
                                      {"residual": True, "cls_as_key": False},
                                      {"head_dim": 4, "output_dim": 3},
                                      {"residual": True, "token_embedding": "linear"},
                                      {"residual": True, "ffn_gated": True, "ffn_hidden": 6}])
def test_forward_shapes(heads: tuple[int, ...], switches: dict) -> None:
    cfg = ModelConfig(input_dim=3, seq_len=5, heads=heads, embed_dim=12, mlp_hidden=8, **switches)
    model = BatchedTransformer([cfg, replace(cfg, heads=tuple(h + 1 for h in heads))], [0, 1])
    out = model(torch.randn(2, 4, 5, 3))
    assert out.shape == (2, 4, cfg.output_dim) and torch.isfinite(out).all()


def test_linear_token_embedding_is_linear_and_the_mlp_is_not() -> None:
    cfg = ModelConfig(input_dim=3, seq_len=4, heads=(2, 2), embed_dim=8, residual=True)
    a, b = torch.randn(2, 1, 5, 4, 3, dtype=torch.float64)
    zero = torch.zeros_like(a)
    for kind, linear in (("linear", True), ("mlp", False)):
        model = BatchedTransformer([replace(cfg, token_embedding=kind)], [0], dtype=torch.float64)
        additive = model.embed(a + b) + model.embed(zero) - model.embed(a) - model.embed(b)
        assert torch.allclose(additive, torch.zeros_like(additive), atol=1e-12) == linear


def test_an_unknown_token_embedding_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="'relu'"):
        ModelConfig(token_embedding="relu")


@pytest.mark.parametrize("gated", [False, True])
def test_padding_does_not_change_a_model(gated: bool) -> None:
    """A model's output is the same alone and inside a batch padded for wider, many-headed neighbours."""
    small = ModelConfig(input_dim=2, seq_len=4, heads=(1, 2), embed_dim=8, residual=True, layernorm=True,
                        ffn_gated=gated)
    big = replace(small, heads=(4, 3), embed_dim=16, mlp_hidden=40, positional=True)
    x = torch.randn(1, 5, 4, 2, dtype=torch.float64)
    alone = BatchedTransformer([small], [7], dtype=torch.float64)
    batched = BatchedTransformer([big, small], [1, 7], dtype=torch.float64)
    assert alone.flat == set() and batched.flat == {0}   # layer 1 flat, layer 2 slots: both layouts agree
    assert torch.allclose(alone(x)[0], batched(x.expand(2, -1, -1, -1))[1], atol=1e-12)


def test_batched_training_equals_unbatched() -> None:
    ds = xdata.make_dataset("linear_max_sum:D=2", 6, 2, 64, 32, seed=0)
    cfgs = [ModelConfig(input_dim=2, seq_len=6, heads=(1,), embed_dim=8, head_dim=8, cls_as_key=False),
            ModelConfig(input_dim=2, seq_len=6, heads=(3,), embed_dim=24, head_dim=8, cls_as_key=False),
            ModelConfig(input_dim=2, seq_len=6, heads=(1,), embed_dim=16, positional=True, cls_as_key=False)]
    assert BatchedTransformer(cfgs[:2], [0, 1]).flat == set()      # shared head width: slot layout
    assert BatchedTransformer(cfgs, [0, 1, 2]).flat == {0}          # n = 8 and n = 16: flat layout
    train = TrainConfig(steps=15, batch_size=8, eval_every=5, n_train=64, n_val=32, dtype="float64")
    batched = train_models(ds, cfgs, [0, 1, 2], train)
    alone = [train_models(ds, [c], [s], train)[0] for c, s in zip(cfgs, [0, 1, 2])]
    for b, a in zip(batched, alone):
        assert b.nmse_best == pytest.approx(a.nmse_best, rel=1e-9)
        assert b.train_loss == pytest.approx(a.train_loss, rel=1e-9)
    assert batched[0].models_in_job == 3 and alone[0].models_in_job == 1


@pytest.mark.parametrize("gated", [False, True])
def test_fast_step_trains_like_the_reference_step(gated: bool) -> None:
    """Unmasked forward + fused AdamW + masks after the step == masked forward + AdamW's loop (float64)."""
    ds = xdata.make_dataset("intrinsic_dimension:D=2", 5, 2, 64, 32, seed=0)
    cfgs = [ModelConfig(input_dim=2, seq_len=5, heads=h, embed_dim=8 + 4 * (h == (2, 1)),
                        ffn_hidden=12 - 4 * (h == (1, 2)), residual=True, layernorm=True, ffn_gated=gated)
            for h in ((2, 2), (1, 2), (2, 1))]
    train = TrainConfig(steps=12, batch_size=8, eval_every=4, n_train=64, n_val=32, warmup_steps=3,
                        dtype="float64")
    fast = train_models(ds, cfgs, [0, 1, 2], train, step="fast")
    ref = train_models(ds, cfgs, [0, 1, 2], train, step="reference")
    for f, r in zip(fast, ref):
        assert (f.step_kind, r.step_kind) == ("fast", "reference")
        assert f.history == pytest.approx(r.history, rel=1e-9) and f.train_history == pytest.approx(
            r.train_history, rel=1e-9)


def test_early_stopping_freezes_each_model_at_its_own_plateau() -> None:
    """A model that stops keeps the metrics it had then, whatever its batch mates do afterwards."""
    ds = xdata.make_dataset("linear_max_sum:D=2", 6, 2, 64, 32, seed=0)
    cfgs = [ModelConfig(input_dim=2, seq_len=6, heads=(h,), embed_dim=8 * h, head_dim=8, cls_as_key=False)
            for h in (1, 2)]
    train = TrainConfig(steps=60, batch_size=8, eval_every=2, n_train=64, n_val=32, patience=2,
                        min_delta=0.5, lr=1e-4, dtype="float64")
    both = train_models(ds, cfgs, [0, 1], train)
    alone = train_models(ds, cfgs[:1], [0], train)[0]
    assert both[0].stop_reason == "plateau" and both[0].steps < 60
    assert both[0].steps == alone.steps and both[0].history_steps == alone.history_steps
    assert both[0].history == pytest.approx(alone.history, rel=1e-9)
    assert len(both[0].history) == len(both[0].history_steps) == len(both[0].train_history)


# --- profile runs, store, report ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def smoke_results(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, object]:
    results = tmp_path_factory.mktemp("results")
    return str(results), run_profile("smoke", results, device="cpu", progress=False, workers=1)


def test_smoke_profile_runs_end_to_end(smoke_results: tuple[str, object]) -> None:
    results, summary = smoke_results
    assert summary.trained == SMOKE_RUNS and summary.skipped == 0
    records = ResultStore(store_path(results, "smoke")).runs("smoke")
    assert len(records) == SMOKE_RUNS and len({r.key for r in records}) == SMOKE_RUNS
    r = records[0]
    assert {"python", "torch", "numpy", "infoflow_smt"} <= set(r.versions)
    assert {"device", "device_name", "cpu_count", "torch_threads"} <= set(r.hardware)
    assert r.config["seed"] == r.seed and r.wall_s > 0 and "nmse_best" in r.metrics


@pytest.mark.parametrize("name", ["cpu", "workers", "causal", "paper"])   # depth: the cpu profile's d3 table
def test_profiles_run_at_smoke_size(name: str, tmp_path) -> None:
    """Every table of the long profiles builds, trains, is stored and reported (tiny sizes, smallest T)."""
    from experiments.tables import summary

    prof = get_profile(name)
    tiny = replace(prof, tables=tuple(
        replace(t, seq_lens=(min(t.seq_lens),), seeds=t.seeds[:1],
                train=replace(t.train, steps=3, eval_every=3, warmup_steps=1, n_train=24, n_val=12))
        for t in prof.tables))
    ran = run_profile(tiny, tmp_path, device="cpu", progress=False, workers=1)
    assert ran.trained == sum(len(t.archs) for t in prof.tables)
    rows = summary.summarize(ResultStore(store_path(tmp_path, name)).runs(name))
    assert {r.table for r in rows} == {t.name for t in prof.tables}
    assert summary.run_checks(rows, prof)[0][0]          # plumbing: every NMSE finite


def test_rerun_skips_finished_runs(smoke_results: tuple[str, object]) -> None:
    results, _ = smoke_results
    again = run_profile("smoke", results, device="cpu", progress=False, workers=1)
    assert (again.trained, again.skipped, again.jobs_run) == (0, SMOKE_RUNS, 0)


def test_interrupted_profile_resumes_without_losing_runs(tmp_path) -> None:
    first = run_profile("smoke", tmp_path, device="cpu", progress=False, max_jobs=1, workers=1)
    assert first.jobs_run == 1 and 0 < first.trained < SMOKE_RUNS
    keys = ResultStore(store_path(tmp_path, "smoke")).finished_keys()
    rest = run_profile("smoke", tmp_path, device="cpu", progress=False, workers=1)
    assert rest.trained == SMOKE_RUNS - first.trained and rest.skipped == first.trained
    assert keys < ResultStore(store_path(tmp_path, "smoke")).finished_keys()


def test_report_json_schema_and_plots(smoke_results: tuple[str, object], capsys, tmp_path) -> None:
    results, _ = smoke_results
    assert cli_main(["report", "--profile", "smoke", "--results", results, "--json",
                     "--plots", str(tmp_path), "--markdown", str(tmp_path / "r.md")]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["profile"] == "smoke" and "plumbing" in doc["note"]
    runs = doc["configurations"]
    assert isinstance(runs, list) and runs
    need = {"target", "heads", "embed_dim", "seq_len", "seeds", "nmse_min", "nmse_median", "device", "wall_s"}
    for run in runs:
        assert need <= set(run) and run["nmse_min"] <= run["nmse_median"]
    assert {r["target"] for r in runs} == {t.target for t in SMOKE.tables}
    assert [c["holds"] for c in doc["checks"]] == [True]          # smoke: the plumbing check only
    plots = sorted(p.name for p in tmp_path.glob("*.png"))
    assert plots == ["intrinsic_D2_learning_curves.png", "intrinsic_D2_nmse_vs_heads.png",
                     "lms_D2_learning_curves.png", "lms_D2_nmse_vs_T.png", "lms_D2_nmse_vs_heads.png"]
    text = (tmp_path / "r.md").read_text()
    assert "## Checks" in text and "plumbing only" in text and "lms_D2_nmse_vs_T.png" in text


def test_report_says_smoke_checks_plumbing(smoke_results: tuple[str, object], capsys) -> None:
    results, _ = smoke_results
    assert cli_main(["report", "--profile", "smoke", "--results", results, "--no-plots"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("note: the smoke profile") and "holds: every configuration has a finite NMSE" in out


def test_a_failing_check_makes_report_exit_1(smoke_results: tuple[str, object], monkeypatch, capsys) -> None:
    from experiments.tables import profiles
    from experiments.tables.profiles import Criterion

    results, _ = smoke_results
    impossible = Criterion("transition", "lms_D2", (4,), better=(2,), worse=((1,),), ratio=1e9)
    monkeypatch.setitem(profiles.PROFILES, "smoke", replace(SMOKE, criteria=(impossible,)))
    assert cli_main(["report", "--profile", "smoke", "--results", results, "--no-plots"]) == 1
    assert "FAILS: lms_D2: T=4" in capsys.readouterr().out


def test_report_leaves_out_runs_of_an_earlier_recipe(smoke_results: tuple[str, object], monkeypatch,
                                                     capsys) -> None:
    """A profile whose recipe changed reports only the runs trained with the current one."""
    from experiments.tables import profiles

    results, _ = smoke_results
    lms, intrinsic = SMOKE.tables
    changed = replace(SMOKE, tables=(lms, replace(intrinsic, train=replace(intrinsic.train, lr=0.5))))
    monkeypatch.setitem(profiles.PROFILES, "smoke", changed)
    assert cli_main(["report", "--profile", "smoke", "--results", results, "--no-plots", "--json"]) == 0
    captured = capsys.readouterr()
    assert {r["table"] for r in json.loads(captured.out)["configurations"]} == {"lms_D2"}
    stale = len(intrinsic.archs) * len(intrinsic.seeds)
    assert f"note: {stale} stored runs of an earlier configuration" in captured.err
    nothing_current = replace(SMOKE, tables=(replace(lms, target_seed=1),))
    monkeypatch.setitem(profiles.PROFILES, "smoke", nothing_current)
    assert cli_main(["report", "--profile", "smoke", "--results", results, "--no-plots"]) == 2
    assert "has the profile's current configuration" in capsys.readouterr().err


def test_a_switch_added_later_keeps_the_keys_of_runs_stored_before_it() -> None:
    """A run with token_embedding at its original value ("mlp") hashes as it did before the switch existed;
    another value is part of the key."""
    from experiments.tables.run import run_config

    lms = SMOKE.tables[0]
    before = run_config(lms, (1,), 8, 4, 0)
    assert "token_embedding" not in before["model"] and "ffn_gated" not in before["model"]
    linear = run_config(replace(lms, token_embedding="linear"), (1,), 8, 4, 0)
    assert linear["model"]["token_embedding"] == "linear"
    assert {k: v for k, v in linear["model"].items() if k != "token_embedding"} == before["model"]


def test_a_criterion_without_results_fails(smoke_results: tuple[str, object], monkeypatch, capsys) -> None:
    from experiments.tables import profiles
    from experiments.tables.profiles import Criterion

    results, _ = smoke_results
    unrun = Criterion("transition", "lms_D2", (99,), better=(2,), worse=((1,),))
    monkeypatch.setitem(profiles.PROFILES, "smoke", replace(SMOKE, criteria=(unrun,)))
    assert cli_main(["report", "--profile", "smoke", "--results", results, "--no-plots"]) == 1
    assert "FAILS: lms_D2: not run" in capsys.readouterr().out


# --- validate -----------------------------------------------------------------------------------------

def _solver_missing() -> str | None:
    try:
        import infoflow_smt as ifs

        ifs.decide  # noqa: B018 - the lazy attribute import is the probe
    except (AttributeError, ImportError) as exc:
        return f"ifs.decide not available yet: {exc}"
    return None


def test_validate_smoke_produces_agreement_table(smoke_results: tuple[str, object]) -> None:
    missing = _solver_missing()
    if missing:
        pytest.skip(missing)
    from experiments.tables.validation import validate_table

    results, _ = smoke_results
    table = SMOKE.tables[0]
    result = validate_table(table, table.seq_lens[0], "smoke", device="cpu", results_dir=results)
    assert [r.heads for r in result.rows] == [h for h, _ in table.archs]
    assert all(r.status in ("feasible", "infeasible", "unknown") for r in result.rows)
    assert result.rows[0].status == "infeasible" and result.rows[1].status == "feasible"  # h < D, h = D
    assert result.predicted_transition == (2,)
    text = str(result)
    assert "agreement" in text and "transition predicted at (2,)" in text


def test_validate_accepts_architectures(tmp_path) -> None:
    missing = _solver_missing()
    if missing:
        pytest.skip(missing)
    import infoflow_smt as ifs
    from experiments.tables.validation import validate

    archs = [ifs.Architecture(heads=(h,), embed_dim=8 * h, input_dim=2) for h in (1, 2)]
    result = validate("linear_max_sum:D=2", archs, seq_len=4, profile="smoke", device="cpu",
                      results_dir=tmp_path)
    assert [r.heads for r in result.rows] == [(1,), (2,)] and result.threshold == SMOKE.nmse_threshold
    assert len(ResultStore(store_path(tmp_path, "smoke")).runs()) == 2 * len(SMOKE.tables[0].seeds)


# --- command line -------------------------------------------------------------------------------------

# Bad input on the command line: tests/measure/test_experiments_hostile.py (in-process and real processes).


def test_core_package_does_not_import_torch() -> None:
    code = "import sys, infoflow_smt; from infoflow_smt import catalogue; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.strip() == "False", out.stderr


# --- probes -------------------------------------------------------------------------------------------

def test_soft_program_is_the_target_when_sharp_and_a_mean_when_flat() -> None:
    from experiments.tables.probes import soft_program_nmse

    ds = xdata.make_dataset("intrinsic_dimension:D=2", 6, 3, 400, 1, seed=0)
    target = xdata.resolve_target("intrinsic_dimension:D=2")
    assert soft_program_nmse(target, ds.X_train, ds.y_train, 2, 1e4, 1e4) < 1e-12
    flat = soft_program_nmse(target, ds.X_train, ds.y_train, 2, 0.0, 0.0)
    assert flat > 0.1 and flat > soft_program_nmse(target, ds.X_train, ds.y_train, 2, 2.0, 2.0)


def test_a_causal_model_hides_later_tokens_from_each_input_position():
    import torch
    cfg = ModelConfig(input_dim=2, seq_len=6, heads=(2, 1), embed_dim=8, residual=True, causal=True)
    model = BatchedTransformer([cfg], [0], dtype=torch.float64)
    x = torch.randn(1, 3, 6, 2, dtype=torch.float64)
    changed = x.clone()
    changed[:, :, 4] += 1.0   # position 5 of 6
    states = []
    for inputs in (x, changed):
        model.trace = {}
        model(inputs)
        states.append(model.trace["ffn_out0"])
    assert torch.allclose(states[0][:, :, :4], states[1][:, :, :4])   # positions 1..4 never saw it
    assert not torch.allclose(states[0][:, :, 4:], states[1][:, :, 4:])  # position 5 and the output token did
    assert ModelConfig(causal=True).batch_key() != ModelConfig().batch_key()
