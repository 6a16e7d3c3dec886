"""The rows ``confirm`` trains: the decided architecture and its neighbours, each decided by the solver.

* the decided architecture;
* one head fewer in the limiting layer: of the layers with more than one head, the one where losing a head
  costs most by the solver (infeasible before feasible, then the larger exponent at the longest T; ties:
  the later layer);
* one layer fewer: the layer with the fewest heads removed (the strongest shallower network);
* when the verdict is infeasible, also one head more in every layer, so the table holds a stronger network;
* any architectures the caller adds (``with_against``).

No torch here: only the solver's verdicts.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import sympy

from infoflow_smt.errors import InvalidSpecError
from infoflow_smt.lang.target import Target
from infoflow_smt.model.architecture import Architecture
from infoflow_smt.report.verdict import Verdict
from infoflow_smt.symbols import T as SYMBOL_T

Row = tuple[str, Verdict]   # (role, the solver's verdict for that architecture)


def check_verdict(verdict: object) -> None:
    """``confirm`` takes a ``Verdict`` of ``ifs.decide``: anything else is refused naming what it got."""
    if not isinstance(verdict, Verdict):
        raise InvalidSpecError(f"confirm needs a Verdict from ifs.decide, got {type(verdict).__name__} "
                               f"{str(verdict)[:60]!r}", subject="verdict")


def decide(target: Target, arch: Architecture, seq_len: int | None) -> Verdict:
    """``ifs.decide`` (imported here, when first asked: the solver loads z3)."""
    from infoflow_smt.smt.solver import decide as solve

    return solve(target, arch, seq_len=seq_len)


def _severity(verdict: Verdict, seq_len: int) -> tuple[int, float]:
    """How bad losing a head is, by the solver: infeasible > unknown > feasible, then the exponent at T."""
    rank = {"infeasible": 2, "unknown": 1, "feasible": 0}[verdict.status.value]
    value = verdict.exponent.subs(SYMBOL_T, seq_len)
    return rank, float(value) if value.is_number and value.is_finite else math.inf


def neighbours(verdict: Verdict, seq_len: int) -> list[Row]:
    """(role, decided verdict) for the decided architecture and its neighbours (module docstring)."""
    arch, heads = verdict.architecture, tuple(verdict.architecture.heads)
    rows: list[Row] = [("decided", verdict)]
    fewer = [(f"one head fewer, layer {l + 1}", heads[:l] + (h - 1,) + heads[l + 1:])
             for l, h in enumerate(heads) if h > 1]
    decided = [(role, decide(verdict.target, arch.with_heads(h), verdict.seq_len)) for role, h in fewer]
    if decided:
        rows.append(max(reversed(decided), key=lambda rv: _severity(rv[1], seq_len)))
    if len(heads) > 1:
        drop = min(range(len(heads)), key=lambda l: heads[l])
        rows.append(("one layer fewer", decide(verdict.target, arch.with_heads(heads[:drop] + heads[drop + 1:]),
                                               verdict.seq_len)))
    if verdict.status.value == "infeasible":
        rows.append(("one head more per layer",
                     decide(verdict.target, arch.with_heads(tuple(h + 1 for h in heads)), verdict.seq_len)))
    return rows


def with_against(rows: list[Row], verdict: Verdict, against: Sequence[Sequence[int]]) -> list[Row]:
    """The neighbours, then each asked-for architecture that is not already a row."""
    seen = {tuple(v.architecture.heads) for _, v in rows}
    for heads in against:
        if tuple(heads) not in seen:
            seen.add(tuple(heads))
            arch = verdict.architecture.with_heads(tuple(heads))
            rows.append(("asked for", decide(verdict.target, arch, verdict.seq_len)))
    return rows


def exponent_at(v: Verdict, seq_len: int) -> tuple[float, str]:
    """The solver's best exponent at this T, as a number (inf when there is none) and as it writes it."""
    value = sympy.sympify(v.exponent).subs(SYMBOL_T, seq_len)
    number = float(value) if value.is_number and value.is_finite else math.inf
    return number, str(value)


def exponents(target: Target, v: Verdict, lengths: tuple[int, ...]) -> list[tuple[float, str]]:
    """``exponent_at`` every length, the row decided again at each T it was not decided at."""
    return [exponent_at(v if v.seq_len == T else decide(target, v.architecture, T), T) for T in lengths]
