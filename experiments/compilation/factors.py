"""A retrieval's score split into products of a host feature and a candidate feature: the query and key
coordinates of a compiled head. No torch here (``weights`` writes the products into ``W_Q`` and ``W_K``).

A retrieval head's score is ``q_s . k_t = beta * score(s, t)``: every term of the node's score is split
into a product of a host feature (read at the position making the selection) and a candidate feature
(read at the candidate); terms that read only the host are constant over the candidates and dropped. A
realization's function of tokens from both sides is split by ``separable``'s sum of products.
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

from experiments.compilation.separable import MAX_RANK, TOKEN_SPREAD, tanh_basis
from infoflow_smt.errors import CompileRefusal
from infoflow_smt.lang import expr as ex
from infoflow_smt.lang.language import to_text
from infoflow_smt.lang.trees import GroupRef, NodeRef, outermost, walk
from infoflow_smt.verify.arithmetic import is_vector


@dataclass(frozen=True)
class Factor:
    """One product of a score: ``coefficient * <host, candidate>`` (``rank`` coordinates of q and k).
    ``matrix``: a ``bilinear`` parameter; ``host_first``: the host is its first argument."""

    host: object
    candidate: object
    rank: int
    coefficient: float = 1.0
    matrix: str | None = None
    host_first: bool = True
    key_direct: bool = False    # the candidate feature is its own token: W_K reads the token slot
    query_direct: bool = False  # the host feature is a linear map of its own token: W_Q applies it
    floor: float | None = None  # the key is log(feature - floor), floor the feature's least value (``log_keys``)

    @property
    def query_constant(self) -> bool:
        """The host feature is a number: ``W_Q`` writes it from the acting classes' flags, with no slot."""
        return isinstance(self.host, ex.Num) and self.rank == 1


@dataclass(frozen=True)
class SmoothSide:
    """One side's features of a realization function of tokens read at both the host and the candidate
    (``_Splitter.split_smooth``). ``parts``: per argument, this side's sum of tokens (None where the side
    reads none of it). With ``u = H + K`` (host and candidate parts of the concatenated arguments) and
    ``F(u) = |u - c|^2 / m + 0.5 tanh(w . u + bias)``, ``part`` names the features:
    ``"square"`` (candidate): ``|K|^2 - 2 c . K``; ``"tanh"``: ``separable.TanhBasis`` features of
    ``w . H + bias`` (host) or ``w . K`` (candidate), on the box ``alpha x beta``. (The cross term ``2 H . K``
    is a product of two sums of tokens, an ordinary factor per argument.)"""

    function: str
    arity: int
    side: str
    part: str
    parts: tuple
    alpha: tuple[float, float] = (0.0, 0.0)
    beta: tuple[float, float] = (0.0, 0.0)


@dataclass(frozen=True)
class Selection:
    """What one retrieval head selects for one node: its factors (the query's and key's coordinates)."""

    node: str
    sign: int                 # +1 for max, -1 for min: the host's features are negated for a min
    factors: tuple[Factor, ...]
    host_var: str | None      # the bound variable the host plays (None at the output token)
    constant: tuple = ()      # (sign, term) read by the host alone: the same for every candidate

    @property
    def rank(self) -> int:
        return sum(f.rank for f in self.factors) + 1  # +1: the coordinate that masks non-candidates

    @property
    def copies_features(self) -> bool:
        """Whether the host recomputes the node's value from the winner's candidate features (its score is
        an exact sum of products); a score with approximated products is recomputed from the winner's
        tokens, exactly, so only the choice of the winner carries the approximation."""
        return not any(isinstance(f.host, SmoothSide) for f in self.factors)

    @property
    def key_width(self) -> int:
        """The winner's candidate features, which the value copies: the host recomputes the node's value
        from them (a tie between candidates of equal score then averages equal values)."""
        return sum(f.rank for f in self.factors) if self.copies_features else 0


def selection(node, tree, d: int, alone: bool, host_holds, realization=None) -> Selection:
    """``alone``: the head selects no other node, so its query may read the host's token directly;
    ``host_holds(node)``: whether every host knows that global value."""
    data = tree.nodes[node]
    host_var = next(iter(data["bound"]), None)
    sign = -1 if data["sense"] in ("min", "argmin") else 1
    split = _Splitter(tree, data["var"], d, host_holds, realization)
    factors = tuple(_direct(f, data["var"], host_var, d, alone)
                    for sign_, term in data["terms"] for f in split.factors(term, float(sign_)))
    constant = tuple((sign_, t) for sign_, t in data["terms"] if data["var"] not in reads(t, tree))
    return Selection(node, sign, factors, host_var, constant)


SCORE_CALLS = ("dot", "bilinear", "norm", "min", "max")   # not one of the realization's functions


def _direct(f: Factor, var: str, host_var: str | None, d: int, alone: bool) -> Factor:
    own = lambda e, v: isinstance(e, ex.Content) and e.index == ex.VarIndex(v)
    return Factor(f.host, f.candidate, f.rank, f.coefficient, f.matrix, f.host_first, floor=f.floor,
                  key_direct=f.rank == d and own(f.candidate, var),
                  query_direct=alone and host_var is not None and f.rank == d and own(f.host, host_var))


def is_count(node: str, tree) -> bool:
    """A sum of a constant over a domain (``sum(1 for t in S1)``): a count the network knows (docs/model.md,
    normal form rule 3), given to every position with the positional features."""
    data = tree.nodes[node]
    return data["kind"] == "aggregate" and data["sense"] == "sum" and isinstance(data["score"], ex.Num)


# ---- splitting a score into host x candidate products ------------------------------------------------
def reads(e, tree) -> frozenset[str]:
    """The variables ``e`` depends on, through selections too (a selection depends on its bound ones)."""
    if isinstance(e, ex.Content):
        index = e.index
        if isinstance(index, (ex.VarIndex, ex.OffsetIndex)):
            return frozenset({index.name})
        return reads(index, tree) if isinstance(index, GroupRef) else frozenset()
    if isinstance(e, GroupRef):
        return frozenset(tree.nodes[outermost(tree, e.group)]["bound"])
    if isinstance(e, NodeRef):
        return frozenset(tree.nodes[e.node]["bound"])
    if isinstance(e, ex.BinOp):
        return reads(e.left, tree) | reads(e.right, tree)
    if isinstance(e, ex.Neg):
        return reads(e.operand, tree)
    if isinstance(e, ex.Call):
        return frozenset().union(*(reads(a, tree) for a in e.args))
    return frozenset()


def node_of(e, tree) -> str:
    return outermost(tree, e.group) if isinstance(e, GroupRef) else e.node


def _global_nodes(e, tree) -> frozenset[str]:
    """The selections and aggregates ``e`` reads that depend on no variable (the same at every position;
    a count, known everywhere, is not one), and the fixed positions' tokens it reads (the same wherever
    they are read)."""
    found = set()
    for sub in walk(e):
        if isinstance(sub, (GroupRef, NodeRef)):
            node = node_of(sub, tree)
            if not reads(sub, tree) and not is_count(node, tree):
                found.add(node)
        elif isinstance(sub, ex.Content) and isinstance(sub.index, ex.FixedIndex):
            found.add(sub.index)
    return frozenset(found)


def term_text(e) -> str:
    try:
        return to_text(e)
    except (TypeError, ValueError, AttributeError, KeyError):  # a tree's placeholders (GroupRef, NodeRef) have no text of their own
        return repr(e)


class _Splitter:
    """Splits one score term into products of a host feature and a candidate feature, one method per
    construct (``split_Call``, ``split_BinOp``, ...); anything else is refused, naming the term."""

    def __init__(self, tree, var: str, d: int, host_holds=lambda node: False, realization=None):
        self.tree, self.var, self.d, self.host_holds, self.realization = tree, var, d, host_holds, realization

    def factors(self, term, coefficient: float) -> list[Factor]:
        if self.var not in reads(term, self.tree):
            return []  # the same for every candidate: it cannot change which one wins
        method = getattr(self, f"split_{type(term).__name__}", None)
        only_candidate = not reads(term, self.tree) - {self.var}
        globals_ = _global_nodes(term, self.tree)
        if only_candidate and not (globals_ and all(self.host_holds(n) for n in globals_)):
            return [Factor(ex.Num(1.0), term, 1, coefficient)]
        # a term that reads a global value (a selection or aggregate over every position) the host holds is
        # split, so that the host supplies it; the candidate computes the whole term if it cannot be split
        found = method(term, coefficient) if method else None
        if found is None and only_candidate:
            return [Factor(ex.Num(1.0), term, 1, coefficient)]
        if found is None:
            raise CompileRefusal("score_form", term_text(term),
                                 f"the score term {term_text(term)} is not a sum of products of a host feature "
                                 f"and a candidate feature (of {self.var})")
        return found

    def _sides(self, a, b):
        """(host, candidate, host_first) when one of ``a``, ``b`` reads the candidate and the other does not."""
        ra, rb = self.var in reads(a, self.tree), self.var in reads(b, self.tree)
        only = {self.var}
        if rb and not ra and reads(b, self.tree) <= only:
            return a, b, True
        if ra and not rb and reads(a, self.tree) <= only:
            return b, a, False
        return None

    def split_Neg(self, term, coefficient):
        return self.factors(term.operand, -coefficient)

    def split_BinOp(self, term, coefficient):
        if term.op in "+-":
            right = -coefficient if term.op == "-" else coefficient
            return self.factors(term.left, coefficient) + self.factors(term.right, right)
        if term.op == "*" and isinstance(term.left, ex.Num):
            return self.factors(term.right, coefficient * term.left.value)
        if term.op == "*" and isinstance(term.right, ex.Num):
            return self.factors(term.left, coefficient * term.right.value)
        for known, other in ((term.left, term.right), (term.right, term.left)):
            if term.op == "*" and isinstance(known, (GroupRef, NodeRef)) and is_count(node_of(known, self.tree),
                                                                                     self.tree):
                return [dataclasses.replace(f, host=ex.BinOp("*", known, f.host))
                        for f in self.factors(other, coefficient)]
        sides = self._sides(term.left, term.right) if term.op == "*" else None
        vectors = is_vector(term.left, self.tree) or is_vector(term.right, self.tree)
        if sides and (not vectors or self.d == 1):  # numbers, or scalar tokens: x[s] * x[t] is <x_s, x_t> at d = 1
            return [Factor(sides[0], sides[1], 1, coefficient)]
        return None

    def split_Call(self, term, coefficient):
        if term.name == "dot":
            sides = self._sides(*term.args)
            return [Factor(sides[0], sides[1], self.d, coefficient)] if sides else None
        if term.name == "bilinear":
            sides = self._sides(*term.args[1:])
            if sides:
                return [Factor(sides[0], sides[1], self.d, coefficient, term.args[0].name, sides[2])]
        if term.name not in SCORE_CALLS:
            return self.split_smooth(term, coefficient)
        return None

    def split_smooth(self, term, coefficient):
        """A realization function of tokens from both sides (``SmoothSide``): its quadratic splits into
        products exactly, its ``0.5 tanh(w . u + bias)`` into ``separable.TanhBasis`` products on the box the
        tokens' scale bounds. Only where every argument is a sum of tokens (its scale is then known)."""
        if self.realization is None or not all(is_vector(a, self.tree) for a in term.args):
            return None
        sides = [_token_sides(a, self.var, self.tree) for a in term.args]
        if any(s is None for s in sides):
            return None
        d, m = self.d, self.d * len(term.args)
        f = self.realization.function(term.name, m)
        weights = [float((f.weight[j * d:(j + 1) * d] ** 2).sum() ** 0.5) for j in range(len(term.args))]
        host_reach = TOKEN_SPREAD * sum(w * s[1] for w, s in zip(weights, sides))
        candidate_reach = TOKEN_SPREAD * sum(w * s[3] for w, s in zip(weights, sides))
        alpha = (f.bias - host_reach, f.bias + host_reach)
        beta = (-candidate_reach, candidate_reach)
        basis = tanh_basis(alpha, beta)
        if basis is None:
            raise CompileRefusal("score_form", term_text(term),
                                 f"the score term {term_text(term)} needs more than {MAX_RANK} products of a host "
                                 f"and a candidate feature (its tanh's argument spans [{alpha[0]:.3g}, {alpha[1]:.3g}] x "
                                 f"[{beta[0]:.3g}, {beta[1]:.3g}] on the tokens' scale)")
        hosts, candidates = tuple(s[0] for s in sides), tuple(s[2] for s in sides)
        side = functools.partial(SmoothSide, term.name, m)
        factors = [Factor(ex.Num(1.0), side("candidate", "square", candidates), 1, coefficient / m)]
        factors += [Factor(h, k, d, 2 * coefficient / m) for h, _, k, _ in sides if h is not None and k is not None]
        factors.append(Factor(side("host", "tanh", hosts, alpha=alpha, beta=beta),
                              side("candidate", "tanh", candidates, alpha=alpha, beta=beta),
                              basis.rank, 0.5 * coefficient))
        return factors


def _token_sides(e, var: str, tree):
    """``e`` as (host part, its scale, candidate part, its scale): each part a sum of tokens (None: none),
    its scale the sum of the tokens' absolute coefficients; None when ``e`` is no sum of tokens or a token
    reads the candidate's variable and another."""
    if isinstance(e, ex.Content):
        read = reads(e, tree)
        if var not in read:
            return e, 1.0, None, 0.0
        return (None, 0.0, e, 1.0) if read <= {var} else None
    if isinstance(e, ex.Neg):
        inner = _token_sides(e.operand, var, tree)
        return inner and (_negated(inner[0]), inner[1], _negated(inner[2]), inner[3])
    if isinstance(e, ex.BinOp) and e.op in "+-":
        left, right = _token_sides(e.left, var, tree), _token_sides(e.right, var, tree)
        if left is None or right is None:
            return None
        join = lambda a, b: a if b is None else (_negated(b) if e.op == "-" else b) if a is None else ex.BinOp(e.op, a, b)
        return join(left[0], right[0]), left[1] + right[1], join(left[2], right[2]), left[3] + right[3]
    if isinstance(e, ex.BinOp) and e.op == "*":
        number, other = (e.left, e.right) if isinstance(e.left, ex.Num) else (e.right, e.left)
        inner = _token_sides(other, var, tree) if isinstance(number, ex.Num) else None
        scaled = lambda p: None if p is None else ex.BinOp("*", number, p)
        scale = abs(float(number.value)) if isinstance(number, ex.Num) else 0.0
        return inner and (scaled(inner[0]), scale * inner[1], scaled(inner[2]), scale * inner[3])
    return None


def _negated(e):
    return None if e is None else ex.Neg(e)
