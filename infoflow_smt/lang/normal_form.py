"""The normal form of a target: one spelling per function, before the comparison tree is built.

A verdict belongs to the function, not to its text (docs/model.md, section 2). The rules below keep the
value of the expression on every input (up to rounding) and are applied bottom-up, with sympy doing the
arithmetic on opaque atoms (contents, calls, reductions):

1. **Arithmetic** is expanded and collected: zero factors and terms that cancel vanish
   (``0 * dot(...)``, ``f1(x[t]) - f1(x[t])``); ``dot`` and ``bilinear`` are expanded over sums of
   vectors (they are bilinear), ``norm(v)**2`` is ``dot(v, v)``.
2. **Nested selections of one direction join**: inside a ``min`` an additive term ``c * min(...)`` with
   ``c > 0`` (or ``c * max(...)`` with ``c < 0``) is one joint reduction with it, ``min_s (a + min_t b) =
   min_{s,t} (a + b)``; likewise for ``max``.
3. **Hoisting**: additive terms that do not depend on a reduction's variables leave it,
   ``min_v (a(v) + c) = min_v a(v) + c`` (``kth_largest`` and ``mean`` alike; an ``argmin`` drops them;
   ``sum_v c = c * sum_v 1``, a count the network knows).
4. **Splitting**: a joint ``min``/``max``/``mean``/``sum`` whose terms fall into groups over disjoint
   variables is one reduction per group, ``min_{a,b} f(a) + g(b) = min_a f(a) + min_b g(b)``; a variable
   no term reads disappears (for a ``sum`` it leaves its count as a factor).
5. **Scale and sign**: the coefficient of the leading term leaves the reduction, ``min(2 f) = 2 min(f)``,
   ``min(-f) = -max(f)``, so scaled spellings of one selection coincide.
6. **A selection over ties** (a score that does not depend on the variable) is its value, or, for an
   ``argmin``/``argmax``, the first position of its domain (the tie rule of ``Target.evaluate``).
7. **Canonical variables**: a reduction's variables are named by its height (how many reductions nest
   in it) and by the labelling of its joint variables that gives the smallest text, so one selection
   written twice (same kind, domain and score up to renaming its variables; ``dot`` is symmetric) becomes
   one sub-expression, which the comparison tree makes once. At the end the names are replaced by the
   user's own names, the first spelling in text order (two reductions side by side may then share a name;
   nested ones never do).
8. **Linearity of sums and means**: each additive term is its own reduction and its factors that read
   none of the reduction's variables leave it, ``mean_t (f(s) g(t) + h(t)) = f(s) mean_t g(t) + mean_t h(t)``;
   a ``dot`` (or ``bilinear``) whose sides read disjoint variables takes the reduction inside, on each side,
   ``sum_t dot(x[t], x[s]) = dot(sum_t x[t], x[s])``, ``mean_{s,t} <x_s, x_t> = <mean_s x_s, mean_t x_t>``.
   So a statistic each position can average is written as one.
9. **A selection its elimination makes twice is made once**: in a joint ``min``/``max``, hold some of the
   variables (a separator); the others fall into components, each a reduction of its own given the held
   ones, ``min_{s,t,u} <x_s,x_t> + <x_t,x_u> = min_t (min_s <x_s,x_t> + min_u <x_t,x_u>)``. Two components
   equal up to renaming their variables and a positive factor are one selection made twice: one goes, the
   other takes its factor, ``= min_t 2 min_s <x_s,x_t> = 2 min_{s,t} <x_s,x_t>``, the spelling the nested
   form gets from rules 7 and 2. Only ``min``/``max``: a ``kth_largest`` of a sum over a product is not a
   sum of k-th values, and sums and means are linear already (rule 8).
10. **A maximum of an inner product over a pair is on its diagonal**: a ``max`` over two variables of one
   domain (the others held) of ``sum_ij C_ij dot(a_i(s), a_j(t)) + h(s) + h(t)``, ``C`` a symmetric positive
   semi-definite matrix of numbers, is ``max_s`` of the same at ``t = s`` (Cauchy-Schwarz: the form at
   ``(s, t)`` is at most the mean of its values at ``(s, s)`` and ``(t, t)``); a ``min`` when the negated
   terms are such a form. Only ``dot`` is an inner product: ``bilinear(A1, ...)`` has an unknown matrix, and
   a ``min`` of ``dot`` over a pair is not on the diagonal.

11. **A reduction over the neighbours of its candidates is one over the candidates**: a ``min``, ``max``,
   ``kth_largest``, ``sum`` or ``mean`` (not an ``argmin``/``argmax``: its value is the position) of one
   variable that reads it only at offsets, the largest ``m``, is the same reduction over ``u = t + m``, its
   range shifted by ``m``, when the shifted range stays inside the sequence:
   ``max(f1(x[t-1]) for t in range(2, T+1)) = max(f1(x[t]) for t in range(1, T))``. Every candidate then
   reads its own token and the ones before it, what the causal mask lets it see.

Joint reductions of more than ``MAX_LABELLED`` variables are labelled by a signature of the terms each
variable reads instead of by trying every labelling.

>>> from infoflow_smt.lang.language import parse_target_expr, to_text
>>> to_text(normalize(parse_target_expr("max(f1(x[t]) + max(f2(x[s]) for s in T) for t in T)")))
'max(f1(x[t]) for t in T) + max(f2(x[t]) for t in T)'
>>> to_text(normalize(parse_target_expr("min(f1(x[a]) + f2(x[b]) for a in T for b in T)")))
'min(f1(x[a]) for a in T) + min(f2(x[a]) for a in T)'
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Iterable

import sympy

from infoflow_smt.lang import expr as ex
from infoflow_smt.lang.language import to_text

MAX_LABELLED = 6        # joint variables labelled by trying every labelling (6! = 720)
MAX_EXPANSION = 512     # terms an expansion may produce; a larger product stays unexpanded
MAX_COPY_SEARCH = 8     # variables of a joint reduction searched for copies (rule 9): as many as a text may join
_FLIP = {ex.ReduceKind.MIN: ex.ReduceKind.MAX, ex.ReduceKind.MAX: ex.ReduceKind.MIN,
         ex.ReduceKind.ARGMIN: ex.ReduceKind.ARGMAX, ex.ReduceKind.ARGMAX: ex.ReduceKind.ARGMIN}
_SPLITS = (ex.ReduceKind.MIN, ex.ReduceKind.MAX, ex.ReduceKind.SUM, ex.ReduceKind.MEAN)
_Term = tuple[sympy.Expr, "ex.Expr | None"]   # (coefficient, monomial; None for a constant)


def normalize(expression: ex.Expr) -> ex.Expr:
    """The normal form of ``expression`` (module docstring): the same function, a canonical spelling.

    >>> from infoflow_smt.lang.language import parse_target_expr, to_text
    >>> to_text(normalize(parse_target_expr("min(2 * dot(x[t], x[s]) for s in T for t in T)")))
    '2 * min(dot(x[s], x[t]) for s in T for t in T)'
    """
    normalizer = _Normalizer()
    found = normalizer.display(tidy(normalizer.expr(normalizer.value(expression))))
    shifted = _reindexed(found)
    return found if shifted == found else normalize(shifted)


def _reindexed(e: ex.Expr) -> ex.Expr:
    """Rule 11, bottom up."""
    e = ex.map_children(e, _reindexed)
    if not (isinstance(e, ex.Reduce) and len(e.bindings) == 1 and not e.kind.returns_index):
        return e
    moved = over_neighbours(e)
    return e if moved is None else moved[0]


def over_neighbours(selection: ex.Reduce) -> tuple[ex.Reduce, int] | None:
    """``selection`` of one variable read only at offsets, the largest ``m != 0``, as the same comparison over
    ``t + m`` (rule 11), and ``m``; None where there is no such move. For an ``argmin``/``argmax`` the winner
    moves by ``m`` too: the position the moved one picks is ``m`` after the original's."""
    if len(selection.bindings) != 1:
        return None
    (binding,) = selection.bindings
    offsets = _offsets(selection.body, binding.var)
    if not offsets or max(offsets) == 0:
        return None
    m = max(offsets)
    domain = _shifted(binding.domain, m)
    if domain is None:
        return None
    body = _read_at(selection.body, binding.var, -m)
    return ex.Reduce(selection.kind, body, (ex.Binding(binding.var, domain),), selection.k), m


def _offsets(e: ex.Expr, var: str) -> set[int] | None:
    """The offsets at which ``e`` reads ``var``'s neighbours (0: its own token); None when ``var`` bounds a
    nested range (its reads are then not all tokens)."""
    found: set[int] = set()
    stack = [e]
    while stack:
        node = stack.pop()
        if isinstance(node, ex.Content) and isinstance(node.index, (ex.VarIndex, ex.OffsetIndex)) \
                and node.index.name == var:
            found.add(node.index.offset if isinstance(node.index, ex.OffsetIndex) else 0)
        if isinstance(node, ex.Reduce) and any(var in ex.domain_variables(b.domain) for b in node.bindings):
            return None
        stack += ex.children(node)
    return found


def _shifted(domain: ex.Domain, m: int) -> ex.Range | None:
    """``domain`` moved by ``m`` positions, where it stays inside ``1..T`` at every length (fixed bounds only)."""
    if not isinstance(domain, ex.Range) or ex.domain_variables(domain):
        return None

    def move(b: ex.FixedIndex) -> ex.FixedIndex:
        return ex.FixedIndex(b.position - m, True) if b.from_end else ex.FixedIndex(b.position + m)

    start, stop = move(domain.start), move(domain.stop)
    if (not start.from_end and start.position < 1) or (stop.from_end and stop.position < -1):
        return None
    return ex.Range(start, stop)


def _read_at(e: ex.Expr, var: str, by: int) -> ex.Expr:
    """``e`` with every read of ``var``'s neighbours moved ``by`` positions."""
    if isinstance(e, ex.Content) and isinstance(e.index, (ex.VarIndex, ex.OffsetIndex)) and e.index.name == var:
        offset = (e.index.offset if isinstance(e.index, ex.OffsetIndex) else 0) + by
        return ex.Content(ex.OffsetIndex(var, offset) if offset else ex.VarIndex(var))
    return ex.map_children(e, lambda c: _read_at(c, var, by))


def _expand(value: sympy.Expr) -> sympy.Expr:
    if _size(value) > MAX_EXPANSION:
        return value
    return sympy.expand(value, power_base=False, power_exp=False, log=False, mul=True, multinomial=True)


def _size(value: sympy.Expr) -> int:
    """An upper bound on the terms ``_expand`` would produce (capped just above the limit)."""
    cap = MAX_EXPANSION + 1
    if isinstance(value, sympy.Add):
        return min(cap, sum(_size(a) for a in value.args))
    if isinstance(value, sympy.Mul):
        return min(cap, math.prod(_size(a) for a in value.args))
    if isinstance(value, sympy.Pow) and value.exp.is_Integer and value.exp > 0:
        n, k = int(value.exp), _size(value.base)
        return cap if n > 64 else min(cap, math.comb(k + n - 1, n))
    return 1


class _Normalizer:
    """One normalization: the atoms met so far (normalized sub-expressions as sympy symbols)."""

    def __init__(self) -> None:
        self.symbols: dict[ex.Expr, sympy.Symbol] = {}
        self.atoms: dict[sympy.Symbol, ex.Expr] = {}
        self.origin: dict[str, str] = {}      # a temporary variable -> the user's name
        self.names_of: dict[ex.Reduce, tuple[str, ...]] = {}  # a canonical reduction -> its user's names
        self.cache: dict[ex.Expr, sympy.Expr] = {}
        self.reads: dict[sympy.Symbol, frozenset[str]] = {}
        self.fresh = itertools.count()

    # ---- atoms and their properties ------------------------------------------------------------
    def atom(self, e: ex.Expr) -> sympy.Symbol:
        symbol = self.symbols.get(e)
        if symbol is None:
            symbol = sympy.Symbol(f"a{len(self.symbols)}")
            self.symbols[e], self.atoms[symbol] = symbol, e
        return symbol

    def variables(self, value: sympy.Expr) -> frozenset[str]:
        """The index variables a sympy value reads (through its atoms)."""
        found = frozenset()
        for symbol in value.free_symbols:
            if symbol not in self.reads:
                self.reads[symbol] = ex.free_variables(self.atoms[symbol])
            found |= self.reads[symbol]
        return found

    # ---- expression -> sympy ---------------------------------------------------------------------
    def value(self, e: ex.Expr) -> sympy.Expr:
        """``e`` as a sympy expression over normalized atoms."""
        cached = self.cache.get(e)
        if cached is None:
            cached = self.cache[e] = self._value(e)
        return cached

    def _value(self, e: ex.Expr) -> sympy.Expr:
        if isinstance(e, ex.Num):
            return sympy.Rational(e.value)
        if isinstance(e, ex.Content) and isinstance(e.index, ex.Reduce):
            index = self.index(e.index)
            return self.atom(ex.Content(index))
        if isinstance(e, (ex.Content, ex.Param)):
            return self.atom(e)
        if isinstance(e, ex.Neg):
            return -self.value(e.operand)
        if isinstance(e, ex.BinOp):
            return self.binop(e)
        if isinstance(e, ex.Call):
            return self.call(e)
        if isinstance(e, ex.Reduce):
            return self.reduction(e)
        raise TypeError(f"not a target expression: {e!r}")

    def binop(self, e: ex.BinOp) -> sympy.Expr:
        if e.op == "**" and isinstance(e.left, ex.Call) and e.left.name == "norm" and e.right == ex.Num(2.0):
            return self.call(ex.Call("dot", e.left.args * 2))  # |v|^2 = <v, v>
        left, right = self.value(e.left), self.value(e.right)
        result = {"+": lambda: left + right, "-": lambda: left - right, "*": lambda: _expand(left * right),
                  "/": lambda: _expand(left / right), "**": lambda: _expand(left ** right)}[e.op]()
        if result.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo):  # a literal division by zero: kept as it is
            return self.atom(ex.BinOp(e.op, self.expr(left), self.expr(right)))
        return result

    def call(self, e: ex.Call) -> sympy.Expr:
        if e.name in ("dot", "bilinear"):
            matrix, (u, w) = e.args[:-2], e.args[-2:]
            left, right = self.linear(u), self.linear(w)
            if left is not None and right is not None:  # bilinear: expand over both sums
                total = sympy.Integer(0)
                for (a, va), (b, vb) in itertools.product(left, right):
                    pair = tuple(sorted((va, vb), key=to_text)) if e.name == "dot" else (va, vb)
                    total += a * b * self.atom(ex.Call(e.name, matrix + pair))
                return total
            pair = (self.expr(self.value(u)), self.expr(self.value(w)))
            pair = tuple(sorted(pair, key=to_text)) if e.name == "dot" else pair
            return self.atom(ex.Call(e.name, matrix + pair))
        return self.atom(ex.Call(e.name, tuple(self.argument(a) for a in e.args)))

    def argument(self, a: ex.Expr) -> ex.Expr:
        """A function's argument in normal form; a vector that cancels (``x[1] - x[1]``) stays as written:
        it is a zero *vector*, which a function reads unlike the number 0."""
        value = self.value(a)
        if value == 0 and ex.is_vector(a):
            return a
        return self.expr(value)

    def linear(self, vector: ex.Expr) -> list[tuple[sympy.Expr, ex.Expr]] | None:
        """``vector`` as ``sum_i c_i * v_i`` (scalar ``c_i``, vector atoms ``v_i``), or None when some term
        is not linear in one vector atom (an elementwise product, a power)."""
        parts = []
        for term in sympy.Add.make_args(_expand(self.value(vector))):
            if term == 0:
                continue
            factors = sympy.Mul.make_args(term)
            vectors = [f for f in factors if f.is_Symbol and ex.is_vector(self.atoms[f])]
            powered = [f for f in factors if f.is_Pow and f.base.is_Symbol and ex.is_vector(self.atoms[f.base])]
            if len(vectors) != 1 or powered:
                return None
            parts.append((term / vectors[0], self.atoms[vectors[0]]))
        return parts

    # ---- reductions ------------------------------------------------------------------------------
    def open(self, r: ex.Reduce) -> tuple[list[str], dict[str, ex.Domain], list[sympy.Expr]]:
        """A reduction's variables under fresh names, their domains, and the additive terms of its body;
        for min/max, nested reductions of the same direction joined in (rule 2)."""
        names = {b.var: self.temporary(b.var) for b in r.bindings}
        variables = [names[b.var] for b in r.bindings]
        domains = {names[b.var]: ex.rename_domain(b.domain, names) for b in r.bindings}
        terms = list(sympy.Add.make_args(_expand(self.value(ex.rename(r.body, names)))))
        joined = True
        while joined and r.kind in (ex.ReduceKind.MIN, ex.ReduceKind.MAX):
            joined = False
            for i, term in enumerate(terms):
                coefficient, rest = term.as_coeff_Mul()
                inner = self.atoms.get(rest) if rest.is_Symbol else None
                if isinstance(inner, ex.Reduce) and (inner.kind is r.kind) == (coefficient > 0) and \
                        inner.kind in (ex.ReduceKind.MIN, ex.ReduceKind.MAX):
                    spelt = self.spelling(inner)
                    more = {b.var: self.temporary(name) for b, name in zip(inner.bindings, spelt)}
                    variables += list(more.values())
                    domains.update({more[b.var]: ex.rename_domain(b.domain, more) for b in inner.bindings})
                    body = _expand(coefficient * self.value(ex.rename(inner.body, more)))
                    terms = terms[:i] + terms[i + 1:] + list(sympy.Add.make_args(body))
                    joined = True
                    break
        if r.kind in (ex.ReduceKind.MIN, ex.ReduceKind.MAX):
            variables, terms = self.eliminate(r.kind, variables, domains, terms)
        return variables, domains, [t for t in terms if t != 0]

    # ---- a joint min/max: what its elimination makes twice, made once (rules 9 and 10) -------------
    def eliminate(self, kind: ex.ReduceKind, variables: list[str], domains: dict,
                  terms: list[sympy.Expr]) -> tuple[list[str], list[sympy.Expr]]:
        """Copies merged (rule 9) and pairs put on their diagonal (rule 10) until neither applies; each
        step drops a variable, so this ends. The terms come back collected (``f + f`` is ``2 f``)."""
        terms = list(sympy.Add.make_args(sum(terms, sympy.Integer(0))))
        while True:
            step = self.merge_copies(variables, domains, terms) or self.diagonal(kind, variables, domains, terms)
            if step is None:
                return variables, terms
            variables, terms = step[0], list(sympy.Add.make_args(sum(step[1], sympy.Integer(0))))

    def merge_copies(self, variables: list[str], domains: dict,
                     terms: list[sympy.Expr]) -> tuple[list[str], list[sympy.Expr]] | None:
        """Rule 9: with the variables of a separator ``S`` held, the others fall into components, each
        reduced on its own, ``min_{S,C1,C2} (r(S) + a(C1,S) + b(C2,S)) = min_S (r + min_C1 a + min_C2 b)``;
        two components equal up to renaming their variables and a positive factor, ``b = c * a``, are one
        selection, ``min_C1 a + min_C2 c a = (1 + c) min_C1 a``, so ``C2`` goes and ``a`` takes the factor.
        Separators are tried smallest first (the empty one is rule 4); None when no two components match."""
        if len(variables) > MAX_COPY_SEARCH:  # 2^n separators: a longer joint reduction keeps its copies
            return None
        reads = [self.variables(t) & set(variables) for t in terms]
        links = _links(variables, domains)
        keys: dict[tuple[str, ...], tuple[tuple, sympy.Expr]] = {}  # a component's terms do not depend on S
        for size in range(1, len(variables) - 1):
            for separator in itertools.combinations(variables, size):
                if any(ex.domain_variables(domains[v]) - set(separator) & set(variables) for v in separator):
                    continue  # a held variable ranging up to a component's: the components are not free
                candidates: dict[tuple, list[tuple[tuple[str, ...], list[int]]]] = {}
                for component in _components([v for v in variables if v not in separator], reads + links):
                    own = [i for i, vs in enumerate(reads) if vs & set(component)]
                    if own:  # (a variable no term reads is rule 4's)
                        shape = (len(component), len(own), tuple(sorted(map(str, (domains[v] for v in component)))))
                        candidates.setdefault(shape, []).append((component, own))
                classes: dict[tuple, list[tuple[tuple[str, ...], list[int], sympy.Expr]]] = {}
                for component, own in (c for same in candidates.values() if len(same) > 1 for c in same):
                    if component not in keys:  # at most 3 variables: two copies and a separator fit in 8
                        keys[component] = self.copy_key(component, domains, [terms[i] for i in own])
                    key, lead = keys[component]
                    classes.setdefault(key, []).append((component, own, lead))
                copies = [members for members in classes.values() if len(members) > 1]
                if copies:
                    return _merged(variables, terms, copies)
        return None

    def copy_key(self, component: tuple[str, ...], domains: dict,
                 terms: list[sympy.Expr]) -> tuple[tuple, sympy.Expr]:
        """What a component is up to renaming its variables and a positive factor (its terms renamed
        canonically, their coefficients relative to the first, the domains, the first's sign), and that
        first coefficient."""
        monomials = [self.monomial(t) for t in terms]

        def key(order: tuple[str, ...]) -> tuple:
            names = {v: f"_c{i}" for i, v in enumerate(order)}
            texts = sorted((to_text(tidy(ex.rename(m, names))) if m is not None else "", c) for c, m in monomials)
            return (tuple(text for text, _ in texts), tuple(c / texts[0][1] for _, c in texts),
                    tuple(ex.rename_domain(domains[v], names) for v in order), texts[0][1] > 0), texts[0][1]

        return min((key(order) for order in itertools.permutations(component)), key=lambda k: str(k[0]))

    def diagonal(self, kind: ex.ReduceKind, variables: list[str], domains: dict,
                 terms: list[sympy.Expr]) -> tuple[list[str], list[sympy.Expr]] | None:
        """Rule 10: a max over a pair ``s, t`` of one domain (the other variables held) whose terms are a
        positive semi-definite form plus one function of each, ``q(s, t) = sum_ij C_ij <a_i(s), a_j(t)> +
        h(s) + h(t)`` with ``C`` symmetric PSD, is its max on the diagonal: ``q(s, t) <= (q(s, s) + q(t, t))
        / 2`` (Cauchy-Schwarz). A min likewise when ``-q`` is such a form."""
        sign = 1 if kind is ex.ReduceKind.MAX else -1
        for s, t in itertools.combinations(variables, 2):
            if any(ex.domain_variables(domains[v]) & {s, t} for v in variables):
                continue  # a range bounded by s or t: the others are not held apart from the pair
            own = [i for i, term in enumerate(terms) if self.variables(term) & {s, t}]
            if domains[s] == domains[t] and self.semidefinite(s, t, [sign * terms[i] for i in own]):
                pair = self.expr(sum((terms[i] for i in own), sympy.Integer(0)))
                on_diagonal = sympy.Add.make_args(_expand(self.value(ex.rename(pair, {t: s}))))
                rest = [term for i, term in enumerate(terms) if i not in own]
                return [v for v in variables if v != t], rest + list(on_diagonal)
        return None

    def semidefinite(self, s: str, t: str, terms: list[sympy.Expr]) -> bool:
        """Whether ``terms`` are ``sum_ij C_ij <a_i(s), a_j(t)> + h(s) + h(t)``, ``C`` symmetric PSD and not
        empty (``diagonal``); only ``dot`` is known to be an inner product (a ``bilinear`` form is not).
        The counts are compared before any text is written."""
        both = [self.inner_product(term, s, t) for term in terms if self.variables(term) >= {s, t}]
        alone = {v: [term for term in terms if self.variables(term) & {s, t} == {v}] for v in (s, t)}
        if not both or None in both or len(alone[s]) != len(alone[t]):
            return False
        form: dict[tuple[str, str], sympy.Expr] = {}
        for coefficient, u, w in both:
            key = (_side(u, s, t), _side(w, t, s))
            form[key] = form.get(key, 0) + coefficient
        sides = {v: sorted((_side(self.expr(rest), v, s if v == t else t), c)
                           for c, rest in (term.as_coeff_Mul() for term in alone[v])) for v in (s, t)}
        vectors = sorted({v for key in form for v in key})
        matrix = sympy.Matrix([[form.get((a, b), 0) for b in vectors] for a in vectors])
        return sides[s] == sides[t] and matrix.is_symmetric() and bool(matrix.is_positive_semidefinite)

    def inner_product(self, term: sympy.Expr, s: str, t: str) -> tuple[sympy.Expr, ex.Expr, ex.Expr] | None:
        """``c * dot(u, w)`` with ``u`` read at ``s`` (not ``t``) and ``w`` at ``t`` (not ``s``), as
        ``(c, u, w)``; None for any other term."""
        coefficient, rest = term.as_coeff_Mul()
        call = self.atoms.get(rest) if rest.is_Symbol else None
        if not (isinstance(call, ex.Call) and call.name == "dot"):
            return None
        u, w = sorted(call.args, key=lambda a: t in ex.free_variables(a))
        if ex.free_variables(u) & {s, t} != {s} or ex.free_variables(w) & {s, t} != {t}:
            return None
        return coefficient, u, w

    def temporary(self, user_name: str) -> str:
        name = f"_u{next(self.fresh)}"
        self.origin[name] = self.origin.get(user_name, user_name)
        return name

    def reduction(self, r: ex.Reduce) -> sympy.Expr:
        """A reduction as a value: hoisted terms, and a coefficient times each canonical reduction."""
        if r.kind.returns_index:
            index = self.index(r)
            return sympy.Integer(index.position) if isinstance(index, ex.FixedIndex) else self.atom(index)
        if r.kind is ex.ReduceKind.SUM and r.body == ex.Num(1.0):
            return self.atom(_count([b.domain for b in r.bindings]))
        variables, domains, terms = self.open(r)
        if r.kind in (ex.ReduceKind.SUM, ex.ReduceKind.MEAN):  # rule 8: one reduction per term, factors out
            return sum((self.linear_part(r.kind, variables, domains, t) for t in terms), sympy.Integer(0))
        return self.reduce_terms(r, variables, domains, terms)

    def linear_part(self, kind: ex.ReduceKind, variables: list[str], domains: dict, term: sympy.Expr):
        """``sum_V c * g`` as ``c * sum_V g`` (``c`` reads none of ``V``); and ``sum_V dot(u, w)``, ``w``
        reading none of ``V``, as ``dot(sum_V u, w)`` (likewise ``mean`` and ``bilinear``)."""
        outside, inside = sympy.Integer(1), sympy.Integer(1)
        for factor in sympy.Mul.make_args(term):
            if self.variables(factor) & set(variables):
                inside *= factor
            else:
                outside *= factor
        call = self.atoms.get(inside) if inside.is_Symbol else None
        if isinstance(call, ex.Call) and call.name in ("dot", "bilinear"):
            *matrix, u, w = call.args
            reads_u, reads_w = (ex.free_variables(a) & set(variables) for a in (u, w))
            if not reads_u & reads_w:  # separable: a reduction on each side (a product of sums, for a sum)

                def reduced(a: ex.Expr, reads: set[str]) -> ex.Expr:
                    bindings = tuple(ex.Binding(v, domains[v]) for v in variables if v in reads)
                    return ex.Reduce(kind, a, bindings) if bindings else a

                rest = [domains[v] for v in variables if v not in reads_u | reads_w]
                count = self.atom(_count(rest)) if kind is ex.ReduceKind.SUM and rest else 1
                pulled = ex.Call(call.name, (*matrix, reduced(u, reads_u), reduced(w, reads_w)))
                return outside * count * self.value(pulled)
        return outside * self.reduce_terms(ex.Reduce(kind, ex.Num(0.0), ()), variables, domains, [inside])

    def reduce_terms(self, r: ex.Reduce, variables: list[str], domains: dict, terms: list[sympy.Expr]):
        """The reduction ``r.kind`` over ``variables`` of the sum of ``terms``, split and hoisted (rules 3-5)."""
        total = sympy.Integer(0)
        for group, group_terms in self.split(r.kind, variables, domains, terms):
            rest = [domains[v] for v in variables if v not in group]
            count = self.atom(_count(rest)) if r.kind is ex.ReduceKind.SUM and rest else 1
            if not group:  # hoisted (rule 3)
                total += count * sum(group_terms, sympy.Integer(0))
            elif group_terms:  # (a k-th largest over ties is its value: nothing is left to rank)
                factor, reduction = self.close(r.kind, r.k, group, domains, group_terms)
                total += count * factor * self.atom(reduction)
        return total

    def split(self, kind: ex.ReduceKind, variables: list[str], domains: dict,
              terms: list[sympy.Expr]) -> list[tuple[tuple[str, ...], list[sympy.Expr]]]:
        """The terms by connected group of variables (rule 4); ``()`` holds the terms that read none. A range
        bounded by another variable (``t in range(1, s)``) ties the two into one group, read or not: the pairs
        are not a product, ``min_{s, t<s} f(s) + g(t)`` is not ``min_s f + min_t g``."""
        reads = [self.variables(t) & set(variables) for t in terms]
        if kind not in _SPLITS:
            return [((), [t for t, v in zip(terms, reads) if not v]),
                    (tuple(variables), [t for t, v in zip(terms, reads) if v])]
        component_of = {v: c for c in _components(variables, reads + _links(variables, domains)) for v in c}
        groups: dict[tuple[str, ...], list[sympy.Expr]] = {}
        for term, vs in zip(terms, reads):
            groups.setdefault(component_of[min(vs)] if vs else (), []).append(term)
        hoisted = groups.pop((), [])
        return [((), hoisted)] + sorted(groups.items(), key=lambda item: variables.index(item[0][0]))

    def close(self, kind: ex.ReduceKind, k: int | None, group: tuple[str, ...], domains: dict,
              terms: list[sympy.Expr]) -> tuple[sympy.Expr, ex.Reduce]:
        """The canonical reduction over ``group`` with ``terms`` (rules 5 and 7), and its factor."""
        monomials = [self.monomial(t) for t in terms]
        height = 1 + max(ex.height(m) for _, m in monomials if m is not None)
        names, ordered = self.label(group, monomials, height, domains)
        leading = ordered[0][0]
        factor = leading
        if leading < 0 and kind in _FLIP:
            kind = _FLIP[kind]
        elif leading < 0 and kind is ex.ReduceKind.KTH_LARGEST:  # the k-th smallest is not a k-th largest
            factor = -leading
        body = _sum((c / factor, m) for c, m in ordered)
        variables = sorted(group, key=lambda v: names[v])
        bindings = tuple(ex.Binding(names[v], ex.rename_domain(domains[v], names)) for v in variables)
        reduction = tidy(ex.Reduce(kind, body, bindings, k))
        self.names_of.setdefault(_shape(reduction), tuple(self.origin.get(v, v) for v in variables))
        return (sympy.Integer(1) if kind.returns_index else factor), reduction

    def label(self, group: tuple[str, ...], monomials: list[_Term], height: int,
              domains: dict) -> tuple[dict[str, str], list[_Term]]:
        """Canonical names for ``group``: the labelling whose renamed terms, sorted, read smallest (with
        coefficients relative to the leading term). Variables of enclosing reductions are read as one
        placeholder, so the choice does not depend on how those were spelt. Returns the names (height and
        index: a name depends on nothing but where the reduction stands, so that one selection read under
        two enclosing reductions of equal height is one expression) and the renamed terms in canonical
        order."""
        outer = set().union(*(ex.free_variables(m) for _, m in monomials if m is not None)) - set(group)

        def key(order: Iterable[str]) -> tuple:
            names = {v: f"_h{height}_{i}" for i, v in enumerate(order)} | {v: "_o" for v in outer}
            terms = sorted(((c, to_text(tidy(ex.rename(m, names)))) for c, m in monomials if m is not None),
                           key=lambda t: t[1])
            return tuple(text for _, text in terms), tuple(c / terms[0][0] for c, _ in terms)

        if len(group) <= MAX_LABELLED:  # a range's bound is bound before it (its name comes first)
            order = min((o for o in itertools.permutations(group) if _bounds_first(o, domains)), key=key)
        else:
            order = _bounds_first_order(sorted(group, key=lambda v: self.signature(v, group, monomials)), domains)
        names = {v: f"_h{height}_{i}" for i, v in enumerate(order)}
        terms = sorted(((c, tidy(ex.rename(m, names))) for c, m in monomials if m is not None),
                       key=lambda t: to_text(t[1]))
        return names, terms

    def signature(self, var: str, group: tuple[str, ...], monomials: list[_Term]) -> tuple[str, ...]:
        """The terms ``var`` appears in, with it written ``_me`` and the other joint variables ``_it``."""
        names = {v: ("_me" if v == var else "_it") for v in group}
        return tuple(sorted(to_text(ex.rename(m, names)) for _, m in monomials
                            if m is not None and var in ex.free_variables(m)))

    def index(self, r: ex.Reduce) -> ex.Reduce | ex.FixedIndex:
        """An argmin/argmax in normal form; over ties, the first position of its domain (rule 6)."""
        variables, domains, terms = self.open(r)
        terms = [t for t in terms if self.variables(t) & set(variables)]  # the others do not rank
        if not terms:
            first = _first_position(domains[variables[0]])
            if first is not None:
                return first
            tie = ex.Reduce(r.kind, ex.Num(0.0), (ex.Binding("_h1_0", domains[variables[0]]),))
            self.names_of.setdefault(_shape(tie), (self.origin.get(variables[0], variables[0]),))
            return tie
        return self.close(r.kind, None, tuple(variables), domains, terms)[1]

    # ---- sympy -> expression ---------------------------------------------------------------------
    def monomial(self, term: sympy.Expr) -> _Term:
        """A term as (rational coefficient, the product of its factors; None for a number)."""
        coefficient, rest = term.as_coeff_Mul()
        if rest == 1:
            return coefficient, None
        above, below = [], []
        for factor in sympy.Mul.make_args(rest):
            base, exponent = factor.as_base_exp()
            negative = exponent.is_number and exponent < 0
            (below if negative else above).append(self.power(base, -exponent if negative else exponent))
        product = _product(above) if above else ex.Num(1.0)
        return coefficient, (ex.BinOp("/", product, _product(below)) if below else product)

    def power(self, base: sympy.Expr, exponent: sympy.Expr) -> ex.Expr:
        inner = self.atoms[base] if base.is_Symbol else self.expr(base)
        return inner if exponent == 1 else ex.BinOp("**", inner, self.expr(exponent))

    def expr(self, value: sympy.Expr) -> ex.Expr:
        """A sympy value back as an expression, its terms in canonical order."""
        value = sympy.sympify(value)
        if value.is_Symbol:
            return self.atoms[value]
        monomials = [self.monomial(t) for t in sympy.Add.make_args(value) if t != 0]
        return _sum(sorted(monomials, key=lambda t: (t[1] is None, to_text(t[1]) if t[1] is not None else "")))

    # ---- names for the reader ----------------------------------------------------------------------
    def spelling(self, r: ex.Reduce) -> tuple[str, ...]:
        """The user's names for a canonical reduction's variables (``t`` where none was recorded)."""
        spelt = self.names_of.get(_shape(r), ())
        return tuple(spelt[i] if i < len(spelt) else "t" for i in range(len(r.bindings)))

    def display(self, e: ex.Expr) -> ex.Expr:
        """``e`` with every canonical variable named after the user's variable, the first spelling in text
        order; reductions nested in one another keep distinct names (a digit is added)."""
        nested: dict[str, set[str]] = {}   # canonical name -> the names of enclosing and enclosed binders
        wanted: dict[str, str] = {}

        def visit(node: ex.Expr, enclosing: tuple[str, ...]) -> None:
            if isinstance(node, ex.Reduce):
                here = tuple(b.var for b in node.bindings)
                spelt = self.spelling(node)
                for name, spelling in zip(here, spelt):
                    wanted.setdefault(name, spelling)
                    nested.setdefault(name, set()).update(set(enclosing) | (set(here) - {name}))
                    for other in enclosing:
                        nested[other].add(name)
                enclosing += here
            for child in ex.children(node):
                visit(child, enclosing)

        visit(e, ())
        taken, chosen = _names(e), {}
        for name, spelling in wanted.items():
            display, n = spelling, 2
            while display in taken or display in {chosen.get(other) for other in nested[name]}:
                display, n = f"{spelling}{n}", n + 1
            chosen[name] = display
        return ex.rename(e, chosen)


def tidy(e: ex.Expr) -> ex.Expr:
    """``e`` with its commutative parts (sums, products, the arguments of ``dot``) in text order: after a
    renaming, the canonical order of the new names."""
    if isinstance(e, ex.BinOp) and e.op in "+-" or isinstance(e, ex.Neg):
        terms = [(sign, tidy(term)) for sign, term in _signed_terms(e, 1)]
        ordered = sorted(terms, key=lambda t: (to_text(t[1]), t[0]))
        result = ex.Neg(ordered[0][1]) if ordered[0][0] < 0 else ordered[0][1]
        for sign, term in ordered[1:]:
            result = ex.BinOp("-" if sign < 0 else "+", result, term)
        return result
    if isinstance(e, ex.BinOp) and e.op == "*":
        return _product([tidy(f) for f in _factors(e)])
    if isinstance(e, ex.BinOp):
        return ex.BinOp(e.op, tidy(e.left), tidy(e.right))
    if isinstance(e, ex.Call):
        args = tuple(tidy(a) for a in e.args)
        commutes = e.name == "dot" or e.name in ex.UNION_FUNCTIONS
        return ex.Call(e.name, tuple(sorted(args, key=to_text)) if commutes else args)
    if isinstance(e, ex.Reduce):
        return ex.Reduce(e.kind, tidy(e.body), e.bindings, e.k)
    if isinstance(e, ex.Content) and isinstance(e.index, ex.Reduce):
        return ex.Content(tidy(e.index))
    return e


def _shape(r: ex.Reduce) -> ex.Reduce:
    """A reduction with the variables of enclosing reductions read as one placeholder: what it is, wherever
    it stands."""
    return tidy(ex.rename(r, {v: "_o" for v in ex.free_variables(r)}))


def _signed_terms(e: ex.Expr, sign: int) -> list[tuple[int, ex.Expr]]:
    if isinstance(e, ex.BinOp) and e.op in "+-":
        return _signed_terms(e.left, sign) + _signed_terms(e.right, sign if e.op == "+" else -sign)
    if isinstance(e, ex.Neg):
        return _signed_terms(e.operand, -sign)
    return [(sign, e)]


def _factors(e: ex.Expr) -> list[ex.Expr]:
    if isinstance(e, ex.BinOp) and e.op == "*":
        return _factors(e.left) + _factors(e.right)
    return [e]


# ---- small builders --------------------------------------------------------------------------------
def _sum(terms: Iterable[_Term]) -> ex.Expr:
    result = None
    for coefficient, monomial in terms:
        size = abs(coefficient)
        if monomial is None:
            piece: ex.Expr = ex.Num(float(size))
        else:
            piece = monomial if size == 1 else ex.BinOp("*", ex.Num(float(size)), monomial)
        if result is None:
            result = ex.Neg(piece) if coefficient < 0 else piece
        else:
            result = ex.BinOp("-" if coefficient < 0 else "+", result, piece)
    return ex.Num(0.0) if result is None else result


def _product(factors: list[ex.Expr]) -> ex.Expr:
    ordered = sorted(factors, key=to_text)
    result = ordered[0]
    for factor in ordered[1:]:
        result = ex.BinOp("*", result, factor)
    return result


def _count(domains: list[ex.Domain]) -> ex.Reduce:
    """``sum(1 for ...)``: how many index tuples the domains hold (a number the network knows)."""
    ordered = sorted(domains, key=lambda d: to_text(ex.Reduce(ex.ReduceKind.SUM, ex.Num(1.0),
                                                              (ex.Binding("t", d),))))
    return ex.Reduce(ex.ReduceKind.SUM, ex.Num(1.0),
                     tuple(ex.Binding(f"_h1_{i}", d) for i, d in enumerate(ordered)))


def _first_position(domain: ex.Domain) -> ex.FixedIndex | None:
    """The first position of a domain when it does not depend on ``T`` (ties go to it)."""
    if isinstance(domain, ex.AllPositions):
        return ex.FixedIndex(1)
    if isinstance(domain, ex.Subset):  # realization.subset_mask: t in S_i iff (t - i) mod 4 in {0, 1}
        i = int(domain.name[1:])
        return ex.FixedIndex(next(t for t in range(1, 5) if (t - i) % 4 in (0, 1)))
    if isinstance(domain, ex.Range) and isinstance(domain.start, ex.FixedIndex) and not domain.start.from_end:
        return ex.FixedIndex(domain.start.position)
    return None


def _side(e: ex.Expr, me: str, other: str) -> str:
    """``e`` with ``me`` and ``other`` named by their role: one side of a form, compared across the pair."""
    return to_text(tidy(ex.rename(e, {me: "_p", other: "_q"})))


def _links(variables: list[str], domains: dict) -> list[frozenset[str]]:
    """Each variable with the variables of the same reduction its range is bounded by: read together, as
    ``_components`` reads a term (``t in range(1, s)`` ties ``t`` to ``s``)."""
    return [frozenset({v}) | (ex.domain_variables(domains[v]) & set(variables)) for v in variables]


def _bounds_first(order: tuple[str, ...], domains: dict) -> bool:
    """Whether every variable of ``order`` comes after the variables of ``order`` its range reads."""
    return all(ex.domain_variables(domains[v]) & set(order) <= set(order[:i]) for i, v in enumerate(order))


def _bounds_first_order(order: list[str], domains: dict) -> tuple[str, ...]:
    """``order`` with each variable moved after the variables its range reads (stable otherwise)."""
    placed: list[str] = []
    waiting = list(order)
    while waiting:
        ready = next(v for v in waiting if ex.domain_variables(domains[v]) & set(order) <= set(placed))
        placed.append(ready)
        waiting.remove(ready)
    return tuple(placed)


def _components(variables: list[str], reads: list[frozenset[str]]) -> list[tuple[str, ...]]:
    """``variables`` grouped by the terms that read them together (terms read as ``reads``), in order."""
    parent = {v: v for v in variables}

    def root(v: str) -> str:
        while parent[v] != v:
            v = parent[v]
        return v

    for vs in reads:
        first, *others = sorted(vs & parent.keys()) or [None]
        for other in others:
            parent[root(other)] = root(first)
    groups: dict[str, list[str]] = {}
    for v in variables:
        groups.setdefault(root(v), []).append(v)
    return [tuple(members) for members in groups.values()]


def _merged(variables: list[str], terms: list[sympy.Expr],
            copies: list[list[tuple[tuple[str, ...], list[int], sympy.Expr]]]) -> tuple[list[str], list[sympy.Expr]]:
    """``merge_copies``: each class of equal components kept once (its first), its terms scaled by the sum
    of the members' leading coefficients over its own."""
    dropped_variables, dropped_terms, scale = set(), set(), {}
    for (_, kept, lead), *others in copies:
        total = lead + sum(other_lead for _, _, other_lead in others)
        scale.update({i: total / lead for i in kept})
        for component, own, _ in others:
            dropped_variables |= set(component)
            dropped_terms |= set(own)
    return ([v for v in variables if v not in dropped_variables],
            [term * scale.get(i, 1) for i, term in enumerate(terms) if i not in dropped_terms])


def _reductions(e: ex.Expr) -> Iterable[ex.Reduce]:
    if isinstance(e, ex.Reduce):
        yield e
    for child in ex.children(e):
        yield from _reductions(child)


def _names(e: ex.Expr) -> set[str]:
    """Function and parameter names (a variable must not take one)."""
    found = {e.name} if isinstance(e, (ex.Call, ex.Param)) else set()
    for child in ex.children(e):
        found |= _names(child)
    return found
