"""Seeded random targets built from selections, for the differential search for false "no"s (issue 37).

Written apart from ``generators.py`` on purpose: it writes the shapes the solver's earlier blind spots came
from, each with every switch of the architecture.

* **chains**: ``x[argmax(score(x[t], x[argmax(score(x[u], Q) ...)]) ...)]``, a selection whose query is the
  token another selection chose, down to a query ``Q`` that is a fixed position (or ``o``);
* **hosts**: one selection written at several hosts: nested under a variable and alone
  (``min_{a,b} g + max_a min_b g``), at a fixed position and at the output token, or twice in two spellings;
* **workers**: several selections reading one fixed position, anywhere in the sequence (``1``, ``2``, ``3``,
  ``T-1``, ``T``), which that position could make for itself;
* **offsets**: keys ``x[t-1]`` over ``range(2, T+1)``, and a winner's neighbour (``x[argmax(...) - 1]``).

Switches: positional encoding (mostly on when the target tells positions apart, sometimes not), the causal
mask, ``readout="last"``, the rank rule at narrow widths, and answers at every position. ``chain_case(i)`` is
case ``i`` of a fixed set: a disagreement reproduces from its index alone.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

import infoflow_smt as ifs

FIXED = ("1", "2", "3", "T-1", "T")
VARIABLES = "tuvwrs"


@dataclass(frozen=True)
class ChainCase:
    index: int
    text: str
    arch: ifs.Architecture

    def __str__(self) -> str:
        return f"chain case {self.index}: {self.text} on {self.arch}"


class _Writer:
    def __init__(self, rng: random.Random, positional: bool, answer: bool, last: bool, causal: bool):
        self.rng, self.positional, self.answer, self.last, self.causal = rng, positional, answer, last, causal
        self.used = 0

    def fresh(self) -> str:
        self.used += 1
        return VARIABLES[(self.used - 1) % len(VARIABLES)] + ("" if self.used <= len(VARIABLES) else str(self.used))

    def anchor(self) -> str:
        """A query held somewhere from the start: the answering position, a fixed position (or, without
        positional encoding, ``x[T]`` read at the last position, or a selection made for no one)."""
        if self.answer and self.rng.random() < 0.7:
            return "x[o]"
        if self.positional:
            return f"x[{self.rng.choice(FIXED)}]"
        if self.last and self.rng.random() < 0.7:
            return "x[T]"
        var = self.fresh()
        return f"x[argmax(f1(x[{var}]) for {var} in T)]"

    def domain(self, var: str) -> tuple[str, str]:
        """(the domain, the key the candidate reads)."""
        roll = self.rng.random()
        if self.positional and roll < 0.35:
            return "range(2, T+1)", f"x[{var}-1]"
        if self.positional and roll < 0.45:
            return self.rng.choice(["range(1, T)", "S1"]), f"x[{var}]"
        if self.answer and (self.causal or roll < 0.6):
            return "range(1, o+1)", f"x[{var}]"
        return "T", f"x[{var}]"

    def score(self, key: str, query: str) -> str:
        r = self.rng
        shape = r.choice(["dot", "dot", "bilinear", "f1", "sum"])
        if shape == "dot":
            return f"dot({key}, {query})"
        if shape == "bilinear":
            return f"bilinear(A{r.randint(1, 2)}, {query}, {key})"
        if shape == "f1":
            return f"f1({key}) + dot({key}, {query})"
        return f"dot({key}, {query}) + dot(a1, {key})"

    def selected(self, depth: int) -> str:
        """``x[argmax(...)]``: a chain of ``depth`` selections, each querying the last one's winner."""
        query = self.anchor() if depth <= 1 else self.selected(depth - 1)
        var = self.fresh()
        domain, key = self.domain(var)
        which = self.rng.choice(["argmax", "argmin"])
        return f"x[{which}({self.score(key, query)} for {var} in {domain})]"

    def value(self, query: str) -> str:
        """A min or max over one variable, querying ``query``."""
        var = self.fresh()
        domain, key = self.domain(var)
        return f"{self.rng.choice(['min', 'max'])}({self.score(key, query)} for {var} in {domain})"

    def chain(self) -> str:
        inner = self.selected(self.rng.choice([1, 2, 2, 3]))
        return self.rng.choice([f"f2({inner})", f"dot(a2, {inner})", inner])

    def hosts(self) -> str:
        r = self.rng
        a, b = self.fresh(), self.fresh()
        shape = r.choice(["pair", "fixed", "spelling"])
        if shape == "pair":
            g = r.choice([f"dot(x[{a}], x[{b}])", f"bilinear(A1, x[{a}], x[{b}])", f"f2(x[{a}], x[{b}])"])
            outer = r.choice(["min", "max"])
            return (f"{r.choice(['min', 'max'])}({g} for {a} in T for {b} in T) + "
                    f"{outer}(min({g} for {b} in T) for {a} in T)")
        if shape == "fixed":
            query = self.anchor()
            first = self.value(query)
            second = f"f1({self.selected_on(query)})"
            return f"{first} + {second}"
        return self.spelled_twice()

    def spelled_twice(self) -> str:
        """One selection in two spellings, ``max(f)`` and ``-min(-f)`` over another variable name."""
        domain, key = self.domain("@")
        score = self.score(key, self.anchor())
        kind = self.rng.choice(["min", "max"])
        other = "max" if kind == "min" else "min"
        a, b = self.fresh(), self.fresh()
        first = f"{kind}({score.replace('@', a)} for {a} in {domain})"
        second = f"-{other}(-({score.replace('@', b)}) for {b} in {domain})"
        return f"F0({first}, {second})"

    def selected_on(self, query: str) -> str:
        var = self.fresh()
        domain, key = self.domain(var)
        return f"x[argmax({self.score(key, query)} for {var} in {domain})]"

    def workers(self) -> str:
        query = self.anchor()
        return " + ".join(self.value(query) for _ in range(self.rng.choice([2, 2, 3])))

    def target(self) -> str:
        shape = self.rng.choice(["chain", "chain", "hosts", "workers"])
        return getattr(self, shape)()


def chain_case(index: int, seed: int = 0) -> ChainCase:
    """Case ``index`` of set ``seed``: a target of one of the shapes above on a small architecture with random
    switches."""
    rng = random.Random(37_000 + index + 1_000_003 * seed)
    positional = rng.random() < 0.65
    answer = rng.random() < 0.15
    causal = rng.random() < 0.25
    last = not answer and rng.random() < 0.2 and not (causal and positional)
    text = _Writer(rng, positional, answer, last, causal).target()
    if rng.random() < 0.1 and not (causal and last):   # positions told apart, or not, against the target's text
        positional = not positional
    rank_aware = rng.random() < 0.15
    d = rng.choice([2, 2, 3])
    layers = rng.choice([1, 2, 2, 3, 3])
    arch = ifs.Architecture(heads=tuple(rng.choice([1, 1, 2]) for _ in range(layers)),
                            embed_dim=rng.choice([d, 2 * d]) if rank_aware else 32, input_dim=d,
                            positional=positional, causal=causal, rank_aware=rank_aware,
                            readout="last" if last else "output")
    return ChainCase(index, text, arch)
