"""Compile a feasible verdict's witness into a softmax transformer with explicit weights.

The shape is the experiments' transformer: a token embedding (the token, a constant coordinate, positional
flags where the program reads positions), per layer standard multi-head softmax attention (``W_Q, W_K, W_V,
W_O``; ``h_l`` heads of width ``E / h_l``) with a residual connection, and a position-wise map after the
embedding and after each layer. The answer is read from the output token, an extra token that starts empty.

* a max-position retrieval is one head with ``q_s . k_t = beta * score(s, t)`` (``plan`` splits the
  score into host x candidate products), plus ``-MASK`` on positions that are no candidate (the output
  token, positions outside a subset); its value copies the candidate's facts, so as ``beta`` grows the
  softmax tends to the argmax (for a min the host's features are negated);
* a specific-position aggregation is a head on positional flags (score ``POSITION_SHARPNESS`` on the
  gathered positions, 0 elsewhere): it averages its ``k`` sources, each of which wrote its facts into its
  own block of an outbox slot, and the reader multiplies by ``k``;
* the position-wise maps compute every feature a later head reads and, after the last layer, the answer:
  ``ffn="exact"`` writes the realization's functions in torch (the model's "a position holds everything it
  can compute"); ``ffn="mlp"`` replaces each by a GELU MLP fitted to it (``mlp_maps``).

>>> import infoflow_smt as ifs
>>> model = compile(ifs.decide("max_retrieval", ifs.Architecture(heads=(1,), embed_dim=16, input_dim=2)), beta=64)
>>> model(torch.zeros(1, 5, 2, dtype=torch.float64)).shape
torch.Size([1])
"""
from __future__ import annotations

import dataclasses

import numpy as np
import torch
from torch import nn

from infoflow_smt.errors import CompileRefusal
from infoflow_smt.lang import expr as ex
from infoflow_smt.lang.trees import GroupRef, comparison_tree, outermost
from infoflow_smt.model.program import Offset
from infoflow_smt.verify.arithmetic import is_vector

from experiments.compilation import plan as wp
from experiments.compilation import separable

MASK = 1e9                 # the score of a position that is no candidate: far below beta * score at beta 16384
POSITION_SHARPNESS = 60.0  # a positional head's score on its sources: the others weigh exp(-60) each
ANGLE = 2 * np.pi / 4096   # positional features cos, sin of p * ANGLE: distinct positions up to T = 2048
# an offset head's scale: the source beats the sink and the sink every other position by 40
OFFSET_SHARPNESS = 80.0 / (1 - np.cos(ANGLE))


def compile(verdict, beta: float = 64.0, ffn: str = "exact", mlp_width: int = 64, seed: int = 0,
            log_keys: bool | None = None) -> nn.Module:
    """The witness of ``verdict`` as a ``CompiledTransformer`` at inverse temperature ``beta``.

    ``log_keys`` (default: with exact maps) ranks a selection of the least value of a convex function of the
    candidate's token by the logarithm of that function above its least value (``plan.log_key``);
    False keeps every score itself as its key.

    Raises ``CompileRefusal`` (reason and term) for what cannot compile, and for an infeasible verdict (naming
    its cheapest program)."""
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
    arch, target = verdict.architecture, verdict.target
    program = verdict.witness
    tree = comparison_tree(target, program.order_map)
    width = int(arch.width_at(64))  # a width that grows with T is taken at T = 64
    heads = tuple(arch.heads)
    if log_keys is None:
        log_keys = ffn == "exact"   # an MLP map fits the feature itself, not its logarithm's pole
    first = wp.make_plan(program, tree, width, arch.input_dim, heads, check=False, realization=target.realization,
                         causal=arch.causal, log_keys=log_keys)
    first = dataclasses.replace(first, width=wp.roomy_width(first))  # wide enough for everything, to see what is read
    reads: set = set()
    CompiledTransformer(first, target, float(beta), arch.positional, reads, arch.causal).dry_run()
    keep = needed(first, reads)
    try:
        plan = wp.make_plan(program, tree, width, arch.input_dim, heads, keep=keep,
                            realization=target.realization, causal=arch.causal, log_keys=log_keys)
    except CompileRefusal as refusal:   # too narrow with a slot per fact: reuse the dead facts' room
        if refusal.reason != "residual_width":
            raise
        loose = wp.make_plan(program, tree, width, arch.input_dim, heads, keep=keep, check=False,
                             realization=target.realization, causal=arch.causal, log_keys=log_keys)
        plan = wp.make_plan(program, tree, width, arch.input_dim, heads, keep=keep,
                            realization=target.realization, causal=arch.causal, log_keys=log_keys,
                            last_use=last_uses(loose, target, arch))
    model = CompiledTransformer(plan, target, float(beta), arch.positional, causal=arch.causal)
    model.dry_run()
    if ffn == "mlp":
        from experiments.compilation.mlp_maps import fit_maps
        fit_maps(model, width=mlp_width, seed=seed)
    return model


def last_uses(plan: wp.Plan, target, arch) -> dict[str, int]:
    """Each fact slot's last reader on ``wp.fact_time``'s clock, from a dry run of ``plan`` at a roomy width:
    the maps by what they read (``Values``), the attention layers by the rows of ``W_Q``, ``W_K`` and ``W_V``
    that are not zero."""
    roomy = dataclasses.replace(plan, width=wp.roomy_width(plan))
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
            if wp.is_fact(s.name) and bool(rows[s.start:s.start + s.width].any()):
                uses[s.name] = max(uses.get(s.name, -1), 2 * layer - 1)
    return uses


class CompiledTransformer(nn.Module):
    """Embedding, ``L`` attention layers with residual connections, a position-wise map after the embedding
    and after each layer, and the answer read from the output token; float64 throughout. ``causal``: each
    input position attends to itself and earlier positions, the output token (last) to every position."""

    def __init__(self, plan: wp.Plan, target, beta: float, positional: bool, reads: set | None = None,
                 causal: bool = False):
        super().__init__()
        self.plan, self.target, self.beta, self.positional, self.causal = plan, target, beta, positional, causal
        E, d = plan.width, plan.input_dim
        self.embed = nn.Parameter(_zeros(d, E), requires_grad=False)
        self.embed.data[:, _span(plan, "x")] = torch.eye(d, dtype=torch.float64)
        self.layers = nn.ModuleList(Attention(plan, layer, beta) for layer in range(1, plan.program.layers + 1))
        self.maps = nn.ModuleList(ExactMap(plan, target.realization, layer, reads)
                                  for layer in range(plan.program.layers + 1))

    def set_beta(self, beta: float) -> CompiledTransformer:
        """The same model at another inverse temperature (only the score coordinates of ``W_Q`` change)."""
        self.beta = float(beta)
        for layer in self.layers:
            layer.set_beta(self.beta)
        return self

    def dry_run(self) -> None:
        """One forward pass on zeros, long enough for every fixed position: every map reads what it will
        read on real inputs, so a fact the stream does not carry is refused now, not on the first input."""
        longest = max([q.position for q in self.plan.flags], default=0)
        self(torch.zeros(1, 2 * longest + 4, self.plan.input_dim, dtype=torch.float64))

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """``X`` (batch, T, d) -> the answer at the output token, (batch,) or (batch, d). The last layer runs
        its queries at the output token alone: nothing reads the other positions after it (the ``stream``
        computes every row, for inspection)."""
        return self.answer(self.stream(X, last_at_output=True)[-1])

    def stream(self, X: torch.Tensor, attention: list | None = None,
               last_at_output: bool = False) -> list[torch.Tensor]:
        """The residual stream after the embedding's map and after each layer (``attention``, when given,
        collects every head's weights)."""
        batch, T, d = X.shape
        tokens = torch.cat([X.to(torch.float64), _zeros(batch, 1, d)], dim=1)  # the output token starts empty
        R = tokens @ self.embed + self.positions(T)
        R = R + self.maps[0](R)
        states = [R]
        for i, (layer, fmap) in enumerate(zip(self.layers, self.maps[1:])):
            if last_at_output and i == len(self.layers) - 1:   # the output token sees every position
                R = R[:, -1:] + layer(R, attention, queries=R[:, -1:])
            else:
                R = R + layer(R, attention, causal=self.causal)
            R = R + fmap(R)
            states.append(R)
        return states

    def answer(self, R: torch.Tensor) -> torch.Tensor:
        out = R[:, -1, _span(self.plan, "answer")]
        return out[:, 0] if self.plan.answer_width == 1 else out

    def positions(self, T: int) -> torch.Tensor:
        """The positional features for a sequence of ``T`` tokens: the constant, the output flag, a flag per
        fixed position the program reads, a non-candidate mask per retrieved node."""
        plan, P = self.plan, _zeros(T + 1, self.plan.width)
        P[:, _span(plan, "one")] = 1.0
        P[T, _span(plan, "output")] = 1.0
        for q in plan.flags:
            at = q.resolve(T)
            if 1 <= at <= T:
                P[at - 1, _span(plan, f"at {wp._fixed(q)}")] = 1.0
        if any(s.name == "pos" for s in plan.slots):
            angle = torch.arange(1, T + 1, dtype=torch.float64) * ANGLE
            P[:T, _span(plan, "pos")] = torch.stack([torch.cos(angle), torch.sin(angle)], dim=1)
        for node in plan.skips:
            domain = plan.tree.nodes[node]["domain"]
            inside = np.zeros(T + 1, dtype=bool)
            inside[self.target.realization.domain_positions(domain, T) - 1] = True
            P[torch.as_tensor(~inside), _span(plan, f"skip {node}")] = 1.0
        for node in (n for n in plan.tree.nodes if wp.is_count(n, plan.tree)):
            data = plan.tree.nodes[node]
            size = len(self.target.realization.domain_positions(data["domain"], T))
            P[:, _span(plan, f"count {node}")] = size * data["score"].value
        return P

    def parameter_count(self) -> int:
        """The nonzero weights (an exact map's functions count as none: they are the realization's)."""
        return int(sum(int((p != 0).sum()) for p in self.parameters()))


class Attention(nn.Module):
    """One layer of standard multi-head softmax attention: ``softmax(Q K^T) V W_O`` per head, summed
    (the usual ``1 / sqrt(d_head)`` is folded into ``W_Q``, which carries ``beta``)."""

    def __init__(self, plan: wp.Plan, layer: int, beta: float):
        super().__init__()
        h, E = plan.heads[layer - 1], plan.width
        dh = E // h
        self.W_Q, self.W_K, self.W_V = (nn.Parameter(_zeros(h, E, dh), requires_grad=False) for _ in range(3))
        self.W_O = nn.Parameter(_zeros(h, dh, E), requires_grad=False)
        # W_Q = beta * scaled + fixed: the score coordinates scale with beta, the masks and positions do not
        self.register_buffer("scaled", _zeros(h, E, dh), persistent=False)
        self.register_buffer("fixed", _zeros(h, E, dh), persistent=False)
        for hp in (p for p in plan.head_plans if p.layer == layer):  # each part in its own coordinates
            i, q, v = hp.head - 1, hp.query_at, hp.value_at
            _write_head(plan, hp, (self.scaled[i][:, q:], self.fixed[i][:, q:]), self.W_K.data[i][:, q:],
                        self.W_V.data[i][:, v:], self.W_O.data[i][v:, :])
        self.set_beta(beta)

    def set_beta(self, beta: float) -> None:
        self.W_Q.data = beta * self.scaled + self.fixed

    def forward(self, R: torch.Tensor, attention: list | None = None, queries: torch.Tensor | None = None,
                causal: bool = False):
        """The heads' sum at every row of ``R`` (or at the rows ``queries`` alone, keys from all of ``R``);
        ``causal``: row ``p`` sees rows up to ``p`` only."""
        # a head coordinate that W_Q or W_K leaves zero adds nothing to any score, one that W_V or W_O leaves
        # zero nothing to any output: the heads run on the others alone (a compiled head uses a few of its
        # E / h), the same sums in another order; one set for Q, K and V, whose widths the fused kernel needs
        # equal (unequal ones take its unfused path, about 5x slower)
        used = _used(self.W_Q, self.W_K) | _used(self.W_V, self.W_O.transpose(1, 2))
        used = torch.nonzero(used).flatten() if used.any() else torch.arange(1)
        Q = torch.einsum("bne,hef->bhnf", R if queries is None else queries, self.W_Q[:, :, used])
        K = torch.einsum("bne,hef->bhnf", R, self.W_K[:, :, used])
        V = torch.einsum("bne,hef->bhnf", R, self.W_V[:, :, used])
        W_O = self.W_O[:, used]
        if attention is None:  # the fused kernel: the same softmax(Q K^T) V, without the T x T weights in memory
            mixed = nn.functional.scaled_dot_product_attention(Q, K, V, scale=1.0, is_causal=causal)
            return torch.einsum("bhnf,hfe->bne", mixed, W_O)
        scores = Q @ K.transpose(-1, -2)
        if causal:
            later = torch.ones(scores.shape[-2:], dtype=torch.bool).triu(1)
            scores = scores.masked_fill(later, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        attention.append(weights)
        return torch.einsum("bhnf,hfe->bne", weights @ V, W_O)


def _write_head(plan: wp.Plan, hp: wp.HeadPlan, W_Q: tuple, W_K, W_V, W_O) -> None:
    """``W_Q`` is the pair (coefficients of beta, fixed part)."""
    o0, d = plan.slot(f"h{hp.name}").start, plan.input_dim
    if hp.kind == "retrieve":
        _write_retrieval(plan, hp, W_Q, W_K, W_V)
    elif hp.kind == "offset":
        _write_offset(plan, hp, W_Q[1], W_K, W_V)
    elif hp.kind == "mixed":
        _write_mixed(plan, hp, W_Q[1], W_K, W_V)
    elif hp.kind == "average":  # W_Q = 0: every position weighs 1/(T+1)
        outbox, width = plan.slot(f"o{hp.name}").start, hp.value_width(d)
        for j in range(width - 1):
            W_V[outbox + j, j] = 1.0
        W_V[plan.slot("output").start, width - 1] = 1.0
    else:
        for j, (q, _) in enumerate(hp.blocks):
            W_K[plan.slot(f"at {wp._fixed(q)}").start, j] = 1.0
            for c, gathers in hp.by_class:  # the query is on where the class gathers q: read from the flags
                if q in gathers:
                    for row, sign in class_indicator(plan, c):
                        W_Q[1][row, j] += POSITION_SHARPNESS * sign
        outbox = plan.slot(f"o{hp.name}")
        for j in range(outbox.width):
            W_V[outbox.start + j, j] = 1.0
        _write_shared(plan, hp, W_V, outbox.width)
    for j in range(hp.value_width(d)):
        W_O[j, o0 + j] = 1.0


def _write_offset(plan: wp.Plan, hp: wp.HeadPlan, W_Q, W_K, W_V) -> None:
    """q_p = S (cos, sin of (p + offset) * ANGLE, c) from the position's own features (a rotation), k_t = (cos,
    sin of t * ANGLE, 1 at the output token): q.k = S cos((t - p - offset) * ANGLE), peaked at the source,
    and S c at the output token, the sink that wins where the source is outside the sequence."""
    (offset, paths), = hp.blocks
    pos, out = plan.slot("pos").start, plan.slot("output").start
    _offset_query(plan, offset, W_Q)
    if hp.part:  # the head does something else at the output token: no query of this part there
        W_Q[out, 2] = -W_Q[plan.slot("one").start, 2]
    W_K[pos, 0] = W_K[pos + 1, 1] = W_K[out, 2] = 1.0
    _copy_paths(plan, hp, paths, W_V)


def _write_mixed(plan: wp.Plan, hp: wp.HeadPlan, W_Q, W_K, W_V) -> None:
    """The offset's query and sink as in ``_write_offset`` but on a key that is 0 at the fixed source, which
    scores ``OFFSET_SHARPNESS`` by its flag instead: the height of the offset's source. The value is the
    mixture of the tokens, then the fixed source's outbox (its tokens alone and its weight)."""
    (offset, paths), (fixed, _) = hp.blocks
    one, out, key = plan.slot("one").start, plan.slot("output").start, plan.slot(f"k{hp.name}").start
    _offset_query(plan, offset, W_Q)
    W_Q[one, 3] = OFFSET_SHARPNESS
    if hp.part:  # the head does something else at the output token: no query of this part there
        W_Q[out, 2:4] = -W_Q[one, 2:4]
    W_K[key, 0] = W_K[key + 1, 1] = W_K[out, 2] = 1.0
    W_K[plan.slot(f"at {wp._fixed(fixed)}").start, 3] = 1.0
    _copy_paths(plan, hp, paths, W_V)
    outbox = plan.slot(f"o{hp.name}")
    for j in range(outbox.width):
        W_V[outbox.start + j, len(paths) * plan.input_dim + j] = 1.0


def _offset_query(plan: wp.Plan, offset, W_Q) -> None:
    """Columns 0-2 of an offset head's query: the position's (cos, sin) rotated by the offset, and the
    output token's sink height on the constant coordinate."""
    a = offset.offset * ANGLE
    rotation = torch.tensor([[np.cos(a), np.sin(a)], [-np.sin(a), np.cos(a)]], dtype=torch.float64)
    pos = plan.slot("pos").start
    W_Q[pos:pos + 2, 0:2] = OFFSET_SHARPNESS * rotation
    W_Q[plan.slot("one").start, 2] = OFFSET_SHARPNESS * (1 - (1 - np.cos(ANGLE)) / 2)


def _copy_paths(plan: wp.Plan, hp: wp.HeadPlan, paths, W_V, at: int = 0) -> None:
    """The tokens along ``paths`` into a head's value from column ``at`` on, ``input_dim`` columns each,
    read from where the layer's inputs hold them."""
    sources = wp.common_paths(plan.locations[hp.layer - 1])
    d = plan.input_dim
    for i, path in enumerate(paths):
        slot, offset_in, scale = sources[path]
        start = plan.slot(slot).start + offset_in
        for j in range(d):
            W_V[start + j, at + i * d + j] = scale


def _write_retrieval(plan: wp.Plan, hp: wp.HeadPlan, W_Q: tuple, W_K, W_V) -> None:
    """Query and key coordinates factor by factor (``beta * sign * coefficient`` is in the host's features
    or, read directly from the token, in ``W_Q``), a mask coordinate per node, and a value that copies the
    winner's candidate features and the tokens read later."""
    x0, d = plan.slot("x").start, plan.input_dim
    q_at = plan.slot(f"q{hp.name}").start if hp.query_slot_width() else 0
    k_at, coord, v_at = 0, 0, 0
    k0 = plan.slot(f"k{hp.name}").start if hp.key_slot_width() else 0
    for s in hp.selections:
        for f in s.factors:
            if f.query_direct:
                M = _factor_matrix(plan, f)
                W_Q[0][x0:x0 + d, coord:coord + d] = s.sign * f.coefficient * M
            elif f.query_constant:  # the number at the classes making this selection, from their flags
                for c, node in hp.by_class:
                    if node == s.node:
                        for row, sign in class_indicator(plan, c):
                            W_Q[0][row, coord] += s.sign * f.coefficient * f.host.value * sign
            else:
                for j in range(f.rank):
                    W_Q[0][q_at + j, coord + j] = 1.0
                q_at += f.rank
            key = x0 if f.key_direct else k0 + k_at
            k_at += 0 if f.key_direct else f.rank
            for j in range(f.rank):
                W_K[key + j, coord + j] = 1.0
                if s.copies_features:
                    W_V[key + j, v_at + j] = 1.0
            coord, v_at = coord + f.rank, v_at + (f.rank if s.copies_features else 0)
        for c, node in hp.by_class:  # -MASK on every non-candidate, where the class selects this node
            if node == s.node:
                for row, sign in class_indicator(plan, c):
                    W_Q[1][row, coord] -= MASK * sign
        W_K[_skip(plan, s.node), coord] = 1.0
        coord += 1

    _copy_paths(plan, hp, hp.values, W_V, v_at)
    _write_shared(plan, hp, W_V, v_at + len(hp.values) * d)


def class_indicator(plan: wp.Plan, c) -> list[tuple[int, float]]:
    """1 at the positions of class ``c``, 0 elsewhere, as a linear form of the flags: the output flag, a
    fixed position's flag, or (every other input position) the constant less all of them."""
    if c == wp.OUTPUT:
        return [(plan.slot("output").start, 1.0)]
    if isinstance(c, ex.FixedIndex):
        return [(plan.slot(f"at {wp._fixed(c)}").start, 1.0)]
    others = [k for k in plan.classes if isinstance(k, ex.FixedIndex)]
    return [(plan.slot("one").start, 1.0), (plan.slot("output").start, -1.0)] + \
        [(plan.slot(f"at {wp._fixed(k)}").start, -1.0) for k in others]


def _write_shared(plan: wp.Plan, hp: wp.HeadPlan, W_V, at: int) -> None:
    """The global values, the same at every input position: any mixture of sources hands them over."""
    for path, width in hp.shared:
        slot, offset, scale = plan.locations[hp.layer - 1][wp.INPUT][path]
        start = plan.slot(slot).start + offset
        for j in range(width):
            W_V[start + j, at + j] = scale
        at += width


def _factor_matrix(plan: wp.Plan, f: wp.Factor) -> torch.Tensor:
    """The host feature as a linear map of the host's token: a^T A b = (A^T a) . b."""
    if f.matrix is None:
        return torch.eye(plan.input_dim, dtype=torch.float64)
    A = torch.as_tensor(plan.realization.matrix(f.matrix, plan.input_dim))
    return A if f.host_first else A.T


def _skip(plan: wp.Plan, node: str) -> int:
    """The mask of non-candidates: the output flag for a node over every position, its own flag otherwise."""
    return plan.slot(f"skip {node}" if node in plan.skips else "output").start


def needed(plan: wp.Plan, reads: set) -> dict:
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
                     if k != wp.OUTPUT and path in plan.locations[hp.layer - 1][k]]
        elif hp.kind in ("offset", "mixed"):  # both read the tokens every input position holds
            keep.setdefault((hp.layer, hp.head), set()).add((tag[1], rest))
            todo += [(hp.layer - 1, k, rest) for k in plan.classes if k != wp.OUTPUT]
        elif hp.kind == "retrieve":
            keep.setdefault((hp.layer, hp.head), set()).add(rest)
            todo += [(hp.layer - 1, k, rest) for k in plan.classes if k != wp.OUTPUT]
        else:
            q = tag[1]
            keep.setdefault((hp.layer, hp.head), set()).add((q, rest))
            todo.append((hp.layer - 1, q if q in plan.classes else wp.INPUT, rest))
    return keep


# ---- the position-wise maps ------------------------------------------------------------------------------
class ExactMap(nn.Module):
    """The map after layer ``layer`` (0: after the embedding), written with the realization's functions:
    at each position class, the features the next layer's heads read and, after the last layer, the answer."""

    def __init__(self, plan: wp.Plan, realization, layer: int, reads: set | None = None):
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
        if self.layer == plan.program.layers and c == wp.OUTPUT:
            answer = values.value(plan.tree.graph["output"], {})  # a constant target gives one number
            shape = (len(R),) if plan.answer_width == 1 else (len(R), plan.answer_width)
            out[:, _span(plan, "answer")] = answer.expand(shape).reshape(len(R), plan.answer_width)
        if plan.scratch is not None:  # the shared coordinates: the last layer's features out, the next's in
            out[:, plan.scratch] -= R[:, plan.scratch]
        for name in plan.frees[self.layer] if plan.frees else ():  # dead here, and a later fact's room
            out[:, _span(plan, name)] -= R[:, _span(plan, name)]
        return out


def class_rows(plan: wp.Plan, R: torch.Tensor) -> dict:
    """Which rows of the stream belong to which position class, read from the positional flags."""
    output = R[..., plan.slot("output").start] > 0.5
    rows, rest = {wp.OUTPUT: output}, ~output
    for c in plan.classes:
        if isinstance(c, ex.FixedIndex):
            mine = (R[..., plan.slot(f"at {wp._fixed(c)}").start] > 0.5) & rest
            rows[c], rest = mine, rest & ~mine
    rows[wp.INPUT] = rest
    return rows


LOG_OFFSET = 1e-12   # log(feature - floor + LOG_OFFSET): finite at the floor itself


def _log_above(feature: torch.Tensor, floor: float) -> torch.Tensor:
    return torch.log(torch.clamp(feature - floor, min=0.0) + LOG_OFFSET)


def _features(plan: wp.Plan, hp: wp.HeadPlan, c, values: Values, out: torch.Tensor) -> None:
    """Write what head ``hp`` reads at rows of class ``c``: the query where ``c`` acts, keys and outbox
    blocks where ``c`` is an input class."""
    acts = dict(hp.by_class)
    if hp.kind == "offset":
        return  # its query, key and value are linear in what the stream already holds
    if hp.kind == "mixed":
        if c != wp.OUTPUT:
            _mixed_features(plan, hp, values, out)
        return
    if hp.kind == "average":
        if c != wp.OUTPUT:
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
                    if c != wp.OUTPUT:
                        var = plan.tree.nodes[s.node]["var"]
                        key = values.feature(f.candidate, {var: ()}, f.rank)
                        out[:, k_at:k_at + f.rank] = key if f.floor is None else _log_above(key, f.floor)
                    k_at += f.rank
        return
    start = 0
    for q, paths in hp.blocks:
        if c != wp.OUTPUT:
            flag = plan.slot(f"at {wp._fixed(q)}").start
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


def _mixed_features(plan: wp.Plan, hp: wp.HeadPlan, values: Values, out: torch.Tensor) -> None:
    """At an input position: the positional key, zeroed at the fixed source, and the fixed source's outbox."""
    (_, paths), (fixed, _) = hp.blocks
    flag = values.R[:, plan.slot(f"at {wp._fixed(fixed)}").start][:, None]
    out[:, _span(plan, f"k{hp.name}")] = values.R[:, _span(plan, "pos")] * (1.0 - flag)
    o0, d = plan.slot(f"o{hp.name}").start, plan.input_dim
    for i, p in enumerate(paths):
        out[:, o0 + i * d:o0 + (i + 1) * d] = flag * values.token(p)
    out[:, o0 + len(paths) * d] = flag[:, 0]


def _per_token_values(plan: wp.Plan, hp: wp.HeadPlan, values: Values, out: torch.Tensor) -> None:
    """At an input position: each aggregate's per-token value where the position is in its domain, and for
    a mean 1 there (the domain's share, once averaged)."""
    at = plan.slot(f"o{hp.name}").start
    for node, carried in hp.averages:
        data, width = plan.tree.nodes[node], wp.average_width(node, plan.tree, plan.input_dim)[0]
        inside = 1.0 - values.R[:, _skip(plan, node)]
        v = values.value(data["score"], {data["var"]: ()})
        v = v.expand(len(values.R), width) if width > 1 else v.expand(len(values.R)).reshape(-1, 1)
        out[:, at:at + width] = v * inside[:, None]
        if carried > width:
            out[:, at + width] = inside
        at += carried


class Values:
    """The value of a tree expression at rows of one class, from the facts in the stream, one method per
    construct (``visit_Content``, ...); ``env`` binds a variable to the path of the token that plays it."""

    def __init__(self, plan: wp.Plan, realization, c, layer: int, R: torch.Tensor, reads: set | None = None):
        self.plan, self.real, self.c, self.R, self.layer, self.reads = plan, realization, c, R, layer, reads
        self.tree, self.d = plan.tree, plan.input_dim
        self.where = plan.locations[layer][c]

    def token(self, path: tuple) -> torch.Tensor:
        if path not in self.where:
            raise CompileRefusal("unheld", wp.path_text(path),
                                 f"{wp.class_text(self.c)} reads the {wp.path_text(path)}, which the compiled "
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
            raise CompileRefusal("mode", wp.term_text(e), f"cannot compile {wp.term_text(e)}")
        return method(e, env)

    def feature(self, e, env: dict, rank: int) -> torch.Tensor:
        """A feature as ``rank`` columns: a scalar as one, a vector as ``d`` (a token compared as a number,
        with scalar tokens, as its one coordinate)."""
        if isinstance(e, wp.SmoothSide):
            return self.smooth_side(e, env)
        v, n = self.value(e, env), len(self.R)
        if rank == 1:
            v = v[..., 0] if is_vector(e, self.tree) else v
            return v.expand(n).reshape(n, 1)
        return v.expand(n, self.d)

    def smooth_side(self, e: wp.SmoothSide, env: dict) -> torch.Tensor:
        """The features ``e`` names, from this side's parts of the function's arguments (zero elsewhere)."""
        n, d = len(self.R), self.d
        f = self.real.function(e.function, e.arity)
        u = torch.cat([_zeros(n, d) if p is None else self.value(p, env).expand(n, d) for p in e.parts], dim=-1)
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

    def host_feature(self, f: wp.Factor, env: dict) -> torch.Tensor:
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
            raise CompileRefusal("unheld", node, f"{wp.class_text(self.c)} does not know the selection {node}")
        return held[0]

    def node_value(self, node: str, env: dict) -> torch.Tensor:
        data = self.tree.nodes[node]
        if wp.is_count(node, self.tree):  # a count the network knows: in the positional features
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
        width, carried = wp.average_width(node, self.tree, self.d)
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
        raise CompileRefusal("mode", wp.term_text(e), f"reading {wp.term_text(e)} is not compiled")

    def _gathered(self, q: ex.FixedIndex) -> tuple:
        held = sorted((p for p in self.where if p and p[-1] == ("at", q)), key=lambda p: (len(p), str(p)))
        if not held:
            raise CompileRefusal("unheld", f"x[{wp._fixed(q)}]", f"{wp.class_text(self.c)} does not hold x[{wp._fixed(q)}]")
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


def _used(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """Per head coordinate (the last axis of two (h, E, d_head) weights): both are nonzero somewhere on it."""
    return (A != 0).any(dim=(0, 1)) & (B != 0).any(dim=(0, 1))


def _zeros(*shape: int) -> torch.Tensor:
    return torch.zeros(*shape, dtype=torch.float64)


def _span(plan: wp.Plan, name: str) -> slice:
    s = plan.slot(name)
    return slice(s.start, s.start + s.width)
