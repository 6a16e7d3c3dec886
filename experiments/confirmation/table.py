"""The agreement table ``experiments.confirm`` returns: one row per architecture, one cell per length.

``ConfirmRow`` holds what the solver said (status, exponent), what training measured at every T
(``trend.Cell``) and the trend rule's judgement; ``Confirmation`` the rows with the run's settings, printed by
``str()`` (the rule first, then the table, a ``why:`` line under every row) and recorded by ``to_json()``;
``from_json`` reads a record back and ``judged_again`` judges its measured cells anew (the committed runs
under the rule of today, or with the solver's answers flipped: a wrong verdict must not pass). An ``=``
after a cell marks a length where the solver's exponents do not separate the row from its control
(``trend.unseparated``); ``short`` a length that trained too few of its planned steps (``Cell.short``).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from experiments.confirmation.trend import FACTOR_REASON, Cell, Judgement, TrendRule, judge_rows

NOT_COMPILED = "not compiled"
NOTHING_JUDGED = ("nothing judged: no row's measurements could be set against its verdict (the reasons are under "
                  "the rows); a table that judges nothing confirms nothing")


@dataclass(frozen=True)
class ConfirmRow:
    role: str                   # decided | one head fewer in layer l | one layer fewer | one head more | asked for
    heads: tuple[int, ...]
    embed_dim: int
    status: str                 # the solver's answer for this architecture
    exponent: str               # its best cost exponent (an expression in T)
    exponent_at_T: str          # the same at the longest trained T
    nmse: float                 # best validation NMSE at the longest T
    steps: int                  # ... and its optimizer steps
    threshold: float
    cells: tuple[Cell, ...] = ()          # every trained length, shortest first
    judgement: Judgement = field(default_factory=lambda: Judgement(None, ""))
    compiled: str = NOT_COMPILED          # how the compiled NMSE in the cells was got, or why there is none

    @property
    def predicted_efficient(self) -> bool | None:
        return None if self.status == "unknown" else self.status == "feasible"

    @property
    def measured_efficient(self) -> bool:
        """Below the threshold at every trained length."""
        return all(c.nmse < self.threshold for c in self.cells) if self.cells else self.nmse < self.threshold

    @property
    def agree(self) -> bool | None:
        return self.judgement.agree


@dataclass(frozen=True)
class Confirmation:
    """The agreement table of ``confirm``; ``str()`` prints it, ``to_json()`` gives one JSON-ready record."""

    target: str
    seq_len: int                # the longest length
    input_dim: int
    positional: bool
    threshold: float
    threshold_reason: str
    budget_s: float
    wall_s: float
    recipe: dict[str, Any]
    device: str
    rows: tuple[ConfirmRow, ...]
    seq_lens: tuple[int, ...] = ()
    rule: TrendRule = field(default_factory=TrendRule)
    factor_reason: str = FACTOR_REASON
    control: str | None = None          # the efficient row infeasible rows are judged beside
    model: dict[str, Any] | None = None  # the model family's switches (token embedding, FFN, temperature)
    decided_at: int | None = None       # the T the solver's status and exponent columns were decided at (None: all)

    @property
    def agreement(self) -> tuple[int, int]:
        """(agreeing rows, judged rows)."""
        decided = [r.agree for r in self.rows if r.agree is not None]
        return sum(decided), len(decided)

    @property
    def confirms(self) -> bool:
        """At least one row judged, and every judged row agrees: a table that judges nothing confirms nothing."""
        good, total = self.agreement
        return total > 0 and good == total

    @property
    def undecided(self) -> tuple[str, ...]:
        """The rows the solver could not decide (unknown): not judged, so the agreement leaves them out."""
        return tuple(f"{r.role} ({','.join(map(str, r.heads))})" for r in self.rows if r.status == "unknown")

    def to_json(self) -> dict[str, Any]:
        """One JSON-ready record, as ``Verdict.to_json`` (``json.dumps`` it to print)."""
        doc = asdict(self)
        for row, r in zip(doc["rows"], self.rows):
            row.update(heads=list(r.heads), predicted_efficient=r.predicted_efficient,
                       measured_efficient=r.measured_efficient, agree=r.agree,
                       unseparated=list(r.judgement.unseparated))
            for cell, c in zip(row["cells"], r.cells):
                cell.update(separates=c.seq_len not in r.judgement.unseparated, short=c.short)
        doc.update(seq_lens=list(self.seq_lens), agreement=list(self.agreement), undecided=list(self.undecided),
                   rule_text=self.rule.describe(self.seq_lens, self.control))
        return doc

    def judged_again(self, statuses: Sequence[str] | None = None) -> Confirmation:
        """The same measured cells judged by this table's rule, with the solver's answers ``statuses`` (one per
        row; default: each row's own). Nothing is trained: the mutation test flips the answers of committed
        runs and requires every flipped row to disagree."""
        answers = statuses or [r.status for r in self.rows]
        rows, control = judged(self.rule, [replace(r, status=s) for r, s in zip(self.rows, answers)])
        return replace(self, rows=rows, control=control)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Confirmation:
        """A table back from its ``to_json()`` record (a committed ``results/confirm_*.json``); the derived
        fields of the record (agreement, the rule's text, each cell's marks) are left out."""
        names = {f.name for f in fields(cls)}
        rows = tuple(_row_from_json(r) for r in doc["rows"])
        kept = {k: v for k, v in doc.items() if k in names and k not in ("rows", "rule", "seq_lens")}
        return cls(**{**kept, "rows": rows, "rule": TrendRule(**doc["rule"]), "seq_lens": tuple(doc["seq_lens"])})

    def to_markdown(self) -> str:
        """The rows as a Markdown table (docs/reproduction.md quotes the committed ones): each cell the best
        seed's NMSE with every seed's in brackets, ``(=)`` where the length cannot separate the row."""
        head = ["heads", "solver", *[f"T = {T}" for T in self.seq_lens], "steps", "compiled", "agrees"]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for row in self.rows:
            flat = set(row.judgement.unseparated)
            cells = [f"{c.nmse:.3g}" + (" (=)" if c.seq_len in flat else "") + (" short" if c.short else "")
                     + (f" [{', '.join(f'{x:.3g}' for x in c.seed_nmse)}]" if len(c.seed_nmse) > 1 else "")
                     for c in row.cells]
            compiled = [c.compiled_nmse for c in row.cells if c.compiled_nmse is not None]
            agrees = "not judged" if row.agree is None else "yes" if row.agree else "no"
            lines.append("| " + " | ".join([
                f"({', '.join(map(str, row.heads))}{',' if len(row.heads) == 1 else ''})",
                f"{row.status}, {row.exponent}", *cells, " / ".join(str(c.steps) for c in row.cells),
                f"<= {max(compiled):.1e}" if compiled else row.compiled.removeprefix("none: "),
                f"{agrees}: {row.judgement.reason}"]) + " |")
        return "\n".join(lines)

    def __str__(self) -> str:
        r = self.recipe
        lines = [(f"confirm {self.target} at T = {', '.join(map(str, self.seq_lens))}, d = {self.input_dim}"
                  f"{', positional' if self.positional else ''} on {self.device}"),
                 f"threshold fixed before training: efficient = best validation NMSE < {self.threshold:g}",
                 *self.rule.describe(self.seq_lens, self.control),
                 _solver_columns(self.decided_at),
                 *([f"model: {_model_text(self.model)}"] if self.model else []),
                 (f"recipe: AdamW lr {r['lr']:g} wd {r['weight_decay']:g}, batch {r['batch_size']}, training "
                  f"sequences {_per_length(r['n_train'])}; {r['steps']} steps for every model at every T "
                  f"(as many as {r['planned_s']:.0f} s hold by the probed step times{_workers(r)}), 5% warm-up "
                  f"and cosine to 0; budget {self.budget_s:.0f} s, used {self.wall_s:.0f} s"),
                 *_seeds_line(r),
                 _header(self.seq_lens)]
        for row in self.rows:
            lines.extend(_row_lines(row))
        good, total = self.agreement
        lines.append(f"agreement: {good}/{total} judged rows ('?': not judged; the reason is under the row)")
        if not total:
            lines.append(NOTHING_JUDGED)
        if self.undecided:
            lines.append(f"undecided by the solver (unknown, not judged): {'; '.join(self.undecided)}")
        return "\n".join(lines)


def judged(rule: TrendRule, rows: Sequence[ConfirmRow]) -> tuple[tuple[ConfirmRow, ...], str | None]:
    """Every row judged by ``rule`` beside the table's control (``trend.judge_rows``), and the control's name."""
    at, judgements = judge_rows(rule, [r.status for r in rows], [r.cells for r in rows])
    control = None if at is None else f"{rows[at].role}, {','.join(map(str, rows[at].heads))}"
    return tuple(replace(r, judgement=j) for r, j in zip(rows, judgements)), control


def _row_from_json(doc: dict[str, Any]) -> ConfirmRow:
    cell_names = {f.name for f in fields(Cell)}
    cells = tuple(Cell(**{**{k: v for k, v in c.items() if k in cell_names},
                          "seed_nmse": tuple(c.get("seed_nmse", ()))}) for c in doc["cells"])
    j = doc["judgement"]
    return ConfirmRow(doc["role"], tuple(doc["heads"]), doc["embed_dim"], doc["status"], doc["exponent"],
                      doc["exponent_at_T"], doc["nmse"], doc["steps"], doc["threshold"], cells,
                      Judgement(j["agree"], j["reason"], tuple(j["unseparated"])), doc["compiled"])


def _model_text(m: dict[str, Any]) -> str:
    """The switches every row's network shares (``Confirmation.model``), in words."""
    embedding = ("linear token embedding" if m["token_embedding"] == "linear" else
                 f"token MLP (ReLU, hidden {m['mlp_hidden']})")
    hidden = m["ffn_hidden"] if m["ffn_hidden"] is not None else m["mlp_hidden"]
    ffn = (f"{'gated FFN SiLU(W1 u) * (W3 u)' if m['ffn_gated'] else 'GELU FFN'}, hidden {hidden}"
           if m["ffn"] else "no FFN")
    return ", ".join([embedding, "residual" if m["residual"] else "no residual",
                      "pre-LayerNorm" if m["layernorm"] else "no LayerNorm", ffn,
                      ("learned inverse temperature" if m["learn_temperature"] else
                       f"inverse temperature {m['attn_beta']:g}"), f"GELU readout, hidden {m['mlp_hidden']}"])


def _workers(recipe: dict[str, Any]) -> str:
    n = recipe.get("workers", 1)
    return f" in {n} processes" if n > 1 else ""


def _seeds_line(recipe: dict[str, Any]) -> list[str]:
    """How a cell's NMSE comes from its seeds, when there are several."""
    seeds = recipe.get("seeds", [0])
    if len(seeds) < 2:
        return []
    return [(f"seeds: {', '.join(map(str, seeds))} for every model at every T; a cell is the best of them (the "
             f"papers report the minimum over seeds, to set what an architecture can do apart from optimization "
             f"noise); each seed's under its row")]


def _solver_columns(decided_at: int | None) -> str:
    """What the solver's columns say: at one T every cost is a number, and an infeasible row's exponent may
    be small there, which reads as a contradiction unless the table says what the status compares."""
    cells = "[exp] in a cell: the exponent decided at that T"
    if decided_at is None:
        return (f"solver, exponent: decided for all large T: the status says whether the cost stays bounded as T "
                f"grows, the exponent is the cheapest program's, an expression in T; {cells}")
    return (f"solver, exponent: decided at T = {decided_at}, where every cost is a number: the status still says "
            f"whether some program's cost stays bounded as T grows (each operation's cost law; the status for "
            f"all large T), the exponent is the cheapest program's cost at T = {decided_at}, so an infeasible "
            f"row may show a small one (its cost grows with T); {cells}")


def _per_length(n_train: Any) -> str:
    return ", ".join(f"{n} (T = {T})" for T, n in n_train.items()) if isinstance(n_train, dict) else str(n_train)


def _header(seq_lens: tuple[int, ...]) -> str:
    cells = "".join(f"{'T=' + str(T) + ' NMSE [exp]':<22}" for T in seq_lens)
    return f"{'role':<26} {'heads':<7} {'E':>3} {'solver':<10} {'exponent':<12} {cells}{'compiled':<22} agree"


def _mark(cell: Cell, unseparated: set[int]) -> str:
    """'=' where the length cannot separate the row, ' short' where it trained too few of its planned steps."""
    return ("=" if cell.seq_len in unseparated else "") + (" short" if cell.short else "")


def _row_lines(row: ConfirmRow) -> list[str]:
    flat = set(row.judgement.unseparated)
    cells = "".join(f"{f'{c.nmse:.2e} [{c.exponent_text}]' + _mark(c, flat):<22}" for c in row.cells)
    compiled = [c.compiled_nmse for c in row.cells if c.compiled_nmse is not None]
    shown = f"<= {max(compiled):.1e} ({row.compiled})" if compiled else row.compiled
    agree = "?" if row.agree is None else ("yes" if row.agree else "NO")
    column = shown if len(shown) <= 21 else shown.split(":")[0] + " (below)"
    seeds = "; ".join(f"T = {c.seq_len} " + " / ".join(f"{x:.1e}" for x in c.seed_nmse)
                      for c in row.cells if len(c.seed_nmse) > 1)
    return [(f"{row.role:<26} {','.join(map(str, row.heads)):<7} {row.embed_dim:>3} {row.status:<10} "
            f"{row.exponent[:12]:<12} {cells}{column:<22} {agree}"),
            *([f"{'':<26} seeds: {seeds}"] if seeds else []),
            f"{'':<26} why: {row.judgement.reason}",
            *([f"{'':<26} compiled: {shown}"] if column != shown else [])]
