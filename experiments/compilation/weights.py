"""A compiled witness's transformer: the embedding, the attention layers' weights, the position-wise maps.

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
  own block of an outbox slot, and adds the average back onto the outbox (``gathers``);
* the position-wise maps compute every feature a later head reads and, after the last layer, the answer:
  ``ffn="exact"`` writes the realization's functions in torch (the model's "a position holds everything it
  can compute"); ``ffn="mlp"`` replaces each by a GELU MLP fitted to it (``mlp_maps``).

``compiling.compile`` builds it from a laid-out plan (``layout.Plan``); the maps are ``exact_maps``'.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import nn

from experiments.compilation.exact_maps import ExactMap
from experiments.compilation.factors import Factor, is_count
from experiments.compilation.facts import (
    ANGLE,
    ANSWER,
    INPUT,
    ONE,
    OUTPUT,
    OUTPUT_FLAG,
    POSITION,
    TOKEN,
    Role,
    SlotId,
    flag,
)
from experiments.compilation.head_plan import HeadKind, HeadPlan
from experiments.compilation.layout import Plan
from experiments.compilation.parts import common_facts
from infoflow_smt.lang import expr as ex

MASK = 1e9                 # the score of a position that is no candidate: far below beta * score at beta 16384

POSITION_SHARPNESS = 60.0  # a positional head's score on its sources: the others weigh exp(-60) each

# an offset head's scale: the source beats the sink and the sink every other position by 40
OFFSET_SHARPNESS = 80.0 / (1 - np.cos(ANGLE))


class CompiledTransformer(nn.Module):
    """Embedding, ``L`` attention layers with residual connections, a position-wise map after the embedding
    and after each layer, and the answer read from the output token; float64 throughout. ``causal``: each
    input position attends to itself and earlier positions, the output token (last) to every position."""

    def __init__(self, plan: Plan, target, beta: float, positional: bool, reads: set | None = None,
                 causal: bool = False):
        super().__init__()
        self.plan, self.target, self.beta, self.positional, self.causal = plan, target, beta, positional, causal
        E, d = plan.width, plan.input_dim
        self.embed = nn.Parameter(_zeros(d, E), requires_grad=False)
        self.embed.data[:, plan.span(TOKEN)] = torch.eye(d, dtype=torch.float64)
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
        out = R[:, -1, self.plan.span(ANSWER)]
        return out[:, 0] if self.plan.answer_width == 1 else out

    def positions(self, T: int) -> torch.Tensor:
        """The positional features for a sequence of ``T`` tokens: the constant, the output flag, a flag per
        fixed position the program reads, a non-candidate mask per retrieved node."""
        plan, P = self.plan, _zeros(T + 1, self.plan.width)
        P[:, plan.span(ONE)] = 1.0
        P[T, plan.span(OUTPUT_FLAG)] = 1.0
        for q in plan.flags:
            at = q.resolve(T)
            if 1 <= at <= T:
                P[at - 1, plan.span(flag(q))] = 1.0
        if plan.has(POSITION):
            angle = torch.arange(1, T + 1, dtype=torch.float64) * ANGLE
            P[:T, plan.span(POSITION)] = torch.stack([torch.cos(angle), torch.sin(angle)], dim=1)
        for node in plan.skips:
            domain = plan.tree.nodes[node]["domain"]
            inside = np.zeros(T + 1, dtype=bool)
            inside[self.target.realization.domain_positions(domain, T) - 1] = True
            P[torch.as_tensor(~inside), plan.span(SlotId(Role.SKIP, node))] = 1.0
        for node in (n for n in plan.tree.nodes if is_count(n, plan.tree)):
            data = plan.tree.nodes[node]
            size = len(self.target.realization.domain_positions(data["domain"], T))
            P[:, plan.span(SlotId(Role.COUNT, node))] = size * data["score"].value
        return P

    def parameter_count(self) -> int:
        """The nonzero weights (an exact map's functions count as none: they are the realization's)."""
        return int(sum(int((p != 0).sum()) for p in self.parameters()))


class Attention(nn.Module):
    """One layer of standard multi-head softmax attention: ``softmax(Q K^T) V W_O`` per head, summed
    (the usual ``1 / sqrt(d_head)`` is folded into ``W_Q``, which carries ``beta``)."""

    def __init__(self, plan: Plan, layer: int, beta: float):
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
        # equal (unequal ones take its slower unfused path)
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


def _write_head(plan: Plan, hp: HeadPlan, W_Q: tuple, W_K, W_V, W_O) -> None:
    """``W_Q`` is the pair (coefficients of beta, fixed part)."""
    if hp.kind is HeadKind.RETRIEVE:
        _write_retrieval(plan, hp, W_Q, W_K, W_V)
    elif hp.kind is HeadKind.OFFSET:
        _write_offset(plan, hp, W_Q[1], W_K, W_V)
    elif hp.kind is HeadKind.MIXED:
        _write_mixed(plan, hp, W_Q[1], W_K, W_V)
    elif hp.kind is HeadKind.AVERAGE:  # W_Q = 0: every position weighs 1/(T+1)
        outbox, width = plan.start(hp.slot(Role.OUTBOX)), hp.value_width()
        for j in range(width - 1):
            W_V[outbox + j, j] = 1.0
        W_V[plan.start(OUTPUT_FLAG), width - 1] = 1.0
    else:
        for j, (q, _) in enumerate(hp.blocks):
            W_K[plan.start(flag(q)), j] = 1.0
            for c, gathers in hp.by_class:  # the query is on where the class gathers q: read from the flags
                if q in gathers:
                    for row, sign in class_indicator(plan, c):
                        W_Q[1][row, j] += POSITION_SHARPNESS * sign
        outbox = plan.slot(hp.slot(Role.OUTBOX))
        for j in range(outbox.width):
            W_V[outbox.start + j, j] = 1.0
        _write_shared(plan, hp, W_V, outbox.width)
    for j, row in enumerate(_outputs(plan, hp)):
        W_O[j, row] = 1.0


def _outputs(plan: Plan, hp: HeadPlan) -> list[int]:
    """The stream coordinate ``W_O`` writes each value column to: the head's output slot, and for an accumulating
    head (``HeadPlan.accumulates``) its outbox's own coordinates for the outbox's copy."""
    own = plan.start(hp.slot(Role.HEAD)) if hp.head_width() else 0
    if not hp.accumulates:
        return [own + j for j in range(hp.value_width())]
    box = plan.start(hp.slot(Role.OUTBOX))
    head = iter(range(own, own + hp.head_width()))
    return [box + j - hp.outbox_at if hp.outbox_at <= j < hp.outbox_at + hp.outbox_width() else next(head)
            for j in range(hp.value_width())]


def _write_offset(plan: Plan, hp: HeadPlan, W_Q, W_K, W_V) -> None:
    """q_p = S (cos, sin of (p + offset) * ANGLE, c) from the position's own features (a rotation), k_t = (cos,
    sin of t * ANGLE, 1 at the output token): q.k = S cos((t - p - offset) * ANGLE), peaked at the source,
    and S c at the output token, the sink that wins where the source is outside the sequence. Under a causal
    mask (``gate``) the value also copies the source's positional features."""
    (offset, facts), = hp.blocks
    pos, out = plan.start(POSITION), plan.start(OUTPUT_FLAG)
    _offset_query(plan, offset, W_Q)
    if hp.part:  # the head does something else at the output token: no query of this part there
        W_Q[out, 2] = -W_Q[plan.start(ONE), 2]
    W_K[pos, 0] = W_K[pos + 1, 1] = W_K[out, 2] = 1.0
    _copy_facts(plan, hp, facts, W_V)
    if hp.gate:
        W_V[pos, hp.block_width] = W_V[pos + 1, hp.block_width + 1] = 1.0


def _write_mixed(plan: Plan, hp: HeadPlan, W_Q, W_K, W_V) -> None:
    """The offset's query and sink as in ``_write_offset`` but on a key that is 0 at every fixed source, each
    of which scores ``OFFSET_SHARPNESS`` by its flag instead: the height of the offset's source. The value is
    the mixture of the facts (and of the positional features), then the fixed sources' outbox."""
    (offset, facts), = hp.blocks[:1]
    one, out, key = plan.start(ONE), plan.start(OUTPUT_FLAG), plan.start(hp.slot(Role.KEY))
    _offset_query(plan, offset, W_Q)
    W_Q[one, 3] = OFFSET_SHARPNESS
    if hp.part:  # the head does something else at the output token: no query of this part there
        W_Q[out, 2:4] = -W_Q[one, 2:4]
    W_K[key, 0] = W_K[key + 1, 1] = W_K[out, 2] = 1.0
    for q in hp.fixed_sources:
        W_K[plan.start(flag(q)), 3] = 1.0
    _copy_facts(plan, hp, facts, W_V)
    if hp.gate:
        pos, n = plan.start(POSITION), hp.block_width
        W_V[pos, n] = W_V[pos + 1, n + 1] = 1.0
    outbox = plan.slot(hp.slot(Role.OUTBOX))
    for j in range(outbox.width):
        W_V[outbox.start + j, hp.outbox_at + j] = 1.0


def _offset_query(plan: Plan, offset, W_Q) -> None:
    """Columns 0-2 of an offset head's query: the position's (cos, sin) rotated by the offset, and the
    output token's sink height on the constant coordinate."""
    a = offset.offset * ANGLE
    rotation = torch.tensor([[np.cos(a), np.sin(a)], [-np.sin(a), np.cos(a)]], dtype=torch.float64)
    pos = plan.start(POSITION)
    W_Q[pos:pos + 2, 0:2] = OFFSET_SHARPNESS * rotation
    W_Q[plan.start(ONE), 2] = OFFSET_SHARPNESS * (1 - (1 - np.cos(ANGLE)) / 2)


def _copy_facts(plan: Plan, hp: HeadPlan, facts, W_V, at: int = 0) -> None:
    """The facts ``facts`` (with their widths) into a head's value from column ``at`` on, read from where the
    layer's inputs hold them."""
    sources = common_facts(plan.locations[hp.layer - 1])
    for f, width in facts:
        where = sources[f]
        start, scale = plan.at(where), where.scale
        for j in range(width):
            W_V[start + j, at + j] = scale
        at += width


def _write_retrieval(plan: Plan, hp: HeadPlan, W_Q: tuple, W_K, W_V) -> None:
    """Query and key coordinates factor by factor (``beta * sign * coefficient`` is in the host's features
    or, read directly from the token, in ``W_Q``), a mask coordinate per node, and a value that copies the
    winner's candidate features and the facts read later."""
    x0, d = plan.start(TOKEN), plan.input_dim
    q_at = plan.start(hp.slot(Role.QUERY)) if hp.query_slot_width() else 0
    k_at, coord, v_at = 0, 0, 0
    k0 = plan.start(hp.slot(Role.KEY)) if hp.key_slot_width() else 0
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
        W_K[plan.non_candidate(s.node), coord] = 1.0
        coord += 1

    _copy_facts(plan, hp, hp.values, W_V, v_at)
    _write_shared(plan, hp, W_V, v_at + sum(w for _, w in hp.values))


def class_indicator(plan: Plan, c) -> list[tuple[int, float]]:
    """1 at the positions of class ``c``, 0 elsewhere, as a linear form of the flags: the output flag, a
    fixed position's flag, or (every other input position) the constant less all of them."""
    if c == OUTPUT:
        return [(plan.start(OUTPUT_FLAG), 1.0)]
    if isinstance(c, ex.FixedIndex):
        return [(plan.start(flag(c)), 1.0)]
    others = [k for k in plan.classes if isinstance(k, ex.FixedIndex)]
    return [(plan.start(ONE), 1.0), (plan.start(OUTPUT_FLAG), -1.0)] + [(plan.start(flag(k)), -1.0) for k in others]


def _write_shared(plan: Plan, hp: HeadPlan, W_V, at: int) -> None:
    """The global values, the same at every input position: any mixture of sources hands them over."""
    for f, width in hp.shared:
        where = plan.locations[hp.layer - 1][INPUT][f]
        start = plan.at(where)
        for j in range(width):
            W_V[start + j, at + j] = where.scale
        at += width


def _factor_matrix(plan: Plan, f: Factor) -> torch.Tensor:
    """The host feature as a linear map of the host's token: a^T A b = (A^T a) . b."""
    if f.matrix is None:
        return torch.eye(plan.input_dim, dtype=torch.float64)
    A = torch.as_tensor(plan.realization.matrix(f.matrix, plan.input_dim))
    return A if f.host_first else A.T


def _used(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """Per head coordinate (the last axis of two (h, E, d_head) weights): both are nonzero somewhere on it."""
    return (A != 0).any(dim=(0, 1)) & (B != 0).any(dim=(0, 1))


def _zeros(*shape: int) -> torch.Tensor:
    return torch.zeros(*shape, dtype=torch.float64)
