"""Plots of a profile's results: NMSE against T, NMSE against heads, and learning curves.

Measured values are solid lines with circles; the papers' figures for the same configuration (papers.py)
are dashed lines with squares on the same axes, so the two sit side by side. matplotlib's Agg backend: no
display needed. Each function writes one PNG and returns its path.
"""
from __future__ import annotations

import os
from typing import Any

from experiments.tables.store import RunRecord


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _label(heads: tuple[int, ...], embed_dim: int) -> str:
    return f"h={','.join(map(str, heads))} E={embed_dim}"


def _save(fig: Any, outdir: str, name: str) -> str:
    path = os.path.join(outdir, name)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    _pyplot().close(fig)
    return path


def nmse_vs_T(table: str, rows: list[Any], outdir: str) -> str | None:
    """One line per (heads, E) over T; the paper's values dashed where it reports them."""
    seq_lens = sorted({r.seq_len for r in rows})
    if len(seq_lens) < 2:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for i, key in enumerate(dict.fromkeys((r.heads, r.embed_dim) for r in rows)):
        pts = sorted((r.seq_len, r.nmse_min) for r in rows if (r.heads, r.embed_dim) == key)
        color = f"C{i % 10}"
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", color=color, label=_label(*key))
        paper = sorted({(r.paper_seq_len, r.paper_nmse) for r in rows
                        if (r.heads, r.embed_dim) == key and r.paper_nmse is not None})
        if paper:
            ax.plot([p[0] for p in paper], [p[1] for p in paper], "s--", color=color, alpha=0.6)
    ax.set(xscale="log", yscale="log", xlabel="T", ylabel="validation NMSE (min over seeds)",
           title=f"{rows[0].target}: NMSE against T (dashed: paper)")
    ax.set_xticks(seq_lens, [str(t) for t in seq_lens])
    ax.legend(fontsize=7)
    return _save(fig, outdir, f"{table}_nmse_vs_T.png")


def nmse_vs_heads(table: str, rows: list[Any], outdir: str) -> str:
    """Head configurations on the x axis, one line per T; the paper's values dashed at the paper's T."""
    plt = _pyplot()
    configs = list(dict.fromkeys((r.heads, r.embed_dim) for r in rows))
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    xs = range(len(configs))
    for i, T in enumerate(sorted({r.seq_len for r in rows})):
        by = {(r.heads, r.embed_dim): r for r in rows if r.seq_len == T}
        color = f"C{i % 10}"
        ax.plot([x for x, c in zip(xs, configs) if c in by], [by[c].nmse_min for c in configs if c in by], "o-",
                color=color, label=f"measured, T={T}")
        paper = [(x, by[c].paper_nmse, by[c].paper_seq_len) for x, c in zip(xs, configs)
                 if c in by and by[c].paper_nmse is not None]
        if paper:
            Tp = sorted({p[2] for p in paper})
            ax.plot([p[0] for p in paper], [p[1] for p in paper], "s--", color=color, alpha=0.6,
                    label=f"paper, T={','.join(map(str, Tp))}")
    ax.set_xticks(list(xs), [_label(*c).replace(" ", "\n") for c in configs], fontsize=7)
    ax.set(yscale="log", ylabel="validation NMSE (min over seeds)",
           title=f"{rows[0].target}: NMSE against heads")
    ax.legend(fontsize=7)
    return _save(fig, outdir, f"{table}_nmse_vs_heads.png")


def learning_curves(table: str, records: list[RunRecord], outdir: str) -> str | None:
    """Validation NMSE against optimizer steps for every run of the table (one panel per T)."""
    runs = [r for r in records if r.table_name == table and r.metrics.get("history_steps")]
    if not runs:
        return None
    plt = _pyplot()
    seq_lens = sorted({r.seq_len for r in runs})
    fig, axes = plt.subplots(1, len(seq_lens), figsize=(5.2 * len(seq_lens), 4), squeeze=False)
    configs = list(dict.fromkeys((r.heads, r.embed_dim) for r in runs))
    for ax, T in zip(axes[0], seq_lens):
        for r in (r for r in runs if r.seq_len == T):
            i = configs.index((r.heads, r.embed_dim))
            ax.plot(r.metrics["history_steps"], r.metrics["history"], "-", color=f"C{i % 10}", lw=1.2,
                    label=f"{_label(r.heads, r.embed_dim)} seed {r.seed}")
        ax.set(yscale="log", xlabel="optimizer step", ylabel="validation NMSE", title=f"{runs[0].target}, T={T}")
        ax.legend(fontsize=6)
    return _save(fig, outdir, f"{table}_learning_curves.png")


def plot_all(rows: list[Any], records: list[RunRecord], outdir: str) -> list[str]:
    """Every plot of every table; returns the files written."""
    os.makedirs(outdir, exist_ok=True)
    written: list[str] = []
    for table in dict.fromkeys(r.table for r in rows):
        sel = [r for r in rows if r.table == table]
        for path in (nmse_vs_T(table, sel, outdir), nmse_vs_heads(table, sel, outdir),
                     learning_curves(table, records, outdir)):
            if path:
                written.append(path)
    return written
