"""Proof scripts: the known results of the InfoFlow papers (and of the literature beside them), decided by the
solver inside the model (model.md section 10).

One module per result, each a function ``prove_<name>() -> ProofResult`` that decides the result's targets
on several architectures, replays every witness, and compares each answer with the prediction the model's
laws make for the theorem (where a paper's own exponent or answer differs, the module says so). A proof
holds only when every piece of evidence matches: it shows that the decision procedure agrees with the
theorems inside the model, not a claim about trained networks. ``python -m proofs`` prints them (``--help``).

>>> import proofs
>>> list(proofs.ALL)[:2]
['depth_separation', 'kth_retrieval']
>>> proofs.prove("kth_retrieval").holds
True
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from infoflow_smt import InvalidSpecError
from infoflow_smt.errors import Problem

from .decoding_cost import prove_decoding_cost
from .depth_separation import prove_depth_separation
from .head_count import prove_head_count
from .intrinsic_dimension import prove_intrinsic_dimension
from .kth_retrieval import prove_kth_retrieval
from .literature import prove_literature
from .multilayer_retrieval import prove_multilayer_retrieval
from .result import Evidence, ProofResult
from .triangle_center import prove_triangle_center

__all__ = ["ALL", "Evidence", "ProofResult", "UnknownProofError", "check_names", "prove", "prove_all"]

# name -> proof, in the order of model.md section 5 (papers' theorems first, then the experiments), then
# paper 2's multi-layer conjecture, then the results from outside the two papers
ALL: Mapping[str, Callable[[], ProofResult]] = MappingProxyType({
    "depth_separation": prove_depth_separation,
    "kth_retrieval": prove_kth_retrieval,
    "decoding_cost": prove_decoding_cost,
    "head_count": prove_head_count,
    "intrinsic_dimension": prove_intrinsic_dimension,
    "triangle_center": prove_triangle_center,
    "multilayer_retrieval": prove_multilayer_retrieval,
    "literature": prove_literature,
})


class UnknownProofError(InvalidSpecError):
    """A proof name that is not in ``ALL`` (an input error: also a ``ValueError``)."""

    def __init__(self, names: list[str]):
        self.names = tuple(names)
        problems = [Problem(f"unknown proof {name!r}") for name in names] + [Problem(f"known: {', '.join(ALL)}")]
        super().__init__(problems, "proof name")


def check_names(names: list[str]) -> None:
    """Raise ``UnknownProofError`` naming every unknown name at once (and the known ones)."""
    unknown = [name for name in names if name not in ALL]
    if unknown:
        raise UnknownProofError(unknown)


def prove(name: str) -> ProofResult:
    """Run the proof ``name`` (a key of ``ALL``).

    >>> prove("no_such_proof")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    proofs.UnknownProofError: invalid proof name: unknown proof 'no_such_proof'; known: depth_separation, ...
    """
    check_names([name])
    return ALL[name]()


def prove_all() -> tuple[ProofResult, ...]:
    """Run every proof, in the order of ``ALL``."""
    return tuple(proof() for proof in ALL.values())
