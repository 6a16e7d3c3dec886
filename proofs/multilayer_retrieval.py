"""Multi-layer D-retrieval (paper 2, Conjecture 1) beside the model: ``L*h >= D`` or ``(2L-1)*h >= D``?

Paper 2 conjectures that ``L`` layers of ``h`` heads need ``L*h >= D`` to retrieve ``D`` minima efficiently.
The model counts differently: without positions, a head may act differently at the output token than at
the input positions, so in every layer the output token has ``h`` heads of its own, and in every layer but
the last the input positions can make a selection that binds no variable and hand it on with any later
retrieval. So ``(2L-1)*h`` independent selections reach the output, and the model decides D-retrieval
efficient exactly when ``(2L-1)*h >= D``. The two agree at one layer and differ from two layers on: the
cells with ``L*h < D <= (2L-1)*h`` are efficient for the model and not for the conjecture, and each is shown
here with its witness (which head, at the inputs or at the output, makes which selection, in which layer).

What would decide between them is a trained network: 2 layers of 1 head on D = 3 retrieval, beside 1 layer
of 2 and 1 layer of 3 heads, at T = 8 and 16 (the experiment of ``docs/reproduction.md``, "D = 3 on two
layers of one head").

>>> from proofs.multilayer_retrieval import model_efficient, conjecture_efficient
>>> model_efficient(2, 1, 3), conjecture_efficient(2, 1, 3)
(True, False)
"""
from __future__ import annotations

from collections.abc import Iterator

import infoflow_smt as ifs

from .harness import (
    FrontierCheck,
    architecture,
    deadline_passed,
    exactly,
    general_claim,
    linear,
    observe,
    run_proof,
    timeout,
    unasked,
)
from .result import Evidence, ProofResult

NAME = "multilayer_retrieval"
STATEMENT = ("Paper 2 (Yu, Bao, Jiang, Yu, Li, ICLR 2026), Conjecture 1 says D-retrieval needs L*h >= D heads in all; "
             "the model decides it efficient exactly when (2L-1)*h >= D without positions, for L <= 4, h <= 6 and "
             "D <= 8, and every cell where the two differ is efficient with a replayed witness.")
GENERAL = ("Over every architecture, for D = 1..8 without positions, the frontier of D-retrieval is the minimal "
           "(L, h) with (2L-1)*h >= D (the conjecture's would be the minimal (L, h) with L*h >= D).")
DIFFERENCES = (("Paper 2's Conjecture 1 (L*h >= D heads in all) against the model's (2L-1)*h >= D without positions: "
               "the model's input positions make selections that bind no variable in early layers and a later "
               "retrieval hands them on, so more cells are efficient (D = 3 on two layers of one head; the cells are "
               "the instances above, each with a replayed witness); a training run decides between the two "
               "(docs/reproduction.md)."),)
LAYERS, HEADS, DIMENSIONS = range(1, 5), range(1, 7), range(1, 9)
WIDTH, INPUT_DIM = 32, 2
EXPERIMENT = "reproduction.md#d--3-on-two-layers-of-one-head"   # relative to docs/, where the report lives


def model_efficient(layers: int, heads: int, D: int) -> bool:
    return (2 * layers - 1) * heads >= D


def conjecture_efficient(layers: int, heads: int, D: int) -> bool:
    return layers * heads >= D


def spec(D: int) -> str:
    return f"d_retrieval:D={D},subsets=false"


def minimal(rule, D: int) -> tuple[tuple[int, int], ...]:
    """The minimal (L, h) satisfying ``rule`` (over every L and h).

    >>> minimal(model_efficient, 4)
    ((1, 4), (2, 2), (3, 1))
    """
    points, best = [], None
    for L in range(1, D + 1):
        h = next(h for h in range(1, D + 1) if rule(L, h, D))
        if best is None or h < best:
            points.append((L, h))
            best = h
    return tuple(points)


def differing_cells() -> list[tuple[int, int, int]]:
    """(D, L, h) where the model and the conjecture disagree, inside the grid."""
    return [(D, L, h) for D in DIMENSIONS for L in LAYERS for h in HEADS
            if model_efficient(L, h, D) != conjecture_efficient(L, h, D)]


def _evidence() -> Iterator[Evidence]:
    grid = [ifs.Architecture(heads=(h,) * L, embed_dim=WIDTH, input_dim=INPUT_DIM) for L in LAYERS for h in HEADS]
    if deadline_passed():   # the run's deadline: the grid is unknown, not disproved
        yield unasked(", ".join(spec(D) for D in DIMENSIONS), f"{len(grid)} uniform architectures",
                      "the model's count", exactly(1))
        return
    swept = ifs.sweep([spec(D) for D in DIMENSIONS], grid, cache=False, workers=1, timeout=timeout())
    for cell in swept.cells:  # every cell of the grid against the model's count (inferred ones too)
        D = int(cell.target.split("D=")[1].split(",")[0])
        L, h = cell.architecture.layers, cell.architecture.heads[0]
        want = "feasible" if model_efficient(L, h, D) else "infeasible"
        if cell.status.value != want:
            yield Evidence(cell.target, str(cell.architecture), want, cell.status.value, "-", ifs.T, None,
                           matches=False, detail=f"the sweep says {cell.status.value} at (L, h) = ({L}, {h})")
    for D, L, h in differing_cells():  # where the conjecture differs: each with its witness, replayed
        yield observe(spec(D), architecture((h,) * L, WIDTH, INPUT_DIM), "feasible", exactly(1))
    yield observe(spec(3), architecture((1,), WIDTH, INPUT_DIM), "infeasible", linear())  # both say no here


def _general():
    return general_claim(GENERAL, [FrontierCheck(spec(D), {"embed_dim": WIDTH, "input_dim": INPUT_DIM},
                                                 minimal(model_efficient, D)) for D in DIMENSIONS])


def notes() -> tuple[str, ...]:
    """The two frontiers side by side, the cells where they differ, and the test that would decide."""
    lines = ["| D | model: minimal (L, h) with (2L-1)h >= D | conjecture: minimal (L, h) with Lh >= D |",
             "|---|---|---|"]
    lines += [f"| {D} | {minimal(model_efficient, D)} | {minimal(conjecture_efficient, D)} |" for D in DIMENSIONS]
    cells = ", ".join(f"D={D} at ({L}, {h})" for D, L, h in differing_cells())
    lines += ["", (f"Cells of L <= 4, h <= 6 where they differ (efficient for the model, not for the conjecture): "
                  f"{cells}. Each is an instance above, with its witness replayed."), "",
              ("The test that decides between them: train 2 layers of 1 head on D = 3 retrieval, beside 1 layer of "
              f"2 heads and 1 layer of 3 heads, at T = 8 and 16 (docs/reproduction.md: [the experiment]({EXPERIMENT})). The model "
              "predicts two layers of one head efficient for D = 3, the conjecture does not.")]
    return tuple(lines)


def prove_multilayer_retrieval() -> ProofResult:
    """Paper 2's Conjecture 1 beside the model (see ``STATEMENT`` and ``GENERAL``)."""
    return run_proof(NAME, STATEMENT, _evidence, _general, notes, differences=DIFFERENCES)
