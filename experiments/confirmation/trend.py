"""The rule ``confirm`` judges a row by: its trend over T, fixed before training and printed with the table.

A verdict is a claim about every T: feasible says the cost of the best program does not grow with T,
infeasible says it does. One length cannot show that; a trend over lengths can (the papers test their
claims this way: triangle center against T, intrinsic dimension "independent of the sequence length").
Each architecture is trained at every length with the same width, recipe, training sequences and steps, and:

* a **feasible** row agrees when its NMSE is below the threshold at every length and stays within
  ``flat_factor`` across them (max / min); otherwise it disagrees (a network that did not learn is evidence
  against "efficient" by itself);
* an **infeasible** row is judged against its **control**: the efficient row of the same table (the decided
  row when feasible, else the first feasible row), trained at the same lengths on as many sequences for as
  many steps. A failure says something about the architecture only beside a network that the same training
  taught: without a control, or when the control does not meet its own (feasible) test, the row is **not
  judged**. Beside an agreeing control the row agrees when its NMSE at the longest T is at least
  ``rise_factor`` times the control's (the gap), or, when it has not learned the target at the longest T (NMSE
  at or above the threshold there), when its NMSE rises by ``rise_factor`` from the shortest to the longest T
  (T doubling at least twice) or the share of the variance it explains (``1 - NMSE``) falls by that factor
  over them. The explained share is the rise seen from the ceiling: predicting the mean gives NMSE 1, so an
  NMSE above ``1 / rise_factor`` cannot rise by the factor however fast the error grows;
* an infeasible row below the threshold at every length has learned the target there (the table's own
  meaning of efficient): it disagrees, unless beside an agreeing control it sits ``rise_factor`` above it
  (the gap clause); a rise of an error that stays below the threshold is not counted;
* a length where an infeasible row's exponent (``ifs.decide(..., seq_len=T)``) is not above its control's
  cannot separate the two: the solver predicts no gap there, so the table marks it and the gap clause
  does not count it. With no clause left the row is not judged (like an UNKNOWN verdict);
* a row with a length that trained fewer than ``MIN_TRAINED_SHARE`` of its planned steps (the budget ended
  first) is not judged: an untrained network's error says nothing about the architecture.

So a wrong "no" cannot pass on a failure of training: the same training must have taught the control, and
a network that learned is never read as a "yes" to infeasible by its trend alone (tests/measure: every
committed run judged with its verdict flipped disagrees). The factors are fixed here, before any training,
and printed with the table.

>>> rule = TrendRule()
>>> control = (Cell(8, 1.0, 1e-3), Cell(16, 1.0, 2e-3), Cell(32, 1.0, 3e-3))
>>> judge(rule, "feasible", control, None).agree
True
>>> rising = (Cell(8, 1.0, 2e-3), Cell(16, 3.0, 5e-3), Cell(32, 7.0, 2e-2))
>>> judge(rule, "infeasible", rising, control).agree
True
>>> judge(rule, "infeasible", rising, None).reason
'no efficient row trained beside it (a control, to show the training teaches this target): not judged'
>>> learned = (Cell(8, 1.0, 1e-4), Cell(16, 3.0, 4e-4), Cell(32, 7.0, 1.23e-3))   # rises 12.3x, all below 1e-2
>>> judge(rule, "infeasible", learned, None).reason
'below 0.01 at every T: it learned the target at these lengths; no control to set it against'
>>> saturating = (Cell(8, 1.0, 0.33), Cell(16, 3.0, 0.94), Cell(32, 7.0, 0.99))   # cannot rise 4x: 1 - NMSE falls 67x
>>> print(*judge(rule, "infeasible", saturating, control).reason.split("; "), sep=chr(10))
330.0x the control at T = 32 (>= 4x)
rises 3.0x from T = 8 to 32 (< 4x)
explains 67.0x less at T = 32 (>= 4x)
T = 8 cannot separate (exponent not above the control's)
>>> cut = (Cell(8, 1.0, 0.9, 900, planned_steps=900), Cell(32, 7.0, 1.05, 1, planned_steps=900))
>>> judge(rule, "infeasible", cut, None).reason
'T = 32 trained 1 of its 900 planned steps (the budget ended first): not judged'
"""
from __future__ import annotations

import math
from collections.abc import Sequence
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

    def describe(self, seq_lens: tuple[int, ...], control: str | None) -> list[str]:
        """The rule as printed above the table."""
        lo, hi = min(seq_lens), max(seq_lens)
        ref = f"the control's ({control})" if control else "the control's (none in this table)"
        lines = [f"rule fixed before training, T = {', '.join(map(str, seq_lens))}:",
                 (f"  feasible row agrees: NMSE < {self.threshold:g} at every T and max/min over T <= "
                  f"{self.flat_factor:g}"),
                 ("  infeasible row: judged only beside its control, the efficient row trained on the same "
                  "sequences for the same steps, when the control meets its own test; otherwise not judged"),
                 (f"  it agrees when NMSE(T={hi}) >= {self.rise_factor:g} x {ref}, or, when NMSE(T={hi}) >= "
                  f"{self.threshold:g}, NMSE(T={hi}) / NMSE(T={lo}) >= {self.rise_factor:g} or "
                  f"(1 - NMSE(T={lo})) / (1 - NMSE(T={hi})) >= {self.rise_factor:g}"
                  f"{'' if hi >= MIN_SPAN * lo else ' (not available: T does not double twice)'}"),
                 ("  (the last: what the network explains falls; NMSE cannot rise "
                  f"{self.rise_factor:g}x from above 1/{self.rise_factor:g}, since predicting the mean gives 1)"),
                 (f"  an infeasible row below {self.threshold:g} at every T learned the target there: it "
                  "disagrees unless the gap to its control holds"),
                 ("  '=' marks a length where an infeasible row's exponent is not above its control's: "
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
    agree: bool | None            # None: not judged (an UNKNOWN verdict, no agreeing control, no clause)
    reason: str
    unseparated: tuple[int, ...] = ()   # lengths that cannot separate this row from its control


def judge_rows(rule: TrendRule, statuses: Sequence[str],
               cells: Sequence[tuple[Cell, ...]]) -> tuple[int | None, tuple[Judgement, ...]]:
    """Every row of a table judged: (the control's place, the first feasible row, or None; each row's
    judgement). ``statuses``: the solver's answer per row; ``cells``: its measured cells, ordered by T."""
    at = next((i for i, s in enumerate(statuses) if s == "feasible"), None)
    control = cells[at] if at is not None else None
    return at, tuple(judge(rule, s, c, control) for s, c in zip(statuses, cells))


def judge(rule: TrendRule, status: str, cells: tuple[Cell, ...], control: tuple[Cell, ...] | None) -> Judgement:
    """Whether a row with the solver's ``status`` agrees with its measured ``cells`` (ordered by T);
    ``control``: the efficient row's cells at the same lengths, or None when the table has none."""
    short = [c for c in cells if c.short]
    if short:
        flat = unseparated(cells, control) if status == "infeasible" else ()
        return Judgement(None, "; ".join(f"T = {c.seq_len} trained {c.steps} of its {c.planned_steps} planned steps"
                                         for c in short) + " (the budget ended first): not judged", flat)
    if status == "feasible":
        return _judge_efficient(rule, cells)
    if status == "infeasible":
        return _judge_inefficient(rule, cells, control)
    return Judgement(None, f"the solver answered {status}: shown, not counted")


def unseparated(cells: tuple[Cell, ...], control: tuple[Cell, ...] | None) -> tuple[int, ...]:
    """Lengths where the solver predicts no gap: this row's exponent is not above its control's."""
    if control is None:
        return ()
    return tuple(c.seq_len for c, r in zip(cells, control) if not c.exponent > r.exponent)


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


def _judge_inefficient(rule: TrendRule, cells: tuple[Cell, ...], control: tuple[Cell, ...] | None) -> Judgement:
    last = cells[-1]
    own = None if control is None else judge(rule, "feasible", control, None)
    blocked = _blocked(own)
    flat = unseparated(cells, control)
    gap = [] if blocked is not None or control is None or last.seq_len in flat else [_gap(rule, last, control[-1])]
    notes = [f"T = {', '.join(map(str, flat))} cannot separate (exponent not above the control's)"] if flat else []
    if len(cells) == 1:
        notes.append("one length cannot show a trend")
    if all(c.nmse < rule.threshold for c in cells):
        return _judge_learned(rule, gap, own, notes, flat)
    if blocked is not None:
        return Judgement(None, f"{blocked}: not judged", flat)
    clauses = gap + _trend(rule, cells)
    if not clauses:
        return Judgement(None, "; ".join(notes or ["no clause applies"]) + ": not counted", flat)
    agree = any(ok for ok, _ in clauses)
    return Judgement(agree, "; ".join([_said(rule, ok, text) for ok, text in clauses] + notes), flat)


def _blocked(own: Judgement | None) -> str | None:
    """Why the row cannot be judged beside its control (``own``: the control's judgement), or None."""
    if own is None:
        return "no efficient row trained beside it (a control, to show the training teaches this target)"
    return None if own.agree is True else f"its control did not meet its own test ({own.reason})"


def _judge_learned(rule: TrendRule, gap: list[tuple[bool, str]], own: Judgement | None, notes: list[str],
                   flat: tuple[int, ...]) -> Judgement:
    """An infeasible row below the threshold at every T learned the target at these lengths: only the gap to
    an agreeing control can still say "yes"; where the solver predicts no gap, nothing contradicts it."""
    learned = f"below {rule.threshold:g} at every T"
    if gap:
        ok, text = gap[0]
        return Judgement(ok, "; ".join([learned if ok else f"{learned}: it learned the target at these lengths",
                                        _said(rule, ok, text), *notes]), flat)
    blocked = _blocked(own)
    if blocked is None:
        return Judgement(None, "; ".join([learned, *notes]) + ": not judged", flat)
    why = "no control to set it against" if own is None else blocked
    return Judgement(False, f"{learned}: it learned the target at these lengths; {why}", flat)


def _gap(rule: TrendRule, last: Cell, control: Cell) -> tuple[bool, str]:
    gap = _ratio(last.nmse, control.nmse)
    return gap >= rule.rise_factor, f"{gap:.1f}x the control at T = {last.seq_len}"


def _trend(rule: TrendRule, cells: tuple[Cell, ...]) -> list[tuple[bool, str]]:
    """The rise and the explained share, where T doubles at least twice and the row has not learned the
    target at the longest T (an error below the threshold that rises is a learned target's noise)."""
    first, last = cells[0], cells[-1]
    if last.seq_len < MIN_SPAN * first.seq_len or last.nmse < rule.threshold:
        return []
    rise = _ratio(last.nmse, first.nmse)
    lost = _ratio(1 - first.nmse, 1 - last.nmse) if first.nmse < 1 else 1.0  # explained nothing: nothing to lose
    return [(rise >= rule.rise_factor, f"rises {rise:.1f}x from T = {first.seq_len} to {last.seq_len}"),
            (lost >= rule.rise_factor, f"explains nothing at T = {last.seq_len}" if math.isinf(lost)
             else f"explains {lost:.1f}x less at T = {last.seq_len}")]


def _said(rule: TrendRule, ok: bool, text: str) -> str:
    return f"{text} ({'>=' if ok else '<'} {rule.rise_factor:g}x)"


def _ratio(a: float, b: float) -> float:
    """a / b for NMSEs; a NaN (a diverged run) makes the clause fail, never pass."""
    if math.isnan(a) or math.isnan(b):
        return math.nan
    return a / b if b > 0 else math.inf
