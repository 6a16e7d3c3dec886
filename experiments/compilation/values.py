"""The value of a tree expression at the rows of one position class, read from the facts in the residual stream:
what an exact map computes (``exact_maps``), as the reference interpreter computes it from what a position holds
(infoflow_smt/verify/interpreter.py).

A variable is bound to the *route* of the position playing it (``()``: the position itself, ``("g0.s",)``: the
winner it retrieved for ``g0.s``). A selection's value is read, in this order, from a value fact the position
holds (``Kind.VALUE``: computed by the position that made the selection, and copied as it is), from the winner's
candidate features its own head copied (``Kind.KEY``: linear in them, so a tie between candidates of equal score
averages equal values), under another name of the same selection (``trees.Hosting``: made at the position
playing its own variable, or by the winner of another selection for itself), and last from the winner's tokens.
"""
from __future__ import annotations

import torch

from experiments.compilation import separable
from experiments.compilation.factors import Factor, SmoothSide, is_count, term_text
from experiments.compilation.facts import (
    COUNT,
    Fact,
    Gathered,
    Kind,
    Role,
    SlotId,
    average,
    class_text,
    key,
    position_text,
    value,
)
from experiments.compilation.gathers import separated
from experiments.compilation.head_plan import average_width
from experiments.compilation.layout import Plan
from experiments.compilation.routes import known_routes, other_names, winner_route
from infoflow_smt.errors import CompileRefusal
from infoflow_smt.lang import expr as ex
from infoflow_smt.lang.trees import GroupRef, outermost
from infoflow_smt.model.program import Offset
from infoflow_smt.verify.arithmetic import is_vector

LOG_OFFSET = 1e-12   # log(feature - floor + LOG_OFFSET): finite at the floor itself


class Values:
    """The value of a tree expression at rows of one class, from the facts in the stream, one method per
    construct (``visit_Content``, ...). ``reads`` (when given) records every fact read, under ``consumer``
    (None: a feature or the answer; ``(layer, class, node)``: a selection's value a map writes)."""

    def __init__(self, plan: Plan, realization, c, layer: int, R: torch.Tensor, reads: dict | None = None,
                 consumer=None):
        self.plan, self.real, self.c, self.R, self.layer = plan, realization, c, R, layer
        self.reads, self.consumer = reads, consumer
        self.tree, self.d = plan.tree, plan.input_dim
        self.where = plan.locations[layer][c]
        self.hostings = self.tree.graph.get("hostings", {})
        self._open: set = set()
        self._known_routes: frozenset | None = None
        self.cache: dict = {}   # per gathering head, what it gathered less what this position sent itself

    # ---- facts ---------------------------------------------------------------------------------------
    def held(self, f: Fact):
        """Where this class holds ``f`` in the stream now (None also for what the running map writes, which
        ``fact`` computes)."""
        where = self.where.get(f)
        if where is None or self.writing(f):
            return None
        return where

    def writing(self, f: Fact) -> bool:
        """Whether the running map writes ``f`` (a selection's value, a gathered fact separated)."""
        where = self.where.get(f)
        return where is not None and where.slot.role.by_map and where.slot.layer == self.layer

    def record(self, f: Fact) -> None:
        if self.reads is not None:
            self.reads.setdefault(self.consumer, set()).add((self.layer, self.c, f))

    def fact(self, f: Fact) -> torch.Tensor:
        """A token (n, d) or a value (n,) the class holds; what the running map writes is computed here: a
        selection's value, or a fact a gathering head mixed (``gathers.separated``)."""
        width = self.d if f.kind is Kind.TOKEN else 1
        where = self.held(f)
        if self.writing(f) and f.kind is Kind.VALUE and self.where[f].slot.role is Role.VALUES:
            found = self._node_value(f.node, {v: f.route for v in self.tree.nodes[f.node]["bound"]}, carried=False)
            if found is None:
                raise CompileRefusal("unheld", f.node, f"{class_text(self.c)} does not know the selection {f.node}")
            return found
        if self.writing(f):
            self.record(f)
            got = separated(self.plan, self.plan.head_of(self.where[f].slot), self, self.where[f], width)
            return got if f.kind is Kind.TOKEN else got[:, 0]
        if where is None:
            raise CompileRefusal("unheld", str(f), f"{class_text(self.c)} reads the {f}, which the compiled "
                                 "stream does not carry to it")
        self.record(f)
        start = self.plan.at(where)
        got = where.scale * self.R[:, start:start + width]
        return got if f.kind is Kind.TOKEN else got[:, 0]

    def raw(self, f: Fact, width: int) -> torch.Tensor:
        """The ``width`` coordinates of a global value (an average and its share, or 1/(T+1)), scaled."""
        if self.writing(f):
            self.record(f)
            return separated(self.plan, self.plan.head_of(self.where[f].slot), self, self.where[f], width)
        where = self.held(f)
        if where is None:
            raise CompileRefusal("unheld", str(f), f"{class_text(self.c)} reads the {f}, which the compiled "
                                 "stream does not carry to it")
        self.record(f)
        start = self.plan.at(where)
        return where.scale * self.R[:, start:start + width]

    # ---- expressions -----------------------------------------------------------------------------------
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
        u = torch.cat([torch.zeros(n, d, dtype=torch.float64) if p is None else self.value(p, env).expand(n, d)
                       for p in e.parts], dim=-1)
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

    # ---- selections ------------------------------------------------------------------------------------
    def winner(self, node: str, env: dict) -> tuple | None:
        """The route of the winner of ``node`` at ``env``'s binding, as this class knows it (None: it does not)."""
        return winner_route(self.tree, self._routes(), node, env, self.c)

    def _routes(self) -> frozenset:
        if self._known_routes is None:
            self._known_routes = known_routes(self.where)
        return self._known_routes

    def _hosted(self, node: str, env: dict) -> torch.Tensor | None:
        """``node``'s value under the first of its other names (``trees.Hosting``) this class knows."""
        mark = (node, tuple(sorted((v, env[v]) for v in self.tree.nodes[node]["bound"] if v in env)))
        if mark in self._open:
            return None   # a name met again while it is looked up: a chain naming itself
        self._open.add(mark)
        try:
            for other, at in other_names(self.tree, self._routes(), node, env, self.c, set()):
                if (found := self._node_value(other, at)) is not None:
                    return found
            return None
        finally:
            self._open.discard(mark)

    def node_value(self, node: str, env: dict) -> torch.Tensor:
        found = self._node_value(node, env)
        if found is None:
            raise CompileRefusal("unheld", node, f"{class_text(self.c)} does not know the selection {node}")
        return found

    def _node_value(self, node: str, env: dict, carried: bool = True) -> torch.Tensor | None:
        """``node``'s value at ``env``, or None where this class does not know it; ``carried`` False: not from a
        value fact (the one the running map writes is computed here)."""
        data = self.tree.nodes[node]
        if is_count(node, self.tree):  # a count the network knows: in the positional features
            return self.R[:, self.plan.start(SlotId(Role.COUNT, node))]
        if data["kind"] == "aggregate" and average(node) in self.where:
            return self.averaged(node)
        if data["kind"] != "top1" or data["sense"] in ("argmin", "argmax"):
            raise CompileRefusal("mode", node, f"{node} ({data['sense']}) is not a value a head copies")
        bound = data["bound"]
        host = env[next(iter(bound))] if bound else None
        fact = value(node, host) if bound else next(
            (f for f in sorted(self.where, key=lambda f: (len(f.route), str(f))) if f.kind is Kind.VALUE
             and f.node == node), None)
        if carried and fact is not None and fact in self.where:
            return self.fact(fact)
        if self.held(key(node)) is not None and (not bound or host == ()):
            return self.copied_value(node, {v: env[v] for v in bound})
        hosted = self._hosted(node, env)
        if hosted is not None:
            return hosted
        winner = self.winner(node, env)
        if winner is None:
            return None
        local = {v: env[v] for v in bound} | {data["var"]: winner}
        total = sum(sign * self.value(t, local) for sign, t in data["terms"])
        return total[..., 0] if is_vector(data["score"], self.tree) else total

    def averaged(self, node: str) -> torch.Tensor:
        """A sum or mean from a uniform average: ``a = sum_D v / (T+1)``, ``b = |D| / (T+1)``, ``c = 1/(T+1)``."""
        width, carried = average_width(node, self.tree, self.d)
        held = self.raw(average(node), carried)
        a = held[:, :width]
        total = a / (held[:, width] if carried > width else self.raw(COUNT, 1)[:, 0])[:, None]
        return total if is_vector(self.tree.nodes[node]["score"], self.tree) else total[:, 0]

    def copied_value(self, node: str, env: dict) -> torch.Tensor:
        """The value of a selection this position made, from the winner's candidate features its head
        copied and its own host features: ``sum_f c_f <host_f, candidate_f(winner)>`` plus the terms that
        read the host alone."""
        s = next(sel for h in self.plan.head_plans for sel in h.selections if sel.node == node)
        self.record(key(node))
        at = self.plan.at(self.held(key(node)))
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

    # ---- one method per construct --------------------------------------------------------------------------
    def visit_Num(self, e, env):
        return torch.tensor(e.value, dtype=torch.float64)

    def visit_Param(self, e, env):
        return torch.as_tensor(self.real.vector(e.name, self.d))

    def visit_Content(self, e, env):
        index = e.index
        if isinstance(index, ex.VarIndex):
            return self.fact(Fact(env[index.name]))
        if isinstance(index, ex.FixedIndex):
            if self.c == index:
                return self.fact(Fact())
            return self.fact(Fact(self._gathered(index)))
        if isinstance(index, GroupRef):
            node = outermost(self.tree, index.group)
            route = self.winner(node, env)
            if route is None:
                raise CompileRefusal("unheld", node, f"{class_text(self.c)} does not know the selection {node}")
            return self.fact(Fact(route))
        if isinstance(index, ex.OffsetIndex):
            return self.fact(Fact((*env[index.name], Gathered(Offset(index.offset)))))
        raise CompileRefusal("mode", term_text(e), f"reading {term_text(e)} is not compiled")

    def _gathered(self, q: ex.FixedIndex) -> tuple:
        held = sorted((f.route for f in self.where if f.kind is Kind.TOKEN and f.last == Gathered(q)),
                      key=lambda r: (len(r), str(r)))
        if not held:
            raise CompileRefusal("unheld", f"x[{position_text(q)}]",
                                 f"{class_text(self.c)} does not hold x[{position_text(q)}]")
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
