"""The compiled witness (experiments.compile) against the target's own evaluation, and the CLI around it."""
from __future__ import annotations

import dataclasses
import json

import jsonschema
import numpy as np
import pytest
from support.fresh import on_a_new_thread

torch = pytest.importorskip("torch")

import experiments
import infoflow_smt as ifs
from experiments.compilation import command, layout, separable
from experiments.compilation import facts as facts_
from experiments.compilation.facts import Role
from experiments.compilation.head_plan import HeadKind
from experiments.compilation.weights import CompiledTransformer
from infoflow_smt.errors import CompileRefusal
from infoflow_smt.lang import expr as ex
from infoflow_smt.model.program import Program

FAST = {"betas": (4, 16, 64, 256), "seq_lens": (8, 32), "samples": 24}


def _verdict(spec: str, heads: tuple[int, ...], positional: bool = False, causal: bool = False):
    """Decided in a z3 context of its own (``support.fresh``): some tests here ask for the mechanism one of
    several equal witnesses uses."""
    arch = ifs.Architecture(heads=heads, embed_dim=32, input_dim=2, positional=positional, causal=causal)
    return on_a_new_thread(lambda: ifs.decide(spec, arch))


@pytest.mark.parametrize("spec, heads", [("max_retrieval", (1,)), ("min_pairwise_dot", (1, 1)),
                                         ("intrinsic_dimension:D=2", (2, 2)), ("linear_max_sum", (4,))])
def test_a_compiled_witness_meets_the_criterion(spec, heads):
    result = experiments.check_compiled(_verdict(spec, heads), **FAST)
    assert result.holds, str(result)
    assert result.nmse[-1][0] <= 1e-3 and result.nmse[0][0] > result.nmse[-1][0]


def test_specific_positions_are_gathered_exactly():
    result = experiments.check_compiled(_verdict("specific_positions", (1,), True), betas=(4,), seq_lens=(8,),
                                        samples=8)
    assert result.nmse[0][0] < 1e-20


@pytest.mark.parametrize("text", ["mean(f1(x[s]) for s in T)", "sum(f1(x[s]) for s in S1)"])
def test_global_averaging_is_exact_at_every_beta(text):
    target = ifs.parse_target(text)
    verdict = _verdict(text, (1,), bool(target.needs_positional))
    result = experiments.check_compiled(verdict, betas=(1,), seq_lens=(8, 32), samples=8)
    assert max(result.nmse[0]) < 1e-20


def test_an_offset_is_gathered_exactly():
    verdict = _verdict("max(f1(x[t-1]) for t in range(2, T+1))", (1, 1), True)
    result = experiments.check_compiled(verdict, betas=(4096,), seq_lens=(8, 64), samples=8)
    assert max(result.nmse[0]) < 1e-12


def _falls_with_beta(result) -> None:
    assert result.nmse[0][0] > 10 * result.nmse[-1][0], str(result)
    assert max(result.nmse[-1]) <= 1e-3, str(result)


def test_a_sum_over_every_position_read_by_a_score_comes_from_the_host():
    # layer 1 averages x at the output token; layer 2's score <A^T sum_t x_t, x_s> takes it as the host's feature
    model = experiments.compile(_verdict("max(sum(bilinear(A1, x[t], x[s]) for t in T) for s in T)", (1, 1)))
    assert model.plan.head(2, 1).selections[0].factors[0].matrix == "A1"
    _falls_with_beta(experiments.check_compiled(model_for=model.set_beta, verdict=_verdict(
        "max(sum(bilinear(A1, x[t], x[s]) for t in T) for s in T)", (1, 1)), **FAST))


@pytest.mark.parametrize("text, heads, kind", [
    # the mean is taken at every input position; the output token's retrieval copies it from its winner
    (("F0(mean(f1(x[s]) + dot(x[s], x[s]) for s in T), min(f2(x[s], x[s]) - bilinear(A1, x[t], x[t]) for s in T"
      " for t in T))"), (1, 1), "retrieve"),
    # the output token gathers positions T and 1, and the averages with them, straight from the sources
    (("min(f2(x[s], x[s]) for s in T) + sum(bilinear(A1, x[s], x[1]) for s in T)"
      " + mean(bilinear(A1, x[s], x[T]) for s in T)"), (1, 1), "positions")])
def test_an_average_held_at_the_inputs_is_copied_to_the_output(text, heads, kind):
    verdict = _verdict(text, heads, bool(ifs.parse_target(text).needs_positional))
    model = experiments.compile(verdict)
    assert any(h.shared and h.kind.value == kind for h in model.plan.head_plans)
    _falls_with_beta(experiments.check_compiled(verdict, **FAST))


def _overlaps_are_dead(plan) -> None:
    """Two slots on one coordinate: the first is cleared by a map at or before the second is written."""
    live = [(s, layout.lifetime(s.id, plan.program.layers, {})) for s in plan.slots if s.id.role.fact or s.id.role.scratch]
    cleared = {id: 2 * m for m, ids in enumerate(plan.frees) for id in ids}
    for a, (written_a, _) in live:
        for b, (written_b, _) in live:
            if a is not b and a.start < b.start + b.width and b.start < a.start + a.width and written_a < written_b:
                assert a.id in cleared and cleared[a.id] <= written_b, (a, b)


def test_a_stream_too_narrow_for_every_slot_reuses_the_room_of_queries_and_keys_once_read():
    text = "sum(bilinear(A1, x[s], x[s]) - dot(x[s], x[s]) - f2(x[s], x[s]) for s in T) + min(dot(x[s], x[1]) " \
           "for s in T) + max(max(dot(x[s], x[t]) for t in T) for s in T)"
    arch = ifs.Architecture(heads=(1, 1), embed_dim=20, input_dim=2, positional=True)
    verdict = on_a_new_thread(lambda: ifs.decide(text, arch))
    plan = experiments.compile(verdict).plan
    assert plan.used() <= 20 < sum(s.width for s in plan.slots)  # it would not fit without sharing
    assert any(id.role.scratch for ids in plan.frees for id in ids)
    _overlaps_are_dead(plan)
    _falls_with_beta(experiments.check_compiled(verdict, **FAST))


def test_a_stream_too_narrow_even_so_reuses_the_room_of_facts_nothing_reads_later():
    """intrinsic_dimension:D=2 on (2, 2) at E = 8 needs 14 dimensions with a slot per fact, query and key; the
    map after layer 1 is the last reader of the token and of layer 1's outputs, so layer 2's keys, its outputs
    and the answer take their room: 8 dimensions."""
    verdict = on_a_new_thread(lambda: ifs.decide("intrinsic_dimension:D=2", ifs.Architecture((2, 2), 8, 2)))
    model = experiments.compile(verdict)
    plan = model.plan
    assert plan.used() <= 8 < sum(s.width for s in plan.slots) and "clears x" in str(plan)
    _overlaps_are_dead(plan)
    result = experiments.check_compiled(verdict, **FAST)
    assert result.holds, str(result)


def test_an_averaging_head_adds_its_averages_onto_its_outbox():
    """Five fixed positions gathered, then five sums and means over T read by the output token: the averages land
    on the outbox the sources filled (the map after the layer subtracts what the position sent), so the head's
    own output is the 1/(T+1) alone, and the outbox and the averages never need room side by side: the stream fits
    in E = 32."""
    text = "mean(dot(x[a], x[2]) + f1(x[a]) for a in T) - sum(f2(x[b], x[3]) + dot(x[b], x[T]) + f1(x[b]) for b in " \
           "T) - sum(dot(x[c], x[T-1]) + f1(x[c]) for c in T) - dot(x[2], x[1])"
    verdict = on_a_new_thread(lambda: ifs.decide(text, ifs.Architecture((1, 1), 32, 2, positional=True)))
    plan = experiments.compile(verdict).plan
    averaging = [h for h in plan.head_plans if h.kind is HeadKind.AVERAGE]
    assert averaging and all(plan.slot(h.slot(Role.HEAD)).width == 1 for h in averaging), str(plan)
    assert all(plan.slot(h.slot(Role.SEPARATED)).width == h.outbox_width() for h in averaging), str(plan)
    assert plan.used() <= 32
    _overlaps_are_dead(plan)
    result = experiments.check_compiled(verdict, **FAST)
    assert result.holds and max(max(row) for row in result.nmse) < 1e-20, str(result)


def test_a_fixed_position_a_score_reads_is_the_hosts_feature():
    # position 1 selects for max_s x_s^T A2 x_1 (its own token); the candidates never see x_1
    text = "F0(max(bilinear(A2, x[s], x[1]) for s in S2), max(f1(x[s]) for s in T), mean(bilinear(A1, x[s], " \
           "x[s]) for s in T))"
    verdict = _verdict(text, (1, 1), True)
    factors = [f for h in experiments.compile(verdict).plan.head_plans for s in h.selections for f in s.factors]
    assert any(isinstance(f.host, ex.Content) and isinstance(f.host.index, ex.FixedIndex) for f in factors)
    _falls_with_beta(experiments.check_compiled(verdict, **FAST))


def _written(verdict, actions, order=()):
    """``verdict`` with the witness ``actions`` (the solver's choice among equal witnesses moves with the solver)."""
    return dataclasses.replace(verdict, witness=Program(tuple(actions), tuple(order), verdict.witness.layers))


def _act(layer, where, mode, node=None, positions=()):
    from infoflow_smt.model.program import Action, Mode, Offset, Op  # noqa: F401 -- Mode, Offset for the callers
    return Action(layer, 1, where, Op(mode, node, tuple(positions)))


def test_an_offset_and_a_fixed_position_gathered_by_one_head():
    # one head gathers x[T] and x[p-1] at every input position: the two sources mixed, and T's block alone
    from infoflow_smt.model.program import Mode, Offset
    verdict = _written(_verdict("induction_head", (1, 1), True), [
        _act(1, "input", Mode.POSITIONS, positions=(ex.FixedIndex(0, True), Offset(-1))),
        _act(2, "output", Mode.RETRIEVE, "g0.t")])
    assert any(h.kind.value == "mixed" for h in experiments.compile(verdict).plan.head_plans)
    result = experiments.check_compiled(verdict, betas=(16, 256, 4096), seq_lens=(8, 32), samples=256)
    assert result.holds, str(result)


def test_an_offset_gathered_beside_other_work_by_one_head():
    # one head gathers x[p-1] at the input positions and retrieves at the output token: one part each
    from infoflow_smt.model.program import Mode, Offset
    text = "F0(sum(dot(x[s-1], x[s]) for s in range(2, T+1)), min(f2(x[t], x[t]) for t in T))"
    tree = ifs.trees.comparison_tree(ifs.parse_target(text))
    least = next(n for n, d in tree.nodes(data=True) if d["sense"] == "min")
    verdict = _written(_verdict(text, (1, 1), True), [
        _act(1, "input", Mode.POSITIONS, positions=(Offset(-1),)), _act(1, "output", Mode.RETRIEVE, least),
        _act(2, "output", Mode.AVERAGE)])
    assert any(h.kind.value == "offset" and h.part for h in experiments.compile(verdict).plan.head_plans)
    _falls_with_beta(experiments.check_compiled(verdict, **FAST))


def test_a_count_the_network_knows_scales_a_score():
    # the normal form makes the score dot(x_s, x_s) * sum(1 for t in T) + f1(x_s): T is in the positional features
    text = "max(f1(x[s]) + sum(dot(x[t], x[t]) + dot(x[s], x[s]) for t in T) for s in T)"
    verdict = _verdict(text, (2,))
    assert any(s.id.role is facts_.Role.COUNT for s in experiments.compile(verdict).plan.slots)
    _falls_with_beta(experiments.check_compiled(verdict, betas=(1, 4, 16, 256), seq_lens=(8, 32), samples=24))


def test_the_allocation_names_every_slot():
    model = experiments.compile(_verdict("min_pairwise_dot", (1, 1)), beta=16)
    text = str(model.plan)
    assert "residual stream" in text and "k2.1" in text and "h1.1" in text and "answer" in text
    assert model.plan.used() <= 32
    # the output token's query is a number (the key is the value its candidates hold): no slot of its own
    assert "q2.1" not in text


def _without_head(verdict):
    kept = tuple(a for a in verdict.witness.actions if a.layer != 1)
    return dataclasses.replace(verdict, witness=Program(kept, verdict.witness.order, verdict.witness.layers))


def test_a_witness_with_a_head_removed_is_refused_before_compiling():
    # the interpreter's replay on the architecture fails: the output token reads tokens no head brought it
    with pytest.raises(ifs.InvalidSpecError, match="the witness does not fit .*does not hold") as info:
        experiments.compile(_without_head(_verdict("min_pairwise_dot", (1, 1))), beta=16)
    assert "\n" not in str(info.value)


def test_the_check_fails_for_a_flipped_score_sign():
    verdict = _verdict("max_retrieval", (1,))

    def flipped(beta):
        model = experiments.compile(verdict, beta=beta)
        for layer in model.layers:
            layer.W_Q.data[:, :, 0] *= -1  # the score term's sign: a min where the witness asks a max
        return model

    result = experiments.check_compiled(verdict, **FAST, model_for=flipped)
    assert not result.holds
    assert result.nmse[-1][0] > 1e-1


def test_an_infeasible_verdict_names_its_cheapest_program():
    verdict = _verdict("kth_largest", (1,))
    with pytest.raises(CompileRefusal, match="cheapest program") as info:
        experiments.compile(verdict)
    assert info.value.reason == "infeasible"


@pytest.mark.parametrize("spec", ["max(F0(x[s], x[t]) for s in T for t in T)", "min(F0(x[s], x[t]) for s in T for t in T)",
                                  "max(f2(x[s] + x[t], x[s]) for s in T for t in T)",
                                  "max(f2(x[s] - 2 * x[t], x[t]) for s in T for t in T)"])
def test_a_function_of_a_host_token_and_a_candidate_token_is_scored_within_the_tolerance(spec):
    # the first head's score, host row against candidate column, is F(u) up to a constant per host: its
    # quadratic exact, its 0.5 tanh(w . u + bias) from TanhBasis products (each off by at most half the tolerance)
    model = experiments.compile(_verdict(spec, (1, 1)), beta=1.0)
    selection = model.plan.head(1, 1).selections[0]
    X = torch.as_tensor(np.random.default_rng(0).standard_normal((3, 12, 2)))
    R = model.stream(X)[0]
    W_Q, W_K = model.layers[0].W_Q[0], model.layers[0].W_K[0]
    scores = (R @ W_Q @ (R @ W_K).transpose(-1, -2))[:, :-1, :-1].numpy()  # input rows and columns
    host, candidate = selection.host_var, model.plan.tree.nodes[selection.node]["var"]
    tokens = X.numpy()
    (sign, term), = model.plan.tree.nodes[selection.node]["terms"]
    exact = sign * np.array([[[_smooth_term(model, term, tokens[b], {host: h, candidate: c}) for c in range(12)]
                              for h in range(12)] for b in range(3)])
    relative = lambda a: a - a[..., :1]  # the score up to the host's constant
    assert np.abs(relative(scores) - selection.sign * relative(exact)).max() <= separable.TANH_TOLERANCE


def _smooth_term(model, term, tokens, positions) -> float:
    """``term`` (a call of the realization's functions on sums of tokens) at one assignment of its variables."""
    def value(e):
        if isinstance(e, ex.Content):
            return tokens[positions[e.index.name]]
        if isinstance(e, ex.BinOp):
            ops = {"+": np.add, "-": np.subtract, "*": np.multiply}
            return ops[e.op](value(e.left), value(e.right))
        if isinstance(e, ex.Num):
            return e.value
        if isinstance(e, ex.Neg):
            return -value(e.operand)
        args = [value(a) for a in e.args]
        if e.name == "dot":
            return float(np.dot(*args))
        u = np.concatenate(args)
        return float(model.target.realization.function(e.name, len(u))(u))
    return value(term)


def test_a_function_of_two_tokens_compiles_and_its_error_falls_with_beta():
    _falls_with_beta(experiments.check_compiled(_verdict("max(F0(x[s], x[t]) for s in T for t in T)", (1, 1)), **FAST))


def test_a_score_needing_more_products_than_a_head_holds_is_refused_naming_the_term():
    # f1's realized weight is steep: tanh(w . x_s + w . x_t + bias) over the tokens' box needs over MAX_RANK products
    verdict = _verdict("max(f1(x[s] + x[t]) for s in T for t in T)", (2, 2))
    if not verdict.feasible:
        pytest.skip("not feasible here")
    with pytest.raises(CompileRefusal, match=r"f1\(x\[s\] \+ x\[t\]\).*products") as info:
        experiments.compile(verdict)
    assert info.value.reason == "score_form"


def test_a_narrow_stream_is_refused():
    verdict = ifs.decide("intrinsic_dimension:D=2", ifs.Architecture(heads=(2, 2), embed_dim=6, input_dim=2))
    with pytest.raises(CompileRefusal) as info:
        experiments.compile(verdict)
    assert info.value.reason in ("head_width", "residual_width")


def test_the_model_is_a_torch_module_with_attention_weights():
    model = experiments.compile(_verdict("max_retrieval", (1,)), beta=16)
    assert isinstance(model, CompiledTransformer) and isinstance(model, torch.nn.Module)
    assert model.layers[0].W_Q.shape == (1, 32, 32)


def _cli(capsys, *args):
    """``infoflow compile ARGS`` in this process (torch is imported once): exit code, stdout, stderr.
    The README's tour runs the same command as a process (tests/docs/test_readme.py)."""
    code = command.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_exit_codes_and_json_schema(capsys):
    code, out, err = _cli(capsys, "max_retrieval", "--heads", "1", "--beta", "16,256", "--seq-len", "8,16",
                          "--samples", "8", "--json")
    assert code == 0, err
    jsonschema.validate(json.loads(out), command.SCHEMA)
    code, out, _ = _cli(capsys, "kth_largest", "--heads", "1", "--seq-len", "8", "--json")
    assert code == 1
    jsonschema.validate(json.loads(out), command.SCHEMA)
    code, _, err = _cli(capsys, "max_retrieval", "--heads", "1", "--beta", "banana")
    assert code == 2 and err.count("\n") == 1 and "banana" in err


def test_a_target_with_an_answer_at_every_position_is_refused():
    from experiments.compilation.compiling import compile as compile_witness
    from experiments.training.data import resolve_target
    text = "max(F0(x[o], x[t]) for t in T)"
    verdict = ifs.decide(text, ifs.Architecture(heads=(1,), embed_dim=8, input_dim=2))
    with pytest.raises(CompileRefusal, match="answer at every position"):
        compile_witness(verdict)
    with pytest.raises(ifs.InvalidSpecError, match="answer at every position"):
        resolve_target(text)


# ---- under a causal mask ------------------------------------------------------------------------------------
PREFIX = "max(f1(x[s]) + min(dot(x[s], x[t]) for t in range(1, s+1)) for s in T)"


@pytest.mark.parametrize("text, heads", [("min(dot(x[s], x[t]) for s in T for t in T)", (1, 1)),
                                         ("min(bilinear(A1, x[s], x[t]) for s in T for t in T)", (2, 1)),
                                         (PREFIX, (1, 1))])
def test_a_causal_witness_compiles_with_the_mask_as_its_prefix_ranges(text, heads):
    # each input position retrieves over range(1, s+1), what its masked softmax sees; the non-symmetric form
    # takes the better of two halves, min(a, b), at each position
    result = experiments.check_compiled(_verdict(text, heads, causal=True), **FAST)
    assert result.holds, str(result)


def test_the_compiled_mask_is_what_computes_a_prefix_selection():
    verdict = _verdict(PREFIX, (1, 1), causal=True)
    model = experiments.compile(verdict)
    assert experiments.check_compiled(verdict, **FAST, model_for=model.set_beta).holds
    model.causal = False   # every position now retrieves over all of T: another function
    unmasked = experiments.check_compiled(verdict, **FAST, model_for=model.set_beta)
    assert not unmasked.holds and unmasked.nmse[-1][0] > 1e-2, str(unmasked)


def test_a_prefix_range_is_refused_without_the_mask():
    verdict = _verdict(PREFIX, (1, 1), positional=True)
    if not verdict.feasible:
        pytest.skip("not feasible here")
    with pytest.raises(CompileRefusal, match="range bounded by a variable") as info:
        experiments.compile(verdict)
    assert info.value.reason == "mode"


# ---- keys on a logarithmic scale ------------------------------------------------------------------------------
@pytest.mark.parametrize("text, spread", [("min(f1(x[t]) for t in T)", True), ("max(0 - f1(x[t]) for t in T)", True),
                                          ("max(f1(x[t]) for t in T)", False),
                                          ("min(f1(x[t]) + dot(a1, x[t]) for t in T)", False)])
def test_the_least_value_of_a_convex_function_is_ranked_by_its_logarithm(text, spread):
    model = experiments.compile(_verdict(text, (1,), bool(ifs.parse_target(text).needs_positional)))
    floors = [f.floor for h in model.plan.head_plans for s in h.selections for f in s.factors]
    assert (floors[0] is not None) == spread, floors


def test_a_subset_minimum_needs_no_beta_that_grows_with_t():
    # the smallest of T/2 values of a convex f crowd towards min f (gaps ~ 1/T at d = 2): on f itself the
    # beta that reaches 1e-3 grows with T; on log(f - min f) it does not
    verdict = _verdict("d_retrieval", (2,), True)
    grid = {"betas": (32, 256), "seq_lens": (8, 512), "samples": 16}
    result = experiments.check_compiled(verdict, **grid)
    assert result.holds and result.smallest_beta[-1] <= 2 * result.smallest_beta[0], str(result)
    plain = experiments.compile(verdict, log_keys=False)
    on_f = experiments.check_compiled(verdict, **grid, model_for=plain.set_beta)
    assert not on_f.holds and on_f.smallest_beta[-1] > 64 * on_f.smallest_beta[0], str(on_f)


def test_a_selected_token_is_checked_on_enough_inputs_to_see_its_near_ties():
    # reading x[argmax(...)] errs by about the target's size on the inputs whose top two scores lie within
    # about 1/beta: the NMSE is their share, and beta* is set by the few inputs that tie closest
    from experiments.compilation.check import SAMPLES, SELECTED_TOKEN_SAMPLES, default_samples
    induction = ifs.catalogue.get("induction_head")
    assert default_samples(induction, (8, 64)) == SELECTED_TOKEN_SAMPLES > SAMPLES
    assert default_samples(induction, (8, 512)) == 512   # at most 2^18 positions at the longest T, the same at every T
    assert default_samples(ifs.catalogue.get("min_pairwise_dot"), (8, 64)) == SAMPLES
    result = experiments.check_compiled(_verdict("induction_head", (1, 1), True), betas=(32, 256, 2048),
                                        seq_lens=(8, 128), samples=512)
    assert result.holds, str(result)


def test_an_average_carries_only_the_aggregates_the_inputs_can_compute_then():
    # layer 1 averages x at the output token while the inputs gather x[p-1]; the sum of dot(x[s-1], x[s])
    # reads that token, so layer 2's averaging carries it (layer 1's could not: it was refused as unheld)
    verdict = _verdict("max(f1(x[s]) + sum(bilinear(A1, x[t], x[s]) for t in T) for s in T)"
                       " + sum(dot(x[s-1], x[s]) for s in range(2, T+1))", (2, 2), positional=True)
    _falls_with_beta(experiments.check_compiled(verdict, **FAST))


def test_nearest_neighbor_holds_on_the_task_with_a_margin_and_not_on_plain_gaussian_tokens(capsys):
    # without a margin the nearest two squared distances differ by about 1/T: the beta that separates them
    # grows with T (docs/compile.md); with one, beta 256 is exact at every T
    verdict = _verdict("nearest_neighbor", (1, 1), True)
    grid = {"betas": (32, 256, 2048), "seq_lens": (8, 128), "samples": 64}
    margin = experiments.check_compiled(verdict, **grid)
    plain = experiments.check_compiled(verdict, **grid, distribution="gaussian")
    assert margin.distribution == "nearest_margin" and plain.distribution == "gaussian"
    assert margin.at(256, 128) < 1e-12 and plain.at(2048, 128) > 1e3 * margin.at(2048, 128) + 1e-4
    code, out, err = _cli(capsys, "nearest_neighbor", "--heads", "1,1", "--positional", "--beta", "256",
                          "--seq-len", "8", "--samples", "16", "--distribution", "gaussian", "--json")
    doc = json.loads(out)
    jsonschema.validate(doc, command.SCHEMA)
    assert doc["check"]["distribution"] == "gaussian"
    code, _, err = _cli(capsys, "nearest_neighbor", "--heads", "1,1", "--distribution", "uniform")
    assert code == 2 and "uniform" in err
    with pytest.raises(ValueError, match="distribution must be one of gaussian.*got 'uniform'"):
        experiments.check_compiled(verdict, **grid, distribution="uniform")
