"""Proof results as text lines, one JSON document, or a Markdown report.

The JSON document is a list with one object per proof: ``name``, ``statement``, ``holds``, ``unknown`` (not
held because a question ran out of time), ``undecided`` (the questions that ran out of time, which an unknown
proof rests on), ``seconds``,
``general`` (the claim over every architecture: ``statement``, ``holds``, ``detail``, ``frontiers``, each a
``Frontier.to_json()`` with its saturation bounds, and ``undecided``), ``differences`` (where the model's answer is
not the paper's, one sentence each) and ``instances``, a list of objects with the keys of
``Evidence.to_dict`` (``target``, ``architecture``, ``expected_status``, ``obtained_status``,
``expected_exponent``, ``obtained_exponent``, ``replayed``, ``matches``, ``explanation``, ``detail``,
``seconds``); exponents are strings (sympy's ``str``).

The Markdown report is deterministic (no timings), so the committed one can be checked to be current.

>>> import sympy
>>> from proofs.result import Evidence, ProofResult
>>> ev = Evidence("max_retrieval", "heads=(1,), E=8, d=2", "feasible", "feasible", "1", sympy.Integer(1), True, True)
>>> print("\\n".join(text([ProofResult("demo", "A statement.", True, (ev,), 0.3)])))
demo  holds  0.3 s  (1 instance, 0 mismatches)
  A statement.
  ok        max_retrieval | heads=(1,), E=8, d=2 | expected feasible, 1 | obtained feasible, 1 | witness replayed
1 of 1 proofs hold (0.3 s).
"""
from __future__ import annotations

import json
from collections.abc import Sequence

import sympy

from infoflow_smt.words import plural

from .result import Evidence, ProofResult

SCHEMA_KEYS = ("name", "statement", "holds", "unknown", "undecided", "seconds", "general", "differences", "instances")
WHAT_A_PROOF_SHOWS = (
    "**What a proof here shows.** That the decision procedure (the SMT encoding, its replayed witnesses and its "
    "frontiers) agrees with the theorems *inside the model* (docs/model.md): the cost laws the model takes from "
    "the papers, applied to the papers' targets. It does not prove a paper's claim about trained networks, nor "
    "re-prove the papers' theorems: the model's exponents are its own laws, credited to the theorem each comes "
    "from, and where a paper states a different exponent or a different answer the section says so (paper 2's "
    "exponents in head_count and decoding_cost; the results from outside the two papers in literature). What "
    "trained networks do is measured, not proved: docs/reproduction.md.")
EVIDENCE_KEYS = ("target", "architecture", "expected_status", "obtained_status", "expected_exponent",
                 "obtained_exponent", "replayed", "matches", "explanation", "detail", "seconds")


def _check(ev: Evidence) -> str:
    """What the replay said: of the witness (feasible) or of the cheapest inefficient program."""
    if ev.replayed is None:
        return "no program"
    program = "cheapest program" if ev.obtained_status == "infeasible" else "witness"
    return f"{program} replayed" if ev.replayed else f"{program} FAILED its replay"


def _verdict(result: ProofResult) -> str:
    if result.unknown:
        return "UNKNOWN (a question ran out of time)"
    return "holds" if result.holds else "DOES NOT HOLD"


def _summary(results: Sequence[ProofResult]) -> str:
    held, unknown = [r for r in results if r.holds], [r for r in results if r.unknown]
    undecided = (f", {len(unknown)} unknown: " + ", ".join(f"{r.name} ({plural(len(r.undecided), 'question')} "
                                                            "ran out of time)" for r in unknown)) if unknown else ""
    differing = [r.name for r in results if r.differences]
    differ = (f" The model's answer differs from a paper's in {plural(sum(len(r.differences) for r in results), 'place')} "
              f"({', '.join(differing)}: the lines 'differs from the paper' above).") if differing else ""
    return f"{len(held)} of {len(results)} proofs hold{undecided} ({sum(r.seconds for r in results):.1f} s).{differ}"


def text(results: Sequence[ProofResult], explain: bool = False) -> list[str]:
    """Per proof: a line (name, holds, seconds), its statement, its general claim, one line per instance
    (reasons under mismatches, or under every inefficient answer when ``explain``; an instance the solver could
not decide is marked UNKNOWN, not MISMATCH); then one summary line naming the unknown proofs."""
    lines: list[str] = []
    for result in results:
        count, undecided = len(result.evidence), sum(ev.obtained_status == "unknown" for ev in result.evidence)
        lines.append(f"{result.name}  {_verdict(result)}  {result.seconds:.1f} s  "
                     f"({plural(count, 'instance')}, {len(result.mismatches) - undecided} mismatches"
                     f"{f', {undecided} unknown' if undecided else ''})")
        lines.append(f"  {result.statement}")
        if result.general is not None:
            held = "holds" if result.general.holds else "UNKNOWN" if result.general.unknown else "DOES NOT HOLD"
            lines.append(f"  general: {held}: "
                         f"{result.general.statement}")
            if result.general.detail:
                lines.append(f"            why: {result.general.detail}")
        lines += [f"  differs from the paper: {difference}" for difference in result.differences]
        for ev in result.evidence:
            mark = "ok" if ev.matches else "UNKNOWN" if ev.obtained_status == "unknown" else "MISMATCH"
            lines.append(f"  {mark:<9} {ev.target} | {ev.architecture} | expected {ev.expected_status}, "
                         f"{ev.expected_exponent} | obtained {ev.obtained_status}, {ev.obtained_exponent} | "
                         f"{_check(ev)}")
            if not ev.matches:
                lines.append(f"            why: {ev.detail}")
            if explain or not ev.matches:
                lines.extend(f"            - {sentence}" for sentence in ev.explanation)
    lines.append(_summary(results))
    return lines


def json_document(results: Sequence[ProofResult]) -> str:
    """The one JSON document ``python -m proofs --json`` prints (schema in the module docstring)."""
    return json.dumps([result.to_dict() for result in results], indent=2)


def _cell(value: object) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _latex(exponent: object) -> str:
    """An exponent as inline LaTeX (``$\\frac{T}{16} - 1$``), or as it is when it is not an expression."""
    try:
        return f"${sympy.latex(sympy.sympify(exponent))}$"
    except (sympy.SympifyError, TypeError, SyntaxError):
        return f"`{_cell(exponent)}`"


def _expected(claim: str) -> str:
    """A prediction's text with its formula in LaTeX: ``T/16 - 1 (global aggregation, linear in T)``."""
    formula, _, rest = claim.partition(" (")
    try:
        latex = f"${sympy.latex(sympy.sympify(formula))}$"
    except (sympy.SympifyError, TypeError, SyntaxError):
        return _cell(claim)
    return latex + (f" ({_cell(rest)}" if rest else "")


def _general(result: ProofResult) -> list[str]:
    claim = result.general
    if claim is None:
        return []
    held = "holds" if claim.holds else "**unknown**" if claim.unknown else "**does not hold**"
    out = ["", f"**Over every architecture** ({held}): {claim.statement}",
           "", "| target | width | frontier (L layers, h heads) | heads bound H | layers bound F | cells decided |",
           "|---|---|---|---|---|---|"]
    for f in claim.frontiers:
        frontier = ", ".join(f"({L}, {h})" for L, h in f["frontier"]) or "none: inefficient everywhere"
        pe = ", positional" if f["positional"] else ""
        out.append(f"| `{_cell(f['spec'])}` | {f['width']}, d={f['input_dim']}{pe} | {frontier} | {f['head_bound']} | "
                   f"{f['layer_bound']} | {f['decided']} |")
    if claim.detail:
        out += ["", f"Why it does not hold: {_cell(claim.detail)}"]
    if claim.frontiers:
        out += ["", "Why the bounds make the claim general (the first question's argument): "
                + " ".join(claim.frontiers[0]["explanation"][:3])]
    return out


def markdown(results: Sequence[ProofResult]) -> str:
    """A Markdown report: a summary table, then each proof's statement, general claim with its frontiers and
    saturation bounds, instance table (exponents in LaTeX), reasons and notes."""
    held = sum(r.holds for r in results)
    out = ["# Known results of the InfoFlow papers and of the literature, decided inside the model by infoflow_smt", "",
           (f"{held} of {len(results)} proofs hold. Generated by `python -m proofs --report docs/proofs.md`; a proof "
            "holds only when its claim over every architecture holds and every instance matches the prediction it "
            "states. Each instance's witness (or cheapest inefficient program) is replayed by the reference "
            "interpreter."), "", WHAT_A_PROOF_SHOWS, "",
           "| proof | holds | general claim | instances | mismatches |", "|---|---|---|---|---|"]
    out += [f"| [{r.name}](#{r.name}) | {'yes' if r.holds else '**no**'} | "
            f"{'holds' if r.general is None or r.general.holds else '**no**'} | {len(r.evidence)} | "
            f"{len(r.mismatches)} |" for r in results]
    for r in results:
        out += ["", f"<a id=\"{r.name}\"></a>", f"## {r.name}: {_verdict(r)}", "", r.statement]
        out += _general(r)
        out += ["", "| # | target | architecture | expected | obtained | replay | matches |",
                "|---|---|---|---|---|---|---|"]
        for i, ev in enumerate(r.evidence, start=1):
            matches = "yes" if ev.matches else f"**no**: {_cell(ev.detail)}"
            out.append(f"| {i} | `{_cell(ev.target)}` | {_cell(ev.architecture)} | {ev.expected_status}, "
                       f"{_expected(ev.expected_exponent)} | {ev.obtained_status}, {_latex(ev.obtained_exponent)} | "
                       f"{_check(ev)} | {matches} |")
        explained = [(i, ev) for i, ev in enumerate(r.evidence, start=1) if ev.explanation]
        if explained:
            out += ["", "The solver's words (why an inefficient answer is inefficient; a feasible one's notes):", ""]
            out += [f"- row {i}: " + " ".join(ev.explanation) for i, ev in explained]
        if r.differences:
            out += ["", "**Where the model's answer differs from the paper's:**", ""]
            out += [f"- {_cell(difference)}" for difference in r.differences]
        if r.notes:
            out += [""] + list(r.notes)
    return "\n".join(out) + "\n"
