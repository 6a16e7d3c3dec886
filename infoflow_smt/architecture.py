"""The architecture a target is decided against: heads per layer, width, input dimension, positions."""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from .errors import InvalidSpecError, Problem
from .symbols import T


def _as_width(value) -> sympy.Expr | None:
    """A width as a sympy expression (int, or an expression in T); None when it is neither."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return sympy.Integer(value)
    if isinstance(value, sympy.Expr) and value.free_symbols <= {T}:
        return sympy.sympify(value)
    return None


@dataclass(frozen=True)
class Architecture:
    """A transformer shape: ``heads[l]`` heads in layer ``l+1``, width ``embed_dim``, input dimension ``d``.

    ``embed_dim`` is an int or a sympy expression in ``ifs.T`` (a width that grows with the sequence).

    >>> Architecture(heads=(2, 2), embed_dim=32, input_dim=4).layers
    2
    >>> Architecture(heads=(1,), embed_dim=T * 2, input_dim=2).width_at(8)
    16
    """

    heads: tuple[int, ...]
    embed_dim: int | sympy.Expr = 32
    input_dim: int = 1
    positional: bool = False

    def __post_init__(self) -> None:
        problems: list[Problem] = []
        heads = self.heads
        if isinstance(heads, int) and not isinstance(heads, bool):
            heads = (heads,)
        try:
            heads = tuple(heads)
        except TypeError:
            problems.append(Problem(f"heads must be a sequence of positive integers, got {self.heads!r}"))
            heads = ()
        if not heads and not problems:
            problems.append(Problem("heads is empty: an architecture needs at least one layer"))
        for layer, h in enumerate(heads, start=1):
            if isinstance(h, bool) or not isinstance(h, int) or h < 1:
                problems.append(Problem(f"layer {layer} has {h!r} heads; heads per layer must be integers >= 1"))
        width = _as_width(self.embed_dim)
        if width is None:
            problems.append(Problem(f"embed_dim must be an int or a sympy expression in T, got {self.embed_dim!r}"))
        elif width.is_number and width <= 0:
            problems.append(Problem(f"embed_dim must be positive, got {self.embed_dim!r}"))
        elif not width.is_number and sympy.limit(width, T, sympy.oo) <= 0:
            problems.append(Problem(f"embed_dim must be positive for large T, got {self.embed_dim!r}"))
        d = self.input_dim
        if isinstance(d, bool) or not isinstance(d, int) or d < 1:
            problems.append(Problem(f"input_dim must be an integer >= 1, got {d!r}"))
        if not isinstance(self.positional, bool):
            problems.append(Problem(f"positional must be True or False, got {self.positional!r}"))
        if problems:
            raise InvalidSpecError(problems, subject="architecture")
        object.__setattr__(self, "heads", heads)
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

    def width_at(self, seq_len: int) -> int | float:
        value = self.width.subs(T, seq_len)
        return int(value) if value.is_Integer else float(value)

    def covers(self, other: Architecture) -> bool:
        """Whether this architecture has every resource of ``other``: the same width, input dimension and
        positional encoding, at least as many layers, and at least as many heads in each of ``other``'s
        layers aligned with this one's last layers (the first extra layers stay idle). Then it computes,
        at no higher cost, everything ``other`` computes (docs/model.md, section 2).

        >>> Architecture(heads=(1, 2, 2)).covers(Architecture(heads=(2, 1)))
        True
        """
        if (str(self.embed_dim), self.input_dim, self.positional) != (str(other.embed_dim), other.input_dim,
                                                                      other.positional):
            return False
        shift = self.layers - other.layers
        return shift >= 0 and all(self.heads[i + shift] >= h for i, h in enumerate(other.heads))

    def with_heads(self, heads: tuple[int, ...]) -> Architecture:
        return Architecture(heads=tuple(heads), embed_dim=self.embed_dim, input_dim=self.input_dim,
                            positional=self.positional)

    def __str__(self) -> str:
        pe = ", positional" if self.positional else ""
        return f"heads={self.heads}, E={self.embed_dim}, d={self.input_dim}{pe}"
