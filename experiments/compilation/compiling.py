"""Compile a feasible verdict's witness into a softmax transformer with explicit weights: the steps in order.

    witness -> plan -> layout -> weights -> check

1. **witness** (``witness``): the verdict's program and the comparison tree it computes, checked against the
   architecture (an infeasible verdict, or a target with an answer at every position, is refused here);
2. **plan** (``plan``, ``factors``): what every position holds after each layer and what each head reads, its
   scores split into host x candidate products; planned twice, the second time keeping only the facts some
   map reads and the values some reader needs (``needed``, from a dry run of the first plan at a roomy width);
3. **layout** (``layout``): a slot in the residual stream per fact, query, key and outbox, else the room of
   what nothing reads later reused (``last_uses``);
4. **weights** (``weights``, ``exact_maps``, ``mlp_maps``): the attention layers' ``W_Q, W_K, W_V, W_O`` and
   the position-wise maps, exact or fitted MLPs;
5. **check**: a dry run refuses a map that reads what the stream does not carry; ``check.check_compiled``
   then measures the NMSE against ``Target.evaluate`` over beta and T.

>>> import infoflow_smt as ifs, torch
>>> model = compile(ifs.decide("max_retrieval", ifs.Architecture(heads=(1,), embed_dim=16, input_dim=2)), beta=64)
>>> model(torch.zeros(1, 5, 2, dtype=torch.float64)).shape
torch.Size([1])
"""
from __future__ import annotations

import dataclasses
import functools

from experiments.compilation import mlp_maps
from experiments.compilation.facts import INPUT, OUTPUT, Kind, Role, SlotId
from experiments.compilation.head_plan import HeadKind
from experiments.compilation.layout import Plan, lay_out, roomy_width
from experiments.compilation.plan import Flow, Keep, plan_flow
from experiments.compilation.weights import CompiledTransformer
from experiments.compilation.witness import witness
from infoflow_smt.errors import CompileRefusal
from infoflow_smt.lang.target import Target
from infoflow_smt.model.architecture import Architecture
from infoflow_smt.report.verdict import Verdict


def compile(verdict: Verdict, beta: float = 64.0, ffn: str = "exact", mlp_width: int = 64, seed: int = 0,
            log_keys: bool | None = None) -> CompiledTransformer:
    """The witness of ``verdict`` as a ``CompiledTransformer`` at inverse temperature ``beta``.

    ``log_keys`` (default: with exact maps) ranks a selection of the least value of a convex function of the
    candidate's token by the logarithm of that function above its least value (``log_keys.log_key``);
    False keeps every score itself as its key.

    Raises ``CompileRefusal`` (reason and term) for what cannot compile, and for an infeasible verdict (naming
    its cheapest program); ``InvalidSpecError`` for a witness that does not fit the verdict's architecture."""
    program, tree = witness(verdict, ffn)
    arch, target = verdict.architecture, verdict.target
    width = int(arch.width_at(64))  # a width that grows with T is taken at T = 64
    if log_keys is None:
        log_keys = ffn == "exact"   # an MLP map fits the feature itself, not its logarithm's pole
    plan_with = functools.partial(plan_flow, program, tree, arch.input_dim, tuple(arch.heads),
                                  realization=target.realization, causal=arch.causal, log_keys=log_keys)
    flow = plan_with(keep=_kept(plan_with(), width, target, float(beta), arch))
    plan = _lay_out(flow, width, target, arch)
    model = CompiledTransformer(plan, target, float(beta), arch.positional, causal=arch.causal)
    model.dry_run()
    if ffn == "mlp":
        mlp_maps.fit_maps(model, width=mlp_width, seed=seed)
    return model


def _kept(flow: Flow, width: int, target: Target, beta: float, arch: Architecture) -> Keep:
    """What the second plan keeps (``needed``): from a dry run of ``flow`` laid out at a width with room for
    everything."""
    first = lay_out(flow, width, check=False)
    first = dataclasses.replace(first, width=roomy_width(first))
    reads: dict = {}
    CompiledTransformer(first, target, beta, arch.positional, reads, arch.causal).dry_run()
    return needed(first, reads)


def _lay_out(flow: Flow, width: int, target: Target, arch: Architecture) -> Plan:
    """A slot per fact, else (too narrow) the room of the facts nothing reads later reused (``last_uses``)."""
    try:
        return lay_out(flow, width)
    except CompileRefusal as refusal:
        if refusal.reason != "residual_width":
            raise
        loose = lay_out(flow, width, check=False)
        return lay_out(flow, width, last_use=last_uses(loose, target, arch))


def last_uses(plan: Plan, target: Target, arch: Architecture) -> dict[SlotId, int]:
    """Each fact slot's last reader on ``SlotId.written``'s clock, from a dry run of ``plan`` at a roomy width:
    the maps by what they read (``values.Values``), the attention layers by the rows of ``W_Q``, ``W_K`` and
    ``W_V`` that are not zero."""
    roomy = dataclasses.replace(plan, width=roomy_width(plan))
    reads: dict = {}
    model = CompiledTransformer(roomy, target, 1.0, arch.positional, reads, arch.causal)
    model.dry_run()
    uses: dict[SlotId, int] = {}
    for layer, c, fact in set().union(*reads.values()) if reads else ():
        slot = roomy.locations[layer][c][fact].slot
        uses[slot] = max(uses.get(slot, -1), 2 * layer)
    for h in roomy.head_plans:   # a head's mixed output is read by the map after it, which separates it
        if h.separates:
            uses[h.slot(Role.HEAD)] = max(uses.get(h.slot(Role.HEAD), -1), 2 * h.layer)
    for layer, attention in enumerate(model.layers, 1):
        rows = sum(w.abs().sum(dim=(0, 2)) for w in (attention.scaled, attention.fixed, attention.W_K, attention.W_V))
        for s in roomy.slots:
            if s.id.role.fact and bool(rows[s.span].any()):
                uses[s.id] = max(uses.get(s.id, -1), 2 * layer - 1)
    return uses


def needed(plan: Plan, reads: dict) -> Keep:
    """What the second plan keeps: for each head, the facts it must copy (those some map reads, and what those
    copies read in turn at their sources), and the selections' values a map must write (those read, with what
    computing them read). ``reads``: consumer -> {(layer, class, fact)}, the consumer None for a feature or the
    answer, ``(layer, class, node)`` for a value a map writes, ``("outbox", head)`` for what a source sends a
    gathering head (needed where a reader needs what it gathered: followed from that reader)."""
    copies: dict = {}
    values: set = set()
    todo, seen = list(reads.get(None, ())), set()
    input_classes = [k for k in plan.classes if k != OUTPUT]
    while todo:
        item = todo.pop()
        if item in seen:
            continue
        seen.add(item)
        layer, c, fact = item
        where = plan.locations[layer][c].get(fact)
        if where is None or where.slot.role is Role.TOKEN or fact.kind is Kind.KEY:
            continue   # a retrieval head copies its winner's candidate features whatever is read
        if where.slot.role is Role.VALUES:
            values.add((where.slot.layer, fact.node))
            todo += reads.get((where.slot.layer, c, fact.node), ())
            continue
        hp = plan.head_of(where.slot)
        if hp.kind is HeadKind.AVERAGE:  # it copies values the sources compute, not facts
            continue
        keep = copies.setdefault((hp.layer, hp.head), set())
        if fact.kind.global_:  # a global value, copied from a source that holds it
            keep.add(fact)
            todo += [(hp.layer - 1, k, fact) for k in input_classes if fact in plan.locations[hp.layer - 1][k]]
        elif hp.kind is HeadKind.RETRIEVE:
            keep.add(fact.rest)
            todo += [(hp.layer - 1, k, fact.rest) for k in input_classes]
        elif hp.kind in (HeadKind.OFFSET, HeadKind.MIXED):  # both read the facts every input position holds
            keep.add((fact.route[0].source, fact.rest))
            todo += [(hp.layer - 1, k, fact.rest) for k in input_classes]
        else:
            q = fact.route[0].source
            keep.add((q, fact.rest))
            todo.append((hp.layer - 1, q if q in plan.classes else INPUT, fact.rest))
    return Keep(copies, frozenset(values))
