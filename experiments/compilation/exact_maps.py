"""The position-wise maps of a compiled witness, written with the realization's functions (``ffn="exact"``):
at each position class, the features the next layer's heads read, the values of the selections the class made
in the layer before (``Kind.VALUE`` facts), the facts a gathering head mixed, separated in place, and, after the
last layer, the answer. The model's "a position holds everything it can compute", in torch (``values.Values``
evaluates the target's expressions from the stream); ``mlp_maps`` fits an MLP to each instead.
"""
from __future__ import annotations

import torch
from torch import nn

from experiments.compilation.facts import ANSWER, OUTPUT, OUTPUT_FLAG, POSITION, Role, flag, value
from experiments.compilation.gathers import outbox, separated
from experiments.compilation.head_plan import HeadKind, HeadPlan, fact_width
from experiments.compilation.layout import Plan
from experiments.compilation.values import LOG_OFFSET, Values
from infoflow_smt.lang import expr as ex


class ExactMap(nn.Module):
    """The map after layer ``layer`` (0: after the embedding), written with the realization's functions."""

    def __init__(self, plan: Plan, realization, layer: int, reads: dict | None = None):
        super().__init__()
        self.plan, self.realization, self.layer, self.reads = plan, realization, layer, reads

    def forward(self, R: torch.Tensor) -> torch.Tensor:
        delta = torch.zeros_like(R)
        for c, rows in class_rows(self.plan, R).items():
            if rows.any():
                delta[rows] = self.at_class(c, R[rows])
        return delta

    def at_class(self, c, R: torch.Tensor) -> torch.Tensor:
        """The map at the rows ``R`` (n, E) of class ``c``."""
        plan, out = self.plan, torch.zeros_like(R)
        values = Values(plan, self.realization, c, self.layer, R, self.reads)
        for hp in (h for h in plan.head_plans if h.layer == self.layer and c in dict(h.by_class)):
            _separate(plan, hp, values, out)
        for node in plan.values_written(self.layer):
            where = plan.locations[self.layer][c].get(value(node))
            if where is not None:
                made = Values(plan, self.realization, c, self.layer, R, self.reads, (self.layer, c, node))
                out[:, plan.at(where)] = made.node_value(node, _own(plan, node))
        for hp in (h for h in plan.head_plans if h.layer == self.layer + 1):
            _features(plan, hp, c, values, out)
        if self.layer == plan.program.layers and c == OUTPUT:
            answer = values.value(plan.tree.graph["output"], {})  # a constant target gives one number
            columns = answer.reshape(-1, plan.answer_width) if answer.dim() else answer.reshape(1, 1)
            out[:, plan.span(ANSWER)] = columns.expand(len(R), plan.answer_width)
        cleared = torch.zeros(R.shape[-1], dtype=torch.bool)
        for id in plan.frees[self.layer] if plan.frees else ():  # dead here, and a later slot's room
            cleared[plan.span(id)] = True
        out[:, cleared] -= R[:, cleared]
        return out


def _own(plan: Plan, node: str) -> dict:
    """The binding of a selection made at the position itself: it plays the node's bound variable."""
    return {v: () for v in plan.tree.nodes[node]["bound"]}


def class_rows(plan: Plan, R: torch.Tensor) -> dict:
    """Which rows of the stream belong to which position class, read from the positional flags."""
    output = R[..., plan.start(OUTPUT_FLAG)] > 0.5
    rows, rest = {OUTPUT: output}, ~output
    for c in plan.classes:
        if isinstance(c, ex.FixedIndex):
            mine = (R[..., plan.start(flag(c))] > 0.5) & rest
            rows[c], rest = mine, rest & ~mine
    rows[plan.classes[0]] = rest
    return rows


def _log_above(feature: torch.Tensor, floor: float) -> torch.Tensor:
    return torch.log(torch.clamp(feature - floor, min=0.0) + LOG_OFFSET)


def _separate(plan: Plan, hp: HeadPlan, values: Values, out: torch.Tensor) -> None:
    """A gathering head's facts, separated (``gathers.separated``) into their own slot where the class holds
    them: later maps and heads read them there as they are."""
    if not hp.separates:
        return
    slot = hp.slot(Role.SEPARATED)
    for f, where in values.where.items():
        if where.slot == slot:
            width = fact_width(f, values.d, plan.tree)
            at = plan.at(where)
            out[:, at:at + width] = separated(plan, hp, values, where, width)


def _features(plan: Plan, hp: HeadPlan, c, values: Values, out: torch.Tensor) -> None:
    """Write what head ``hp`` reads at rows of class ``c``: the query where ``c`` acts, keys and outbox
    blocks where ``c`` is an input class."""
    acts = dict(hp.by_class)
    if hp.kind is HeadKind.OFFSET:
        return  # its query, key and value are linear in what the stream already holds
    if hp.accumulates:
        out[:, plan.span(hp.slot(Role.OUTBOX))] = outbox(plan, hp, values)
        if hp.kind is HeadKind.MIXED and c != OUTPUT:   # the positional key, zeroed at every fixed source
            flags = sum(values.R[:, plan.start(flag(q))][:, None] for q in hp.fixed_sources)
            out[:, plan.span(hp.slot(Role.KEY))] = values.R[:, plan.span(POSITION)] * (1.0 - flags)
        return
    q_at = plan.start(hp.slot(Role.QUERY)) if hp.query_slot_width() else 0
    k_at = plan.start(hp.slot(Role.KEY)) if hp.key_slot_width() else 0
    for s in hp.selections:
        mine = acts.get(c) == s.node
        host = {s.host_var: ()} if s.host_var else {}
        for f in s.factors:
            if not (f.query_direct or f.query_constant):
                if mine:
                    out[:, q_at:q_at + f.rank] = s.sign * f.coefficient * values.host_feature(f, host)
                q_at += f.rank
            if not f.key_direct:
                if c != OUTPUT:
                    var = plan.tree.nodes[s.node]["var"]
                    key = values.feature(f.candidate, {var: ()}, f.rank)
                    out[:, k_at:k_at + f.rank] = key if f.floor is None else _log_above(key, f.floor)
                k_at += f.rank
