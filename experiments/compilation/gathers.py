"""What a gathering head's sources send (``outbox``), and the facts it gathered, separated (``separated``): the
map before the layer writes the first, the map after it computes the second.

A head gathering fixed positions (``HeadKind.POSITIONS``) averages its ``k`` sources, each of which wrote its
facts, behind its flag, into its own block of an outbox; a head gathering an offset and fixed positions
(``HeadKind.MIXED``) also mixes the offset's source into its output. ``W_O`` adds the gathered outbox blocks back
onto the outbox's own coordinates (the outbox and the gathered blocks share their room), so the map after the
layer first subtracts what the position itself sent. Then a fixed source's facts are ``k`` times its block
(``POSITIONS``), or ``b_j / w_j`` (``MIXED``: ``b_j = w_j x_j`` the block, ``w_j`` the flag's weight), and the
offset's source ``(mixture - sum b_j) / (1 - sum w_j)``, or, where the weights sum to 1, the fixed source at the
offset's position (told by its positional features, ``gate``; 0 where there is none: padding). Under a causal
mask an offset head copies its source's positional features too (``gate``): a position whose source is outside
the sequence attends to another, and keeps 0.
"""
from __future__ import annotations

import torch

from experiments.compilation.facts import ANGLE, OUTPUT, POSITION, Role, flag
from experiments.compilation.head_plan import HeadKind, HeadPlan, average_width, mixed_block
from infoflow_smt.verify.arithmetic import is_vector

ALONE = 1e-9   # a mixed head's weight left to the offset's source below this: the source is a fixed one


def outbox(plan, hp: HeadPlan, values) -> torch.Tensor:
    """What the rows of ``values``'s class send into ``hp``'s outbox: each fixed source, at its own rows, its
    facts (and for a mixed head its flag and, with ``gate``, its positional features); a gathered global value
    from the class that alone holds it. Zero at the output token."""
    R = values.R
    out = torch.zeros(len(R), hp.outbox_width(), dtype=torch.float64)
    if values.c == OUTPUT:
        return out
    if hp.kind is HeadKind.AVERAGE:
        return _per_token_values(plan, hp, values, out)
    reader, values.consumer = values.consumer, ("outbox", hp.ref)   # kept only where a reader needs the fact
    try:
        return _outbox(plan, hp, values, out)
    finally:
        values.consumer = reader


def _per_token_values(plan, hp: HeadPlan, values, out: torch.Tensor) -> torch.Tensor:
    """At an input position: each aggregate's per-token value where the position is in its domain, and for a
    mean 1 there (the domain's share, once averaged). Read as every feature is (the facts an average needs are
    needed wherever it is read)."""
    at, n = 0, len(values.R)
    for node, carried in hp.averages:
        data, width = plan.tree.nodes[node], average_width(node, plan.tree, plan.input_dim)[0]
        inside = 1.0 - values.R[:, plan.non_candidate(node)]
        v = values.value(data["score"], {data["var"]: ()})
        v = v.expand(n, width) if is_vector(data["score"], plan.tree) else v.expand(n).reshape(n, 1)
        out[:, at:at + width] = v * inside[:, None]
        if carried > width:
            out[:, at + width] = inside
        at += carried
    return out


def _outbox(plan, hp: HeadPlan, values, out: torch.Tensor) -> torch.Tensor:
    R, at = values.R, 0
    for j, (q, facts) in enumerate(hp.blocks):
        if hp.kind is HeadKind.MIXED:
            if j == 0:
                continue   # the offset's source sends its facts straight from where they are
            at = mixed_block(hp, j - 1)
        here = R[:, plan.start(flag(q))][:, None]
        sends = bool((here > 0.5).any())
        for f, w in facts:
            if sends:
                v = values.fact(f)
                out[:, at:at + w] = here * (v if v.dim() == 2 else v[:, None])
            at += w
        if hp.kind is HeadKind.MIXED:
            out[:, at:at + 1] = here
            if hp.gate:
                out[:, at + 1:at + 3] = here * R[:, plan.span(POSITION)]
    for f, width, q in hp.gated:   # a global value this class alone holds, sent behind its flag
        if values.c == q:
            out[:, at:at + width] = values.raw(f, width)
        at += width
    return out


def separated(plan, hp: HeadPlan, values, where, width: int) -> torch.Tensor:
    """The fact ``hp`` gathered that lies at ``where`` once separated (``Role.SEPARATED``: the outbox's layout for
    a positions head, the sources' facts one block after another in ``blocks`` order otherwise), from what the
    rows of ``values`` hold right after ``hp``'s layer."""
    R, n = values.R, hp.block_width
    if hp.accumulates:
        cached = values.cache.get(hp.ref)
        if cached is None:
            cached = values.cache[hp.ref] = R[:, plan.span(hp.slot(Role.OUTBOX))] - outbox(plan, hp, values)
        gathered = cached
    if hp.kind is HeadKind.AVERAGE:
        return gathered[:, where.offset:where.offset + width]
    if hp.kind is HeadKind.POSITIONS:
        return len(dict(hp.by_class)[values.c]) * gathered[:, where.offset:where.offset + width]
    head = R[:, plan.span(hp.slot(Role.HEAD))]
    expected = _rotated(R[:, plan.span(POSITION)], hp.blocks[0][0].offset)
    source, i = divmod(where.offset, n)
    if hp.kind is HeadKind.OFFSET:
        return head[:, i:i + width] * _matches(head[:, n:n + 2], expected)
    fixed = [(gathered[:, at:at + n], gathered[:, at + n:at + n + 1],
              gathered[:, at + n + 1:at + n + 3] if hp.gate else None)
             for at in (mixed_block(hp, j) for j in range(len(hp.fixed_sources)))]
    if source > 0:   # a fixed source's own facts
        b, w, _ = fixed[source - 1]
        return _divided(b[:, i:i + width], w)
    rest = 1.0 - sum(w for _, w, _ in fixed)
    alone = rest.abs() < ALONE
    safe = torch.where(alone, torch.ones_like(rest), rest)
    mixture = (head[:, :n] - sum(b for b, _, _ in fixed))[:, i:i + width] / safe
    if not hp.gate:   # one fixed source, no mask: where the weights sum to 1 the source is that one
        b, w, _ = fixed[0]
        return torch.where(alone, _divided(b[:, i:i + width], w), mixture)
    source_pos = (head[:, n:n + 2] - sum(p for _, _, p in fixed)) / safe
    found = torch.where(alone, torch.zeros_like(mixture), mixture * _matches(source_pos, expected))
    for b, w, p in fixed:   # where the offset's source is a fixed one, the fixed one whose position it is
        here = alone & (_matches(_divided(p, w), expected) > 0)
        found = torch.where(here, _divided(b[:, i:i + width], w), found)
    return found


def _rotated(pos: torch.Tensor, offset: int) -> torch.Tensor:
    """The positional features of ``p + offset`` from those of ``p``."""
    a = torch.tensor(offset * ANGLE, dtype=torch.float64)
    c, s = torch.cos(a), torch.sin(a)
    return torch.stack([pos[:, 0] * c - pos[:, 1] * s, pos[:, 0] * s + pos[:, 1] * c], dim=1)


def _matches(pos: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
    """1 where ``pos`` is the position ``expected`` names (within half a step of the angle), else 0: (n, 1)."""
    near = (pos * expected).sum(-1, keepdim=True) > torch.cos(torch.tensor(ANGLE / 2, dtype=torch.float64))
    return near.to(torch.float64)


def _divided(b: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """``b / w``, 0 where ``w`` is 0 (a source the position cannot see, under a causal mask)."""
    present = w > 1e-12
    return torch.where(present, b / torch.where(present, w, torch.ones_like(w)), torch.zeros_like(b))
