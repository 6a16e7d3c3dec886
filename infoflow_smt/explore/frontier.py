"""Verdicts for every architecture: ``decide_all`` finds the frontier of minimal efficient architectures
(``h`` heads in each of ``L`` layers) of a target, or proves that there is none, with the bounds that make
the claim general (docs/model.md, section 6).

The model's state does not depend on ``T`` and is finite, which bounds the question on both axes:

* **heads**: one class of positions can run at most ``H`` distinct operations in a layer (a retrieval of
  each selection it can make, one global aggregation, one averaging head, one head per fixed position or
  offset it can gather). With ``h >= H`` the head budget never binds, so every ``h > H`` gets the status of
  ``H`` (the efficient operations, and so the status, do not depend on the head width ``E/h`` either; an
  exponent may: a decoding or a k-th retrieval costs more in narrower heads);
* **layers**: facts only grow (a position keeps what it holds), and a layer that adds no fact anywhere can be
  removed from a program without raising its cost (the next layer sees the same state). So a minimal
  efficient program has at most ``F`` layers, ``F`` the number of facts efficient programs can ever make
  true: every ``L > F`` gets the verdict of ``F``. ``F`` is found as a fixpoint: the facts reachable after
  ``l`` layers with ``H`` heads (every operation at once, efficient ones only) stop growing at some ``l*``.
  The walk finds ``F`` only when it needs it: once one head is efficient on ``L`` layers, so is every
  architecture of ``L`` layers or more, and no row beyond is asked.

Within those bounds the grid is decided along its frontier (``sweep``'s walk: efficient cells make every
larger cell efficient, inefficient ones every smaller one).

At a fixed width the efficient operations (retrievals, averaging, bounded specific-position sets) are the
same for every constant ``E``, so the frontier does not depend on which constant ``E`` is asked; with a width
that grows with the heads (``E = n*h``) it is decided at each column's own width.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from infoflow_smt.deadline import Deadline, OutOfTime, interrupt_pending
from infoflow_smt.errors import InvalidSpecError, Problem, SolverUnknownError
from infoflow_smt.lang.catalogue import as_target
from infoflow_smt.lang.causal import check_supported
from infoflow_smt.lang.earliest import first_known
from infoflow_smt.lang.trees import needs_positional
from infoflow_smt.limits import MAX_HEADS, MAX_LAYERS, whole
from infoflow_smt.model import cost
from infoflow_smt.model.architecture import Architecture, shape_text
from infoflow_smt.report.verdict import Status, Verdict
from infoflow_smt.smt import encoder
from infoflow_smt.smt.encoder import goal_needs
from infoflow_smt.smt.solver import NOT_ESTABLISHED, Questions, maximal_facts, validate_question
from infoflow_smt.symbols import T
from infoflow_smt.words import plural

SATURATE_AFTER = 1   # rows the walk decides before it finds the layer bound (where one head is efficient, none)


@dataclass(frozen=True)
class Frontier:
    """The answer of ``decide_all``: the minimal efficient architectures, or none, and why."""

    target: object
    width: str                      # "E=32" or "E=8*h"
    input_dim: int
    positional: bool
    points: tuple[Verdict, ...]     # the minimal efficient (L, h), each with its witness (empty: none)
    head_bound: int                 # H: heads beyond it change nothing
    layer_bound: int                # F: layers beyond it change nothing
    fixpoint: int | None            # l*: the layer after which no fact becomes reachable (None: not needed)
    facts: int | None               # F, the facts efficient programs can make true (None: not needed)
    decided: int                    # cells the solver decided (the others follow by monotonicity)
    grid: dict = field(default_factory=dict)   # (L, h) -> status value, over the bounded grid
    explanation: tuple[str, ...] = ()
    seconds: float = 0.0
    undecided: tuple[tuple[int, int], ...] = ()   # (L, h) the solver could not decide by the deadline
    rank_aware: bool = False        # the rank rule (Architecture.rank_aware)
    causal: bool = False            # a causal mask (Architecture.causal)
    undecided_why: tuple[str, ...] = ()   # why cells are undecided: the deadline, or a "no" the mask leaves open

    @property
    def none(self) -> bool:
        return not self.points

    @property
    def complete(self) -> bool:
        """Every cell decided. Otherwise the points are efficient but only bounds: an undecided cell (or one
        below it) might be efficient too, and ``none`` means none found, not none exists."""
        return not self.undecided

    @property
    def shapes(self) -> tuple[tuple[int, int], ...]:
        return tuple((v.architecture.layers, v.architecture.heads[0]) for v in self.points)

    def __str__(self) -> str:
        where = (f"{self.target} at {self.width}, d={self.input_dim}{', positional' if self.positional else ''}"
                 f"{', rank-aware' if self.rank_aware else ''}{', causal' if self.causal else ''}")
        if self.none:
            head = f"{where}: inefficient for every number of layers and heads"
        else:
            shapes = ", ".join(_shape(L, h) for L, h in self.shapes)
            head = f"{where}: efficient exactly from {shapes} on"
        if not self.complete:
            head = (f"incomplete: {plural(len(self.undecided), 'cell')} undecided {self._why_undecided()} "
                    f"({', '.join(_shape(L, h) for L, h in self.undecided)}); what follows is a bound, not the "
                    f"frontier: an undecided cell, or one below it, may be efficient\n"
                    + head.replace("inefficient for every", "none found efficient at any")
                          .replace("efficient exactly from", "efficient from (at most)"))
        return "\n".join([head] + [f"  - {s}" for s in self.explanation])

    def _why_undecided(self) -> str:
        masked = any(why.startswith(NOT_ESTABLISHED) for why in self.undecided_why)
        late = not self.undecided_why or not all(why.startswith(NOT_ESTABLISHED) for why in self.undecided_why)
        causes = ["by the deadline"] * late + [f"because, {NOT_ESTABLISHED} there"] * masked
        return " or ".join(causes)

    def _repr_html_(self) -> str:
        """Jupyter's view: the answer, the bounded grid with the frontier outlined, and why it is general."""
        from infoflow_smt.report.notebook import frontier_html
        return frontier_html(self)

    def to_json(self) -> dict:
        return {"target": str(self.target), "width": self.width, "input_dim": self.input_dim,
                "positional": self.positional, "frontier": [list(s) for s in self.shapes],
                "exponents": [str(v.exponent) for v in self.points], "none": self.none,
                "head_bound": self.head_bound, "layer_bound": self.layer_bound, "fixpoint": self.fixpoint,
                "facts": self.facts, "decided": self.decided, "explanation": list(self.explanation),
                "grid": {f"{L},{h}": s for (L, h), s in sorted(self.grid.items())}, "seconds": round(self.seconds, 3),
                "complete": self.complete, "undecided": [list(c) for c in self.undecided],
                "rank_aware": self.rank_aware, "causal": self.causal, "undecided_why": list(self.undecided_why)}


def decide_all(target, *, embed_dim=32, head_dim: int | None = None, input_dim: int | None = None,
               positional: bool | None = None, timeout: float | None = None,
               decode_law: cost.DecodeLaw | str = cost.DecodeLaw.SEED, rank_aware: bool = False,
               causal: bool = False) -> Frontier:
    """Decide ``target`` on every architecture of ``h`` heads in each of ``L`` layers, for every ``L, h``.

    The width is ``embed_dim`` (a constant), or, with ``head_dim=n``, ``E = n*h``. Returns the frontier of
    minimal efficient architectures, or the proof that there is none, with the saturation bounds. A cell the
    solver cannot decide by the deadline (``timeout``, one for the whole search) is listed in ``undecided``
    (``complete`` is then False and the points are only bounds); a deadline that passes before the
    saturation bounds are found raises ``SolverUnknownError``: without them there is no grid to answer on. ``input_dim=None`` is the
    target's own token dimension (``Target.token_dim``: 1 when it compares tokens as numbers, else 2), as in
    ``minimize`` and the CLI. ``rank_aware`` (the rank rule, ``Architecture``) needs ``head_dim``: at a fixed
    ``E`` a head more narrows every head, and the walk's monotonicity in ``h`` fails; at ``E = n*h`` every head
    is ``n`` wide whatever ``h``, and the bounds and the walk hold as they are. ``causal``: a causal mask, every
    cell asked as ``decide`` asks it (``causal.check_supported``); a "no" the mask leaves open is an undecided
    cell, so the answer is then incomplete.

    >>> import infoflow_smt as ifs
    >>> ifs.decide_all("min_pairwise_dot").shapes
    ((2, 1),)
    """
    started, deadline = time.perf_counter(), Deadline(timeout)
    target = as_target(target)
    # under a mask range(1, s+1) is told apart by the mask itself
    positional = bool(needs_positional(target, bool(causal))) if positional is None else positional
    input_dim = target.token_dim if input_dim is None else input_dim
    if head_dim is not None and (whole(head_dim) is None or head_dim < 1):
        raise InvalidSpecError([Problem(f"head_dim must be an integer >= 1 or None, got {head_dim!r}")], "decide_all")
    head_dim = None if head_dim is None else int(head_dim)
    if rank_aware and head_dim is None:
        raise InvalidSpecError([Problem("decide_all with rank_aware=True needs head_dim (E = n*h): at a fixed E a "
                                        "head more narrows every head, so more heads may hurt and the frontier "
                                        "walk does not apply")], "decide_all")
    width = (lambda h: head_dim * h) if head_dim is not None else (lambda h: embed_dim)
    probe = Architecture(heads=(1,), embed_dim=width(1), input_dim=input_dim, positional=positional,
                         rank_aware=bool(rank_aware), causal=causal)
    validate_question(target, probe)
    if probe.causal:  # the parameter hides the module's name here
        target = check_supported(target)
    law = cost.as_law(decode_law)
    try:
        heads = _head_bound(target, probe, law, deadline)
    except OutOfTime as late:
        raise SolverUnknownError(f"decide_all ran out of time during {late.what}") from None
    facts = fixpoint = None
    # rows below the first layer any efficient program can know what the target needs are inefficient
    try:
        shallow = _first_layer(target, probe, width(1), law, deadline) - 1
    except OutOfTime as late:
        raise SolverUnknownError(f"decide_all ran out of time during {late.what}") from None
    layers = shallow + SATURATE_AFTER   # the rows walked before the layer bound is needed
    # only the feasible verdicts are kept: the infeasible ones need no explanation of their own; the walk
    # needs each cell's status, and only the frontier's points their fewest operations (``_fewest``)
    shared = Questions(target, law, reasons=False, fewest_heads=False)  # its encoding grows with the walk: a
                                                                        # question on many idle layers is slow
    # one z3 context for all (each holds about 16 MB)
    columns = {h: Questions(target, law, reasons=False, fewest_heads=False, context=shared.context)
               for h in range(1, heads + 1)} if head_dim else {}
    grid, decided, verdicts, undecided, why_undecided = {}, 0, {}, [], {}
    if shallow:
        grid[(shallow, heads)] = Status.INFEASIBLE.value
    h, L = heads, shallow
    def ask(L: int, h: int) -> Verdict:
        arch = Architecture(heads=(h,) * L, embed_dim=width(h), input_dim=input_dim, positional=positional,
                            rank_aware=probe.rank_aware, causal=probe.causal)
        verdict = (columns.get(h) or shared).decide(arch, deadline)
        grid[(L, h)] = verdict.status.value
        if verdict.status is Status.UNKNOWN:
            undecided.append((L, h))
            why_undecided[verdict.reason_unknown or ""] = None
        elif verdict.status is Status.FEASIBLE:
            verdicts[(L, h)] = verdict
        return verdict

    while L < layers and h >= 1:  # the frontier walk: most heads first, one row per layer count
        if L == MAX_LAYERS:   # the rows left are past what an architecture may hold: undecided, not bad input
            undecided += [(L + 1, h)]
            why_undecided[f"{L + 1} layers is over the limit of {MAX_LAYERS} (infoflow_smt.limits.MAX_LAYERS)"] = None
            break
        L += 1
        if h > 1:   # one head first: the smallest question, and when it is efficient the row is done
            decided += 1
            if ask(L, 1).status is Status.FEASIBLE:
                h = 0
                break
        while h > 1 or (h == 1 and (L, 1) not in grid):
            decided += 1
            verdict = ask(L, h)
            if verdict.status is not Status.FEASIBLE:   # an undecided cell: the walk goes on as if it were not
                break
            h -= 1
        if (L, 1) in verdicts:
            h = 0
        if h >= 1 and L == layers and facts is None:
            # one head is not yet efficient: the walk needs the layers beyond which nothing changes
            try:
                facts, fixpoint = _saturation(target, probe, law, deadline, width, heads)
            except OutOfTime as late:
                raise SolverUnknownError(f"decide_all ran out of time during {late.what}") from None
            layers = max(facts, L)
    layers = L if h < 1 else layers   # (L, 1) efficient: so is every architecture of L layers or more
    _infer(grid, layers, heads)
    points = _fewest(_minimal(verdicts), lambda v: columns.get(v.architecture.heads[0]) or shared, deadline)
    rule = f"E={head_dim}*h" if head_dim else f"E={embed_dim}"
    why = _explanation(target, points, heads, facts if h >= 1 else None, fixpoint, layers, rule, head_dim is None)
    if shallow:
        why = (*why[:1], (f"Depth: no efficient program knows what the target needs before layer {shallow + 1} "
                          "(a selection is known the layer after what it reads, or copied with a winner that made "
                          f"it for itself), so every architecture of {plural(shallow, 'layer')} or fewer is "
                          "inefficient whatever its heads."), *why[1:])
    if probe.rank_aware:
        rank = (f"Rank: every head is {head_dim} wide whatever h (E = {head_dim}*h), so the rank rule rules out "
                "the same retrievals in every cell, and a head more never hurts.")
        why = (*why[:1], rank, *why[1:])
    return Frontier(target, rule, input_dim, positional, points, heads, layers, fixpoint, facts, decided, grid,
                    why, time.perf_counter() - started, tuple(undecided), probe.rank_aware, probe.causal,
                    tuple(why_undecided))


def _fewest(points: tuple[Verdict, ...], questions_of, deadline: Deadline) -> tuple[Verdict, ...]:
    """The frontier's points, each decided again with its witness reduced to the fewest acting heads (the
    walk's witnesses are not: most of its cells are not points). A point the deadline leaves unminimized
    keeps the walk's witness, replayed and exact in its exponent."""
    found = []
    for verdict in points:
        questions = questions_of(verdict)
        questions.fewest_heads = True
        try:
            again = questions.decide(verdict.architecture, deadline)
        finally:
            questions.fewest_heads = False
        found.append(again if again.status is Status.FEASIBLE else verdict)
    return tuple(found)


def _infer(grid: dict, layers: int, heads: int) -> None:
    """The cells the walk did not decide, by monotonicity: feasible above-right of a feasible cell,
    infeasible below-left of an infeasible one, else unknown (only ever beside an undecided cell)."""
    decided = dict(grid)
    for L in range(1, layers + 1):
        for k in range(1, heads + 1):
            if (L, k) in grid:
                continue
            if any(s == "feasible" and l2 <= L and k2 <= k for (l2, k2), s in decided.items()):
                grid[(L, k)] = "feasible"
            elif any(s == "infeasible" and l2 >= L and k2 >= k for (l2, k2), s in decided.items()):
                grid[(L, k)] = "infeasible"
            else:
                grid[(L, k)] = "unknown"


def _minimal(verdicts: dict) -> tuple[Verdict, ...]:
    """The efficient cells no other efficient cell is below (fewer or equal layers and heads)."""
    keys = sorted(verdicts)
    return tuple(verdicts[(L, h)] for L, h in keys
                 if not any((l2, h2) != (L, h) and l2 <= L and h2 <= h for l2, h2 in keys))


def _first_layer(target, probe: Architecture, width, law, deadline: Deadline) -> int:
    """The first layer after which an efficient program can know what the target needs (``earliest.py``,
    the best of the target's variable orders), or 1 where a global aggregation is efficient (a width that
    grows with ``T``: a position holding every token knows everything at once)."""
    if cost.is_bounded(cost.decode(T, probe.input_dim, width, law)):
        return 1
    deadline.check("the depth bound")
    return max(int(first_known(target, [r.what for r in goal_needs(target) if r.kind == "group"])), 1)


def _head_bound(target, probe: Architecture, law, deadline: Deadline) -> int:
    """H: the heads beyond which nothing changes (module docstring)."""
    heads = encoder.encode(target, probe.with_heads((1, 1)), law, deadline=deadline).widest
    if heads > MAX_HEADS:   # the bounded grid itself would hold architectures over the limits
        raise InvalidSpecError(f"one layer can run up to {heads} distinct operations for this target, so "
                               f"covering every architecture needs {heads} heads per layer, over the limit of "
                               f"{MAX_HEADS} (infoflow_smt.limits.MAX_HEADS): decide chosen architectures "
                               "with decide or sweep instead", "decide_all")
    return heads


def _saturation(target, probe: Architecture, law, deadline: Deadline, width, heads: int) -> tuple[int, int]:
    """(F, l*): the facts efficient programs can make true with ``heads`` (H) heads a layer, and the layer
    after which none becomes reachable (module docstring). Under the rank rule the facts are those of ``H``
    heads each as wide as the grid's (``width(H) / H``), not of ``probe``'s width shared by ``H``."""
    layers, reached = 2, []
    while True:
        arch = probe.with_heads((heads,) * layers)
        if probe.rank_aware:
            arch = Architecture(heads=arch.heads, embed_dim=width(heads), input_dim=probe.input_dim,
                                positional=probe.positional, rank_aware=True, causal=probe.causal)
        enc = encoder.encode(target, arch, law, deadline=deadline)
        reached = [_maximal_facts(enc, L, heads, deadline) for L in range(1, layers + 1)]
        for L in range(1, layers):
            if len(reached[L]) == len(reached[L - 1]):
                return len(reached[L - 1]), L
        layers *= 2


def _maximal_facts(enc, L: int, heads: int, deadline: Deadline) -> set[str]:
    """The facts some efficient program with ``heads`` heads in each of ``L`` layers makes true after layer
    ``L``, named without their layer."""
    try:
        facts = maximal_facts(enc, L, heads, deadline)
    except OutOfTime:
        if interrupt_pending():   # a check cut short by Ctrl-C
            raise KeyboardInterrupt from None
        raise
    return {_unlayered(n) for n in facts}


def _unlayered(name: str) -> str:
    kind, c, _layer, *rest = name.split(":")
    return ":".join([kind, c, *rest])


def _shape(layers: int, heads: int) -> str:
    return shape_text((heads,) * layers)


def _explanation(target, points, heads, facts, fixpoint, layers, rule, fixed_width) -> tuple[str, ...]:
    lines = [(f"Heads: one class of positions can run at most {heads} distinct operations in a layer, so "
             f"with h >= {heads} the head budget never binds: every h > {heads} has the status of h = {heads}.")]
    if facts is None:   # the walk reached one head: no layer bound was needed
        lines.append(f"Layers: {_shape(layers, 1)} is efficient, so every architecture of {layers} layers or more "
                     "is (a layer or a head more never turns efficient into inefficient).")
    else:
        lines.append(f"Layers: efficient programs can make at most {facts} facts true (reached after "
                     f"{plural(fixpoint, 'layer')} with every operation at once); a layer that adds no fact can be "
                     f"removed, so every L > {layers} gets the verdict of L = {layers}.")
    if fixed_width:
        lines.append(f"Width: at a constant width the efficient operations are the same for every E, so the "
                     f"answer at {rule} holds at every constant width.")
    if not points:
        lines.append(f"At {_shape(layers, heads)} no efficient program exists, so none exists for any (L, h): "
                     "the target is inefficient on every architecture.")
    else:
        for v in points:
            L, h = v.architecture.layers, v.architecture.heads[0]
            smaller = ([_shape(L - 1, h)] if L > 1 else []) + ([_shape(L, h - 1)] if h > 1 else [])
            below = f"while {' and '.join(smaller)} {'are' if len(smaller) > 1 else 'is'} not" if smaller else \
                "and no architecture is smaller"
            lines.append(f"{_shape(L, h)} is efficient (exponent {v.exponent}, witness replayed), {below}: "
                         "it is on the frontier.")
    return tuple(lines)
