"""The check of a compiled witness: its NMSE against the target's own evaluation, over beta and T.

The criterion (issue 19): at the largest beta the NMSE is at most ``NMSE_GOAL`` at every T; at every T it
falls with beta at least as fast as 1/beta (the slope of log NMSE against log beta, over the betas where
NMSE is above ``NMSE_FLOOR``, is at most ``SLOPE_GOAL``); and the smallest beta reaching ``NMSE_GOAL``
grows by at most ``BETA_GROWTH`` from the shortest T to the longest (softmax costs about log T).

>>> import infoflow_smt as ifs
>>> v = ifs.decide("max_retrieval", ifs.Architecture(heads=(1,), embed_dim=16, input_dim=2))
>>> check_compiled(v, betas=(16, 256), seq_lens=(8,), samples=16).holds
True
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch

from experiments.compilation.compiling import compile
from experiments.training.data import Distribution, default_distribution, resolve_target, sample_inputs
from infoflow_smt.errors import CompileRefusal, InvalidSpecError, Problem
from infoflow_smt.lang.expr import reads_selected_token
from infoflow_smt.limits import MAX_BETA, MAX_COMPILE_LENGTH, MAX_COMPILE_POSITIONS, MAX_SAMPLES, whole

NMSE_GOAL, NMSE_FLOOR, SLOPE_GOAL, BETA_GROWTH = 1e-3, 1e-7, -0.9, 8.0
# inputs per T: a target that reads a selected token errs by about its own size on the inputs whose top two
# scores lie within about 1/beta, so its NMSE is the share of such inputs; 32 of them resolve no NMSE below
# 1/32, and which beta first reaches 1e-3 would be set by the one input of 32 that happens to tie closest
SAMPLES, SELECTED_TOKEN_SAMPLES = 64, 256
BATCH_CELLS = 4_000_000  # batch x T^2 attention weights per chunk: about 32 MB per head in float64


@dataclass(frozen=True)
class CompiledCheck:
    """NMSE for every (beta, T) with what the criterion reads from them."""

    target: str
    architecture: str
    ffn: str
    betas: tuple[float, ...]
    seq_lens: tuple[int, ...]
    samples: int
    nmse: tuple[tuple[float, ...], ...]          # nmse[i][j]: beta i, T j
    slopes: tuple[float | None, ...]             # per T (None: fewer than two betas above the floor)
    smallest_beta: tuple[float | None, ...]      # per T, the smallest beta reaching NMSE_GOAL (None: none)
    parameters: int
    allocation: str
    seconds: float
    variances: tuple[float, ...] = ()            # per T, Var(target): what NMSE divides by
    distribution: str = Distribution.GAUSSIAN.value  # what the inputs were drawn from (data.Distribution)

    def at(self, beta: float, seq_len: int) -> float:
        """The NMSE at one (beta, T) of the table."""
        return self.nmse[self.betas.index(float(beta))][self.seq_lens.index(int(seq_len))]

    @property
    def failures(self) -> tuple[str, ...]:
        found = []
        for j, T in enumerate(self.seq_lens):
            last = self.nmse[-1][j]
            if not last <= NMSE_GOAL:
                found.append(f"T = {T}: NMSE {last:.3g} at beta = {self.betas[-1]:g} is above {NMSE_GOAL:g}")
            if self.slopes[j] is not None and self.slopes[j] > SLOPE_GOAL:
                found.append(f"T = {T}: NMSE falls as beta^{self.slopes[j]:.2f}, slower than beta^{SLOPE_GOAL}")
            if self.slopes[j] is None and last > NMSE_FLOOR and len(self.betas) > 1:
                found.append(f"T = {T}: NMSE does not fall with beta")
        reached = [b for b in self.smallest_beta if b is not None]
        if len(reached) == len(self.seq_lens) and reached[-1] > BETA_GROWTH * reached[0]:
            found.append(f"the beta reaching {NMSE_GOAL:g} grows {reached[-1] / reached[0]:g}x from T = "
                         f"{self.seq_lens[0]} to T = {self.seq_lens[-1]} (at most {BETA_GROWTH:g}x)")
        return tuple(found)

    @property
    def holds(self) -> bool:
        return not self.failures

    def table(self) -> str:
        head = "beta \\ T " + "".join(f"{T:>11}" for T in self.seq_lens)
        rows = [f"{b:>9g}" + "".join(f"{v:>11.3g}" for v in row) for b, row in zip(self.betas, self.nmse)]
        slope = "slope    " + "".join(f"{s:>11.2f}" if s is not None else f"{'-':>11}" for s in self.slopes)
        least = "beta@1e-3" + "".join(f"{b:>11g}" if b is not None else f"{'-':>11}" for b in self.smallest_beta)
        spread = "Var(y)   " + "".join(f"{v:>11.3g}" for v in self.variances)
        return "\n".join([head, *rows, slope, least, spread])

    def __str__(self) -> str:
        verdict = "criterion holds" if self.holds else "criterion FAILS:\n  " + "\n  ".join(self.failures)
        return (f"{self.target} on {self.architecture}, ffn={self.ffn}: NMSE of the compiled model "
                f"({self.samples} {self.distribution} inputs per T, {self.parameters} parameters, "
                f"{self.seconds:.1f} s)\n"
                f"{self.table()}\n{verdict}")

    def to_json(self) -> dict:
        return {"target": self.target, "architecture": self.architecture, "ffn": self.ffn,
                "betas": list(self.betas), "seq_lens": list(self.seq_lens), "samples": self.samples,
                "nmse": [list(r) for r in self.nmse], "slopes": list(self.slopes),
                "smallest_beta": list(self.smallest_beta), "parameters": self.parameters,
                "variances": list(self.variances), "distribution": self.distribution,
                "holds": self.holds, "failures": list(self.failures), "allocation": self.allocation,
                "seconds": round(self.seconds, 3)}


def default_samples(target) -> int:
    """The inputs per T ``check_compiled`` draws unless told: ``SELECTED_TOKEN_SAMPLES`` for a target that
    reads a selected token (``x[argmax(...)]``), ``SAMPLES`` otherwise."""
    return SELECTED_TOKEN_SAMPLES if reads_selected_token(resolve_target(target).expr) else SAMPLES


def check_compiled(verdict, betas=(4, 16, 64, 256), seq_lens=(8, 32, 128, 512), samples: int | None = None,
                   ffn: str = "exact", seed: int = 0, mlp_width: int = 64, model_for=None,
                   distribution: Distribution | str | None = None) -> CompiledCheck:
    """Compile ``verdict`` at every beta and compare with ``Target.evaluate`` on ``samples`` inputs of each
    length (default ``default_samples``), drawn from ``distribution`` (default: the one the target's task is
    posed on, ``data.default_distribution``). ``model_for(beta)``, when given, replaces the compiler (a test
    builds a broken model with it). What the check cannot honour is refused first (``_refused``), and an
    unknown verdict is ``CompileRefusal("unknown")``: it has no witness, and it is not infeasible."""
    started = time.perf_counter()
    if verdict.status.value == "unknown":
        raise CompileRefusal.undecided(str(verdict.target))
    target = resolve_target(verdict.target)
    samples = default_samples(target) if samples is None else samples
    _refused(betas, seq_lens, samples)
    betas, seq_lens = tuple(float(b) for b in betas), tuple(int(T) for T in seq_lens)
    if model_for is None:  # compiled once: only beta changes between the rows
        # compiled at the largest beta: an MLP map is fitted to the sharpest streams
        compiled = compile(verdict, beta=betas[-1], ffn=ffn, mlp_width=mlp_width, seed=seed)
        model_for = compiled.set_beta
    if distribution is None:
        distribution = default_distribution(target)
    elif distribution not in set(Distribution) | {d.value for d in Distribution}:
        raise ValueError(f"distribution must be one of {', '.join(d.value for d in Distribution)}, "
                         f"got {distribution!r}")
    distribution = Distribution(distribution)
    data = {T: _inputs(target, verdict, T, samples, seed, distribution) for T in seq_lens}
    nmse, model = [], None
    for beta in betas:
        model = model_for(beta)
        nmse.append(tuple(_nmse(model, *data[T]) for T in seq_lens))
    slopes = tuple(_slope(betas, [row[j] for row in nmse]) for j in range(len(seq_lens)))
    smallest = tuple(next((b for b, row in zip(betas, nmse) if row[j] <= NMSE_GOAL), None)
                     for j in range(len(seq_lens)))
    return CompiledCheck(str(getattr(verdict.target, "name", None) or verdict.target), str(verdict.architecture),
                         ffn, betas, seq_lens, samples, tuple(nmse), slopes, smallest, model.parameter_count(),
                         str(model.plan), time.perf_counter() - started,
                         tuple(float(np.var(data[T][1])) for T in seq_lens), distribution.value)


def _refused(betas, seq_lens, samples) -> None:
    """Raise ``InvalidSpecError`` naming every value the check cannot honour (infoflow_smt.limits): one sample
    has no variance to divide by, an infinite beta makes the softmax NaN, a length or a count past its limit
    more memory than a check may take."""
    problems = []
    if whole(samples) is None or not 2 <= samples <= MAX_SAMPLES:
        problems.append(Problem(f"samples must be a whole number from 2 to {MAX_SAMPLES}, got {samples!r}"))
    if not betas or not all(isinstance(b, (int, float)) and 0 < b <= MAX_BETA for b in betas):
        problems.append(Problem(f"betas must be numbers above 0 and at most {MAX_BETA:g} (infoflow_smt.limits."
                                f"MAX_BETA), got {tuple(betas)!r}"))
    if not seq_lens or not all(whole(T) is not None and 2 <= T <= MAX_COMPILE_LENGTH for T in seq_lens):
        problems.append(Problem(f"seq_lens must be whole numbers from 2 to {MAX_COMPILE_LENGTH}, got "
                                f"{tuple(seq_lens)!r}"))
    elif whole(samples) is not None and samples * max(seq_lens) > MAX_COMPILE_POSITIONS:
        problems.append(Problem(f"{samples} samples at T = {max(seq_lens)} is over the limit of "
                                f"{MAX_COMPILE_POSITIONS} positions (infoflow_smt.limits.MAX_COMPILE_POSITIONS)"))
    if problems:
        raise InvalidSpecError(problems, "check_compiled")


def _inputs(target, verdict, T: int, samples: int, seed: int, distribution: Distribution):
    rng = np.random.default_rng([seed, T])
    X = sample_inputs(distribution, samples, T, verdict.architecture.input_dim, rng)
    with np.errstate(all="ignore"):
        return X, np.asarray(target.evaluate(X), dtype=float)


def _nmse(model, X: np.ndarray, y: np.ndarray) -> float:
    chunk = max(1, BATCH_CELLS // (X.shape[1] + 1) ** 2)
    with torch.no_grad():
        out = np.concatenate([model(torch.as_tensor(X[i:i + chunk])).numpy() for i in range(0, len(X), chunk)])
    variance, mse = float(np.var(y)), float(np.mean((out.reshape(y.shape) - y) ** 2))
    return mse / variance if variance > 0 else mse  # a constant target (x.x - x.x): its plain squared error


def _slope(betas, values) -> float | None:
    """The least-squares slope of log NMSE against log beta over the betas where NMSE is above the floor."""
    points = [(math.log(b), math.log(v)) for b, v in zip(betas, values) if NMSE_FLOOR < v < math.inf]
    if len(points) < 2:
        return None
    x, y = np.array(points).T
    return float(np.polyfit(x, y, 1)[0])
