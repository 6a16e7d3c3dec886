"""Sweeps: targets by architectures, decided in parallel, cached on disk, resumable.

``sweep(targets, archs)`` decides every (target, architecture) cell. Within one target and one width
(``embed_dim``, ``input_dim``, positional encoding) the model is monotone (docs/model.md, section 2): an
architecture with at least as many layers, and at least as many heads in each of its last layers, computes
whatever a smaller one computes (the extra layers stay idle), so an efficient cell makes every larger cell
efficient, and an inefficient cell every smaller one. A sweep therefore decides only the cells it must (on
a grid of ``L`` layers by ``h`` heads, a walk along the frontier: at most ``L + h`` decisions) and marks
the others *inferred*, naming the decided cell they follow from. Under a causal mask a cell asks what
``decide`` asks, of the spelling whose selections a masked position can make (``causal.check_supported``);
the monotonicity holds there as well (extra heads and first layers stay idle whatever the mask), and a
masked and an unmasked architecture never follow from each other (``Architecture.covers``). An inferred
cell's exponent is a bound (at most that of the smaller efficient cell, at least that of the larger
inefficient one), given only where
the bound is sound: more heads at a fixed width narrow every head (``n = E/h``), which raises the cost of a
k-th retrieval and of a decoding, so a cell inferred across a change of heads gets a bound only from an
efficient cell whose witness runs neither.

Every decided cell is appended to a cache file (JSON lines, one per cell, keyed by a hash of the target,
the architecture, the question's settings and ``MODEL_VERSION``) as soon as it is decided: an interrupted
sweep, run again, decides nothing twice. The file is not trusted as it lies on disk, whoever wrote it: a
record must carry its layout, its checksum and a status its exponent agrees with (efficient exactly when
feasible, at every length); a feasible record's witness is replayed and must give the recorded exponent; an
infeasible record, which nothing can replay, is served only to the solver that wrote it (``SOLVER``: the model's
version and z3's), so a record from another version or another machine's z3 is decided again. The cells of one target run in one process (they share one
encoding); targets spread over ``workers`` processes (all cores by default), or over a Ray cluster. Each cell
the solver is asked gets a deadline of its own, a fair share of the whole or ``cell_timeout``
(``explore.cell_deadlines``): one hard cell cannot starve the others, and an unknown cell says the time it had.
"""
from __future__ import annotations

import fcntl
import functools
import hashlib
import importlib.metadata
import json
import math
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import as_completed
from dataclasses import dataclass, field
from pathlib import Path

import sympy

from infoflow_smt.deadline import Deadline, OutOfTime, seconds
from infoflow_smt.errors import InvalidSpecError, Problem, WitnessCheckError
from infoflow_smt.explore.cell_deadlines import CellDeadlines, questions_left, queued_behind, whole_end
from infoflow_smt.files import as_path, plain_file
from infoflow_smt.lang import causal
from infoflow_smt.lang.catalogue import as_target
from infoflow_smt.limits import MAX_WORKERS, whole
from infoflow_smt.model import cost, defaults
from infoflow_smt.model.architecture import Architecture
from infoflow_smt.model.program import Mode, Program, validate
from infoflow_smt.processes import worker_pool
from infoflow_smt.report.verdict import Status
from infoflow_smt.smt.solver import NOT_ESTABLISHED, WITNESS_SAMPLES, Questions, validate_question
from infoflow_smt.symbols import T

MODEL_VERSION = "4"   # bumped whenever the same question could get another verdict: old cache lines then miss


def _solver() -> str:
    try:
        z3 = importlib.metadata.version("z3-solver")
    except importlib.metadata.PackageNotFoundError:   # z3 from another distribution: no version to bind to
        z3 = "unknown"
    return f"model {MODEL_VERSION}, z3 {z3}"


SOLVER = _solver()   # who wrote an infeasible record: only the same solver is served it
_LATE = "the deadline passed before this cell was asked"


@dataclass(frozen=True)
class Cell:
    """One (target, architecture) of a sweep."""

    target: str                     # as the caller gave it (catalogue spec or text)
    architecture: Architecture
    status: Status
    exponent: str                   # the best exponent (decided), or the bound (inferred), or "" (none)
    bound: str                      # "exact", "at most", "at least", or "unknown"
    inferred_from: tuple[int, ...] | None = None   # the decided architecture's heads this cell follows from
    witness: Program | None = None
    seconds: float = 0.0
    cached: bool = False
    recomputed: bool = False        # its cache record failed its check (decided again)
    reason_unknown: str = ""        # why an unknown cell is unknown (the deadline, or a "no" the mask leaves open)
    allowed: float = 0.0            # the seconds its questions were given in all (0: never asked)

    @property
    def inferred(self) -> bool:
        return self.inferred_from is not None

    def to_json(self) -> dict:
        arch = self.architecture
        return {"target": self.target, "heads": list(arch.heads), "embed_dim": str(arch.embed_dim),
                "input_dim": arch.input_dim, "positional": arch.positional, "rank_aware": arch.rank_aware,
                "causal": arch.causal,
                "status": self.status.value,
                "exponent": self.exponent, "bound": self.bound, "inferred": self.inferred,
                "inferred_from": list(self.inferred_from) if self.inferred_from else None,
                "witness": self.witness.to_json() if self.witness else None,
                "seconds": round(self.seconds, 4), "cached": self.cached,
                "allowed_seconds": None if self.inferred or self.cached else round(self.allowed, 3),
                "reason_unknown": self.reason_unknown or None}

    @property
    def ran_out(self) -> bool:
        """Whether the cell is unknown for want of time (asked and cut short, or never asked), not for a "no"
        the causal mask leaves open."""
        return self.status is Status.UNKNOWN and not self.inferred and not self.reason_unknown.startswith(
            NOT_ESTABLISHED)


@dataclass
class Sweep:
    """The cells of a sweep, in the order of the targets and architectures asked."""

    cells: list[Cell]
    seconds: float = 0.0
    cache_path: Path | None = None

    @property
    def decided(self) -> int:
        """Cells the solver answered in this run; an unknown cell (deadline passed) is not decided."""
        return sum(not c.inferred and not c.cached and c.status is not Status.UNKNOWN for c in self.cells)

    @property
    def inferred(self) -> int:
        return sum(c.inferred for c in self.cells)

    @property
    def cached(self) -> int:
        return sum(c.cached for c in self.cells)

    @property
    def undecided(self) -> int:
        """Cells left UNKNOWN (the deadline passed): the grid has holes where they are."""
        return sum(c.status is Status.UNKNOWN for c in self.cells)

    def to_json(self) -> dict:
        return {"cells": [c.to_json() for c in self.cells], "decided": self.decided, "inferred": self.inferred,
                "cached": self.cached, "undecided": self.undecided, "complete": not self.undecided,
                "seconds": round(self.seconds, 3), "cache": str(self.cache_path) if self.cache_path else None}

    def gap(self) -> str:
        """The sentence that says how many cells are undecided, and why ("" when none is)."""
        if not self.undecided:
            return ""
        late = [c for c in self.cells if c.ran_out]
        masked = self.undecided - len(late)
        lines = []
        cut, never = [c for c in late if c.allowed > 0], [c for c in late if c.allowed <= 0]
        if cut:
            most = max(c.allowed for c in cut)
            lines.append(f"incomplete: {len(cut)} of {len(self.cells)} cells not decided in the time each had "
                         f"(unknown, marked ? with its seconds; at most {most:.3g} s); ask each cell for longer with "
                         f"a deadline per cell, --cell-timeout SECONDS above {most:.3g} (cell_timeout= in Python): "
                         "decided cells come from the cache")
        if never:
            lines.append(f"incomplete: {len(never)} of {len(self.cells)} cells never asked (unknown, marked ?): "
                         "the whole deadline passed first; give the sweep a longer --timeout, or a deadline per cell "
                         "(--cell-timeout SECONDS) and no --timeout: decided cells come from the cache")
        if masked:
            lines.append(f"incomplete: {masked} of {len(self.cells)} cells unknown (marked ?): {NOT_ESTABLISHED} "
                         "there (the model leaves that no open whatever the deadline; decide says why; "
                         "docs/model.md, \"Causal mask\")")
        return "\n".join(lines)

    def __str__(self) -> str:
        head = (f"{len(self.cells)} cells: {self.decided} decided, {self.inferred} inferred by monotonicity, "
                f"{self.cached} from the cache ({self.seconds:.2f} s)")
        lines = [head] + [self.gap()] * bool(self.undecided)
        for c in self.cells:
            how = f"inferred from heads={c.inferred_from}" if c.inferred else ("cached" if c.cached else "decided")
            how = f"unknown after {c.allowed:.3g} s allowed" if c.ran_out else how
            bound = "" if c.bound == "exact" else f" ({c.bound})"
            lines.append(f"  {c.target} | heads={c.architecture.heads} | {c.status.value} | "
                         f"exponent {c.exponent or '-'}{bound} | {how}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """Jupyter's view: the counts, a phase diagram per target inline, and the cells."""
        from infoflow_smt.report.notebook import sweep_html
        return sweep_html(self)

    def plot(self, path, target: str | None = None) -> Path:
        """The phase diagram (layers by heads, coloured by verdict, the exponent in each cell) as PNG, SVG or PDF (by the suffix)."""
        from infoflow_smt.report.plots import phase_diagram
        return phase_diagram(self, path, target)


# ---- which cell follows from which -------------------------------------------------------------------------
def _frontier_order(archs: list[Architecture]) -> Callable:
    """The next architecture to decide given what is known: the fewest layers first (the encodings grow
    with the walk); within those layers, by heads, the row's largest cell while it is open (infeasible
    settles the whole row), then the median of the open cells, a bisection: each answer settles every cell
    on one side of it (monotonicity, ``_inferred``)."""
    def size(a: Architecture):
        return (max(a.heads), sum(a.heads), a.heads)

    rows: dict[int, list[Architecture]] = {}
    for a in sorted(archs, key=size):
        rows.setdefault(a.layers, []).append(a)

    def choose(pending: list[Architecture]) -> Architecture:
        layers = min(a.layers for a in pending)
        left = [a for a in rows[layers] if a in pending]
        return left[-1] if left[-1] is rows[layers][-1] else left[len(left) // 2]
    return choose


# ---- one target's cells --------------------------------------------------------------------------------------
@dataclass
class _Job:
    target: object
    spec: str
    archs: list[Architecture]
    settings: dict
    cache_path: str | None
    known: dict = field(default_factory=dict)     # cache key -> record
    infer: bool = True
    deadlines: CellDeadlines = field(default_factory=lambda: CellDeadlines(0.0, None))   # explore.cell_deadlines


def _key(target, arch: Architecture, settings: dict) -> str:
    record = [MODEL_VERSION, target.text, target.seed, list(arch.heads), str(arch.embed_dim), arch.input_dim,
              arch.positional, settings["decode_law"], settings["seq_len"], settings["samples"]]
    record += ["rank_aware"] if arch.rank_aware else []  # the keys of the papers' questions stay as they were
    record += ["causal"] if arch.causal else []
    return hashlib.sha256(json.dumps(record).encode()).hexdigest()[:32]


def _run_job(job: _Job, on_cells: Callable[[int], None] | None = None) -> list[Cell]:
    """Decide one target's cells along the frontier; append each new decision to the cache at once.
    ``on_cells(n)`` is told as every ``n`` cells are settled (decided, read from the cache, or inferred). Under
    fair shares a cell that ran out of its share is asked once more at the end (``explore.cell_deadlines``)."""
    target = job.target
    law = cost.DecodeLaw(job.settings["decode_law"])
    # the encodings grow with the walk (fewest layers first): a small question asked of an encoding sized for
    # the whole grid can be far harder (many idle layers and heads for the solver to rule out)
    questions = Questions(target, law, job.settings["seq_len"], job.settings["samples"], fewest_heads=False,
                          reasons=False)
    # an architecture asked twice is decided once: as its own "larger" cell it would be inferred from itself
    copies = Counter(job.archs)
    results: dict[Architecture, Cell] = {}
    _walk(job, questions, copies, list(copies), results, on_cells)
    if job.infer:   # a cell left unknown may follow from an answer the walk got after it
        for arch, cell in list(results.items()):
            if cell.status is Status.UNKNOWN:
                results[arch] = next(filter(None, (_inferred(c, arch) for c in results.values() if c.status
                                                   is not Status.UNKNOWN and not c.inferred)), cell)
    if job.deadlines.fair:
        _walk(job, questions, copies, [a for a, c in results.items() if c.ran_out], results, None)
    return [results[a] for a in job.archs]


def _walk(job: _Job, questions: Questions, copies: Counter, pending: list[Architecture],
          results: dict[Architecture, Cell], on_cells: Callable[[int], None] | None) -> None:
    """Settle the ``pending`` architectures, the fewest layers first (``_frontier_order``), each decided
    one inferring what it can of the others (``_inferred``); a cell asked before (and left unknown) adds this
    question's time to the time it had."""
    choose = _frontier_order(list(pending))
    pending = list(pending)
    while pending:
        arch = choose(pending)
        allowed = job.deadlines.seconds(questions_left(pending, job.infer))
        pending.remove(arch)
        key = _key(job.target, arch, job.settings)
        cell = _cached_cell(job, questions, arch, job.known[key], allowed) if key in job.known else None
        if (cell is None or cell.recomputed) and job.deadlines.passed:   # no question starts past the deadline
            cell = results.get(arch) or Cell(job.spec, arch, Status.UNKNOWN, "", "unknown", reason_unknown=_LATE)
        elif cell is None or cell.recomputed:
            cell = _decided_cell(job, questions, arch, allowed, recomputed=cell is not None, before=results.get(arch))
        results[arch] = cell
        settled = copies[arch]
        if job.infer and cell.status is not Status.UNKNOWN:
            for other in list(pending):
                inferred = _inferred(cell, other)
                if inferred is not None:
                    pending.remove(other)
                    results[other] = inferred
                    settled += copies[other]
        if on_cells:
            on_cells(settled)


def _decided_cell(job: _Job, questions: Questions, arch: Architecture, allowed: float, recomputed: bool,
                  before: Cell | None) -> Cell:
    """The cell the solver's answer makes in ``allowed`` seconds; appended to the cache unless unknown."""
    allowed = max(allowed, 1e-3)
    verdict = questions.decide(arch, Deadline(allowed))
    spent = verdict.stats.seconds
    why = verdict.reason_unknown or ""
    if before is not None:   # asked again: the time it had is both questions'
        spent, allowed = spent + before.seconds, allowed + before.allowed
        why = why and f"{why} (asked twice: {allowed:.3g} s in all)"
    cell = Cell(job.spec, arch, verdict.status, _exponent_text(verdict.exponent), "exact", witness=verdict.witness,
                seconds=spent, recomputed=recomputed, reason_unknown=why, allowed=allowed)
    if verdict.status is not Status.UNKNOWN and job.cache_path:
        _append(job.cache_path, _key(job.target, arch, job.settings), cell)
    return cell


def _cached_cell(job: _Job, questions: Questions, arch: Architecture, record: dict, allowed: float) -> Cell:
    """The cell a cache record holds, checked (module docstring): its status against its exponent, a feasible
    record's witness replayed to the recorded exponent. A record that fails comes back as a cell marked
    ``recomputed`` (decide it again)."""
    try:
        cell = _cell_from(job.spec, arch, record)
        if not _consistent(cell, job.settings["seq_len"]):
            raise InvalidSpecError(f"a {cell.status.value} record with exponent {cell.exponent!r}", "cache")
        if cell.status is Status.FEASIBLE:
            if cell.witness is None or validate(cell.witness, arch):
                raise InvalidSpecError("a feasible record without a witness that fits the architecture", "cache")
            exponent = _exponent_text(questions.replayed_exponent(cell.witness, arch, Deadline(max(allowed, 1e-3))))
            if exponent != cell.exponent:
                raise InvalidSpecError(f"the witness replays at exponent {exponent}, not {cell.exponent}", "cache")
        return cell
    except (InvalidSpecError, WitnessCheckError, OutOfTime, ValueError, TypeError, KeyError):
        return Cell(job.spec, arch, Status.UNKNOWN, "", "unknown", recomputed=True)


# what a recorded exponent may hold: sympy's spelling of a cost exponent (numbers, T, oo; no call, no power)
_EXPONENT = re.compile(r"[0-9T o+\-*/().]{1,200}")


def _consistent(cell: Cell, seq_len: int | None) -> bool:
    """Whether a record's status agrees with its exponent: for all large ``T`` a feasible cell's exponent is
    bounded and an infeasible one's is not (at one length every exponent is a number, and says nothing)."""
    if cell.status is Status.UNKNOWN:
        return False
    if not cell.exponent:   # no exponent: only an infeasible answer whose best program was not found
        return cell.status is Status.INFEASIBLE
    if not _EXPONENT.fullmatch(cell.exponent) or "**" in cell.exponent:
        return False
    if seq_len is not None:
        return True
    try:
        exponent = sympy.sympify(cell.exponent, locals={"T": T})
        return not exponent.has(sympy.zoo, sympy.nan) and cost.is_bounded(exponent) == (cell.status is Status.FEASIBLE)
    except Exception:  # noqa: BLE001 - text sympy cannot read or bound is not a record we wrote
        return False


def _inferred(cell: Cell, other: Architecture) -> Cell | None:
    """What ``other`` must get, knowing ``cell`` (None when monotonicity says nothing). The status follows
    by monotonicity; the exponent bound only where the smaller architecture's programs cost no less on the
    larger: where the layers they share have the same heads (so the same head width ``E/h``), or, for an
    efficient cell, where its witness runs no operation whose cost depends on the width."""
    arch = cell.architecture
    if cell.status is Status.FEASIBLE and other.covers(arch):
        sound = _same_widths(arch, other) or (cell.witness is not None and not any(
            a.op.mode in _WIDTH_DEPENDENT for a in cell.witness.actions))
        return Cell(cell.target, other, Status.FEASIBLE, cell.exponent if sound else "",
                    "at most" if sound else "unknown", inferred_from=arch.heads)
    if cell.status is Status.INFEASIBLE and arch.covers(other):
        sound = _same_widths(other, arch)
        return Cell(cell.target, other, Status.INFEASIBLE, cell.exponent if sound else "",
                    "at least" if sound else "unknown", inferred_from=arch.heads)
    return None


# the operations whose cost depends on the head width n = E/h (docs/model.md, "One width per head")
_WIDTH_DEPENDENT = (Mode.KTH, Mode.AGGREGATE, Mode.POSITIONS)


def _same_widths(small: Architecture, large: Architecture) -> bool:
    """Whether ``large`` (covering ``small``) has the same heads as ``small`` in the layers aligned with it:
    a program of ``small`` then runs on ``large`` with every head as wide, at the same cost."""
    return large.heads[large.layers - small.layers:] == small.heads


@functools.lru_cache(maxsize=1024)  # sympy's printer is slow, and a sweep prints the same few exponents
def _exponent_text(exponent) -> str:
    return "" if exponent is None or exponent is sympy.nan else str(exponent)


# ---- the cache ------------------------------------------------------------------------------------------------
def default_cache() -> Path:
    """``$XDG_CACHE_HOME/infoflow_smt/sweeps.jsonl`` (``~/.cache/...``): outside any checkout."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(root) / "infoflow_smt" / "sweeps.jsonl"


CACHE_FORMAT = 2          # the record's layout; a record of another layout is ignored (decided again)
MAX_RECORD = 1 << 20      # characters of one cache line: a longer one is not a record


def _checksum(record: dict) -> str:
    """A hash of a record's fields (all but the checksum): a line edited or damaged on disk fails it."""
    fields = {k: v for k, v in record.items() if k != "sum"}
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:32]


def _load(path: Path) -> tuple[dict, int]:
    """The cached records by key, and how many lines were damaged: a line that is not a complete record of
    this layout with its checksum (an interrupted write, an edit) is skipped, and its cell decided again."""
    found, damaged = {}, 0
    if not path.exists():
        return found, damaged
    with open(path, encoding="utf-8", errors="replace") as handle:
        while line := handle.readline(MAX_RECORD):
            if not line.endswith("\n") and len(line) == MAX_RECORD:  # too long to be a record: skip the rest
                while (rest := handle.readline(MAX_RECORD)) and not rest.endswith("\n"):
                    pass
                damaged += 1
                continue
            try:
                record = json.loads(line)
                if record.get("model") != MODEL_VERSION:
                    continue   # another model's answers: not ours to judge
                if (record.get("format") != CACHE_FORMAT or not isinstance(record.get("key"), str)
                        or record.get("sum") != _checksum(record)):
                    raise ValueError("not a checked record")
                if Status(record["status"]) is Status.INFEASIBLE and record.get("solver") != SOLVER:
                    continue   # another solver's "no": nothing here can check it, so it is decided again
                found[record["key"]] = record
            except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
                damaged += line.strip() != ""
    return found, damaged


def _append(path: str, key: str, cell: Cell) -> None:
    record = {"model": MODEL_VERSION, "format": CACHE_FORMAT, "key": key, "status": cell.status.value,
              "exponent": cell.exponent, "witness": cell.witness.to_json() if cell.witness else None,
              "seconds": cell.seconds}
    if cell.status is Status.INFEASIBLE:
        record["solver"] = SOLVER
    record["sum"] = _checksum(record)
    line = json.dumps(record) + "\n"
    with open(path, "a", encoding="utf-8") as handle:  # one short line under a lock: no two writers interleave
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.write(line)
        handle.flush()
        os.fsync(handle.fileno())
        fcntl.flock(handle, fcntl.LOCK_UN)


def _cache_path(cache) -> Path | None:
    """The cache file ``sweep`` reads and appends to (None: none), checked before any work starts."""
    if cache is False:
        return None
    if cache is None or cache is True:
        path = default_cache()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise InvalidSpecError(f"cannot make the cache folder {path.parent}: {err.strerror or err}", "cache") from None
    else:
        path = as_path(cache, "cache")
    path = plain_file(path, "cache")
    if path.exists() and not os.access(path, os.R_OK | os.W_OK):
        raise InvalidSpecError(f"{path} cannot be read and appended to", "cache")
    return path


def _cell_from(spec: str, arch: Architecture, record: dict) -> Cell:
    witness = Program.from_json(record["witness"]) if record.get("witness") else None
    return Cell(spec, arch, Status(record["status"]), record.get("exponent", ""), "exact", witness=witness,
                seconds=float(record.get("seconds", 0.0)), cached=True)


# ---- the sweep ----------------------------------------------------------------------------------------------
def sweep(targets: Iterable, archs: Iterable[Architecture], *, timeout: float | None = None,
          cell_timeout: float | None = None,
          cache: str | os.PathLike | bool | None = None, workers: int | None = None, backend: str = "local",
          address: str | None = None, infer: bool = True, seq_len: int | None = None, samples: int = WITNESS_SAMPLES,
          decode_law: cost.DecodeLaw | str = cost.DecodeLaw.SEED, progress: Callable | None = None) -> Sweep:
    """Decide every target (catalogue spec, text or ``Target``) on every architecture.

    ``cache``: a JSON-lines file (None: ``default_cache()``; False: none). ``workers``: processes (None: all
    cores). ``backend="ray"`` sends the targets to a Ray cluster (``address``; a local one when None).
    ``infer``: mark cells that monotonicity decides (module docstring). ``timeout`` bounds the whole sweep
    (default ``limits.DEFAULT_TIMEOUT``) and ``cell_timeout`` each question, one cell asked of the solver;
    without ``cell_timeout`` each question gets a fair share of what is left of ``timeout``, and a cell that
    ran out of its share is asked once more at the end of its target with a fair share of what is left then
    (``explore.cell_deadlines``); with ``cell_timeout`` alone the sweep has no whole deadline. What is
    undecided is UNKNOWN (``Cell.allowed``: the seconds its questions had) and never cached. A cell's witness
    is replayed and its exponent exact, but it is not reduced to the fewest acting heads (``decide`` does
    that). ``progress(done, total)`` counts cells: it is called as each cell is settled in this process, or as
    each target's cells come back from a worker.

    >>> import infoflow_smt as ifs
    >>> grid = [ifs.Architecture(heads=(h,) * L, input_dim=2) for L in (1, 2) for h in (1, 2)]
    >>> result = ifs.sweep(["min_pairwise_dot"], grid, cache=False, workers=1)
    >>> [(c.architecture.heads, c.status.value, c.inferred) for c in result.cells][:2]
    [((1,), 'infeasible', True), ((2,), 'infeasible', False)]
    """
    started = time.time()
    per_cell = None if cell_timeout is None else seconds(cell_timeout, "cell_timeout")
    end = whole_end(started, timeout, per_cell)
    specs, archs = _validated(targets, archs, workers, backend, samples)
    samples, workers = int(samples), (None if workers is None else int(workers))
    seq_len = seq_len if whole(seq_len) is None else whole(seq_len)   # a numpy integer: JSON for the cache key
    settings = {"decode_law": cost.as_law(decode_law).value, "seq_len": seq_len, "samples": samples}
    cache_path = _cache_path(cache)
    known, damaged = _load(cache_path) if cache_path else ({}, 0)
    jobs = []
    asked = {spec: _settled(target, archs) for spec, target in specs}   # what an architecture leaves out: the target's
    for spec, target in specs:
        for arch in asked[spec]:
            validate_question(target, arch, seq_len, samples)
        for masked in sorted({arch.causal for arch in archs}):
            jobs.append(_Job(_asked(target, masked), spec, [a for a in asked[spec] if a.causal == masked], settings,
                             str(cache_path) if cache_path else None, dict(known), infer))
    lanes = len(jobs) if backend == "ray" else min(workers or os.cpu_count() or 1, len(jobs))   # ray: all at once
    queued = queued_behind([questions_left(job.archs, infer) for job in jobs], lanes)
    for job, behind in zip(jobs, queued):
        job.deadlines = CellDeadlines(end, per_cell, behind)
    if backend == "ray":
        results = _run_ray(jobs, address, progress)
    else:
        results = _run_local(jobs, workers, progress)
    cells = _in_order(specs, asked, jobs, results)
    damaged += sum(c.recomputed for c in cells)
    if damaged:  # said once: the answers are right (decided again), the file was not
        print(f"infoflow_smt: {damaged} record{'s' * (damaged != 1)} in the sweep cache {cache_path} failed "
              "the check (damaged, edited, or a witness that does not replay); decided again", file=sys.stderr)
    return Sweep(cells, time.time() - started, cache_path)


def _asked(target, masked: bool):
    """The question a cell asks, as ``decide`` asks it: under a causal mask the spelling whose selections a
    masked input position can make (``causal.check_supported``; a target the model cannot yet decide under the
    mask is refused here, before any work, as ``decide`` refuses it)."""
    return causal.check_supported(target) if masked else target


def _settled(target, archs: list[Architecture]) -> list[Architecture]:
    """The architectures with what they leave out taken from ``target`` (``Architecture.settled``); a catalogue
    entry read at the last position is refused, as ``readout='last'`` is (``_validated``)."""
    settled = [defaults.settled(arch, target) for arch in archs]
    if any(arch.readout == "last" for arch in settled):
        raise InvalidSpecError([Problem(f"{target.name or target.text} is read at the last position (its paper's "
                                        "readout), which sweeps do not support yet: give readout='output' to sweep "
                                        "it at the output token, or decide each architecture with ifs.decide")],
                               "sweep")
    return settled


def _in_order(specs, asked: dict[str, list[Architecture]], jobs: list[_Job], results: list[list[Cell]]) -> list[Cell]:
    """The cells target by target, each target's in the order of its architectures (``asked``: each settled for
    it; its unmasked and masked architectures are two jobs: monotonicity never relates them, ``Architecture.covers``)."""
    found: dict[tuple[str, Architecture], Cell] = {}
    for job, cells in zip(jobs, results):
        found.update(((job.spec, cell.architecture), cell) for cell in cells)
    return [found[(spec, arch)] for spec, _ in specs for arch in asked[spec]]


def _validated(targets, archs, workers, backend, samples):
    problems = []
    if isinstance(targets, (str, bytes)) or not isinstance(targets, Iterable):
        targets = [targets]
    specs = []
    for t in targets:
        try:
            target = as_target(t)
            specs.append((t if isinstance(t, str) else target.name or target.text, target))
        except InvalidSpecError as err:
            problems.extend(err.problems)
    archs = list(archs) if isinstance(archs, Iterable) else [archs]
    problems += [Problem(f"architectures must be ifs.Architecture, got {type(a).__name__}")
                 for a in archs if not isinstance(a, Architecture)]
    if any(getattr(a, "readout", None) == "last" for a in archs):  # its cells would be asked at the output token
        problems.append(Problem("readout='last' is not supported by sweeps yet: decide each architecture with "
                                "ifs.decide (infoflow decide --readout last)"))
    if not specs and not problems:
        problems.append(Problem("no targets to sweep"))
    if not archs:
        problems.append(Problem("no architectures to sweep"))
    if workers is not None and (whole(workers) is None or workers < 1):
        problems.append(Problem(f"workers must be an integer >= 1, got {workers!r}"))
    elif workers is not None and workers > MAX_WORKERS:
        problems.append(Problem(f"workers={workers} is over the limit of {MAX_WORKERS} (infoflow_smt.limits)"))
    if backend not in ("local", "ray"):
        problems.append(Problem(f"backend must be 'local' or 'ray', got {backend!r}"))
    if whole(samples) is None or samples < 1:
        problems.append(Problem(f"samples must be an integer >= 1, got {samples!r}"))
    if problems:
        raise InvalidSpecError(problems, "sweep")
    return specs, archs


def _run_local(jobs: list[_Job], workers: int | None, progress) -> list[list[Cell]]:
    workers = min(workers or os.cpu_count() or 1, len(jobs))
    total, done = sum(len(job.archs) for job in jobs), 0

    def settled(n: int) -> None:
        nonlocal done
        done += n
        if progress:
            progress(done, total)

    if workers <= 1:
        return [_run_job(job, settled) for job in jobs]
    results: list = [None] * len(jobs)
    end = max(job.deadlines.end for job in jobs)
    wait = None if end == math.inf else max(end - time.time(), 0) + _GRACE   # none: each question has its own
    try:
        with worker_pool(workers) as pool:  # spawned (no z3 state crosses a fork), dying with this process
            futures = {pool.submit(_run_job, job): i for i, job in enumerate(jobs)}
            for future in as_completed(futures, timeout=wait):
                results[futures[future]] = future.result()
                settled(len(jobs[futures[future]].archs))
    except TimeoutError:   # past the deadline: the pool and its workers (even those still starting) are killed
        pass
    for i, job in enumerate(jobs):   # a job its worker did not finish by the deadline: its cells are unknown
        if results[i] is None:
            results[i] = [Cell(job.spec, arch, Status.UNKNOWN, "", "unknown", reason_unknown=_LATE)
                          for arch in job.archs]
            settled(len(job.archs))
    return results


_GRACE = 0.25   # seconds a worker's answer may take to come back after the deadline


def _run_ray(jobs: list[_Job], address: str | None, progress) -> list[list[Cell]]:
    try:
        import ray
    except ImportError:
        raise InvalidSpecError("backend='ray' needs Ray: pip install 'infoflow_smt[distributed]'", "sweep") from None
    started_here = not ray.is_initialized()
    if started_here:
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False, include_dashboard=False)
    try:
        remote = ray.remote(_run_job)
        refs = [remote.remote(job) for job in jobs]
        results, done, total = [], 0, sum(len(job.archs) for job in jobs)
        for job, ref in zip(jobs, refs):
            results.append(ray.get(ref))
            done += len(job.archs)
            if progress:
                progress(done, total)
        return results
    finally:
        if started_here:
            ray.shutdown()
