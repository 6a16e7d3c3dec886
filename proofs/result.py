"""What a proof returns: the statement, whether it holds, and every piece of evidence behind the answer.

A proof *holds* only when every piece of evidence matches what the paper predicts; a mismatch stays in the
result (``matches=False`` with its ``detail``), it is never dropped. Exponents are sympy expressions in the
result and strings in its JSON form (``to_dict``).

>>> ev = Evidence(target="max_retrieval", architecture="heads=(1,), E=32, d=2", expected_status="feasible",
...               obtained_status="feasible", expected_exponent="1", obtained_exponent=sympy.Integer(1),
...               replayed=True, matches=True)
>>> result = ProofResult("demo", "A statement.", holds=True, evidence=(ev,), seconds=0.1)
>>> result.to_dict()["instances"][0]["obtained_exponent"]
'1'
>>> result.mismatches
()
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sympy


@dataclass(frozen=True)
class Evidence:
    """One decision (or minimization) and how it compares with the prediction the proof states.

    ``expected_status`` and ``obtained_status`` are Status values (``"feasible"``, ``"infeasible"``,
    ``"unknown"``) for a decision, or a short phrase for other checks (a Pareto set). ``expected_exponent``
    is an exact expression or a shape (``"linear in T"``), written as text.
    """

    target: str                           # catalogue spec or target text, as passed to ifs.decide
    architecture: str                     # str(ifs.Architecture), or a description of the family searched
    expected_status: str
    obtained_status: str
    expected_exponent: str
    obtained_exponent: sympy.Expr         # the solver's best exponent (sympy.nan when it gave none)
    replayed: bool | None                 # ifs.check of the witness (FEASIBLE) or of the cheapest
                                          # inefficient program (INFEASIBLE); None when there is no program
    matches: bool
    explanation: tuple[str, ...] = ()     # INFEASIBLE: the solver's reasons, one sentence each
    detail: str = ""                      # why it does not match (empty when it does)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "architecture": self.architecture,
            "expected_status": self.expected_status,
            "obtained_status": self.obtained_status,
            "expected_exponent": self.expected_exponent,
            "obtained_exponent": str(self.obtained_exponent),
            "replayed": self.replayed,
            "matches": self.matches,
            "explanation": list(self.explanation),
            "detail": self.detail,
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True)
class GeneralClaim:
    """A claim over every architecture (every number of layers and heads), checked with ``ifs.decide_all``:
    each frontier it rests on is recorded with its saturation bounds, the reason the claim is general."""

    statement: str
    holds: bool
    frontiers: tuple[dict[str, Any], ...]   # Frontier.to_json() of every question asked
    detail: str = ""                        # why it does not hold (empty when it does)
    unknown: bool = False                   # a question ran out of time: the claim is undecided, not false
    undecided: tuple[str, ...] = ()         # the frontier questions that ran out of time (spec and options)

    def to_dict(self) -> dict[str, Any]:
        return {"statement": self.statement, "holds": self.holds, "detail": self.detail,
                "frontiers": list(self.frontiers), "undecided": list(self.undecided)}


@dataclass(frozen=True)
class ProofResult:
    """A known result, reproduced (or not) by the solver: ``holds`` iff every evidence matches and the
    general claim holds."""

    name: str
    statement: str                        # one sentence, citing the paper and the theorem or experiment
    holds: bool
    evidence: tuple[Evidence, ...]
    seconds: float
    general: GeneralClaim | None = None
    notes: tuple[str, ...] = ()           # Markdown lines a report shows after the evidence (tables, tests)
    differences: tuple[str, ...] = ()     # where the model's answer is not the paper's, one sentence each (every
                                          # rendering shows them: the terminal, the JSON, the report)

    @property
    def mismatches(self) -> tuple[Evidence, ...]:
        return tuple(e for e in self.evidence if not e.matches)

    @property
    def unknown(self) -> bool:
        """Undecided rather than disproved: it does not hold, and every failure is a question that ran out of
        time (an UNKNOWN answer), none a wrong answer."""
        if self.holds:
            return False
        undecided = [e.obtained_status == "unknown" for e in self.mismatches]
        claim_failed = self.general is not None and not self.general.holds
        return (all(undecided) and (any(undecided) or claim_failed)
                and (not claim_failed or self.general.unknown))

    @property
    def undecided(self) -> tuple[str, ...]:
        """Every question that ran out of time (an UNKNOWN answer): the instances as target | architecture,
        then the general claim's frontiers; the proof's answer rests on them when it is unknown."""
        instances = tuple(f"{e.target} | {e.architecture}" for e in self.evidence if e.obtained_status == "unknown")
        return instances + (tuple(f"frontier {q}" for q in self.general.undecided) if self.general else ())

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "statement": self.statement,
            "holds": self.holds,
            "unknown": self.unknown,
            "undecided": list(self.undecided),
            "seconds": round(self.seconds, 3),
            "general": self.general.to_dict() if self.general else None,
            "differences": list(self.differences),
            "instances": [e.to_dict() for e in self.evidence],
        }
