"""What a decision returns: a status, the best exponent, a witness or an explanation, and statistics."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy

from infoflow_smt.lang.node_text import named_target
from infoflow_smt.model.program import Program
from infoflow_smt.model.status import Status  # re-exported: ifs.Status, report.verdict.Status
from infoflow_smt.report import setting
from infoflow_smt.report.explain import Reason, describe_program


@dataclass(frozen=True)
class Stats:
    seconds: float = 0.0
    solver_calls: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Verdict:
    """The answer of ``decide``: never a bare bool.

    ``exponent`` is the smallest cost exponent reachable (a sympy expression in ``T``, ``oo`` when no program
    exists at any cost); ``witness`` is the program reaching it when the status is FEASIBLE, and, when the
    status is INFEASIBLE, the cheapest (inefficient) program found, if any, is in ``best_program``.
    """

    status: Status
    target: Any
    architecture: Any
    exponent: sympy.Expr
    witness: Any = None
    explanation: tuple[Reason, ...] = ()
    stats: Stats = field(default_factory=Stats)   # its own: one shared default would share its extra dict
    best_program: Any = None
    seq_len: int | None = None
    reason_unknown: str | None = None

    def __post_init__(self) -> None:
        # str(verdict.witness) says what each head selects, not the tree's internal node names (g0.t)
        for name in ("witness", "best_program"):
            program = getattr(self, name)
            if isinstance(program, Program) and not program.names and self.target is not None:
                object.__setattr__(self, name, program.named(self.target))

    @property
    def one_length(self) -> str | None:
        """What the status and exponent say when decided at one length (``at_one_length``), else None. The
        views (notebook.py) read it here: they import nothing of this module, which imports them."""
        return None if self.seq_len is None else at_one_length(self.status, self.seq_len)

    @property
    def feasible(self) -> bool:
        return self.status is Status.FEASIBLE

    def __str__(self) -> str:
        arch = self.architecture
        named = named_target(self.target)
        lines = [f"{self.status.value.upper()}: {named[0] if named else self.target}",
                 (f"  architecture: {arch.shape}, width E={arch.embed_dim}, tokens of dimension d={arch.input_dim}"
                  f"{setting_text(arch)}")]
        if getattr(self.target, "per_position", False):
            unasked = _unasked(self.target)
            lines.insert(1, "  an answer at every position: each input position o computes its own" + (
                f" (none is asked at o = {unasked}: a range its answer reads is empty there)" if unasked else ""))
        if self.status is not Status.UNKNOWN:
            at = "" if self.seq_len is None else f" at T = {self.seq_len}"
            lines.append(f"  best cost exponent{at}: {self.exponent} ({_meaning(self.exponent, self.seq_len)})")
            if self.one_length is not None:
                lines.append(f"  at one length: {self.one_length}")
        if self.witness is not None:
            lines.append("  witness, replayed by the reference interpreter:")
            lines += [f"    {line}" for line in describe_program(self.witness, self.target)]
        if self.explanation:
            lines.append("  why:" if self.status is not Status.FEASIBLE else "  note:")
            lines += [f"    - {reason}" for reason in self.explanation]
        if self.witness is None and self.best_program is not None:
            lines.append("  cheapest program (not efficient), replayed:")
            lines += [f"    {line}" for line in describe_program(self.best_program, self.target)]
        if self.reason_unknown:
            lines.append(f"  note: {self.reason_unknown}")
        if self.stats.extra.get("note"):
            lines.append(f"  note: {self.stats.extra['note']}")
        return "\n".join(lines[:1] + _where(named, lines) + lines[1:])

    def _repr_html_(self) -> str:
        """Jupyter's view: the verdict in words with its information-flow diagram inline."""
        from infoflow_smt.report.notebook import verdict_html
        return verdict_html(self)

    def to_json(self) -> dict[str, Any]:
        """One JSON-ready record (docs/cli.md, "decide")."""
        arch = self.architecture

        def program(p):
            return None if p is None else p.to_json() | {"steps": describe_program(p, self.target)}

        named = named_target(self.target)
        return {"status": self.status.value, "target": str(self.target), "name": getattr(self.target, "name", None),
                "named": None if not named else {"target": named[0], "definitions": [
                    {"name": n, "text": t, "hosted": h} for n, t, h in named[1]]},
                "per_position": bool(getattr(self.target, "per_position", False)),
                "architecture": {"heads": list(arch.heads), "embed_dim": str(arch.embed_dim),
                                 "input_dim": arch.input_dim, "positional": arch.positional,
                                 "causal": arch.causal, "rank_aware": arch.rank_aware,
                                 "readout": getattr(arch, "readout", "output")},
                "setting": setting.to_json([arch]),
                "seq_len": self.seq_len,
                "exponent": None if self.status is Status.UNKNOWN else str(self.exponent),
                "witness": program(self.witness),
                "best_program": program(self.best_program if self.witness is None else None),
                "explanation": [{"constraint": r.constraint, "sentence": r.sentence} for r in self.explanation],
                "reason_unknown": self.reason_unknown,
                "stats": {"seconds": round(self.stats.seconds, 4), "solver_calls": self.stats.solver_calls,
                          **{k: v for k, v in self.stats.extra.items() if isinstance(v, (str, int, float, bool))}}}


def setting_text(arch) -> str:
    """The architecture's settings past its shape and widths, as the verdict's architecture line ends:
    positional encoding, the causal mask, the rank rule, the readout (empty when none is on)."""
    return (f"{', positional encoding' if arch.positional else ''}"
            f"{', causal mask (each input position sees itself and earlier ones)' if arch.causal else ''}"
            f"{', rank-aware heads (a head ranks only by a score whose rank fits its width)' if arch.rank_aware else ''}"
            f"{', answer read at the last position T' if getattr(arch, 'readout', 'output') == 'last' else ''}")


def _where(named, lines: list[str]) -> list[str]:
    """The lines that define the names the verdict writes: the target's own always (they spell the first line),
    a hosted form's where a line uses it."""
    if not named:
        return []
    text = "\n".join(lines)
    shown = [(n, t, h) for n, t, h in named[1] if not h or re.search(rf"\b{n}\b", text)]
    return [f"  {'where' if i == 0 else '     '} {n} = {t}" + (" (each input position for itself)" if h else "")
            for i, (n, t, h) in enumerate(shown)]


def at_one_length(status: Status, seq_len: int) -> str:
    """What a verdict decided at one length says (``decide(..., seq_len=n)``): the status is about the growth
    in ``T`` of each operation's cost law, the exponent a number at ``T = n``; read apart, an INFEASIBLE
    answer with exponent 0 looks like a contradiction."""
    at = f"T = {seq_len}"
    head = (f"at {at} every cost is a number, so the status compares no numbers: as for all large T, it says "
            f"whether some program uses only operations whose cost law stays bounded as T grows")
    if status is Status.FEASIBLE:
        return (f"{head} (yes: the status is the one for all large T). The exponent is the cost at {at} of the "
                f"cheapest such program, programs ranked by their cost at {at}.")
    return (f"{head} (no, every program uses an operation whose cost grows with T: the status is the one for all "
            f"large T). The exponent is the cost at {at} of the cheapest program, programs ranked by their cost at "
            f"{at} (0 where the law gives less): it may be small at this length, even below an efficient "
            f"program's.")


def _unasked(target) -> str:
    """The positions a target with an answer at every position asks nothing (``Target.answered``: a range
    bounded by ``o`` is empty there), spelled from the start or from the end (``1``, ``T``); empty when every
    position answers. Read at a length long enough to tell the two ends apart."""
    length = 2 * target.shortest_length + 16
    missing = [int(p) + 1 for p in np.flatnonzero(~target.answered(length))]
    return ", ".join(str(p) if p <= length // 2 else "T" if p == length else f"T-{length - p}" for p in missing)


def _meaning(exponent, seq_len) -> str:
    """What an exponent says, for a reader: parameters grow as eps to its minus."""
    if exponent is sympy.oo:
        return "no program computes it at any cost"
    e = sympy.sympify(exponent)
    if e.has(sympy.Symbol("T", positive=True, integer=True)) and seq_len is None:
        return "grows with T: not efficient"
    at = "" if seq_len is None else f" at T = {seq_len}"
    if e == 0:
        return f"for precision eps the parameter count{at} does not grow as eps shrinks"
    return f"for precision eps the parameter count{at} grows as eps^-({e})"
