"""The public regression set of model.md section 5, as data shared by the solver, proof and CLI tests.

Each case: an id, a target (catalogue spec or text), an architecture, the expected status, and what the
best exponent must look like ("one": exactly 1; "bounded": any bounded exponent; "linear": growing with T;
an explicit sympy expression: exactly that; "infinite": no program at any cost).
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

import infoflow_smt as ifs

T = ifs.T


@dataclass(frozen=True)
class Case:
    id: str
    target: str
    heads: tuple[int, ...]
    expected: str                      # "feasible" / "infeasible"
    exponent: object = None            # "one" / "bounded" / "linear" / "infinite" / a sympy expression
    embed_dim: object = 32
    input_dim: int = 2
    positional: bool = False

    @property
    def arch(self) -> ifs.Architecture:
        return ifs.Architecture(heads=self.heads, embed_dim=self.embed_dim, input_dim=self.input_dim,
                                positional=self.positional)


def _cases() -> list[Case]:
    rows = [
        Case("thm1-1layer-h1", "min_pairwise_dot", (1,), "infeasible", "linear"),
        Case("thm1-1layer-h8", "min_pairwise_dot", (8,), "infeasible", "linear"),
        Case("thm1-2layers", "min_pairwise_dot", (1, 1), "feasible", "one"),
        # Theorem 2: with d = 4, E = 8, h = 1 the k-th retrieval (T-3)/(n+1) is cheaper than aggregation 4T/8-1
        Case("thm2-second-largest", "kth_largest:k=2", (1,), "infeasible", (T - 3) / 9, embed_dim=8, input_dim=4),
        Case("thm2-second-largest-h3", "kth_largest:k=2", (3,), "infeasible", "linear"),
        Case("thm2-largest", "max_retrieval", (1,), "feasible", "one"),
        # Theorem 3: decoding T0 = 3 fixed tokens costs T0*d/E - 1
        Case("thm3-decode-3", "specific_positions", (1,), "feasible", sympy.Rational(3 * 2, 4) - 1,
             embed_dim=4, positional=True),
        Case("triangle-1x1", "triangle_center", (1,), "infeasible", "linear"),
        Case("triangle-2x2-E24", "triangle_center", (2, 2), "infeasible", "linear", embed_dim=24),
        Case("triangle-4x4-E48", "triangle_center", (4, 4), "infeasible", "linear", embed_dim=48),
        Case("triangle-3x8-E64", "triangle_center", (8, 8, 8), "infeasible", "linear", embed_dim=64),
        Case("positions-need-pe", "specific_positions", (2,), "infeasible", "infinite"),
    ]
    for D in (2, 3, 4):
        for subsets, pe in ((True, True), (False, True), (False, False)):
            spec = f"d_retrieval:D={D}" + ("" if subsets else ",subsets=false")
            tag = f"dret{D}-{'S' if subsets else 'all'}-{'pe' if pe else 'nope'}"
            rows += [
                Case(f"{tag}-h=D", spec, (D,), "feasible", "one", positional=pe),
                Case(f"{tag}-h<D", spec, (D - 1,), "infeasible", "linear", positional=pe),
                Case(f"{tag}-memorize", spec, (1,), "feasible", "bounded", embed_dim=T * 2, positional=pe),
            ]
    for D in range(2, 7):
        rows += [
            Case(f"intrinsic{D}-(D,D)", f"intrinsic_dimension:D={D}", (D, D), "feasible", "one"),
            Case(f"intrinsic{D}-(D-1,D)", f"intrinsic_dimension:D={D}", (D - 1, D), "infeasible", "linear"),
            Case(f"intrinsic{D}-(D,D-1)", f"intrinsic_dimension:D={D}", (D, D - 1), "infeasible", "linear"),
        ]
    return rows


REGRESSION = _cases()


def arch(heads, embed_dim=32, input_dim=2, positional=False) -> ifs.Architecture:
    return ifs.Architecture(heads=tuple(heads), embed_dim=embed_dim, input_dim=input_dim,
                            positional=positional)


# (spec, architecture, expected status): model.md section 5, at sizes the enumerator finishes quickly
SECTION5 = [
    ("min_pairwise_dot", arch((1,)), "infeasible"),
    ("min_pairwise_dot", arch((3,)), "infeasible"),
    ("min_pairwise_dot", arch((1, 1)), "feasible"),
    ("max_retrieval", arch((1,)), "feasible"),
    ("kth_largest:k=2", arch((1,)), "infeasible"),
    ("kth_largest:k=2", arch((2,)), "infeasible"),
    ("linear_max_sum:D=2", arch((1,)), "infeasible"),
    ("linear_max_sum:D=2", arch((2,)), "feasible"),
    ("d_retrieval:D=2", arch((2,), positional=True), "feasible"),
    ("d_retrieval:D=2", arch((1,), positional=True), "infeasible"),
    ("d_retrieval:D=2", arch((1,), embed_dim=2 * ifs.T, positional=True), "feasible"),
    ("d_retrieval:D=2,subsets=false", arch((2,)), "feasible"),
    ("d_retrieval:D=2,subsets=false", arch((1,)), "infeasible"),
    ("d_retrieval:D=2,subsets=false", arch((1,), embed_dim=2 * ifs.T), "feasible"),
    ("intrinsic_dimension:D=2", arch((1, 2)), "infeasible"),
    ("intrinsic_dimension:D=2", arch((2, 1)), "infeasible"),
    ("intrinsic_dimension:D=2", arch((2, 2)), "feasible"),
    ("intrinsic_dimension:D=3", arch((3, 3)), "feasible"),
    ("intrinsic_dimension:D=3", arch((2, 3)), "infeasible"),
    ("intrinsic_dimension:D=3", arch((3, 2)), "infeasible"),
    ("triangle_center", arch((2, 2)), "infeasible"),
    ("specific_positions", arch((1,), positional=True), "feasible"),
    ("specific_positions", arch((1,)), "infeasible"),
]


def section5_id(case) -> str:
    spec, a, _ = case
    flags = ("+pe" if a.positional else "") + ("+wide" if a.width.has(ifs.T) else "")
    return f"{spec}@{'x'.join(map(str, a.heads))}{flags}"
