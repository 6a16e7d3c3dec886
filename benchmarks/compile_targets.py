"""Random targets for the compile benchmark (``compile_random.py``), written for it and for nothing else: the
test suite's generators (tests/support/) are not used, so the compiler is measured on shapes it was not fitted to.

``draw(rng)`` returns a ``Draw``: a target text, the token dimension it is asked at and whether it is asked under
a causal mask. The shapes, each drawn with a fixed share:

* **scalar** tokens (``d = 1``): ``sum(x[t] ...)``, ``x[s] * x[t]`` in joint and nested selections, ``x[t]`` as
  a selection's own score, sums and means of products;
* **vector** scores (``d = 2`` or ``3``): ``dot``, ``bilinear``, one-token functions, ``norm(... )**2``, over
  ``T``, subsets ``S1``/``S2`` and ranges, in joint, nested and summed reductions, combined by ``+`` or ``F0``;
* **two-token** functions in a score (``f2(x[s], x[t])``, ``F0(x[s], x[t])``, ``f1(x[s] + x[t])``);
* **fixed** positions (``x[1]``, ``x[3]``, ``x[T]``, ``x[T-1]``) read by scores, one or several in one score;
* **offsets** (``x[t-1]`` over ``range(2, T+1)``, ``x[t+1]`` over ``range(1, T)``), beside fixed positions;
* **selected** contents (``x[argmax(...)]``, ``x[argmin(...) + 1]``) read by a later score or the answer;
* **hosted** witnesses: k-hop chains (a selection querying the token another one chose, 2 to 5 hops),
  one selection at two hosts (``min_{a,b} g + max_a min_b g``), two selections a fixed position could make;
* **linear** sums and means of tokens (``sum(x[t] for t in T)``, ``dot(a1, mean(...))``);
* the **mask**: a quarter of the draws are asked under a causal mask, some with prefix ranges
  ``range(1, s+1)``.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

FIXED = ("1", "2", "3", "T", "T-1")


@dataclass(frozen=True)
class Draw:
    shape: str
    text: str
    input_dim: int
    causal: bool


class _Writer:
    def __init__(self, rng: random.Random, causal: bool):
        self.rng, self.causal, self.count = rng, causal, 0

    def fresh(self) -> str:
        self.count += 1
        return "abcdeghjkmnpqruvwyz"[self.count - 1] if self.count <= 19 else f"v{self.count}"

    # ---- pieces ------------------------------------------------------------------------------------
    def domain(self, var: str, positions: bool = True) -> tuple[str, str]:
        """(the range, the read of the candidate's token over it)."""
        r = self.rng.random()
        if positions and r < 0.15:
            return "range(2, T+1)", f"x[{var}-1]"
        if positions and r < 0.22:
            return "range(1, T)", f"x[{var}+1]"
        if positions and r < 0.34:
            return self.rng.choice(["S1", "S2"]), f"x[{var}]"
        return "T", f"x[{var}]"

    def anchor(self) -> str:
        return f"x[{self.rng.choice(FIXED)}]"

    def vector_score(self, key: str, other: str) -> str:
        """A score comparing the candidate's ``key`` with ``other`` (another token)."""
        r = self.rng
        shape = r.choice(["dot", "dot", "bilinear", "bilinear", "f1", "f2", "norm", "sum", "dotparam"])
        if shape == "dot":
            return f"dot({key}, {other})"
        if shape == "bilinear":
            return f"bilinear(A{r.randint(1, 2)}, {other}, {key})"
        if shape == "f1":
            return f"f1({key}) + dot({key}, {other})"
        if shape == "f2":
            return f"f2({key}, {other})"
        if shape == "norm":
            return f"norm({key} - {other})**2"
        if shape == "dotparam":
            return f"dot(a1, {key}) - dot({key}, {other})"
        return f"dot({key}, {other}) + f1({key})"

    def one_token(self, key: str) -> str:
        return self.rng.choice([f"f1({key})", f"dot(a1, {key})", f"dot({key}, {key})",
                                f"bilinear(A1, {key}, {key})", f"norm({key})**2"])

    def kind(self) -> str:
        return self.rng.choice(["min", "max"])

    # ---- shapes --------------------------------------------------------------------------------------
    def vector(self) -> str:
        r = self.rng
        form = r.choice(["single", "pair", "nested", "summed", "aggregate", "prefix"])
        a = self.fresh()
        da, ka = self.domain(a)
        if form == "single":
            return f"{self.kind()}({self.one_token(ka)} for {a} in {da})"
        b = self.fresh()
        db, kb = self.domain(b)
        if form == "pair":
            return f"{self.kind()}({self.vector_score(kb, ka)} for {a} in {da} for {b} in {db})"
        if form == "nested":
            inner = f"{self.kind()}({self.vector_score(kb, ka)} for {b} in {db})"
            extra = r.choice(["", f"{self.one_token(ka)} + ", f"{self.one_token(ka)} - "])
            return f"{self.kind()}({extra}{inner} for {a} in {da})"
        if form == "summed":
            inner = f"{self.kind()}({self.vector_score(kb, ka)} for {b} in {db})"
            return f"{r.choice(['sum', 'mean'])}({inner} for {a} in {da})"
        if form == "aggregate":
            return f"{r.choice(['sum', 'mean'])}({self.vector_score(kb, ka)} for {a} in {da} for {b} in {db})" \
                if r.random() < 0.3 else f"{r.choice(['sum', 'mean'])}({self.one_token(ka)} for {a} in {da})"
        if self.causal:   # a prefix selection read at every position: the mask is its range
            return (f"{r.choice(['max', 'sum'])}({self.one_token(f'x[{a}]')} + {self.kind()}(dot(x[{a}], x[{b}]) "
                    f"for {b} in range(1, {a}+1)) for {a} in T)")
        return f"{self.kind()}({self.vector_score(kb, ka)} for {a} in {da} for {b} in {db})"

    def two_token(self) -> str:
        r = self.rng
        a, b = self.fresh(), self.fresh()
        da, ka = self.domain(a)
        db, kb = self.domain(b)
        score = r.choice([f"f2({ka}, {kb})", f"F0({ka}, {kb})", f"f1({ka} + {kb})", f"f2({ka} - {kb}, {kb})",
                          f"f2({ka}, {kb}) + dot({ka}, {kb})"])
        if r.random() < 0.5:
            return f"{self.kind()}({score} for {a} in {da} for {b} in {db})"
        return f"{self.kind()}({self.kind()}({score} for {b} in {db}) for {a} in {da})"

    def fixed(self) -> str:
        r = self.rng
        parts = []
        for _ in range(r.choice([1, 1, 2, 3])):
            a = self.fresh()
            da, ka = self.domain(a)
            anchors = [self.anchor() for _ in range(r.choice([1, 1, 2]))]
            score = " + ".join(self.vector_score(ka, q) for q in anchors)
            parts.append(f"{r.choice(['min', 'max', 'sum', 'mean'])}({score} for {a} in {da})")
        if r.random() < 0.3:
            parts.append(self.rng.choice([f"f1({self.anchor()})", f"dot({self.anchor()}, {self.anchor()})"]))
        return self.join(parts)

    def offsets(self) -> str:
        r = self.rng
        a = self.fresh()
        shape = r.choice(["previous", "previous", "gather", "next"])
        if shape == "previous":
            return f"{r.choice(['sum', 'mean', 'max', 'min'])}({self.vector_score(f'x[{a}-1]', f'x[{a}]')} " \
                   f"for {a} in range(2, T+1))"
        if shape == "next":
            return f"{r.choice(['sum', 'max'])}(dot(x[{a}+1], x[{a}]) for {a} in range(1, T))"
        # an offset and one or more fixed positions read at one position
        anchors = " + ".join(self.vector_score(f"x[{a}-1]", self.anchor()) for _ in range(r.choice([1, 2])))
        return f"{self.kind()}({anchors} for {a} in range(2, T+1))"

    def selected(self, hops: int) -> str:
        """``x[argmax(...)]``: ``hops`` selections, each querying the token the one before chose."""
        query = self.anchor() if self.rng.random() < 0.8 else f"x[argmax(f1(x[{(u := self.fresh())}]) for {u} in T)]"
        for _ in range(hops):
            v = self.fresh()
            dv, kv = self.domain(v)
            which = self.rng.choice(["argmax", "argmin"])
            query = f"x[{which}({self.vector_score(kv, query)} for {v} in {dv})]"
        return query

    def selection(self) -> str:
        r = self.rng
        token = self.selected(r.choice([1, 1, 2]))
        return r.choice([token, f"f1({token})", f"dot(a2, {token})", f"{self.one_token(token)} + {self.vector()}",
                         f"{self.kind()}({self.vector_score(f'x[{(w := self.fresh())}]', token)} for {w} in T)"])

    def hosted(self) -> str:
        r = self.rng
        shape = r.choice(["chain", "chain", "pair", "workers"])
        if shape == "chain":   # k-hop: x[argmax(dot(x[t-1], q) for t in range(2, T+1))] nested k times
            query = r.choice(["x[T]", "x[1]", "x[T-1]"])
            for _ in range(r.choice([2, 3, 3, 4, 5])):
                v = self.fresh()
                query = f"x[{r.choice(['argmax', 'argmax', 'argmin'])}(dot(x[{v}-1], {query}) for {v} in range(2, T+1))]"
            return r.choice([query, f"f1({query})", f"dot(a1, {query})"])
        if shape == "pair":    # one selection at two hosts: nested under a variable and joint
            a, b = self.fresh(), self.fresh()
            g = r.choice([f"dot(x[{a}], x[{b}])", f"bilinear(A1, x[{a}], x[{b}])", f"f2(x[{a}], x[{b}])",
                          f"norm(x[{a}] - x[{b}])**2"])
            inner = self.kind()
            return (f"{self.kind()}({g} for {a} in T for {b} in T) + "
                    f"{self.kind()}({inner}({g} for {b} in T) for {a} in T)")
        q = self.anchor()      # selections that one fixed position could make for itself
        parts = []
        for _ in range(r.choice([2, 2, 3])):
            v = self.fresh()
            dv, kv = self.domain(v, positions=r.random() < 0.3)
            parts.append(f"{self.kind()}({self.vector_score(kv, q)} for {v} in {dv})")
        return self.join(parts)

    def linear(self) -> str:
        r = self.rng
        a = self.fresh()
        da, ka = self.domain(a)
        total = f"{r.choice(['sum', 'mean'])}({ka} for {a} in {da})"
        return r.choice([total, f"dot(a1, {total})", f"f1({total})", f"{total} + x[{r.choice(['1', 'T'])}]",
                         f"dot({total}, {total})", f"{self.vector()} + dot(a2, {total})"])

    def scalar(self) -> str:
        r = self.rng
        a, b = self.fresh(), self.fresh()
        da, ka = self.domain(a)
        db, kb = self.domain(b)
        shape = r.choice(["sum", "max", "product", "nested", "mean_product", "mixed"])
        if shape == "sum":
            return f"{r.choice(['sum', 'mean'])}({ka} for {a} in {da})"
        if shape == "max":
            return f"{self.kind()}({r.choice([ka, f'{ka}*{ka}', f'f1({ka})', f'-{ka}'])} for {a} in {da})"
        if shape == "product":
            return f"{self.kind()}({ka}*{kb} for {a} in {da} for {b} in {db})"
        if shape == "nested":
            return f"{self.kind()}({self.kind()}({ka}*{kb} for {b} in {db}) for {a} in {da})"
        if shape == "mean_product":
            return f"{r.choice(['sum', 'mean'])}({ka}*{kb} for {a} in {da} for {b} in {db})"
        return f"{self.kind()}({ka}*{kb} + f1({kb}) for {a} in {da} for {b} in {db}) + sum({ka} for {a} in T)"

    def join(self, parts: list[str]) -> str:
        if len(parts) == 1:
            return parts[0]
        return self.rng.choice([" + ".join(parts), f"F0({', '.join(parts)})", " - ".join(parts)])


SHAPES = (("scalar", 0.14), ("vector", 0.2), ("two_token", 0.08), ("fixed", 0.12), ("offsets", 0.1),
          ("selection", 0.12), ("hosted", 0.14), ("linear", 0.06), ("combined", 0.04))


def draw(rng: random.Random) -> Draw:
    """One random target: its shape, text, token dimension and mask."""
    shape = rng.choices([s for s, _ in SHAPES], [w for _, w in SHAPES])[0]
    causal = rng.random() < 0.25
    writer = _Writer(rng, causal)
    if shape == "scalar":
        return Draw(shape, writer.scalar(), 1, causal)
    if shape == "combined":
        text = writer.join([getattr(writer, s)() for s in rng.sample(["vector", "fixed", "offsets", "two_token"], 2)])
    elif shape == "selection":
        text = writer.selection()
    else:
        text = getattr(writer, shape)()
    return Draw(shape, text, rng.choice([2, 2, 2, 3]), causal)
