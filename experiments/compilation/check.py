"""The check of a compiled witness: its NMSE against the target's own evaluation, over beta and T.

The criterion (docs/compile.md) reads the compiled model, not the grid of betas the table is printed on: at each
T the check finds ``beta*(T)``, the smallest beta on a fixed ladder (powers of sqrt 2 from 1 to
``REACH_LIMIT``) at which the NMSE, read as a median of means over ``GROUPS`` groups of inputs, is at most
``NMSE_GOAL`` (bracketed by the table's betas where they reach it, then bisected on the ladder; the NMSE is taken
to fall with beta, as a softmax's does as it sharpens). It holds when ``beta*(T)`` exists at every T; around it the
NMSE falls at least as fast as ``beta^SLOPE_GOAL`` (the slope of log NMSE against log beta at 1/16, 1/4, 1, 4, 16
and 64 times ``beta*``, over those above ``NMSE_FLOOR``, is at most ``SLOPE_GOAL``); and ``beta*`` grows by at most
``BETA_GROWTH`` from the shortest T to the longest (softmax costs about log T). The same model gives the same
verdict on any grid.

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
REACH_LIMIT = 2.0 ** 16   # the largest beta the search for beta* tries (beta x score stays far below the masks')
# around beta*, the NMSE at these multiples of it: its fitted slope is at most SLOPE_GOAL (the points above beta* tell
# an error that stops falling; those below it rest on many inputs, where a few near ties decide the NMSE below 1e-3)
AROUND = (1 / 16, 1 / 4, 1, 4, 16, 64)
STEP = math.sqrt(2.0)     # the ladder's step: beta* is known to this factor
# inputs per T: a target that reads a selected token errs by about its own size on the inputs whose top two
# scores lie within about 1/beta, so its NMSE is the share of such inputs; with a few hundred of them the first
# beta reaching 1e-3 is set by the one input that happens to tie closest, and its ratio between two lengths is
# that of two such minima, which varies past 8x; with 4096, several inputs lie above the goal's share
SAMPLES, SELECTED_TOKEN_SAMPLES = 64, 4096
SELECTED_TOKEN_POSITIONS = 1 << 18   # at most this many positions per T for them: 4096 inputs up to T = 64
BATCH_CELLS = 4_000_000  # batch x T^2 attention weights per chunk: about 32 MB per head in float64
# the criterion reads the NMSE as a median of means over GROUPS groups of inputs: a target that reads a selected
# token errs by about its own size on the few inputs whose top two scores nearly tie, and below 1e-3 one such
# input among thousands (a gap under 1e-4) sets a plain mean and its slope; the table shows the plain NMSE
GROUPS = 8


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
    slopes: tuple[float | None, ...]             # per T, over the table's betas (None: fewer than two above the floor)
    smallest_beta: tuple[float | None, ...]      # per T, beta*: the smallest beta on the ladder reaching NMSE_GOAL
    parameters: int
    allocation: str
    seconds: float
    variances: tuple[float, ...] = ()            # per T, Var(target): what NMSE divides by
    distribution: str = Distribution.GAUSSIAN.value  # what the inputs were drawn from (data.Distribution)
    beyond: tuple[tuple[float, ...] | None, ...] = ()  # per T, the NMSE at each of AROUND times beta*

    def at(self, beta: float, seq_len: int) -> float:
        """The NMSE at one (beta, T) of the table."""
        return self.nmse[self.betas.index(float(beta))][self.seq_lens.index(int(seq_len))]

    @property
    def failures(self) -> tuple[str, ...]:
        found = []
        for j, T in enumerate(self.seq_lens):
            if self.smallest_beta[j] is None:
                found.append(f"T = {T}: NMSE above {NMSE_GOAL:g} at every beta up to {REACH_LIMIT:g}")
                continue
            slope = _slope(_around(self.smallest_beta[j]), self.beyond[j])
            if slope is not None and slope > SLOPE_GOAL:
                found.append(f"T = {T}: NMSE falls as beta^{slope:.2f} around beta* = {self.smallest_beta[j]:.4g}, "
                             f"slower than beta^{SLOPE_GOAL}")
        reached = [b for b in self.smallest_beta if b is not None]
        if len(reached) == len(self.seq_lens) and reached[-1] > BETA_GROWTH * reached[0] * (1 + 1e-9):
            found.append(f"the beta reaching {NMSE_GOAL:g} grows {reached[-1] / reached[0]:.3g}x from T = "
                         f"{self.seq_lens[0]} to T = {self.seq_lens[-1]} (at most {BETA_GROWTH:g}x)")
        return tuple(found)

    @property
    def holds(self) -> bool:
        return not self.failures

    def table(self) -> str:
        head = "beta \\ T " + "".join(f"{T:>11}" for T in self.seq_lens)
        rows = [f"{b:>9g}" + "".join(f"{v:>11.3g}" for v in row) for b, row in zip(self.betas, self.nmse)]
        slope = "slope    " + "".join(f"{s:>11.2f}" if s is not None else f"{'-':>11}" for s in self.slopes)
        least = "beta*    " + "".join(f"{b:>11.4g}" if b is not None else f"{'-':>11}" for b in self.smallest_beta)
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
                "beyond": [list(b) if b is not None else None for b in self.beyond],
                "variances": list(self.variances), "distribution": self.distribution,
                "holds": self.holds, "failures": list(self.failures), "allocation": self.allocation,
                "seconds": round(self.seconds, 3)}


def default_samples(target, seq_lens=(64,)) -> int:
    """The inputs per T ``check_compiled`` draws unless told: for a target that reads a selected token
    (``x[argmax(...)]``) ``SELECTED_TOKEN_SAMPLES``, at most ``SELECTED_TOKEN_POSITIONS`` positions at the longest
    T (the same count at every T: beta* is read off the inputs that tie closest, a statistic of their number);
    ``SAMPLES`` otherwise."""
    if not reads_selected_token(resolve_target(target).expr):
        return SAMPLES
    return max(SAMPLES, min(SELECTED_TOKEN_SAMPLES, SELECTED_TOKEN_POSITIONS // max(seq_lens)))


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
    samples = default_samples(target, seq_lens) if samples is None else samples
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
    measured: dict[tuple[float, int], float] = {}
    model = None

    def measure(beta: float, T: int) -> tuple[float, float]:
        """(the NMSE, its median of means over GROUPS groups of inputs) at one (beta, T)."""
        nonlocal model
        if (beta, T) not in measured:
            if model is None or model.beta != beta:
                model = model_for(beta)
            measured[beta, T] = _nmse(model, *data[T])
        return measured[beta, T]

    robust = lambda beta, T: measure(beta, T)[1]
    nmse = [tuple(measure(beta, T)[0] for T in seq_lens) for beta in betas]
    slopes = tuple(_slope(betas, [row[j] for row in nmse]) for j in range(len(seq_lens)))
    reaching = tuple(_reaching(lambda b, T=T: robust(b, T), betas) for T in seq_lens)
    beyond = tuple(None if b is None else tuple(robust(a, T) for a in _around(b)) for b, T in zip(reaching, seq_lens))
    return CompiledCheck(str(getattr(verdict.target, "name", None) or verdict.target), str(verdict.architecture),
                         ffn, betas, seq_lens, samples, tuple(nmse), slopes, reaching, model.parameter_count(),
                         str(model.plan), time.perf_counter() - started,
                         tuple(float(np.var(data[T][1])) for T in seq_lens), distribution.value, beyond)


def _around(beta: float) -> tuple[float, ...]:
    """The betas the slope is fitted at: ``AROUND`` times ``beta``, none below the ladder's first (1)."""
    return tuple(sorted({max(1.0, m * beta) for m in AROUND}))


def ladder(k: int) -> float:
    """The ``k``-th beta of the ladder the criterion reads: ``sqrt(2)^k``, exact at even ``k``."""
    return float(2 ** (k // 2) * (STEP if k % 2 else 1.0))


def _reaching(nmse_at, betas) -> float | None:
    """The smallest ladder beta at which ``nmse_at`` is at most ``NMSE_GOAL`` (None: none up to ``REACH_LIMIT``):
    the table's betas bracket it where they can, the rest of the ladder is searched by doubling and bisection."""
    top = round(2 * math.log2(REACH_LIMIT))
    index = lambda b: max(0, min(top, math.ceil(2 * math.log2(b) - 1e-9)))   # the first ladder beta >= b
    low, high = -1, None   # ladder indices: low does not reach (-1: below the ladder), high does
    for b in sorted(betas):
        if b <= REACH_LIMIT and nmse_at(b) <= NMSE_GOAL:
            high = index(b)
            break
        low = max(low, math.floor(2 * math.log2(b) + 1e-9)) if b >= 1 else low
    step = 4
    while high is None:   # doubling (four ladder steps at a time) above what the table tried
        k = min(top, max(low, 0) + step)
        if nmse_at(ladder(k)) <= NMSE_GOAL:
            high = k
        elif k == top:
            return None
        else:
            low = k
    while high - low > 1:
        middle = (low + high) // 2
        if nmse_at(ladder(middle)) <= NMSE_GOAL:
            high = middle
        else:
            low = middle
    return ladder(high)


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


def _nmse(model, X: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """The NMSE of ``model`` on ``X``, and its median of means: the median over ``GROUPS`` groups of inputs of
    each group's mean squared error (over the same variance)."""
    chunk = max(1, BATCH_CELLS // (X.shape[1] + 1) ** 2)
    with torch.no_grad():
        out = np.concatenate([model(torch.as_tensor(X[i:i + chunk])).numpy() for i in range(0, len(X), chunk)])
    errors = ((out.reshape(y.shape) - y) ** 2).reshape(len(y), -1).sum(-1) / max(1, y[0].size)
    variance = float(np.var(y))
    scale = variance if variance > 0 else 1.0   # a constant target (x.x - x.x): its plain squared error
    groups = np.array_split(errors, min(GROUPS, len(errors)))
    return float(errors.mean()) / scale, float(np.median([g.mean() for g in groups])) / scale


def _slope(betas, values) -> float | None:
    """The least-squares slope of log NMSE against log beta over the betas where NMSE is above the floor."""
    points = [(math.log(b), math.log(v)) for b, v in zip(betas, values) if NMSE_FLOOR < v < math.inf]
    if len(points) < 2:
        return None
    x, y = np.array(points).T
    return float(np.polyfit(x, y, 1)[0])
