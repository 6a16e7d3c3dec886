"""decide, minimize and export: the pipeline from a target and an architecture to a checked verdict.

    encode (encoder.py) -> ask z3 for an efficient program -> minimize its exponent -> replay the witness
    (interpreter.py) -> or explain the unsat core (explain.py) and find the cheapest inefficient program.

z3 is imported here and in the encoder only. A z3 ``unknown`` (timeout, resource limit) becomes UNKNOWN
with z3's reason, never INFEASIBLE.
"""
from __future__ import annotations

import time
from pathlib import Path

import sympy
import z3

from . import cost, encoder, explain
from . import expr as ex
from .architecture import Architecture
from .catalogue import as_target
from .errors import InvalidSpecError, WitnessCheckError
from .evaluate import scalar_tokens_problem
from .interpreter import check
from .program import program_cost, set_sizes
from .symbols import T
from .trees import comparison_tree, walk
from .verdict import Stats, Status, Verdict


def _check_inputs(target, arch, seq_len, timeout) -> None:
    problems = []
    if not isinstance(arch, Architecture):
        problems.append(f"architecture must be an ifs.Architecture, got {type(arch).__name__}")
    if seq_len is not None and (isinstance(seq_len, bool) or not isinstance(seq_len, int) or seq_len < 2):
        problems.append(f"seq_len must be an integer >= 2 or None, got {seq_len!r}")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
        problems.append(f"timeout must be a positive number of seconds or None, got {timeout!r}")
    if problems:
        raise InvalidSpecError(problems, "decision")
    if target.reads_tokens_as_numbers and arch.input_dim != 1:
        raise InvalidSpecError(scalar_tokens_problem(target.text, arch.input_dim), "target")
    if seq_len is not None:
        need = _min_length(target)
        if seq_len < need:
            raise InvalidSpecError(f"seq_len={seq_len} is too short for this target: it names positions or "
                                   f"ranks up to {need}", "decision")


def _min_length(target) -> int:
    tree = comparison_tree(target)
    need = 2
    for _, d in tree.nodes(data=True):
        if d["kind"] == "fixed":
            need = max(need, d["position"].position + 1)
        if d["kind"] == "kth":
            need = max(need, d["k"] + 1)
    for g in tree.graph["groups"].values():
        for leaf in walk(g.body):
            if isinstance(leaf, ex.Content) and isinstance(leaf.index, ex.OffsetIndex):
                need = max(need, abs(leaf.index.offset) + 2)
    return need


# replays run on sequences long enough that no position holds every candidate by accident: longer than
# the largest set the program gathers without aggregating the whole sequence (and than the target needs)
MIN_REPLAY_LENGTH, MAX_REPLAY_LENGTH = 8, 32


def _replay_length(program, target, arch, seq_len: int | None) -> int:
    sizes = [size for size in set_sizes(program, arch).values() if not size.has(T)]
    gathered = int(max(sizes, default=1))
    length = max(MIN_REPLAY_LENGTH, _min_length(target) + 2, min(gathered + 2, MAX_REPLAY_LENGTH))
    return length if seq_len is None else max(min(seq_len, length), _min_length(target))


class _Session:
    """One encoding and the questions asked of it (heads and cost levels chosen by assumptions)."""

    def __init__(self, target, arch, seq_len, timeout, law, anchors=True):
        self.enc = encoder.encode(target, arch, law, seq_len, anchors=anchors)
        self.heads = arch.heads
        self.calls = 0
        if timeout is not None:
            self.enc.solver.set("timeout", max(1, int(timeout * 1000)))
        self.enc.solver.set("core.minimize", True)
        self.bounded = [i for i, lvl in enumerate(self.enc.levels) if cost.is_bounded(lvl)]

    def ask(self, allowed: list[int], extra=()):
        allowed_set = set(allowed)
        assumptions = list(self.enc.tracked.values()) + self.enc.head_assumptions(self.heads) + list(extra)
        assumptions += [z3.Not(v) for i, v in enumerate(self.enc.level_vars) if i not in allowed_set]
        self.calls += 1
        return self.enc.solver.check(*assumptions)

    def cheapest(self, allowed: list[int]):
        """The lowest level (in the encoding's order) at which a program exists, with its model.

        A binary search over prefixes of ``allowed``: a program within a prefix is within every longer one.
        """
        if not allowed:  # a target that needs no operation at all
            result = self.ask([])
            if result == z3.sat:
                return -1, self.enc.solver.model(), None
            return None, None, (self.enc.solver.reason_unknown() if result == z3.unknown else None)
        result = self.ask(allowed)
        if result != z3.sat:
            return None, None, (self.enc.solver.reason_unknown() if result == z3.unknown else None)
        model, lo, hi = self.enc.solver.model(), 0, len(allowed) - 1  # invariant: a program within [:hi+1]
        while lo < hi:
            mid = (lo + hi) // 2
            result = self.ask(allowed[: mid + 1])
            if result == z3.sat:
                model, hi = self.enc.solver.model(), mid
            elif result == z3.unknown:
                return None, None, self.enc.solver.reason_unknown()
            else:
                lo = mid + 1
        return allowed[hi], model, None

    def tightest_gather(self, level: int, allowed: list[int], model):
        """At the cheapest ``level``, the smallest sets specific-position heads must gather (the levels
        alone leave sizes that cost less than the next level free: ``encoder._Builder.costs``). Returns a
        model and the constraint that keeps the exponent exact in later questions."""
        cap = self.enc.gather_cap
        if cap is None:
            return model, []  # no bounded gathers, or a width that makes them all cost alike
        # up to ``free`` a gather costs no more than the level (level -1: no operation with a level at all,
        # and a gather costs nothing up to the size whose decoding reaches 0)
        free = self.enc.gather_floor if level < 0 else self.enc.gather_limits[level]
        if free is None:
            return model, []  # a level that grows with T: every bounded gather costs less
        sizes = [model.eval(g, model_completion=True).as_long() for acts, g, whole in self.enc.gathers
                 if z3.is_true(model.eval(z3.And(acts, z3.Not(whole)), model_completion=True))]
        lo, hi = free, max(sizes, default=0)
        while lo < hi:  # invariant: a program gathering at most hi exists (model)
            mid = (lo + hi) // 2
            result = self.ask(allowed, [cap <= mid])
            if result == z3.sat:
                model, hi = self.enc.solver.model(), mid
            elif result == z3.unknown:
                break  # keep the witness we have: it is valid, its exponent an upper bound
            else:
                lo = mid + 1
        return model, [cap <= max(hi, free)]

    def fewest_operations(self, allowed: list[int], model, extra=()):
        """A model at the same levels with as few operations as possible (a witness without idle work):
        a binary search on the number of operations."""
        ops = [(v, 1) for v in self.enc.ops.values()] + [(v, 1) for v in self.enc.kept.values()]

        def count(m) -> int:
            return sum(z3.is_true(m.eval(v, model_completion=True)) for v, _ in ops)

        lo, hi = 0, count(model)  # invariant: a program with hi operations exists (model)
        while lo < hi:
            mid = (lo + hi) // 2
            self.enc.solver.push()
            self.enc.solver.add(z3.PbLe(ops, mid))
            result = self.ask(allowed, extra)
            if result == z3.sat:
                model = self.enc.solver.model()
                hi = count(model)
            self.enc.solver.pop()
            if result == z3.unsat:
                lo = mid + 1
            elif result == z3.unknown:
                break  # keep the witness we have: it is valid, only not the smallest
        return model

    def program(self, model):
        return encoder.extract(self.enc, model, self.heads)

    def core_names(self) -> set[str]:
        names = {str(lit): name for name, lit in self.enc.tracked.items()}
        return {names.get(str(c), "level") for c in self.enc.solver.unsat_core()}


def decide(target, arch: Architecture, seq_len: int | None = None, timeout: float | None = None, *,
           decode_law: cost.DecodeLaw | str = cost.DecodeLaw.SEED, samples: int = 12) -> Verdict:
    """Decide whether ``arch`` computes ``target`` efficiently (a cost exponent bounded in ``T``).

    >>> import infoflow_smt as ifs
    >>> tgt = ifs.catalogue.get("min_pairwise_dot")
    >>> ifs.decide(tgt, ifs.Architecture(heads=(1, 1), embed_dim=16, input_dim=2)).status
    <Status.FEASIBLE: 'feasible'>
    >>> ifs.decide(tgt, ifs.Architecture(heads=(4,), embed_dim=16, input_dim=2)).exponent
    T/8 - 1
    """
    started = time.perf_counter()
    target = as_target(target)
    _check_inputs(target, arch, seq_len, timeout)
    law = cost.DecodeLaw(decode_law)
    # first without anchors (a smaller encoding whose programs are programs of the full one), then with
    session = _Session(target, arch, seq_len, timeout, law, anchors=False)
    level, model, unknown = session.cheapest(session.bounded)
    if model is None and unknown is None and arch.positional and arch.layers >= 2:
        calls = session.calls
        session = _Session(target, arch, seq_len, timeout, law, anchors=True)
        session.calls += calls
        level, model, unknown = session.cheapest(session.bounded)
    enc = session.enc
    extra = {"levels": len(enc.levels), "z3_constraints": len(enc.solver.assertions())}

    def stats():
        return Stats(seconds=time.perf_counter() - started, solver_calls=session.calls, extra=extra)

    if unknown is not None:
        return Verdict(Status.UNKNOWN, target, arch, sympy.nan, stats=stats(), seq_len=seq_len,
                       reason_unknown=unknown)
    if model is not None:
        allowed = [i for i in session.bounded if i <= level]
        model, exact = session.tightest_gather(level, allowed, model)
        program = session.program(session.fewest_operations(allowed, model, exact))
        exponent = _replayed_exponent(program, target, arch, seq_len, law, samples)
        return Verdict(Status.FEASIBLE, target, arch, exponent, witness=program, stats=stats(),
                       best_program=program, seq_len=seq_len)
    # no efficient program: say why, then look for the cheapest program at any cost
    session.ask(session.bounded)
    core = session.core_names()
    has_kth = any(n.kind == "kth" for n in enc.nodes.values())
    excluded = explain.growing_costs(arch, law, has_kth)
    reasons = explain.explain(target, arch, core, excluded)
    every = list(range(len(enc.levels)))
    level, model, unknown = session.cheapest(every)
    if unknown is not None:
        return Verdict(Status.INFEASIBLE, target, arch, sympy.oo, explanation=reasons, stats=stats(),
                       seq_len=seq_len, reason_unknown=f"best exponent not found: {unknown}")
    if model is None:
        return Verdict(Status.INFEASIBLE, target, arch, sympy.oo, explanation=reasons, stats=stats(),
                       seq_len=seq_len)
    allowed = [i for i in every if i <= level]
    model, exact = session.tightest_gather(level, allowed, model)
    program = session.program(session.fewest_operations(allowed, model, exact))
    # the cheapest inefficient program is replayed too, on fewer inputs: it mostly aggregates everything
    exponent = _replayed_exponent(program, target, arch, seq_len, law, max(2, samples // 4))
    return Verdict(Status.INFEASIBLE, target, arch, exponent, explanation=reasons, stats=stats(),
                   best_program=program, seq_len=seq_len)


def _replayed_exponent(program, target, arch, seq_len, law, samples) -> sympy.Expr:
    """Replay a program found by the solver and return its cost exponent; a failed replay is a bug."""
    length = _replay_length(program, target, arch, seq_len)
    report = check(program, target, arch, seq_len=length, samples=samples, seed=0)
    if not report.ok:
        raise WitnessCheckError(f"the solver's program fails its replay (a bug in infoflow_smt):\n"
                                f"{program}\n{report}", report)
    tree = comparison_tree(target, program.order_map)
    exponent, _ = program_cost(program, tree, arch, law)
    return cost.at(exponent, seq_len)


def minimize(target, max_layers: int = 4, max_heads: int = 8, *, embed_dim=32, input_dim: int = 1,
             positional: bool | None = None, seq_len: int | None = None) -> tuple[Verdict, ...]:
    """The Pareto-minimal architectures (layers, heads per layer, exponent), each with its witness.

    Architectures have the same number of heads in every layer. A point is kept when no other feasible
    point has at most as many layers, at most as many heads and an exponent no larger. Every architecture
    is decided: more heads can lower the exponent (heads that split specific positions each decode less).
    """
    target = as_target(target)
    if positional is None:
        positional = bool(target.needs_positional)
    problems = [f"{name} must be an integer >= 1, got {value!r}"
                for name, value in (("max_layers", max_layers), ("max_heads", max_heads))
                if isinstance(value, bool) or not isinstance(value, int) or value < 1]
    if problems:
        raise InvalidSpecError(problems, "minimize")
    feasible: list[Verdict] = []
    for layers in range(1, max_layers + 1):
        for heads in range(1, max_heads + 1):
            arch = Architecture(heads=(heads,) * layers, embed_dim=embed_dim, input_dim=input_dim,
                                positional=positional)
            verdict = decide(target, arch, seq_len=seq_len)
            if verdict.status is Status.FEASIBLE:
                feasible.append(verdict)
    key = (lambda v: cost.asymptotic_key(v.exponent)) if seq_len is None else (lambda v: (float(v.exponent), 0))

    def dominated(v: Verdict) -> bool:
        return any(w is not v and w.architecture.layers <= v.architecture.layers
                   and w.architecture.heads[0] <= v.architecture.heads[0] and key(w) <= key(v)
                   for w in feasible)

    return tuple(v for v in feasible if not dominated(v))


def export_smtlib(target, arch: Architecture, path, *, efficient: bool = True,
                  decode_law: cost.DecodeLaw | str = cost.DecodeLaw.SEED) -> Path:
    """Write the decision as an SMT-LIB 2 script: satisfiable iff an (efficient) program exists."""
    target = as_target(target)
    _check_inputs(target, arch, None, None)
    enc = encoder.encode(target, arch, cost.DecodeLaw(decode_law), None, portable=True)
    script = z3.Solver(ctx=enc.ctx)
    script.add(enc.solver.assertions())
    script.add(list(enc.tracked.values()) + enc.head_assumptions(arch.heads))
    if efficient:
        script.add([z3.Not(v) for i, v in enumerate(enc.level_vars) if not cost.is_bounded(enc.levels[i])])
    path = Path(path)
    text = script.to_smt2()
    path.write_text(text if "(check-sat)" in text else text + "(check-sat)\n")
    return path
