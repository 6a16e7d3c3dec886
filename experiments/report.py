"""Report a profile's results: a table (text, Markdown, JSON), the transition checks, and plots.

Every measured row sits beside the paper's figure for the same configuration (paper_figures.py), with the
paper's T named when it differs. Plots use matplotlib's Agg backend (no display needed); each figure has the
measured panel on the left and the paper's on the right.
"""
from __future__ import annotations

import json
import os
import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from . import paper_figures
from .store import RunRecord


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
        fig = paper_figures.lookup(target, heads, E, T)
        rows.append(ReportRow(table, target, heads, E, T, tuple(sorted(r.seed for r in runs)), min(nmse),
                              statistics.median(nmse), "+".join(sorted({r.device for r in runs})),
                              sum(r.wall_s for r in runs), fig.value if fig else None,
                              fig.seq_len if fig else None, fig.source if fig else None))
    rows.sort(key=lambda r: (r.table, r.seq_len))  # stable: architectures keep their recorded order
    return rows


def to_json(rows: list[ReportRow]) -> str:
    """ONE JSON document: a list of configurations (the schema of ``infoflow experiment report --json``)."""
    return json.dumps([{**asdict(r), "heads": list(r.heads), "seeds": list(r.seeds)} for r in rows], indent=1)


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


# --- the transitions the cpu profile must show (README of the issue; each returns (holds, sentence)) ----

def _by(rows: list[ReportRow], table: str) -> list[ReportRow]:
    return [r for r in rows if r.table == table]


def check_head_transition(rows: list[ReportRow], D: int) -> tuple[bool, str] | None:
    """Paper 2: NMSE at h = D at least 5x lower than at h = D - 1 (one layer)."""
    sel = {r.heads: r for r in _by(rows, f"lms_D{D}")}
    if (D,) not in sel or (D - 1,) not in sel:
        return None
    ratio = sel[(D - 1,)].nmse_min / sel[(D,)].nmse_min
    return ratio >= 5, f"linear_max_sum D={D}: NMSE(h={D - 1}) / NMSE(h={D}) = {ratio:.1f} (need >= 5)"


def check_triangle(rows: list[ReportRow]) -> tuple[bool, str] | None:
    """Paper 1 Exp. 2: for every config, NMSE at the largest T at least 3x that at the smallest T."""
    tri = _by(rows, "triangle")
    if not tri:
        return None
    parts, ok = [], True
    for key in dict.fromkeys((r.heads, r.embed_dim) for r in tri):
        runs = sorted((r for r in tri if (r.heads, r.embed_dim) == key), key=lambda r: r.seq_len)
        ratio = runs[-1].nmse_min / runs[0].nmse_min
        ok &= ratio >= 3
        parts.append(f"{key[0]}/E={key[1]}: T={runs[-1].seq_len} vs T={runs[0].seq_len} ratio {ratio:.1f}")
    return ok, "triangle_center: " + "; ".join(parts) + " (need >= 3 each)"


def check_intrinsic(rows: list[ReportRow], D: int = 2) -> tuple[bool, str] | None:
    """Paper 1 Exp. 1: (D,D) lower NMSE than both (D-1,D) and (D,D-1)."""
    sel = {r.heads: r.nmse_min for r in _by(rows, f"intrinsic_D{D}")}
    need = [(D, D), (D - 1, D), (D, D - 1)]
    if not all(h in sel for h in need):
        return None
    ok = sel[need[0]] < min(sel[need[1]], sel[need[2]])
    return ok, (f"intrinsic_dimension D={D}: ({D},{D}) {sel[need[0]]:.2e} vs "
                f"({D - 1},{D}) {sel[need[1]]:.2e}, "
                f"({D},{D - 1}) {sel[need[2]]:.2e} (need the first lowest)")


CHECKS: tuple[Callable[[list[ReportRow]], tuple[bool, str] | None], ...] = (
    lambda rows: check_head_transition(rows, 2), lambda rows: check_head_transition(rows, 3),
    check_triangle, check_intrinsic)


def run_checks(rows: list[ReportRow]) -> list[tuple[bool, str]]:
    return [c for c in (check(rows) for check in CHECKS) if c is not None]


def hardware_line(records: list[RunRecord]) -> str:
    hw = records[-1].hardware if records else {}
    return (f"device {hw.get('device')} ({hw.get('device_name')}); CPU {hw.get('cpu_model')}, "
            f"{hw.get('cpu_count')} cores, torch threads {hw.get('torch_threads')} per process, "
            f"{hw.get('worker_processes', 1)} worker processes; "
            f"versions {records[-1].versions if records else {}}")


def write_markdown(rows: list[ReportRow], records: list[RunRecord], profile: str, path: str) -> None:
    total = sum(r.wall_s for r in rows)
    # elapsed: from the start of the first job (its commit time less its duration) to the last commit
    starts = [r.created - r.metrics.get("job_total_s", r.metrics.get("job_wall_s", 0.0)) for r in records]
    elapsed = max(r.created for r in records) - min(starts) if records else 0.0
    lines = [f"# Profile `{profile}`", "", f"Hardware: {hardware_line(records)}", "",
             (f"Elapsed, first job start to last run committed (data generation included): {elapsed:.0f} s; "
              f"training time summed over jobs: {total:.0f} s"), "", "## Results beside the papers", "",
             format_table(rows, markdown=True), "", "## Transition checks", ""]
    lines += [f"- {'holds' if ok else 'FAILS'}: {text}" for ok, text in run_checks(rows)]
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")


def plot(rows: list[ReportRow], outdir: str) -> list[str]:
    """NMSE vs T per configuration, and NMSE over head configurations (the (h1, h2) phase diagram for
    two-layer tables), each measured | paper side by side. Returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(outdir, exist_ok=True)
    written = []
    for table in dict.fromkeys(r.table for r in rows):
        sel = _by(rows, table)
        configs = list(dict.fromkeys((r.heads, r.embed_dim) for r in sel))
        label = {c: f"h={','.join(map(str, c[0]))} E={c[1]}" for c in configs}
        fig, (ax_m, ax_p) = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
        if len({r.seq_len for r in sel}) > 1:       # NMSE vs T
            name = f"{table}_nmse_vs_T.png"
            for c in configs:
                pts = sorted((r.seq_len, r.nmse_min, r.paper_seq_len, r.paper_nmse) for r in sel
                             if (r.heads, r.embed_dim) == c)
                ax_m.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=label[c])
                paper = sorted({(p[2], p[3]) for p in pts if p[3] is not None})
                if paper:
                    ax_p.plot([p[0] for p in paper], [p[1] for p in paper], "s--", label=label[c])
            for ax in (ax_m, ax_p):
                ax.set_xscale("log", base=2)
                ax.set_xlabel("T")
        elif all(len(c[0]) == 2 for c in configs):  # the (h1, h2) phase diagram
            name = f"{table}_phase.png"
            fig.clf()
            ax_m, ax_p = fig.subplots(1, 2)
            for ax, key in ((ax_m, "nmse_min"), (ax_p, "paper_nmse")):
                _phase_panel(ax, sel, key)
        else:                                       # one layer: NMSE over the head count
            name = f"{table}_heads.png"
            xs = [label[c].replace(" ", "\n") for c in configs]
            meas = [next(r.nmse_min for r in sel if (r.heads, r.embed_dim) == c) for c in configs]
            ax_m.bar(xs, meas, color="tab:blue")
            figs = [next((r.paper_nmse for r in sel if (r.heads, r.embed_dim) == c), None) for c in configs]
            ax_p.bar(xs, [p if p is not None else float("nan") for p in figs], color="tab:gray")
            ax_p.set_xticks(range(len(xs)), xs)
        if not name.endswith("_phase.png"):
            ax_m.set_yscale("log")
            ax_m.set_ylabel("validation NMSE (min over seeds)")
        seq_lens = ",".join(str(t) for t in sorted({r.seq_len for r in sel}))
        ax_m.set_title(f"measured: {sel[0].target}, T={seq_lens}")
        src = next((r.paper_source for r in sel if r.paper_source), None)
        ax_p.set_title(f"paper: {src}" if src else "paper: no figure for this setting")
        if ax_m.get_legend_handles_labels()[0]:
            ax_m.legend(fontsize=7)
        fig.tight_layout()
        path = os.path.join(outdir, name)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def _phase_panel(ax: Any, rows: list[ReportRow], key: str) -> None:
    """log10 NMSE on the (h1, h2) grid; each cell annotated with its value (blank where not run)."""
    import numpy as np

    h1s = sorted({r.heads[0] for r in rows})
    h2s = sorted({r.heads[1] for r in rows})
    grid = np.full((len(h2s), len(h1s)), np.nan)
    for r in rows:
        value = getattr(r, key)
        if value is not None and r.seq_len == max(x.seq_len for x in rows):
            grid[h2s.index(r.heads[1]), h1s.index(r.heads[0])] = np.log10(value)
    im = ax.imshow(grid, origin="lower", cmap="viridis_r", vmin=-6, vmax=0)
    for (i, j), v in np.ndenumerate(grid):
        if not np.isnan(v):
            ax.text(j, i, f"{10 ** v:.1e}", ha="center", va="center", color="w", fontsize=8)
    ax.set_xticks(range(len(h1s)), h1s)
    ax.set_yticks(range(len(h2s)), h2s)
    ax.set_xlabel("h1 (layer 1 heads)")
    ax.set_ylabel("h2 (layer 2 heads)")
    ax.figure.colorbar(im, ax=ax, label="log10 NMSE")
