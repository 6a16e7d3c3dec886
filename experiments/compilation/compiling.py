"""Compile a feasible verdict's witness into a softmax transformer with explicit weights: the steps in order.

    witness -> plan -> layout -> weights -> check

1. **witness**: the verdict's program and the comparison tree it computes (an infeasible verdict, or a target
   with an answer at every position, is refused here);
2. **plan** (``plan``, ``factors``): what every position holds after each layer and what each head reads, its
   scores split into host x candidate products; planned twice, the second time keeping only the tokens some
   map reads (``needed``, from a dry run of the first plan at a roomy width);
3. **layout** (``layout``): a slot in the residual stream per fact, else a scratch region the layers share,
   else the room of facts nothing reads later reused (``last_uses``);
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

import networkx as nx

from experiments.compilation import mlp_maps
from experiments.compilation.layout import Plan, is_fact, lay_out, roomy_width
from experiments.compilation.plan import INPUT, OUTPUT, Flow, plan_flow
from experiments.compilation.weights import CompiledTransformer
from infoflow_smt.errors import CompileRefusal
from infoflow_smt.lang.target import Target
from infoflow_smt.lang.trees import comparison_tree
from infoflow_smt.model.architecture import Architecture
from infoflow_smt.model.program import Program
from infoflow_smt.report.verdict import Verdict


def compile(verdict: Verdict, beta: float = 64.0, ffn: str = "exact", mlp_width: int = 64, seed: int = 0,
            log_keys: bool | None = None) -> CompiledTransformer:
    """The witness of ``verdict`` as a ``CompiledTransformer`` at inverse temperature ``beta``.

    ``log_keys`` (default: with exact maps) ranks a selection of the least value of a convex function of the
    candidate's token by the logarithm of that function above its least value (``factors.log_key``);
    False keeps every score itself as its key.

    Raises ``CompileRefusal`` (reason and term) for what cannot compile, and for an infeasible verdict (naming
    its cheapest program)."""
    program, tree = witness(verdict, ffn)
    arch, target = verdict.architecture, verdict.target
    width = int(arch.width_at(64))  # a width that grows with T is taken at T = 64
    if log_keys is None:
        log_keys = ffn == "exact"   # an MLP map fits the feature itself, not its logarithm's pole
    plan_with = functools.partial(plan_flow, program, tree, arch.input_dim, tuple(arch.heads),
                                  realization=target.realization, causal=arch.causal, log_keys=log_keys)
    flow = plan_with(keep=_read_tokens(plan_with(), width, target, float(beta), arch))
    plan = _lay_out(flow, width, target, arch)
    model = CompiledTransformer(plan, target, float(beta), arch.positional, causal=arch.causal)
    model.dry_run()
    if ffn == "mlp":
        mlp_maps.fit_maps(model, width=mlp_width, seed=seed)
    return model


def witness(verdict: Verdict, ffn: str = "exact") -> tuple[Program, nx.DiGraph]:
    """The program to compile and the comparison tree it computes; what cannot be compiled at all is refused
    (``CompileRefusal``), and an unknown ``ffn`` is a ``ValueError``."""
    if not getattr(verdict, "feasible", False) or verdict.witness is None:
        best = getattr(verdict, "best_program", None)
        cheapest = f"; its cheapest program is:\n{best}" if best is not None else ""
        raise CompileRefusal("infeasible", str(getattr(verdict, "target", verdict)),
                             f"the verdict is {getattr(verdict.status, 'value', verdict.status)}: there is no "
                             f"witness to compile{cheapest}")
    if ffn not in ("exact", "mlp"):
        raise ValueError(f"ffn must be 'exact' or 'mlp', got {ffn!r}")
    if getattr(verdict.target, "per_position", False):
        raise CompileRefusal("mode", str(verdict.target),
                             "the compiled model reads one answer at the output token; a target with an answer at "
                             "every position (it names o) is not supported by the compiler yet")
    program = verdict.witness
    return program, comparison_tree(verdict.target, program.order_map)


def _read_tokens(flow: Flow, width: int, target: Target, beta: float, arch: Architecture) -> dict:
    """For each head, the tokens some map reads (``needed``): from a dry run of ``flow`` laid out at a width
    with room for everything."""
    first = lay_out(flow, width, check=False)
    first = dataclasses.replace(first, width=roomy_width(first))
    reads: set = set()
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


def last_uses(plan: Plan, target: Target, arch: Architecture) -> dict[str, int]:
    """Each fact slot's last reader on ``fact_time``'s clock, from a dry run of ``plan`` at a roomy width:
    the maps by what they read (``Values``), the attention layers by the rows of ``W_Q``, ``W_K`` and ``W_V``
    that are not zero."""
    roomy = dataclasses.replace(plan, width=roomy_width(plan))
    reads: set = set()
    model = CompiledTransformer(roomy, target, 1.0, arch.positional, reads, arch.causal)
    model.dry_run()
    uses: dict[str, int] = {}
    for layer, c, path in reads:
        name = roomy.locations[layer][c][path][0]
        uses[name] = max(uses.get(name, -1), 2 * layer)
    for layer, attention in enumerate(model.layers, 1):
        rows = sum(w.abs().sum(dim=(0, 2)) for w in (attention.scaled, attention.fixed, attention.W_K, attention.W_V))
        for s in roomy.slots:
            if is_fact(s.name) and bool(rows[s.start:s.start + s.width].any()):
                uses[s.name] = max(uses.get(s.name, -1), 2 * layer - 1)
    return uses


def needed(plan: Plan, reads: set) -> dict:
    """For each head, the tokens it must copy: those some map reads (``reads``: layer, class, path), and
    what those copies read in turn at their sources."""
    keep: dict = {}
    todo, seen = list(reads), set()
    while todo:
        item = todo.pop()
        if item in seen:
            continue
        seen.add(item)
        layer, c, path = item
        slot = plan.locations[layer][c][path][0]
        if slot == "x" or path[0] == "key":   # a retrieval head copies its winner's key whatever is read
            continue
        hp = next(h for h in plan.head_plans if f"h{h.name}" == slot)
        if hp.kind == "average":  # it copies values the sources compute, not facts
            continue
        tag, rest = path[0], path[1:]
        if tag in ("avg", "count"):  # a global value, copied from a source that holds it
            keep.setdefault((hp.layer, hp.head), set()).add(path)
            todo += [(hp.layer - 1, k, path) for k in plan.classes
                     if k != OUTPUT and path in plan.locations[hp.layer - 1][k]]
        elif hp.kind in ("offset", "mixed"):  # both read the tokens every input position holds
            keep.setdefault((hp.layer, hp.head), set()).add((tag[1], rest))
            todo += [(hp.layer - 1, k, rest) for k in plan.classes if k != OUTPUT]
        elif hp.kind == "retrieve":
            keep.setdefault((hp.layer, hp.head), set()).add(rest)
            todo += [(hp.layer - 1, k, rest) for k in plan.classes if k != OUTPUT]
        else:
            q = tag[1]
            keep.setdefault((hp.layer, hp.head), set()).add((q, rest))
            todo.append((hp.layer - 1, q if q in plan.classes else INPUT, rest))
    return keep
