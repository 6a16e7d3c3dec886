"""The position-wise maps of a compiled witness, written with the realization's functions (``ffn="exact"``):
at each position class, the features the next layer's heads read and, after the last layer, the answer. The
model's "a position holds everything it can compute", in torch; ``mlp_maps`` fits an MLP to each instead.
"""
from __future__ import annotations

import torch
from torch import nn

from experiments.compilation import separable
from experiments.compilation.factors import Factor, SmoothSide, is_count, term_text
from experiments.compilation.layout import Plan
from experiments.compilation.plan import (
    INPUT,
    OUTPUT,
    HeadPlan,
    average_width,
    class_text,
    fixed_name,
    path_text,
)
from infoflow_smt.errors import CompileRefusal
from infoflow_smt.lang import expr as ex
from infoflow_smt.lang.trees import GroupRef, outermost
from infoflow_smt.model.program import Offset
from infoflow_smt.verify.arithmetic import is_vector


class ExactMap(nn.Module):
    """The map after layer ``layer`` (0: after the embedding), written with the realization's functions:
    at each position class, the features the next layer's heads read and, after the last layer, the answer."""

    def __init__(self, plan: Plan, realization, layer: int, reads: set | None = None):
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
        for hp in (h for h in plan.head_plans if h.layer == self.layer + 1):
            _features(plan, hp, c, values, out)
        if self.layer == plan.program.layers and c == OUTPUT:
            answer = values.value(plan.tree.graph["output"], {})  # a constant target gives one number
            shape = (len(R),) if plan.answer_width == 1 else (len(R), plan.answer_width)
            out[:, plan.span("answer")] = answer.expand(shape).reshape(len(R), plan.answer_width)
        if plan.scratch is not None:  # the shared coordinates: the last layer's features out, the next's in
            out[:, plan.scratch] -= R[:, plan.scratch]
        for name in plan.frees[self.layer] if plan.frees else ():  # dead here, and a later fact's room
            out[:, plan.span(name)] -= R[:, plan.span(name)]
        return out


def class_rows(plan: Plan, R: torch.Tensor) -> dict:
    """Which rows of the stream belong to which position class, read from the positional flags."""
    output = R[..., plan.slot("output").start] > 0.5
    rows, rest = {OUTPUT: output}, ~output
    for c in plan.classes:
        if isinstance(c, ex.FixedIndex):
            mine = (R[..., plan.slot(f"at {fixed_name(c)}").start] > 0.5) & rest
            rows[c], rest = mine, rest & ~mine
    rows[INPUT] = rest
    return rows


LOG_OFFSET = 1e-12   # log(feature - floor + LOG_OFFSET): finite at the floor itself


def _log_above(feature: torch.Tensor, floor: float) -> torch.Tensor:
    return torch.log(torch.clamp(feature - floor, min=0.0) + LOG_OFFSET)


def _features(plan: Plan, hp: HeadPlan, c, values: Values, out: torch.Tensor) -> None:
    """Write what head ``hp`` reads at rows of class ``c``: the query where ``c`` acts, keys and outbox
    blocks where ``c`` is an input class."""
    acts = dict(hp.by_class)
    if hp.kind == "offset":
        return  # its query, key and value are linear in what the stream already holds
    if hp.kind == "mixed":
        if c != OUTPUT:
            _mixed_features(plan, hp, values, out)
        return
    if hp.kind == "average":
        if c != OUTPUT:
            _per_token_values(plan, hp, values, out)
        return
    if hp.kind == "retrieve":
        q_at = plan.slot(f"q{hp.name}").start if hp.query_slot_width() else 0
        k_at = plan.slot(f"k{hp.name}").start if hp.key_slot_width() else 0
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
        return
    start = 0
    for q, paths in hp.blocks:
        if c != OUTPUT:
            flag = plan.slot(f"at {fixed_name(q)}").start
            at = values.R[:, flag:flag + 1]
            o0 = plan.slot(f"o{hp.name}").start + start
            for i, p in enumerate(paths):
                if (at > 0.5).any():
                    out[:, o0 + i * plan.input_dim:o0 + (i + 1) * plan.input_dim] = at * values.token(p)
        start += len(paths) * plan.input_dim
    o0 = plan.slot(f"o{hp.name}").start + start
    for path, width, q in hp.gated:  # a global value this class alone holds, sent behind its flag
        if c == q:
            out[:, o0:o0 + width] = values.raw(path, width)
        o0 += width


def _mixed_features(plan: Plan, hp: HeadPlan, values: Values, out: torch.Tensor) -> None:
    """At an input position: the positional key, zeroed at the fixed source, and the fixed source's outbox."""
    (_, paths), (fixed, _) = hp.blocks
    flag = values.R[:, plan.slot(f"at {fixed_name(fixed)}").start][:, None]
    out[:, plan.span(f"k{hp.name}")] = values.R[:, plan.span("pos")] * (1.0 - flag)
    o0, d = plan.slot(f"o{hp.name}").start, plan.input_dim
    for i, p in enumerate(paths):
        out[:, o0 + i * d:o0 + (i + 1) * d] = flag * values.token(p)
    out[:, o0 + len(paths) * d] = flag[:, 0]


def _per_token_values(plan: Plan, hp: HeadPlan, values: Values, out: torch.Tensor) -> None:
    """At an input position: each aggregate's per-token value where the position is in its domain, and for
    a mean 1 there (the domain's share, once averaged)."""
    at = plan.slot(f"o{hp.name}").start
    for node, carried in hp.averages:
        data, width = plan.tree.nodes[node], average_width(node, plan.tree, plan.input_dim)[0]
        inside = 1.0 - values.R[:, plan.non_candidate(node)]
        v = values.value(data["score"], {data["var"]: ()})
        v = v.expand(len(values.R), width) if width > 1 else v.expand(len(values.R)).reshape(-1, 1)
        out[:, at:at + width] = v * inside[:, None]
        if carried > width:
            out[:, at + width] = inside
        at += carried


class Values:
    """The value of a tree expression at rows of one class, from the facts in the stream, one method per
    construct (``visit_Content``, ...); ``env`` binds a variable to the path of the token that plays it."""

    def __init__(self, plan: Plan, realization, c, layer: int, R: torch.Tensor, reads: set | None = None):
        self.plan, self.real, self.c, self.R, self.layer, self.reads = plan, realization, c, R, layer, reads
        self.tree, self.d = plan.tree, plan.input_dim
        self.where = plan.locations[layer][c]

    def token(self, path: tuple) -> torch.Tensor:
        if path not in self.where:
            raise CompileRefusal("unheld", path_text(path),
                                 f"{class_text(self.c)} reads the {path_text(path)}, which the compiled "
                                 "stream does not carry to it")
        if self.reads is not None:
            self.reads.add((self.layer, self.c, path))
        slot, offset, scale = self.where[path]
        start = self.plan.slot(slot).start + offset
        if scale is None:
            return self.separated(slot, offset)
        return scale * self.R[:, start:start + self.d]

    def separated(self, slot: str, offset: int) -> torch.Tensor:
        """A token a mixed head gathered: its value holds ``m = w x_q + (1 - w) x_src`` per path, then ``b = w
        x_q`` and ``w``: ``x_q = b / w``, ``x_src = (m - b) / (1 - w)``; where ``w`` is 1 the source is ``q``
        itself (or outside the sequence, where nothing reads it)."""
        start, d = self.plan.slot(slot).start, self.d
        n = len(next(h for h in self.plan.head_plans if f"h{h.name}" == slot).blocks[0][1])
        w = self.R[:, start + 2 * n * d][:, None]
        i = offset // d
        b = self.R[:, start + (n + i % n) * d:start + (n + i % n + 1) * d]
        x_fixed = b / w
        if i >= n:
            return x_fixed
        m = self.R[:, start + i * d:start + (i + 1) * d]
        rest = 1.0 - w
        alone = rest.abs() < 1e-9
        return torch.where(alone, x_fixed, (m - b) / torch.where(alone, torch.ones_like(rest), rest))

    def raw(self, path: tuple, width: int) -> torch.Tensor:
        """The ``width`` coordinates of a global value (an average and its share, or 1/(T+1)), scaled."""
        if self.reads is not None:
            self.reads.add((self.layer, self.c, path))
        slot, offset, scale = self.where[path]
        start = self.plan.slot(slot).start + offset
        return scale * self.R[:, start:start + width]

    def value(self, e, env: dict) -> torch.Tensor:
        method = getattr(self, f"visit_{type(e).__name__}", None)
        if method is None:
            raise CompileRefusal("mode", term_text(e), f"cannot compile {term_text(e)}")
        return method(e, env)

    def feature(self, e, env: dict, rank: int) -> torch.Tensor:
        """A feature as ``rank`` columns: a scalar as one, a vector as ``d`` (a token compared as a number,
        with scalar tokens, as its one coordinate)."""
        if isinstance(e, SmoothSide):
            return self.smooth_side(e, env)
        v, n = self.value(e, env), len(self.R)
        if rank == 1:
            v = v[..., 0] if is_vector(e, self.tree) else v
            return v.expand(n).reshape(n, 1)
        return v.expand(n, self.d)

    def smooth_side(self, e: SmoothSide, env: dict) -> torch.Tensor:
        """The features ``e`` names, from this side's parts of the function's arguments (zero elsewhere)."""
        n, d = len(self.R), self.d
        f = self.real.function(e.function, e.arity)
        u = torch.cat([torch.zeros(n, d, dtype=torch.float64) if p is None else self.value(p, env).expand(n, d) for p in e.parts], dim=-1)
        if e.part == "square":
            return ((u - 2 * torch.as_tensor(f.center)) * u).sum(-1, keepdim=True)
        basis = separable.tanh_basis(e.alpha, e.beta)
        if e.side == "host":
            points, weights = basis.beta_points, basis.host_weights
            argument = u @ torch.as_tensor(f.weight) + f.bias
        else:
            points, weights = basis.alpha_points, basis.candidate_weights
            argument = u @ torch.as_tensor(f.weight)
        return torch.tanh(argument[:, None] + torch.as_tensor(points)) @ torch.as_tensor(weights)

    def host_feature(self, f: Factor, env: dict) -> torch.Tensor:
        v = self.feature(f.host, env, f.rank)
        if f.matrix is None:
            return v
        A = torch.as_tensor(self.real.matrix(f.matrix, self.d))
        return v @ A if f.host_first else v @ A.T  # a^T A b = (A^T a) . b: the host's side of the product

    def winner(self, node: str, env: dict) -> tuple:
        bound = self.tree.nodes[node]["bound"]
        if bound:
            return (*env[next(iter(bound))], node)
        held = sorted((p for p in self.where if p and p[0] != "key" and p[-1] == node),
                      key=lambda p: (len(p), str(p)))
        if not held:
            raise CompileRefusal("unheld", node, f"{class_text(self.c)} does not know the selection {node}")
        return held[0]

    def node_value(self, node: str, env: dict) -> torch.Tensor:
        data = self.tree.nodes[node]
        if is_count(node, self.tree):  # a count the network knows: in the positional features
            return self.R[:, self.plan.slot(f"count {node}").start]
        if data["kind"] == "aggregate" and ("avg", node) in self.where:
            return self.averaged(node)
        if data["kind"] != "top1" or data["sense"] in ("argmin", "argmax"):
            raise CompileRefusal("mode", node, f"{node} ({data['sense']}) is not a value a head copies")
        bound = data["bound"]
        if ("key", node) in self.where and (not bound or env[next(iter(bound))] == ()):
            return self.copied_value(node, {v: env[v] for v in bound})
        winner = self.winner(node, env)
        local = {v: env[v] for v in data["bound"]} | {data["var"]: winner}
        total = sum(sign * self.value(t, local) for sign, t in data["terms"])
        return total[..., 0] if is_vector(data["score"], self.tree) else total

    def averaged(self, node: str) -> torch.Tensor:
        """A sum or mean from a uniform average: ``a = sum_D v / (T+1)``, ``b = |D| / (T+1)``, ``c = 1/(T+1)``."""
        width, carried = average_width(node, self.tree, self.d)
        held = self.raw(("avg", node), carried)
        a = held[:, :width]
        total = a / (held[:, width] if carried > width else self.raw(("count",), 1)[:, 0])[:, None]
        return total if width > 1 else total[:, 0]

    def copied_value(self, node: str, env: dict) -> torch.Tensor:
        """The value of a selection this position made, from the winner's candidate features its head
        copied and its own host features: ``sum_f c_f <host_f, candidate_f(winner)>`` plus the terms that
        read the host alone."""
        s = next(sel for h in self.plan.head_plans for sel in h.selections if sel.node == node)
        if self.reads is not None:
            self.reads.add((self.layer, self.c, ("key", node)))
        slot, offset, _ = self.where[("key", node)]
        at = self.plan.slot(slot).start + offset
        total = torch.zeros(len(self.R), dtype=torch.float64)
        for f in s.factors:
            copied = self.R[:, at:at + f.rank]
            copied = copied if f.floor is None else f.floor + torch.exp(copied) - LOG_OFFSET
            total = total + f.coefficient * (self.host_feature(f, env) * copied).sum(-1)
            at += f.rank
        for sign, t in s.constant:
            v = self.value(t, env)
            total = total + sign * (v[..., 0] if is_vector(t, self.tree) else v)
        return total

    def visit_Num(self, e, env):
        return torch.tensor(e.value, dtype=torch.float64)

    def visit_Param(self, e, env):
        return torch.as_tensor(self.real.vector(e.name, self.d))

    def visit_Content(self, e, env):
        index = e.index
        if isinstance(index, ex.VarIndex):
            return self.token(env[index.name])
        if isinstance(index, ex.FixedIndex):
            if self.c == index:
                return self.token(())
            return self.token(self._gathered(index))
        if isinstance(index, GroupRef):
            return self.token(self.winner(outermost(self.tree, index.group), env))
        if isinstance(index, ex.OffsetIndex):
            return self.token((*env[index.name], ("at", Offset(index.offset))))
        raise CompileRefusal("mode", term_text(e), f"reading {term_text(e)} is not compiled")

    def _gathered(self, q: ex.FixedIndex) -> tuple:
        held = sorted((p for p in self.where if p and p[-1] == ("at", q)), key=lambda p: (len(p), str(p)))
        if not held:
            raise CompileRefusal("unheld", f"x[{fixed_name(q)}]", f"{class_text(self.c)} does not hold x[{fixed_name(q)}]")
        return held[0]

    def visit_GroupRef(self, e, env):
        return self.node_value(outermost(self.tree, e.group), env)

    def visit_NodeRef(self, e, env):
        return self.node_value(e.node, env)

    def visit_Neg(self, e, env):
        return -self.value(e.operand, env)

    def visit_BinOp(self, e, env):
        a, b = self.value(e.left, env), self.value(e.right, env)
        va, vb = is_vector(e.left, self.tree), is_vector(e.right, self.tree)
        if va != vb:  # a scalar against a vector: align it with the last (d) axis
            a, b = (a, b.unsqueeze(-1)) if va else (a.unsqueeze(-1), b)
        ops = {"+": torch.add, "-": torch.sub, "*": torch.mul, "/": torch.div, "**": torch.pow}
        return ops[e.op](a, b)

    def visit_Call(self, e, env):
        if e.name == "bilinear":
            A = torch.as_tensor(self.real.matrix(e.args[0].name, self.d))
            a, b = (self.value(x, env) for x in e.args[1:])
            return torch.einsum("...i,ij,...j->...", a, A, b)
        args = [self.value(x, env) for x in e.args]
        if e.name == "dot":
            return (args[0] * args[1]).sum(-1)
        if e.name == "norm":
            return torch.linalg.norm(args[0], dim=-1)
        if e.name in ("min", "max"):  # the better of two selections (``causal.causal_form``)
            return (torch.minimum if e.name == "min" else torch.maximum)(*torch.broadcast_tensors(*args))
        columns = [a if is_vector(x, self.tree) else a.unsqueeze(-1) for a, x in zip(args, e.args)]
        lead = torch.broadcast_shapes(*(c.shape[:-1] for c in columns))
        u = torch.cat([c.expand(*lead, c.shape[-1]) for c in columns], dim=-1)
        f = self.real.function(e.name, u.shape[-1])
        center, weight = torch.as_tensor(f.center), torch.as_tensor(f.weight)
        return ((u - center) ** 2).sum(-1) / f.arity + 0.5 * torch.tanh(u @ weight + f.bias)
