"""The rule ``confirm`` judges a row by: its trend over T, fixed before training and printed with the table.

A verdict is a claim about every T: feasible says the cost of the best program does not grow with T,
infeasible says it does. One length cannot show that; a trend over lengths can (the papers test their
claims this way: triangle center against T, intrinsic dimension "independent of the sequence length").
Each architecture is trained at every length with the same width and recipe and about the same steps, and:

* a **feasible** row agrees when its NMSE is below the threshold at every length and stays within
  ``flat_factor`` across them (max / min);
* an **infeasible** row agrees when its NMSE rises by ``rise_factor`` from the shortest to the longest T,
  where T doubles at least twice between them, or the share of the variance it explains (``1 - NMSE``)
  falls by that factor over the same lengths, *or* when at the longest T its NMSE is at least
  ``rise_factor`` times the efficient row's (the decided row when feasible, else the first feasible row).
  The second clause is the first one seen from the ceiling: predicting the mean gives NMSE 1, so an NMSE
  above ``1 / rise_factor`` at the shortest T cannot rise by the factor however fast the error grows, while
  what the network still explains can fall by it (0.33 at T = 8 to 0.99 at T = 32: 67 % explained to 1 %);
* a length where an infeasible row's exponent (``ifs.decide(..., seq_len=T)``) is not above the efficient
  row's cannot separate the two: the solver predicts no gap there, so the table marks it and the gap clause
  does not count it. With no clause left the row is not judged (like an UNKNOWN verdict);
* a row with a length that trained fewer than ``MIN_TRAINED_SHARE`` of its planned steps (the budget ended
  first) is not judged: an untrained network's error says nothing about the architecture, and it would
  count as an infeasible row's "yes" or a feasible row's "no".

The factors are fixed here, before any training, and printed with the table.

>>> rule = TrendRule()
>>> efficient = (Cell(8, 1.0, 1e-3), Cell(16, 1.0, 2e-3), Cell(32, 1.0, 3e-3))
>>> judge(rule, "feasible", efficient, None).agree
True
>>> rising = (Cell(8, 1.0, 2e-3), Cell(16, 3.0, 5e-3), Cell(32, 7.0, 2e-2))
>>> judge(rule, "infeasible", rising, efficient).agree
True
>>> saturating = (Cell(8, 1.0, 0.33), Cell(16, 3.0, 0.94), Cell(32, 7.0, 0.99))   # cannot rise 4x: 1 - NMSE falls 67x
>>> judge(rule, "infeasible", saturating, None).reason
'rises 3.0x from T = 8 to 32 (< 4x); explains 67.0x less at T = 32 (>= 4x)'
>>> cut = (Cell(8, 1.0, 0.9, 900, planned_steps=900), Cell(32, 7.0, 1.05, 1, planned_steps=900))
>>> judge(rule, "infeasible", cut, None).reason
'T = 32 trained 1 of its 900 planned steps (the budget ended first): not judged'
"""
from __future__ import annotations

import math
from dataclasses import dataclass

DEFAULT_THRESHOLD = 1e-2
THRESHOLD_REASON = ("1e-2: the cpu profile's threshold; the papers' inefficient rows stay >= 1e-2 at short T, "
                    "and an efficient network that cannot beat 1e-2 has not learned its retrievals")
FLAT_FACTOR = 4.0   # T goes from 8 to 32: an error that grew as fast as T would change 4x; a flat one less
RISE_FACTOR = 4.0   # the same 4x, the other way: an error that grows at least as fast as T
FACTOR_REASON = ("4: the default lengths 8, 16, 32 span 4x; an error growing at least as fast as T rises 4x "
                 "over them, an error independent of T (a feasible verdict's claim) changes less")
MIN_SPAN = 4        # the rise clause needs T to double at least twice between the shortest and longest length
MIN_TRAINED_SHARE = 0.9   # of a length's planned steps; the cosine's last tenth moves the weights little


@dataclass(frozen=True)
class TrendRule:
    """The agreement rule, fixed before training (module docstring)."""

    threshold: float = DEFAULT_THRESHOLD
    flat_factor: float = FLAT_FACTOR
    rise_factor: float = RISE_FACTOR

    def describe(self, seq_lens: tuple[int, ...], reference: str | None) -> list[str]:
        """The rule as printed above the table."""
        lo, hi = min(seq_lens), max(seq_lens)
        ref = f"the efficient row's ({reference})" if reference else "an efficient row's (none in this table)"
        lines = [f"rule fixed before training, T = {', '.join(map(str, seq_lens))}:",
                 (f"  feasible row agrees: NMSE < {self.threshold:g} at every T and max/min over T <= "
                 f"{self.flat_factor:g}"),
                 (f"  infeasible row agrees: NMSE(T={hi}) / NMSE(T={lo}) >= {self.rise_factor:g} or "
                 f"(1 - NMSE(T={lo})) / (1 - NMSE(T={hi})) >= {self.rise_factor:g}"
                 f"{'' if hi >= MIN_SPAN * lo else ' (not available: T does not double twice)'}, "
                 f"or NMSE(T={hi}) >= {self.rise_factor:g} x {ref}"),
                 ("  (the second: what the network explains falls; NMSE cannot rise "
                 f"{self.rise_factor:g}x from above 1/{self.rise_factor:g}, since predicting the mean gives 1)"),
                 ("  '=' marks a length where an infeasible row's exponent is not above the efficient row's: "
                 "it cannot separate them and is not counted"),
                 (f"  a row with a length that trained fewer than {MIN_TRAINED_SHARE:.0%} of its planned steps "
                  "('short': the budget ended first) is not judged")]
        if len(seq_lens) == 1:
            lines.append(f"  one length (T = {hi}) cannot show a trend: feasible rows are judged by the threshold, "
                         "infeasible rows by the gap alone")
        return lines


@dataclass(frozen=True)
class Cell:
    """One architecture at one length."""

    seq_len: int
    exponent: float               # the solver's best cost exponent at this T (ifs.decide(..., seq_len=T))
    nmse: float                   # best validation NMSE of the trained network (the best of its seeds)
    steps: int = 0
    exponent_text: str = ""       # the exponent as the solver writes it ("5/3")
    compiled_nmse: float | None = None   # the compiled witness's NMSE (experiments.check_compiled), if any
    planned_steps: int = 0        # the steps the plan gave it (0: not known)
    seed_nmse: tuple[float, ...] = ()   # each seed's best validation NMSE (``nmse`` is the least)

    @property
    def short(self) -> bool:
        """Trained too few of its planned steps to be judged (the budget ended first)."""
        return self.steps < MIN_TRAINED_SHARE * self.planned_steps


@dataclass(frozen=True)
class Judgement:
    agree: bool | None            # None: not judged (an UNKNOWN verdict, or no clause could separate)
    reason: str
    unseparated: tuple[int, ...] = ()   # lengths that cannot separate this row from the efficient one


def judge(rule: TrendRule, status: str, cells: tuple[Cell, ...], reference: tuple[Cell, ...] | None) -> Judgement:
    """Whether a row with the solver's ``status`` agrees with its measured ``cells`` (ordered by T);
    ``reference``: the efficient row's cells at the same lengths, or None when the table has none."""
    short = [c for c in cells if c.short]
    if short:
        flat = unseparated(cells, reference) if status == "infeasible" else ()
        return Judgement(None, "; ".join(f"T = {c.seq_len} trained {c.steps} of its {c.planned_steps} planned steps"
                                         for c in short) + " (the budget ended first): not judged", flat)
    if status == "feasible":
        return _judge_efficient(rule, cells)
    if status == "infeasible":
        return _judge_inefficient(rule, cells, reference)
    return Judgement(None, f"the solver answered {status}: shown, not counted")


def unseparated(cells: tuple[Cell, ...], reference: tuple[Cell, ...] | None) -> tuple[int, ...]:
    """Lengths where the solver predicts no gap: this row's exponent is not above the efficient row's."""
    if reference is None:
        return ()
    return tuple(c.seq_len for c, r in zip(cells, reference) if not c.exponent > r.exponent)


def _judge_efficient(rule: TrendRule, cells: tuple[Cell, ...]) -> Judgement:
    nmse = [c.nmse for c in cells]
    above = [c.seq_len for c in cells if not c.nmse < rule.threshold]
    if above:
        return Judgement(False, f"NMSE not below {rule.threshold:g} at T = {', '.join(map(str, above))}")
    if len(cells) == 1:
        return Judgement(True, f"below {rule.threshold:g}; one length cannot show a trend")
    spread = max(nmse) / min(nmse)
    within = spread <= rule.flat_factor
    return Judgement(within, f"below {rule.threshold:g} at every T, {spread:.1f}x across T "
                             f"({'within' if within else 'beyond'} {rule.flat_factor:g}x)")


def _judge_inefficient(rule: TrendRule, cells: tuple[Cell, ...], reference: tuple[Cell, ...] | None) -> Judgement:
    first, last = cells[0], cells[-1]
    flat = unseparated(cells, reference)
    clauses: list[tuple[bool, str]] = []
    if last.seq_len >= MIN_SPAN * first.seq_len:
        rise = _ratio(last.nmse, first.nmse)
        clauses.append((rise >= rule.rise_factor, f"rises {rise:.1f}x from T = {first.seq_len} to {last.seq_len}"))
        lost = _ratio(1 - first.nmse, 1 - last.nmse) if first.nmse < 1 else 1.0  # explained nothing: nothing to lose
        clauses.append((lost >= rule.rise_factor, f"explains nothing at T = {last.seq_len}" if math.isinf(lost)
                        else f"explains {lost:.1f}x less at T = {last.seq_len}"))
    if reference is not None and last.seq_len not in flat:
        gap = _ratio(last.nmse, reference[-1].nmse)
        clauses.append((gap >= rule.rise_factor, f"{gap:.1f}x the efficient row at T = {last.seq_len}"))
    notes = [f"T = {', '.join(map(str, flat))} cannot separate (exponent not above the efficient row's)"] if flat \
        else []
    if len(cells) == 1:
        notes.append("one length cannot show a trend")
    if not clauses:
        return Judgement(None, "; ".join(notes or ["no efficient row and no trend"]) + ": not counted", flat)
    agree = any(ok for ok, _ in clauses)
    verdict = [f"{text} ({'>=' if ok else '<'} {rule.rise_factor:g}x)" for ok, text in clauses]
    return Judgement(agree, "; ".join(verdict + notes), flat)


def _ratio(a: float, b: float) -> float:
    """a / b for NMSEs; a NaN (a diverged run) makes the clause fail, never pass."""
    if math.isnan(a) or math.isnan(b):
        return math.nan
    return a / b if b > 0 else math.inf
