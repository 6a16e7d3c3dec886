"""Report a profile's results: a table (text, Markdown, JSON), the profile's checks, and plots.

Every measured row sits beside the paper's figure for the same configuration (papers.py), with the
paper's T named when it differs. The checks are the profile's ``criteria`` (profiles.py) plus one plumbing
check (every configuration trained to a finite NMSE); ``python -m experiments report`` exits 1 when one
fails. Plots (figures.py): NMSE against T and against heads with the papers' figures beside, learning curves.

JSON schema (``report --json``, one document)::

    {"profile": "cpu", "note": "... (smoke only)",
     "configurations": [{"table", "target", "heads", "embed_dim", "seq_len", "seeds", "nmse_min",
                         "nmse_median", "device", "wall_s", "paper_nmse", "paper_seq_len", "paper_source"}],
     "checks": [{"holds": true, "text": "..."}]}
"""
from __future__ import annotations

import json
import math
import os
import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from experiments.tables import papers
from experiments.tables.profiles import Criterion, Profile, get_profile
from experiments.tables.store import RunRecord


@dataclass(frozen=True)
class ReportRow:
    """One configuration (table, heads, E, T), aggregated over its seeds."""

    table: str
    target: str
    heads: tuple[int, ...]
    embed_dim: int
    seq_len: int
    seeds: tuple[int, ...]
    nmse_min: float
    nmse_median: float
    device: str
    wall_s: float                    # sum over seeds of the amortized wall time
    paper_nmse: float | None
    paper_seq_len: int | None
    paper_source: str | None


def summarize(records: list[RunRecord]) -> list[ReportRow]:
    """Group runs by configuration; rows sorted by table and T (architectures in recorded order)."""
    groups: dict[tuple, list[RunRecord]] = {}
    for r in records:
        groups.setdefault((r.table_name, r.target, r.heads, r.embed_dim, r.seq_len), []).append(r)
    rows = []
    for (table, target, heads, E, T), runs in groups.items():
        nmse = [r.metrics["nmse_best"] for r in runs]
        fig = papers.lookup(target, heads, E, T)
        rows.append(ReportRow(table, target, heads, E, T, tuple(sorted(r.seed for r in runs)), min(nmse),
                              statistics.median(nmse), "+".join(sorted({r.device for r in runs})),
                              sum(r.wall_s for r in runs), fig.value if fig else None,
                              fig.seq_len if fig else None, fig.source if fig else None))
    rows.sort(key=lambda r: (r.table, r.seq_len))  # stable: architectures keep their recorded order
    return rows


def format_table(rows: list[ReportRow], markdown: bool = False) -> str:
    head = ["table", "target", "heads", "E", "T", "seeds", "nmse_min", "nmse_median", "paper", "paper src",
            "wall_s"]
    body = [[r.table, r.target, ",".join(map(str, r.heads)), str(r.embed_dim), str(r.seq_len),
             str(len(r.seeds)),
             f"{r.nmse_min:.2e}", f"{r.nmse_median:.2e}",
             "-" if r.paper_nmse is None else f"{r.paper_nmse:.2e}" + ("" if r.paper_seq_len == r.seq_len
                                                                       else f" (T={r.paper_seq_len})"),
             r.paper_source or "-", f"{r.wall_s:.1f}"] for r in rows]
    if markdown:
        return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
                         + ["| " + " | ".join(line) + " |" for line in body])
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    return "\n".join("  ".join(x.ljust(w) for x, w in zip(line, widths)) for line in [head, *body])


SMOKE_NOTE = ("note: the smoke profile trains a dozen steps on tiny data; its numbers check the plumbing "
              "only (every run trains, is stored and reported), not the papers' transitions")


def _by(rows: list[ReportRow], table: str) -> list[ReportRow]:
    return [r for r in rows if r.table == table]


def _fmt(heads: tuple[int, ...]) -> str:
    return f"({','.join(map(str, heads))})"


def check_transition(rows: list[ReportRow], c: Criterion) -> tuple[bool, str] | None:
    """``c.better`` at most ``c.max_nmse`` and ``c.ratio`` times below every ``c.worse``, at each T."""
    parts, ok = [], True
    for T in c.seq_lens:
        sel = {r.heads: r.nmse_min for r in _by(rows, c.table) if r.seq_len == T}
        if c.better not in sel or any(w not in sel for w in c.worse):
            return None
        best = sel[c.better]
        text = f"T={T}: {_fmt(c.better)} {best:.2e}"
        if c.max_nmse is not None:
            ok &= best <= c.max_nmse
            text += f" (need <= {c.max_nmse:g})"
        for w in c.worse:
            ratio = sel[w] / best
            ok &= ratio >= c.ratio
            text += f", {_fmt(w)} {sel[w]:.2e} = {ratio:.1f}x"
        parts.append(text)
    return ok, f"{c.table}: " + "; ".join(parts) + f" (need >= {c.ratio:g}x)"


def check_range(rows: list[ReportRow], c: Criterion) -> tuple[bool, str] | None:
    """Every configuration of the table at each T within [min_nmse, max_nmse]."""
    sel = [r for r in _by(rows, c.table) if r.seq_len in c.seq_lens]
    if not sel:
        return None
    lo = c.min_nmse if c.min_nmse is not None else -float("inf")
    hi = c.max_nmse if c.max_nmse is not None else float("inf")
    ok = all(lo <= r.nmse_min <= hi for r in sel)
    want = " and ".join(x for x in (f">= {c.min_nmse:g}" if c.min_nmse is not None else "",
                                    f"<= {c.max_nmse:g}" if c.max_nmse is not None else "") if x)
    values = ", ".join(f"{_fmt(r.heads)}/E={r.embed_dim} T={r.seq_len} {r.nmse_min:.3g}" for r in sel)
    return ok, f"{c.table}: {values} (need {want})"


def check_finite(rows: list[ReportRow]) -> tuple[bool, str]:
    """Plumbing: every configuration trained to a finite NMSE."""
    bad = [f"{r.table} {_fmt(r.heads)} T={r.seq_len}" for r in rows if not math.isfinite(r.nmse_min)]
    return not bad, f"every configuration has a finite NMSE ({len(rows)} configurations" + (
        f"; not finite: {', '.join(bad)})" if bad else ")")


_CHECKS: dict[str, Callable[[list[ReportRow], Criterion], tuple[bool, str] | None]] = {
    "transition": check_transition, "range": check_range}


def run_checks(rows: list[ReportRow], profile: str | Profile) -> list[tuple[bool, str]]:
    """The plumbing check and the profile's criteria; a criterion whose rows are missing (a profile not
    yet run to the end, or runs of an earlier recipe left out) fails: a check is never silently dropped."""
    prof = get_profile(profile)
    checks = [check_finite(rows)]
    for crit in prof.criteria:
        check = _CHECKS[crit.kind](rows, crit)
        missing = (f"{crit.table}: not run (no results of the current configuration at "
                   f"T = {', '.join(map(str, crit.seq_lens))})")
        checks.append(check if check is not None else (False, missing))
    return checks


def to_json(rows: list[ReportRow], profile: str | Profile | None = None,
            checks: list[tuple[bool, str]] | None = None) -> str:
    """ONE JSON document (the schema of ``infoflow experiment report --json``): the profile, its note,
    every configuration, and every check with whether it holds."""
    doc: dict[str, Any] = {"profile": get_profile(profile).name if profile is not None else None,
                           "configurations": [{**asdict(r), "heads": list(r.heads), "seeds": list(r.seeds)}
                                              for r in rows],
                           "checks": [{"holds": ok, "text": text} for ok, text in (checks or [])]}
    if doc["profile"] == "smoke":
        doc["note"] = SMOKE_NOTE
    return json.dumps(doc, indent=1, default=_json_default)


def _json_default(value: object) -> object:
    return None if isinstance(value, float) and not math.isfinite(value) else str(value)


def hardware_line(records: list[RunRecord]) -> str:
    hw = records[-1].hardware if records else {}
    return (f"device {hw.get('device')} ({hw.get('device_name')}); CPU {hw.get('cpu_model')}, "
            f"{hw.get('cpu_count')} cores, torch threads {hw.get('torch_threads')} per process, "
            f"{hw.get('worker_processes', 1)} worker processes; "
            f"versions {records[-1].versions if records else {}}")


def elapsed_s(records: list[RunRecord]) -> float:
    """From the start of the first job (its commit time less its duration) to the last commit."""
    if not records:
        return 0.0
    starts = [r.created - r.metrics.get("job_total_s", r.metrics.get("job_wall_s", 0.0)) for r in records]
    return max(r.created for r in records) - min(starts)


def write_markdown(rows: list[ReportRow], records: list[RunRecord], profile: str | Profile, path: str,
                   plots: list[str] = ()) -> None:
    prof = get_profile(profile)
    total = sum(r.wall_s for r in rows)
    lines = [f"# Profile `{prof.name}`", "", prof.description, ""]
    if prof.name == "smoke":
        lines += [SMOKE_NOTE, ""]
    lines += [f"Hardware: {hardware_line(records)}", "",
              (f"Elapsed, first job start to last run committed (data generation included): "
               f"{elapsed_s(records):.0f} s; training time summed over jobs: {total:.0f} s"), "",
              "## Results beside the papers", "", format_table(rows, markdown=True), "", "## Checks", ""]
    lines += [f"- {'holds' if ok else 'FAILS'}: {text}" for ok, text in run_checks(rows, prof)]
    if plots:
        base = os.path.dirname(os.path.abspath(path))
        lines += ["", "## Plots", ""] + [f"![{os.path.basename(p)}]({os.path.relpath(p, base)})" for p in plots]
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")


def plot(rows: list[ReportRow], outdir: str, records: list[RunRecord] | None = None) -> list[str]:
    """NMSE against T, NMSE against heads (papers' figures dashed beside) and learning curves."""
    from experiments.tables import figures

    return figures.plot_all(rows, records or [], outdir)
