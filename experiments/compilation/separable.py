"""``tanh(a + b)`` as a finite sum of products ``sum_k h_k(a) g_k(b)``: what lets a head score a function of
two tokens, one read at the host and one at the candidate. No torch here (``weights`` evaluates it).

A realization's function of several tokens (``F0(x[s], x[t])``, ``f1(x[s] + x[t])``; ``lang.realization``'s
``SmoothFunction``) is a quadratic, which splits into products exactly, plus ``0.5 tanh(w . u + bias)``,
whose argument splits into a host part ``a`` and a candidate part ``b``. The kernel ``tanh(a + b)`` has no
finite rank, but on a bounded box its singular values fall geometrically (it is analytic, its poles at
``a + b = +-i pi / 2``), so a few products approximate it uniformly: the truncated singular value
decomposition of ``tanh(a_i + b_j)`` on Chebyshev points, each singular vector extended off the points
through the kernel itself (Nystrom), gives features that are sums of tanh's, bounded everywhere:

>>> basis = tanh_basis((-2.0, 2.0), (-2.0, 2.0))
>>> a, b = np.linspace(-2, 2, 41), np.linspace(-2, 2, 43)
>>> error = np.abs(basis.host(a) @ basis.candidate(b).T - np.tanh(a[:, None] + b[None, :])).max()
>>> bool(error <= TANH_TOLERANCE), basis.rank <= 12
(True, True)

The box comes from the tokens' scale: a weight ``w`` times a token of unit variance per coordinate lies
within ``TOKEN_SPREAD |w|`` of zero except with probability about 4e-8 (``TOKEN_SPREAD`` standard deviations
of a Gaussian projection); outside the box the features stay bounded and the error grows smoothly.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

TOKEN_SPREAD = 5.5        # standard deviations of w . x the box covers, for tokens of unit scale
TANH_TOLERANCE = 2e-4     # the largest error of the products on the box (the score's tanh term is 0.5 tanh)
MAX_RANK = 24             # more products than this: refused (a head would need that many dimensions)
_LANDMARKS = 48           # Chebyshev points per side; the rank is found on a grid four times as fine
_CHECK_POINTS = 193


@dataclass(frozen=True, eq=False)
class TanhBasis:
    """``tanh(a + b) ~= host(a) . candidate(b)`` for ``a`` in ``alpha``, ``b`` in ``beta``: ``rank`` products.

    ``host(a) = tanh(a + beta_points) @ host_weights``, ``candidate(b) = tanh(alpha_points + b) @
    candidate_weights``: each feature is a weighted sum of tanh's of its own side's value."""

    alpha: tuple[float, float]
    beta: tuple[float, float]
    alpha_points: np.ndarray
    beta_points: np.ndarray
    host_weights: np.ndarray       # (landmarks, rank)
    candidate_weights: np.ndarray  # (landmarks, rank)
    error: float                   # the largest error found on the check grid

    @property
    def rank(self) -> int:
        return int(self.host_weights.shape[1])

    def host(self, a: np.ndarray) -> np.ndarray:
        return np.tanh(np.asarray(a, dtype=float)[..., None] + self.beta_points) @ self.host_weights

    def candidate(self, b: np.ndarray) -> np.ndarray:
        return np.tanh(self.alpha_points + np.asarray(b, dtype=float)[..., None]) @ self.candidate_weights


def _chebyshev(lo: float, hi: float, n: int) -> np.ndarray:
    k = np.arange(n)
    return (lo + hi) / 2 + (hi - lo) / 2 * np.cos((2 * k + 1) * np.pi / (2 * n))


@functools.lru_cache(maxsize=256)
def tanh_basis(alpha: tuple[float, float], beta: tuple[float, float]) -> TanhBasis | None:
    """The fewest products whose error on the box ``alpha x beta`` is at most ``TANH_TOLERANCE``; None when
    ``MAX_RANK`` products do not reach it."""
    a_points, b_points = _chebyshev(*alpha, _LANDMARKS), _chebyshev(*beta, _LANDMARKS)
    U, s, Vt = np.linalg.svd(np.tanh(a_points[:, None] + b_points[None, :]))
    a_check, b_check = np.linspace(*alpha, _CHECK_POINTS), np.linspace(*beta, _CHECK_POINTS)
    exact = np.tanh(a_check[:, None] + b_check[None, :])
    towards_a = np.tanh(a_check[:, None] + b_points[None, :])   # the kernel at the check grid's a
    towards_b = np.tanh(a_points[:, None] + b_check[None, :])
    for rank in range(1, min(MAX_RANK, _LANDMARKS) + 1):
        root = np.sqrt(s[:rank])  # the 1/s of the extension, split evenly between the sides
        host_weights, candidate_weights = Vt[:rank].T / root, U[:, :rank] / root
        error = float(np.abs((towards_a @ host_weights) @ (candidate_weights.T @ towards_b) - exact).max())
        if error <= TANH_TOLERANCE:
            return TanhBasis(alpha, beta, a_points, b_points, host_weights, candidate_weights, error)
    return None
