"""One hostile probe of the command line, run in its own process under a time and a memory limit, and the
promises docs/cli.md makes of it checked: the exit code, the wall time, one line on stderr for an error and
never a traceback, nothing raw on stdout that the format forbids, and no file overwritten that the probe did
not name. The probes are data (``hostile_cases.COMMAND_LINE``); ``benchmarks/hostile_cli.py`` runs them all,
tests/properties/test_hostile.py the quick ones.
"""
from __future__ import annotations

import hashlib
import os
import re
import resource
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

MEMORY = 6 << 30        # bytes of address space a probe may map (torch maps 2-3 GB of libraries)
SIGNAL_GRACE = 1.5      # seconds a signalled command may take to end


@dataclass(frozen=True)
class Probe:
    """A command line and what the docs promise of it.

    ``line`` is run by bash with ``set -o pipefail``; in it ``infoflow`` is this interpreter's ``python -m
    infoflow_smt``, ``python`` this interpreter, and ``{d}`` the probe's scratch folder (``scratch`` fills it).
    """

    name: str
    line: str
    codes: tuple[int, ...]                   # the exit codes the docs allow
    seconds: float = 20.0                    # it ends within this (a short deadline: the deadline + 2)
    lacks: tuple[str, ...] = ()              # what stdout must not hold
    xml: str | None = None                   # a file it writes that must parse as XML
    signal: tuple[int, float] | None = None  # (signal, after seconds), sent to its process group
    quick: bool = False                      # refused or answered within seconds: the test suite runs it


@dataclass(frozen=True)
class Outcome:
    probe: Probe
    code: int | None
    seconds: float
    broken: tuple[str, ...]                  # each promise it broke, in words

    @property
    def kept(self) -> bool:
        return not self.broken


TRUE = """[[claim]]
name = "two layers suffice"
target = "min_pairwise_dot"
heads = [1, 1]
expect = "feasible"
"""
FALSE = """[[claim]]
name = "one layer suffices"
target = "min_pairwise_dot"
heads = [1]
expect = "feasible"
"""
# the false claim: the frontier of intrinsic_dimension:D=8 has five points
CUT = """[[claim]]
name = "D=8 frontier, cut short"
target = "intrinsic_dimension:D=8"
architecture = "every"
expect = "feasible"
frontier = [[2, 8], [3, 4], [4, 3]]
timeout = 0.6
"""
SLOW = """[[claim]]
name = "every architecture for D=40, slow to decide"
target = "intrinsic_dimension:D=40"
architecture = "every"
expect = "feasible"
timeout = 300
"""
HOSTILE_NAME = """[[claim]]
name = "two layers\\u001b[2J\\u0007\\u0000\\n\\\\immediate\\\\write18{touch owned} \\u202e"
target = "min_pairwise_dot"
heads = [1]
expect = "feasible"
"""
KEPT = ("keep.txt", "claims_true.toml", "claims_false.toml", "claims_cut.toml", "claims_hostile.toml",
        "claims_slow.toml")


def scratch(folder: Path) -> None:
    """The files the probes name: claims files, FIFOs, links to a file that must stay as it is, a folder."""
    for name, text in (("claims_true.toml", TRUE), ("claims_false.toml", FALSE), ("claims_cut.toml", CUT),
                       ("claims_hostile.toml", HOSTILE_NAME), ("claims_slow.toml", SLOW),
                       ("keep.txt", "a file no probe names\n"),
                       ("claims_deep.toml", "x = " + "[" * 5000 + "]" * 5000 + "\n")):
        (folder / name).write_text(text)
    for suffix in ("toml", "xml", "png", "pt", "md", "smt2", "jsonl"):
        os.mkfifo(folder / f"fifo.{suffix}")
        (folder / f"link.{suffix}").symlink_to(folder / "keep.txt")
    (folder / "folder").mkdir()


def _fingerprint(folder: Path) -> dict[str, str]:
    return {name: hashlib.sha256((folder / name).read_bytes()).hexdigest() for name in KEPT
            if (folder / name).is_file()}


def _command(line: str, folder: Path) -> str:
    python = sys.executable
    line = re.sub(r"\binfoflow\b(?!_)", f"{python} -m infoflow_smt", line)
    line = re.sub(r"(^|[|;&(] *)python\b", rf"\g<1>{python}", line)
    return "set -o pipefail; " + line.replace("{d}", str(folder))


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
    signal.signal(signal.SIGINT, signal.SIG_DFL)   # as a terminal starts it (a CI runner may ignore SIGINT)


def run(probe: Probe, folder: Path, root: Path) -> Outcome:
    """Run ``probe`` in ``folder`` (made by ``scratch``) from the repository ``root``; what it broke."""
    before = _fingerprint(folder)
    started = time.perf_counter()
    process = subprocess.Popen(["bash", "-c", _command(probe.line, folder)], cwd=root, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, errors="replace", start_new_session=True,
                               preexec_fn=_limited)  # noqa: PLW1509 - no thread runs in the child
    signalled = None
    try:
        if probe.signal is not None:
            sig, after = probe.signal
            try:
                process.wait(timeout=after)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, sig)
                signalled = time.perf_counter()
        out, err = process.communicate(timeout=probe.seconds + 30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        return Outcome(probe, None, time.perf_counter() - started, (f"hung past {probe.seconds + 30:.0f} s",))
    seconds = time.perf_counter() - started
    return Outcome(probe, process.returncode, seconds,
                   tuple(_broken(probe, process.returncode, seconds, signalled, out, err, folder, before)))


def _broken(probe: Probe, code: int, seconds: float, signalled: float | None, out: str, err: str, folder: Path,
            before: dict[str, str]):
    if code not in probe.codes:
        yield f"exit code {code}, the docs promise {' or '.join(map(str, probe.codes))}"
    if probe.signal is not None and signalled is None:
        yield "ended before the signal: the probe needs a longer command"
    elif signalled is not None and time.perf_counter() - signalled > SIGNAL_GRACE + 0.5:
        yield f"took more than {SIGNAL_GRACE} s to end after the signal"
    elif seconds > probe.seconds:
        yield f"took {seconds:.1f} s, over its {probe.seconds:g} s"
    if "Traceback" in err:
        yield "a traceback on stderr"
    if code in (2, 4, 130, 143) and len(err.strip().splitlines()) != 1:
        yield f"{len(err.strip().splitlines())} lines on stderr for exit code {code}, not one"
    for text in probe.lacks:
        if text in out:
            yield f"stdout holds {text!r}"
    if _fingerprint(folder) != before:
        yield "a file it did not name was changed"
    if probe.xml is not None:
        try:
            ElementTree.parse(folder / probe.xml)
        except (ElementTree.ParseError, OSError) as problem:
            yield f"{probe.xml} is not well-formed XML ({problem})"


def line_of(outcome: Outcome) -> str:
    """The outcome in one line: kept, or each promise broken."""
    head = f"{'kept' if outcome.kept else 'BROKEN'}  {outcome.probe.name}  (exit {outcome.code}, " \
           f"{outcome.seconds:.1f} s)"
    return head if outcome.kept else f"{head}: {'; '.join(outcome.broken)}"
