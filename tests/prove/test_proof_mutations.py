"""Proofs can fail: change one rule of the model at a time (test-only patches, never user options) and the
matching proof no longer holds."""
from __future__ import annotations

import sympy

import proofs
from infoflow_smt.model import cost
from infoflow_smt.smt import encoder
from infoflow_smt.verify import interpreter, replay


def test_kth_retrieval_charged_like_a_top1_retrieval_breaks_theorem_2(monkeypatch):
    monkeypatch.setattr(cost, "kth_retrieval", lambda k, head_dim: sympy.Integer(1))
    assert not proofs.prove("kth_retrieval").holds


def test_without_the_residual_the_two_layer_witness_of_theorem_1_fails(monkeypatch):
    """Positions keep nothing from the layer before. The batched replay takes knowing a selection to mean
    holding what its score read (true with the residual), so it is switched off too: the scalar
    interpreter, which re-reads every value, replays alone."""
    def forgetful(prev):
        held, known = prev.held.copy(), [dict(k) for k in prev.known]
        held[:] = False
        return held, [{} for _ in known]

    monkeypatch.setattr(interpreter, "_carried", forgetful)
    monkeypatch.setattr(replay, "passes", lambda *args, **kwargs: None)
    result = proofs.prove("depth_separation")
    assert not result.holds
    one_head_each = [e for e in result.evidence if e.architecture.startswith("heads=(1, 1),")]
    assert one_head_each and not any(e.matches for e in one_head_each)  # the theorem's witness cannot replay


def test_order_3_comparisons_in_one_retrieval_break_the_triangle_proof(monkeypatch):
    """A position may then play two variables at once, and a score may read both sides' bindings."""
    monkeypatch.setattr(encoder._Builder, "admissible",
                        lambda self, info, c: len(info.bound) <= (0 if c == encoder.OUT else 2))
    original = encoder._Builder.every_candidate
    monkeypatch.setattr(encoder._Builder, "every_candidate",
                        lambda self, info, l, needs, both_sides=False: original(self, info, l, needs, False))
    assert not proofs.prove("triangle_center").holds


def test_an_output_token_without_heads_of_its_own_changes_the_seventh_result(monkeypatch):
    """The output token then does in each layer what every input position does: one selection per head
    and layer, L*h in all, the conjecture's count."""
    original = encoder._Builder.operations

    def shared_heads(self, l):
        original(self, l)
        for (layer, c, name), var in list(self.enc.ops.items()):
            if layer == l and c == encoder.OUT:
                twin = self.enc.ops.get((l, encoder.IN, name))
                self.add(f"(= {encoder.quoted(var)} {encoder.quoted(twin)})" if twin else f"(not {encoder.quoted(var)})")

    monkeypatch.setattr(encoder._Builder, "operations", shared_heads)
    result = proofs.prove("multilayer_retrieval")
    assert not result.holds and not result.general.holds
