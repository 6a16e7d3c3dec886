"""Claims put to the prover: each holds, is false (and the answer says why), or is unknown (docs/claims.md).

``check`` asks ``decide`` (one architecture) or ``decide_all`` (every architecture) and compares the answer with
what the claim says: the verdict, then the exponent, then the frontier. Only a complete answer is compared: an
unknown verdict, or a frontier with an undecided cell within the claim's bounds (its points are then only
bounds, and "no point yet" is not "infeasible"), is its own outcome, never a pass: ``infoflow check`` exits 3 on
it and the pytest plugin reports it as a skip.

What a report shows comes partly from the claims file (names, targets as written): on a terminal it is one line
of printable text per field (``words.printable``), and in JUnit XML every character XML 1.0 cannot hold is
written out as ``\\xNN``, so the document stays well formed.
"""
from __future__ import annotations

import enum
import html
import re
import time
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

import sympy

from infoflow_smt.claims import SHAPES, Claim, format_shapes, load
from infoflow_smt.errors import SolverUnknownError
from infoflow_smt.explore.frontier import decide_all
from infoflow_smt.report.verdict import Status
from infoflow_smt.smt.solver import decide
from infoflow_smt.symbols import T
from infoflow_smt.words import printable


class Outcome(enum.Enum):
    HOLDS = "holds"
    FALSE = "false"
    UNKNOWN = "unknown"      # the prover could not answer in time: neither holds nor false

    @property
    def exit_code(self) -> int:
        return {Outcome.HOLDS: 0, Outcome.FALSE: 1, Outcome.UNKNOWN: 3}[self]


@dataclass(frozen=True)
class ClaimResult:
    """A claim and the prover's answer: ``found`` in one line, ``mismatches`` (each way the claim is false),
    ``detail`` (the verdict in words: its witness or its reasons, the frontier and its bounds, or why unknown)."""

    claim: Claim
    outcome: Outcome
    found: str
    mismatches: tuple[str, ...] = ()
    detail: str = ""
    seconds: float = 0.0

    def __str__(self) -> str:
        lines = [f"{self.outcome.value}: {printable(self.claim.name)}",
                 f"  claimed: {self.claim}",
                 f"  prover:  {self.found}"]
        lines += [f"  - {printable(m)}" for m in self.mismatches]
        if self.outcome is not Outcome.HOLDS and self.detail:
            lines += [f"  {line}" for line in self.detail.splitlines()]
        return "\n".join(lines)


def check(claim: Claim, timeout: float | None = None) -> ClaimResult:
    """Put ``claim`` to the prover; ``timeout`` (seconds) applies where the claim sets none.

    >>> from infoflow_smt.claims import parse
    >>> [claim] = parse({"claim": [{"name": "two layers", "target": "min_pairwise_dot", "heads": [1, 1],
    ...                             "expect": "feasible", "exponent": "1"}]})
    >>> check(claim).outcome
    <Outcome.HOLDS: 'holds'>
    """
    started = time.perf_counter()
    timeout = claim.timeout if claim.timeout is not None else timeout
    result = _check_every(claim, timeout) if claim.every else _check_one(claim, timeout)
    return ClaimResult(claim, *result, seconds=time.perf_counter() - started)


def _check_one(claim: Claim, timeout: float | None):
    verdict = decide(claim.target, claim.architecture, seq_len=claim.seq_len, timeout=timeout)
    if verdict.status is Status.UNKNOWN:
        return Outcome.UNKNOWN, f"unknown ({verdict.reason_unknown})", (), str(verdict)
    found = f"{verdict.status.value}, exponent {verdict.exponent}"
    mismatches = []
    if verdict.status.value != claim.expect:
        mismatches.append(f"claimed {claim.expect}, the prover says {verdict.status.value}")
    if claim.exponent is not None and not exponent_matches(claim.exponent, verdict.exponent):
        mismatches.append(f"claimed exponent {claim.exponent}, the best exponent is {verdict.exponent}")
    return _outcome(mismatches), found, tuple(mismatches), str(verdict)


def _check_every(claim: Claim, timeout: float | None):
    try:
        frontier = decide_all(claim.target, embed_dim=claim.embed_dim, input_dim=claim.input_dim,
                              positional=claim.positional, timeout=timeout, causal=claim.causal)
    except SolverUnknownError as err:
        return Outcome.UNKNOWN, f"unknown ({err.reason})", (), ""
    open_cells = sorted({cell for cell, status in frontier.grid.items() if status == "unknown"}
                        | set(frontier.undecided))
    open_cells = [(L, h) for L, h in open_cells if _within_shape(claim, L, h)]
    if open_cells:   # the points found are only bounds: a smaller cell may be efficient, or none yet found
        why = "; ".join(frontier.undecided_why) or "the deadline passed"
        shown = format_shapes(open_cells[:4]) + (f" and {len(open_cells) - 4} more" if len(open_cells) > 4 else "")
        found = f"unknown (the frontier is incomplete: {shown} undecided: {why})"
        return Outcome.UNKNOWN, found, (), str(frontier)
    points = [v for v in frontier.points if _within(claim, v.architecture)]
    shapes = tuple(sorted((v.architecture.layers, v.architecture.heads[0]) for v in points))
    status = "feasible" if points else "infeasible"
    found = f"{status}, frontier {format_shapes(shapes)}"
    mismatches = []
    if status != claim.expect:
        mismatches.append(f"claimed {claim.expect}, the prover says {status} (frontier {format_shapes(shapes)})")
    if claim.frontier is not None and claim.frontier != shapes:
        mismatches.append(f"claimed frontier {format_shapes(claim.frontier)}, the frontier is "
                          f"{format_shapes(shapes)}")
    for v in points:
        if claim.exponent is not None and not exponent_matches(claim.exponent, v.exponent):
            mismatches.append(f"claimed exponent {claim.exponent}, {v.architecture.shape} has {v.exponent}")
    return _outcome(mismatches), found, tuple(mismatches), str(frontier)


def _within(claim: Claim, arch) -> bool:
    return _within_shape(claim, arch.layers, arch.heads[0])


def _within_shape(claim: Claim, layers: int, heads: int) -> bool:
    return ((claim.max_layers is None or layers <= claim.max_layers)
            and (claim.max_heads is None or heads <= claim.max_heads))


def _outcome(mismatches) -> Outcome:
    return Outcome.FALSE if mismatches else Outcome.HOLDS


def exponent_matches(claimed, exponent) -> bool:
    """``"bounded"``: finite and free of ``T``; ``"grows"``: depends on ``T``; an expression: equal to it.

    >>> exponent_matches("grows", T / 8 - 1), exponent_matches("bounded", sympy.oo)
    (True, False)
    """
    exponent = sympy.sympify(exponent)
    if claimed == SHAPES[0]:
        return exponent.is_finite is True and not exponent.has(T)
    if claimed == SHAPES[1]:
        return exponent.has(T)
    if sympy.oo in (claimed, exponent):
        return claimed == exponent
    return sympy.simplify(sympy.sympify(claimed) - exponent) == 0


@dataclass(frozen=True)
class ClaimsReport:
    """Every claim of a file with its result; ``exit_code`` is ``infoflow check``'s."""

    path: str
    results: tuple[ClaimResult, ...]

    def count(self, outcome: Outcome) -> int:
        return sum(r.outcome is outcome for r in self.results)

    @property
    def exit_code(self) -> int:
        """1 when some claim is false, else 3 when some is unknown, else 0."""
        codes = {r.outcome.exit_code for r in self.results}
        return 1 if 1 in codes else 3 if 3 in codes else 0

    def summary(self) -> str:
        return (f"{printable(self.path)}: {len(self.results)} claims: {self.count(Outcome.HOLDS)} hold, "
                f"{self.count(Outcome.FALSE)} false, {self.count(Outcome.UNKNOWN)} unknown")

    def __str__(self) -> str:
        lines = [str(r) if r.outcome is not Outcome.HOLDS else f"holds: {printable(r.claim.name)}"
                 for r in self.results]
        return "\n".join([*lines, self.summary()])

    def junit_xml(self) -> str:
        """The results as a JUnit XML document (one testcase per claim; unknown is a skip)."""
        suite = ElementTree.Element("testsuite", name=xml_text(self.path), tests=str(len(self.results)),
                                    failures=str(self.count(Outcome.FALSE)),
                                    skipped=str(self.count(Outcome.UNKNOWN)), errors="0",
                                    time=f"{sum(r.seconds for r in self.results):.3f}")
        for r in self.results:
            case = ElementTree.SubElement(suite, "testcase", classname=xml_text(Path(self.path).stem),
                                          name=xml_text(r.claim.name), time=f"{r.seconds:.3f}")
            if r.outcome is Outcome.FALSE:
                ElementTree.SubElement(case, "failure", message=xml_text("; ".join(r.mismatches))).text = \
                    xml_text(str(r))
            elif r.outcome is Outcome.UNKNOWN:
                ElementTree.SubElement(case, "skipped", message=xml_text(f"unknown: {r.found}")).text = \
                    xml_text(str(r))
        return ElementTree.tostring(suite, encoding="unicode", xml_declaration=True)

    def _repr_html_(self) -> str:
        colours = {Outcome.HOLDS: "#1b7837", Outcome.FALSE: "#b2182b", Outcome.UNKNOWN: "#777777"}
        rows = "".join(
            f"<tr><td style='color:{colours[r.outcome]}'><b>{r.outcome.value}</b></td>"
            f"<td>{html.escape(r.claim.name)}</td><td>{html.escape(str(r.claim))}</td>"
            f"<td>{html.escape(r.found)}</td><td>{html.escape('; '.join(r.mismatches))}</td></tr>"
            for r in self.results)
        return (f"<p>{html.escape(self.summary())}</p><table><tr><th>outcome</th><th>claim</th><th>claimed</th>"
                f"<th>prover</th><th>mismatch</th></tr>{rows}</table>")


# what XML 1.0 cannot hold at all, not even escaped: most control characters, surrogates, U+FFFE and U+FFFF
_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: str) -> str:
    """``text`` with every character XML 1.0 cannot hold written out as ``\\xNN`` (ElementTree escapes the rest).

    >>> print(xml_text("claim\\x1b[31m\\x00"))
    claim\\x1b[31m\\x00
    """
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 256 else f"\\u{ord(m.group()):04x}",
                        text)


def check_all(path: str | Path, claims, timeout: float | None = None) -> ClaimsReport:
    """The report on ``claims`` (read from ``path``), checked in order."""
    return ClaimsReport(str(path), tuple(check(claim, timeout) for claim in claims))


def check_file(path: str | Path, timeout: float | None = None) -> ClaimsReport:
    """Every claim of a claims file, checked in order (a bad file raises ``InvalidSpecError`` first)."""
    return check_all(path, load(path), timeout)
