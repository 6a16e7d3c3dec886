"""Does training agree with the solver? Decide each architecture, train it, compare.

Agreement rule, fixed before any training: an architecture is *measured efficient* when its best
validation NMSE (minimum over seeds, as paper 2 reports) is below the profile's ``nmse_threshold``; it is
*predicted efficient* when ``ifs.decide`` answers FEASIBLE. UNKNOWN verdicts are reported, never counted.

Thresholds and why (``NMSE_THRESHOLD_REASONS``; the profiles carry the values):
* paper, 3e-3: in paper 1 Exp. 1 every efficient (D,D) model reaches <= 2.0e-3 and every inefficient one
  stays >= 4.5e-3; in paper 2 Table 2 h >= D reaches <= 6.1e-5 and h = D - 1 sits at 6.4e-4 .. 1.6e-3, so
  3e-3 separates paper 1 cleanly and is lenient to paper 2's h = D - 1 rows (a long-training effect).
* cpu, 1e-2: ~100x fewer optimizer steps than the papers; the papers' inefficient rows stay >= 1e-2 at
  short T (paper 2 h <= D - 2, paper 1 (D-1,D) for D <= 4), and an efficient model that cannot beat 1e-2
  has not learned the retrieval at all.
* smoke, 0.5: a dozen steps learn nothing; the smoke table checks the plumbing, not the agreement.

>>> from experiments.tables.profiles import get_profile
>>> get_profile("cpu").nmse_threshold
0.01
"""
from __future__ import annotations

import os
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from experiments.tables.profiles import Profile, Table, get_profile
from experiments.tables.run import Job, run_job
from experiments.tables.store import ResultStore, store_path
from experiments.training.data import resolve_target, target_label
from experiments.training.devices import pick_device

NMSE_THRESHOLD_REASONS = {
    "paper": "3e-3 separates paper 1 Exp. 1's efficient (<= 2.0e-3) from inefficient (>= 4.5e-3) rows",
    "cpu": "1e-2: short CPU training; papers' inefficient rows stay >= 1e-2, an efficient model gets below",
    "smoke": "0.5: a dozen steps learn nothing; the smoke table checks the plumbing only",
}


@dataclass(frozen=True)
class ValidationRow:
    heads: tuple[int, ...]
    embed_dim: int
    status: str                   # feasible / infeasible / unknown (the solver's answer)
    exponent: str                 # the solver's best cost exponent, as text
    nmse_min: float               # over seeds
    nmse_median: float
    threshold: float

    @property
    def predicted_efficient(self) -> bool | None:
        return None if self.status == "unknown" else self.status == "feasible"

    @property
    def measured_efficient(self) -> bool:
        return self.nmse_min < self.threshold

    @property
    def agree(self) -> bool | None:
        p = self.predicted_efficient
        return None if p is None else p == self.measured_efficient


@dataclass(frozen=True)
class ValidationResult:
    target: str
    seq_len: int
    profile: str
    threshold: float
    rows: tuple[ValidationRow, ...]

    @property
    def agreement(self) -> float | None:
        """Fraction of decided rows where prediction and measurement agree."""
        decided = [r.agree for r in self.rows if r.agree is not None]
        return sum(decided) / len(decided) if decided else None

    def _first(self, pick: Any) -> tuple[int, ...] | None:
        """First architecture, in order of total heads, where ``pick(row)`` holds."""
        for row in sorted(self.rows, key=lambda r: (sum(r.heads), r.heads)):
            if pick(row):
                return row.heads
        return None

    @property
    def predicted_transition(self) -> tuple[int, ...] | None:
        return self._first(lambda r: r.predicted_efficient)

    @property
    def measured_transition(self) -> tuple[int, ...] | None:
        """The smallest head configuration (by total heads) whose NMSE drops below the threshold."""
        return self._first(lambda r: r.measured_efficient)

    def __str__(self) -> str:
        title = (f"validate {self.target} at T={self.seq_len} (profile {self.profile}, "
                 f"efficient = NMSE < {self.threshold:g})")
        header = (f"{'heads':<10} {'E':>4} {'solver':<11} {'exponent':<16} {'nmse_min':>9} {'nmse_med':>9}"
                  "  agree")
        lines = [title, header]
        for r in self.rows:
            agree = "?" if r.agree is None else ("yes" if r.agree else "NO")
            heads = ",".join(map(str, r.heads))
            lines.append(f"{heads:<10} {r.embed_dim:>4} {r.status:<11} {r.exponent[:16]:<16} "
                         f"{r.nmse_min:>9.2e} {r.nmse_median:>9.2e}  {agree}")
        share = self.agreement
        lines.append(f"agreement: {'n/a' if share is None else f'{share:.0%}'}; transition predicted at "
                     f"{self.predicted_transition}, measured at {self.measured_transition}")
        return "\n".join(lines)


def _decide(target: Any, heads: tuple[int, ...], embed_dim: int, table: Table,
            seq_len: int) -> tuple[str, str]:
    import infoflow_smt as ifs  # lazily: the solver loads z3, and may not exist yet

    arch = ifs.Architecture(heads=tuple(heads), embed_dim=embed_dim, input_dim=table.input_dim,
                            positional=table.positional)
    verdict = ifs.decide(target, arch, seq_len=seq_len)
    return verdict.status.value, str(verdict.exponent)


def validate_table(table: Table, seq_len: int, profile: str | Profile = "smoke", device: str | None = None,
                   results_dir: str | os.PathLike[str] | None = None,
                   progress: bool = False) -> ValidationResult:
    """Decide and train every architecture of ``table`` at ``seq_len``; runs go to the store if given."""
    prof = get_profile(profile)
    target = resolve_target(table.target, seed=table.target_seed)
    verdicts = {(h, E): _decide(target, h, E, table, seq_len) for h, E in table.archs}
    store = ResultStore(store_path(results_dir, prof.name)) if results_dir is not None else None
    job = Job(table, seq_len, tuple((tuple(h), E, s) for h, E in table.archs for s in table.seeds))
    records, _ = run_job(job, prof.name, store, pick_device(device), progress=progress)
    rows = []
    for h, E in table.archs:
        nmse = [r.metrics["nmse_best"] for r in records if r.heads == tuple(h) and r.embed_dim == E]
        status, exponent = verdicts[(h, E)]
        rows.append(ValidationRow(tuple(h), E, status, exponent, min(nmse), statistics.median(nmse),
                                  prof.nmse_threshold))
    return ValidationResult(table.target, seq_len, prof.name, prof.nmse_threshold, tuple(rows))


def table_views(profile: str | Profile) -> list[tuple[Table, int]]:
    """(table, T) for every table and T of a profile, with the parts of a table that runs as several jobs
    (same name, same settings, different architectures: profiles.py) merged back into one table."""
    prof = get_profile(profile)
    views: dict[tuple[str, int], Table] = {}
    for table in prof.tables:
        for T in table.seq_lens:
            key = (table.name, T)
            if key in views and replace(views[key], archs=(), seq_lens=()) == replace(table, archs=(), seq_lens=()):
                views[key] = replace(views[key], archs=views[key].archs + table.archs)
            else:
                views.setdefault(key, table)
    return [(table, T) for (_, T), table in views.items()]


def validate(target: Any, architectures: Sequence[Any], seq_len: int, profile: str | Profile = "smoke",
             device: str | None = None,
             results_dir: str | os.PathLike[str] | None = None) -> ValidationResult:
    """Decide each ``ifs.Architecture`` for ``target`` at ``seq_len``, train it, report agreement.

    Training and model settings come from the profile's table for the same target and input dimension
    when there is one, else from the profile's defaults (paper 1 switches: residual on).

    >>> import infoflow_smt as ifs                                   # doctest: +SKIP
    >>> print(validate("linear_max_sum:D=2", [ifs.Architecture((1,), 8, 2), ifs.Architecture((2,), 16, 2)],
    ...                seq_len=4))                                   # doctest: +SKIP
    """
    prof = get_profile(profile)
    if not architectures:
        raise ValueError("validate needs at least one architecture")
    tgt = resolve_target(target)                   # fails fast on an unknown spec
    label = target_label(tgt)
    dims = {a.input_dim for a in architectures}
    positional = {a.positional for a in architectures}
    if len(dims) != 1 or len(positional) != 1:
        raise ValueError("all architectures must share input_dim and positional (they share one dataset)")
    d, pe = dims.pop(), positional.pop()
    template = next((t for t in prof.tables if t.target == label and t.input_dim == d), None)
    if template is None:
        template = Table(name="validate", target=label, input_dim=d, seq_lens=(seq_len,), archs=(),
                         train=prof.default_train, residual=True)
    archs = tuple((tuple(a.heads), int(a.width_at(seq_len))) for a in architectures)
    table = replace(template, seq_lens=(seq_len,), archs=archs, positional=pe)
    if not isinstance(target, str):  # a Target object carries its own seed (its random matrices)
        table = replace(table, target_seed=int(getattr(tgt, "seed", 0)))
    return validate_table(table, seq_len, prof, device=device, results_dir=results_dir)
