"""The architecture a target is decided against: heads per layer, width, input dimension, positions."""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field

import sympy

from infoflow_smt.errors import InvalidSpecError, Problem
from infoflow_smt.limits import MAX_HEADS, MAX_INPUT_DIM, MAX_LAYERS, whole
from infoflow_smt.symbols import T
from infoflow_smt.words import plural

OUTPUT, LAST = "output", "last"
READOUTS = (OUTPUT, LAST)  # the extra output token (the default, paper 1), the last input position
UNSET = (("input_dim", 1), ("positional", False), ("readout", OUTPUT))   # left to the target, and what they
                                                                           # read until a target settles them


def _as_width(value) -> tuple[sympy.Expr | None, str | None]:
    """A width as a sympy expression (a positive int, or an expression in T positive and finite for every large
    T), or None and the reason it is not one."""
    if isinstance(value, bool) or value is None:
        return None, f"embed_dim must be an int or a sympy expression in T, got {value!r}"
    if whole(value) is not None:
        value = whole(value)
        return (sympy.Integer(value), None) if value > 0 else (None, f"embed_dim must be positive, got {value!r}")
    if not isinstance(value, sympy.Expr) or not value.free_symbols <= {T}:
        return None, f"embed_dim must be an int or a sympy expression in T, got {value!r}"
    width = sympy.sympify(value)
    if sympy.count_ops(width) > 50 or any(
            not isinstance(node, (sympy.Add, sympy.Mul, sympy.Pow, sympy.Number, sympy.Symbol, sympy.log))
            or (isinstance(node, sympy.Pow) and not (node.exp.is_Rational and abs(node.exp) <= 8))
            for node in sympy.preorder_traversal(width)):   # sympy's limit of T**T or exp(exp(T)) never ends
        return None, (f"embed_dim must be a sum of products of powers of T (exponents rational, at most 8), "
                      f"got {str(value)[:80]}")
    if width.is_number:
        if not (width.is_finite and width.is_real and width.is_positive):
            return None, f"embed_dim must be a positive finite number, got {value!r}"
        return width, None
    try:
        tail = sympy.limit(width, T, sympy.oo)
        samples = [width.subs(T, n) for n in (10**6, 10**9)]
    except Exception:  # noqa: BLE001 - sympy cannot take the limit: not a width we can reason about
        tail, samples = sympy.nan, []
    if not (tail.is_extended_positive and all(s.is_real and s.is_finite and s > 0 for s in samples)):
        return None, f"embed_dim must be positive and finite for every large T, got {value!r}"
    return width, None


@functools.lru_cache(maxsize=4096)  # asked for every selection, layer and head count of an encoding
def _fits(head_width: sympy.Expr, rank: int) -> bool:
    """``rank <= head_width`` for every large ``T``."""
    room = head_width - rank
    if room.is_number:
        return bool(room >= 0)
    tail = sympy.limit(room, T, sympy.oo)
    if tail != 0:
        return bool(tail > 0)
    return bool(room.subs(T, 10**9) >= 0)  # tends to 0: its sign at large T, which no longer changes


@dataclass(frozen=True)
class Architecture:
    """A transformer shape: ``heads[l]`` heads in layer ``l+1``, width ``embed_dim``, input dimension ``d``.

    ``embed_dim`` is an int or a sympy expression in ``ifs.T`` (a width that grows with the sequence).
    ``rank_aware``: a retrieval head may rank only by a score whose bilinear rank fits its width ``E / h_l``
    (docs/model.md, "Head width and rank"); off, the papers' cost law abstracts the rank away.
    ``input_dim``, ``positional`` and ``readout`` left out (None) are the target's, as on the command line: every
    call that takes a target settles them from it (``model.defaults.settled``); until then they read 1, False
    and ``"output"``, and ``unset`` names them.

    >>> Architecture(heads=(2, 2), embed_dim=32, input_dim=4).layers
    2
    >>> Architecture(heads=(1,), embed_dim=T * 2, input_dim=2).width_at(8)
    16
    """

    heads: tuple[int, ...]
    embed_dim: int | sympy.Expr = 32
    input_dim: int | None = None      # None: the target's (1 where it reads tokens as numbers, else 2)
    positional: bool | None = None    # None: the target's (on exactly when it tells positions apart)
    causal: bool = False  # decoder-only: an input position attends to itself and earlier positions only
    rank_aware: bool = False
    readout: str | None = None  # where the answer is read: the extra output token (paper 1), or "last": input
                                # position T, a decoder's next-token prediction (docs/model.md, "Readout");
                                # None: where the target's catalogue entry reads it, else the output token
    unset: frozenset[str] = field(default=frozenset(), init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        unset = frozenset(name for name, _ in UNSET if getattr(self, name) is None)
        object.__setattr__(self, "unset", unset)
        for name, value in UNSET:
            if name in unset:
                object.__setattr__(self, name, value)
        problems: list[Problem] = []
        heads = self.heads
        if whole(heads) is not None:
            heads = (whole(heads),)
        try:
            heads = tuple(heads) if not isinstance(heads, (str, bytes)) else None
            if heads is None:
                raise TypeError
        except TypeError:
            problems.append(Problem(f"heads must be a sequence of positive integers, got {self.heads!r}"))
            heads = ()
        if not heads and not problems:
            problems.append(Problem("heads is empty: an architecture needs at least one layer"))
        if len(heads) > MAX_LAYERS:
            problems.append(Problem(f"{len(heads)} layers is over the limit of {MAX_LAYERS} (infoflow_smt.limits)"))
            heads = heads[:MAX_LAYERS]
        heads = tuple(h if whole(h) is None else whole(h) for h in heads)
        for layer, h in enumerate(heads, start=1):
            if whole(h) is None or h < 1:
                problems.append(Problem(f"layer {layer} has {h!r} heads; heads per layer must be integers >= 1"))
            elif h > MAX_HEADS:
                problems.append(Problem(f"layer {layer} has {h} heads, over the limit of {MAX_HEADS} "
                                        "(infoflow_smt.limits)"))
        width, reason = _as_width(self.embed_dim)
        if reason:
            problems.append(Problem(reason))
        d = self.input_dim if whole(self.input_dim) is None else whole(self.input_dim)
        if whole(d) is None or d < 1:
            problems.append(Problem(f"input_dim must be an integer >= 1, got {d!r}"))
        elif d > MAX_INPUT_DIM:
            problems.append(Problem(f"input_dim {d} is over the limit of {MAX_INPUT_DIM} (infoflow_smt.limits)"))
        if not isinstance(self.positional, bool):
            problems.append(Problem(f"positional must be True or False, got {self.positional!r}"))
        if not isinstance(self.causal, bool):
            problems.append(Problem(f"causal must be True or False, got {self.causal!r}"))
        elif self.causal and width is not None and not width.is_number:
            # an input position's average of its prefix decodes up to T tokens: efficient only at such a width,
            # and the model leaves it out (docs/model.md, "Causal mask")
            problems.append(Problem("causal=True with a width that grows with T is not supported yet: "
                                    "use a constant embed_dim"))
        if not isinstance(self.rank_aware, bool):
            problems.append(Problem(f"rank_aware must be True or False, got {self.rank_aware!r}"))
        if self.readout not in READOUTS:
            problems.append(Problem(f"readout must be one of {', '.join(map(repr, READOUTS))}, got {self.readout!r}"))
        if problems:
            raise InvalidSpecError(problems, subject="architecture")
        object.__setattr__(self, "heads", heads)
        object.__setattr__(self, "input_dim", d)
        object.__setattr__(self, "embed_dim", int(width) if width.is_Integer else width)

    @property
    def layers(self) -> int:
        return len(self.heads)

    @property
    def width(self) -> sympy.Expr:
        """``E`` as a sympy expression (a constant, or a function of ``T``)."""
        return sympy.sympify(self.embed_dim)

    def head_dim(self, layer: int) -> sympy.Expr:
        """Per-head width ``n = E / h_l`` of 1-based ``layer``."""
        return self.width / self.heads[layer - 1]

    def holds_rank(self, rank: int | None, heads: int) -> bool:
        """Whether each head of a layer of ``heads`` heads, ``E / heads`` wide, can hold a score of bilinear
        rank ``rank`` for every large ``T`` (``None``: a score of no bounded rank, which no head of a width
        independent of the precision holds; docs/model.md, "Head width and rank").

        >>> Architecture(heads=(2,), embed_dim=8).holds_rank(4, 2), Architecture(heads=(1,), embed_dim=T).holds_rank(64, 4)
        (True, True)
        """
        return rank is not None and _fits(self.width / heads, rank)

    def width_at(self, seq_len: int) -> int | float:
        value = self.width.subs(T, seq_len)
        return int(value) if value.is_Integer else float(value)

    def covers(self, other: Architecture) -> bool:
        """Whether this architecture has every resource of ``other``: the same width, input dimension,
        positional encoding, rank rule and readout, at least as many layers, and at least as many heads in each
        of ``other``'s layers aligned with this one's last layers (the first extra layers stay idle). Then it
        computes, at no higher cost, everything ``other`` computes (docs/model.md, section 2). Under the rank
        rule a head more narrows every head of its layer, so the aligned layers need the same heads.

        >>> Architecture(heads=(1, 2, 2)).covers(Architecture(heads=(2, 1)))
        True
        >>> Architecture(heads=(2,), rank_aware=True).covers(Architecture(heads=(1,), rank_aware=True))
        False
        """
        if (str(self.embed_dim), self.input_dim, self.positional, self.causal, self.rank_aware, self.readout) != (
                str(other.embed_dim), other.input_dim, other.positional, other.causal, other.rank_aware,
                other.readout):
            return False
        shift = self.layers - other.layers
        more = (lambda mine, theirs: mine == theirs) if self.rank_aware else (lambda mine, theirs: mine >= theirs)
        return shift >= 0 and all(more(self.heads[i + shift], h) for i, h in enumerate(other.heads))

    @property
    def shape(self) -> str:
        """In words: ``"2 layers of 1 head"``, ``"2 layers with 3 and 2 heads"``."""
        return shape_text(self.heads)

    def with_heads(self, heads: tuple[int, ...]) -> Architecture:
        return dataclasses.replace(self, heads=tuple(heads), **dict.fromkeys(self.unset))

    def __str__(self) -> str:
        pe = ", positional" if self.positional else ""
        mask = ", causal" if self.causal else ""
        rank = ", rank-aware" if self.rank_aware else ""
        read = "" if self.readout == OUTPUT else f", readout={self.readout}"
        return f"heads={self.heads}, E={self.embed_dim}, d={self.input_dim}{pe}{mask}{rank}{read}"


def shape_text(heads: tuple[int, ...]) -> str:
    """``(1, 1)`` -> ``"2 layers of 1 head"``; ``(3, 2)`` -> ``"2 layers with 3 and 2 heads"``."""
    layers = plural(len(heads), "layer")
    if len(set(heads)) == 1:
        return f"{layers} of {plural(heads[0], 'head')}"
    counts = [str(h) for h in heads]
    return f"{layers} with {', '.join(counts[:-1])} and {counts[-1]} heads"
