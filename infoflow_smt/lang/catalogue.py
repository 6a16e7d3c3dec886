"""Named targets from the papers, with parameters.

Each entry builds target *text* and goes through ``parse_target``, the same safe parser users get.
Sources: paper 1 is "InfoFlow" (depth/width separations for transformers), paper 2 its follow-up on
D-retrieval; section numbers refer to docs/model.md where given. The entries after them are results from
outside the two papers (induction heads, k-hop induction, Match2 and Match3, disjointness, nearest
neighbour), each citing its arXiv paper, in the form the paper states the task: Match2 and Match3 answer at
every position (``o``), and ``hop_k`` is read at the last position (``Entry.readout``: an architecture that
leaves its readout out reads it there, ``model.defaults``). ``proofs/literature.py`` sets each paper's claim
beside the model's verdict.

A spec is ``name`` or ``name:key=value,key=value`` (defaults omitted in canonical form), as on the CLI:

>>> get("intrinsic_dimension", D=3).name
'intrinsic_dimension:D=3'
>>> parse_spec("d_retrieval:D=2,subsets=false").text
'F0(min(f1(x[t]) for t in T), min(f2(x[t]) for t in T))'
>>> parse_spec("max(f1(x[t]) for t in T)").name is None
True
"""
from __future__ import annotations

import difflib
import functools
import numbers
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from infoflow_smt.errors import InvalidSpecError, Problem
from infoflow_smt.lang.target import Target, parse_target
from infoflow_smt.limits import MAX_DIGITS, whole

_MAX_D = 64  # keeps texts (and the comparison trees built from them) of a sane size


@dataclass(frozen=True)
class Parameter:
    """One parameter: ``kind`` is ``"int"`` (``minimum..maximum``), ``"bool"`` or ``"positions"``."""

    name: str
    default: object
    kind: str = "int"
    minimum: int = 1
    maximum: int | None = None


@dataclass(frozen=True)
class Entry:
    """A catalogue target: ``builder(**parameters)`` returns its text; ``readout`` is where its paper reads the
    answer: ``"output"``, the extra output token (paper 1), or ``"last"``, the last input position."""

    name: str
    builder: Callable[..., str]
    parameters: tuple[Parameter, ...]
    source: str
    summary: str
    readout: str = "output"

    @property
    def defaults(self) -> dict[str, object]:
        return {p.name: p.default for p in self.parameters}

    @property
    def signature(self) -> str:
        """``"D=3, subsets=true"``: the parameters with their defaults, as a spec writes them."""
        return ", ".join(f"{p.name}={_show(p.default)}" for p in self.parameters)

    def to_json(self) -> dict:
        return {"name": self.name, "summary": self.summary, "source": self.source,
                "parameters": {p.name: _show(p.default) for p in self.parameters},
                "text": self.builder(**self.defaults), "readout": self.readout}


def _joined(terms: list[str]) -> str:
    return " + ".join(terms)


def _min_pairwise_dot() -> str:
    return "min(dot(x[s], x[t]) for s in T for t in T)"


def _max_retrieval() -> str:
    return "max(f1(x[t]) for t in T)"


def _kth_largest(k: int) -> str:
    return f"kth_largest({k}, f1(x[t]) for t in T)"


def _d_retrieval(D: int, subsets: bool) -> str:
    terms = [f"min(f{i}(x[t]) for t in {f'S{i}' if subsets else 'T'})" for i in range(1, D + 1)]
    return f"F0({', '.join(terms)})"


def _linear_max_sum(D: int) -> str:
    return _joined([f"max(dot(a{i}, x[t]) for t in T)" for i in range(1, D + 1)])


def _intrinsic_dimension(D: int) -> str:
    return _joined([f"max(bilinear(A{i}, x[s], x[t]) for s in T for t in T)" for i in range(1, D + 1)])


def _triangle_center(squared: bool) -> str:
    score = "norm(x[a] + x[b] + x[c])" + ("**2" if squared else "")
    return f"min({score} for a in T for b in T for c in T)"


def _specific_positions(positions: tuple[int, ...]) -> str:
    return _joined([f"x[{p}]" for p in positions])


def _hop(query: str, variable: str) -> str:
    """The token after the position whose previous token best matches ``query`` (one induction-head hop)."""
    return f"x[argmax(dot(x[{variable}-1], {query}) for {variable} in range(2, T+1))]"


def _induction_head() -> str:
    return _hop("x[T]", "t")


def _k_hop_induction(k: int) -> str:
    text = "x[T]"
    for hop in range(1, k + 1):  # each hop starts from the token the previous one found: a fresh variable each
        text = _hop(text, f"t{hop}")
    return text


def _match(order: int, prefix: bool) -> str:
    """Match2 (order 2) or Match3 (order 3) as the paper states it: at every position o, whether some partners
    (one, two) match its token, a smooth F0 for the indicator; ``prefix``: partners among x[1..o] only."""
    partners = ("s", "t")[2 - (order - 1):]
    tokens = ", ".join(["x[o]", *(f"x[{v}]" for v in partners)])
    domain = "range(1, o+1)" if prefix else "T"
    return f"max(F0({tokens}) {' '.join(f'for {v} in {domain}' for v in partners)})"


def _max_over(order: int) -> str:
    variables = ("r", "s", "t")[-order:]
    tokens = ", ".join(f"x[{v}]" for v in variables)
    return f"max(F0({tokens}) {' '.join(f'for {v} in T' for v in variables)})"


def _disjointness() -> str:
    # S1 and S3 are complementary halves of the positions (model.md section 1), the two sets to compare
    return "max(dot(x[s], x[t]) for s in S1 for t in S3)"


def _nearest_neighbor() -> str:
    return "x[argmin(norm(x[t-1] - x[T])**2 for t in range(2, T))]"


_D = Parameter("D", 2, "int", 1, _MAX_D)
ENTRIES: Mapping[str, Entry] = MappingProxyType({e.name: e for e in (
    Entry("min_pairwise_dot", _min_pairwise_dot, (),
          "paper 1, Theorem 1 (depth separation); model.md section 3",
          "min over pairs s, t of <x_s, x_t>: comparison order 2, comparison number T^2."),
    Entry("max_retrieval", _max_retrieval, (), "paper 1, Theorem 2 with k = 1",
          "max over t of f1(x_t): one top-1 selection."),
    Entry("kth_largest", _kth_largest, (Parameter("k", 2, "int", 1, 1024),), "paper 1, Theorem 2",
          "the k-th largest of f1(x_t) over t (k = 1 is max_retrieval)."),
    Entry("d_retrieval", _d_retrieval, (_D, Parameter("subsets", True, "bool")), "paper 2, eq. 8-9",
          "F0 of D minima min_{t in S_i} f_i(x_t); subsets=false ranges every minimum over all positions."),
    Entry("linear_max_sum", _linear_max_sum, (Parameter("D", 4, "int", 1, _MAX_D),),
          "paper 2, Section 6.1 (synthetic task, D = 4)", "sum over i of max over t of <a_i, x_t>."),
    Entry("intrinsic_dimension", _intrinsic_dimension, (_D,), "paper 1, Experiment 1",
          "sum over i of max over s, t of x_s^T A_i x_t: comparison dimension D."),
    Entry("triangle_center", _triangle_center, (Parameter("squared", True, "bool"),),
          "paper 1, Experiment 2 (sources differ on the square)",
          "min over a, b, c of ||x_a + x_b + x_c||^2 (or the norm itself): comparison order 3."),
    Entry("specific_positions", _specific_positions, (Parameter("positions", (1, 2, 3), "positions"),),
          "paper 1, Experiment 4", "x at fixed positions, summed: needs positional encoding."),
    Entry("induction_head", _induction_head, (),
          "Sanford, Hsu, Telgarsky 2024, arXiv 2408.14332 (one layer needs size linear in T, two layers suffice)",
          "the token after the position whose previous token best matches the last token x[T], read at the "
          "output token: needs positional encoding."),
    Entry("k_hop_induction", _k_hop_induction, (Parameter("k", 2, "int", 1, 16),),
          "Sanford, Hsu, Telgarsky 2024, arXiv 2402.09268 (depth about log2(k) by pointer doubling)",
          "k induction-head hops, each from the token the previous hop found (k = 1 is induction_head), read at "
          "the output token; hop_k is the same read at the last position, as the paper reads it."),
    Entry("hop_k", _k_hop_induction, (Parameter("k", 2, "int", 1, 16),),
          "Sanford, Hsu, Telgarsky 2024, arXiv 2402.09268 (hop_k: depth about log2(k) by pointer doubling)",
          "the paper's hop_k: k induction-head hops from the last token x[T], each from the token the previous hop "
          "found, read at the last position (readout last; k_hop_induction reads it at the output token).",
          readout="last"),
    Entry("match2", functools.partial(_match, 2), (Parameter("prefix", False, "bool"),),
          "Sanford, Hsu, Telgarsky 2023, arXiv 2306.02896 (Match2: one layer of one head at small size)",
          "the paper's Match2: at every position o, the max over t of F0(x_o, x_t) (does some t match o?); "
          "prefix=true: t among 1..o only, what a decoder's position sees under its mask."),
    Entry("match3", functools.partial(_match, 3), (Parameter("prefix", False, "bool"),),
          "Sanford, Hsu, Telgarsky 2023, arXiv 2306.02896 (Match3: one layer needs size polynomial in T)",
          "the paper's Match3: at every position o, the max over s, t of F0(x_o, x_s, x_t); prefix=true: s, t "
          "among 1..o only."),
    Entry("max_over_pairs", functools.partial(_max_over, 2), (), "paper 1's depth-separation shape (Match2's "
          "pairs reduced to one answer)",
          "max over pairs s, t of F0(x_s, x_t), one answer read at the output token: comparison order 2."),
    Entry("max_over_triples", functools.partial(_max_over, 3), (), "paper 1's triangle-center shape (Match3's "
          "triples reduced to one answer)",
          "max over triples r, s, t of F0(x_r, x_s, x_t), one answer read at the output token: comparison order 3."),
    Entry("disjointness", _disjointness, (),
          "Bhattamishra, Hahn, Blunsom, Kanade 2024, arXiv 2406.09347 (two layers of log size, one layer linear)",
          "max over s in S1, t in S3 of <x_s, x_t>: with nearly orthogonal unit codes for the elements, 1 iff "
          "the two sets (complementary halves of the positions) meet."),
    Entry("nearest_neighbor", _nearest_neighbor, (),
          "Bhattamishra, Hahn, Blunsom, Kanade 2024, arXiv 2406.09347 (two layers of log size)",
          "the label after the example nearest the query x[T] (labels follow their examples)."),
)})

_SPEC = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?::(.*))?", re.DOTALL)
_INT = re.compile(r"[+-]?[0-9]+")
_BOOLS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


def names() -> tuple[str, ...]:
    """The catalogue's target names, in catalogue order."""
    return tuple(ENTRIES)


def entry(name: object) -> Entry:
    """The entry called ``name`` (an unknown name: ``InvalidSpecError`` with suggestions)."""
    return _entry(name)


def _entry(name: object) -> Entry:
    if not isinstance(name, str):
        raise InvalidSpecError([Problem(f"catalogue name must be a str, got {type(name).__name__}")],
                               "catalogue")
    if name not in ENTRIES:
        close = difflib.get_close_matches(name, names(), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; known: {', '.join(names())}"
        raise InvalidSpecError([Problem(f"unknown catalogue target {name!r}{hint}")], subject="catalogue")
    return ENTRIES[name]


def _coerce(p: Parameter, value: object) -> tuple[object, str | None]:
    """(the value in the parameter's type, or a problem naming the offending value)."""
    if p.kind == "bool":
        if isinstance(value, bool):
            return value, None
        if isinstance(value, str) and value.strip().lower() in _BOOLS:
            return _BOOLS[value.strip().lower()], None
        return None, f"{p.name} must be true or false, got {value!r}"
    if p.kind == "positions":
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)) or not items:
            return None, f"{p.name} must be a non-empty list of positions >= 1, got {value!r}"
        coerced = [_coerce(Parameter(p.name, None), item) for item in items]
        bad = [message for _, message in coerced if message]
        return (None, bad[0]) if bad else (tuple(v for v, _ in coerced), None)
    if isinstance(value, str) and _INT.fullmatch(value.strip()):
        if len(value.strip().lstrip("+-")) > MAX_DIGITS:  # int() of thousands of digits is slow, then refused
            return None, f"{p.name} has {len(value.strip().lstrip('+-'))} digits, over the limit of {MAX_DIGITS}"
        value = int(value)
    if whole(value) is None:
        return None, f"{p.name} must be an integer, got {_short(value)}"
    value = whole(value)
    if value < p.minimum or (p.maximum is not None and value > p.maximum):
        upper = f" and <= {p.maximum}" if p.maximum is not None else ""
        return None, f"{p.name} must be >= {p.minimum}{upper}, got {_short(value)}"
    return value, None


def _short(value: object) -> str:
    """A value for a message: at most 60 characters of its repr (a huge integer by its size: Python refuses to
    print one of over 4300 digits)."""
    if whole(value) is not None and abs(whole(value)).bit_length() > 64:
        return f"an integer of about {int(abs(whole(value)).bit_length() * 0.30103)} digits"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _show(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def get(name: str, seed: int = 0, **params: object) -> Target:
    """The catalogue target ``name`` with ``params``; ``Target.name`` is its canonical spec.

    >>> get("triangle_center", squared=False).text
    'min(norm(x[a] + x[b] + x[c]) for a in T for b in T for c in T)'
    """
    return _build(name, seed, params)


def _build(name: str, seed: int, params: Mapping[str, object]) -> Target:
    entry = _entry(name)
    known = {p.name: p for p in entry.parameters}
    problems = [Problem(f"unknown parameter {key!r} of {name}; parameters: {', '.join(known) or 'none'}")
                for key in params if key not in known]
    values = entry.defaults
    for key, value in params.items():
        if key in known:
            values[key], message = _coerce(known[key], value)
            if message:
                problems.append(Problem(message))
    if problems:
        raise InvalidSpecError(problems, subject=f"catalogue target {name!r}")
    changed = [f"{p.name}={_show(values[p.name])}" for p in entry.parameters if values[p.name] != p.default]
    spec = name + (":" + ",".join(changed) if changed else "")
    return parse_target(entry.builder(**values), seed=seed, name=spec)


def _parse_params(text: str) -> dict[str, str]:
    """``"D=3,subsets=false"`` -> ``{"D": "3", "subsets": "false"}``; a piece without ``=`` continues the
    previous value, so ``"positions=1,2,5"`` -> ``{"positions": "1,2,5"}``."""
    params: dict[str, str] = {}
    problems: list[Problem] = []
    key: str | None = None
    for piece in text.split(","):
        if "=" in piece:
            key, value = (s.strip() for s in piece.split("=", 1))
            if key in params:
                problems.append(Problem(f"parameter {key!r} given twice"))
            params[key] = value
        elif key is not None and piece.strip():
            params[key] += "," + piece.strip()
        else:
            problems.append(Problem(f"expected key=value, got {piece.strip()!r}"))
    if problems:
        raise InvalidSpecError(problems, subject="catalogue spec")
    return params


def parse_spec(spec: str, seed: int = 0) -> Target:
    """A catalogue spec (``"kth_largest:k=2"``) or, failing that, target text.

    A bare identifier is always read as a catalogue name (a lone parameter is no useful target), so a
    misspelt name gets suggestions instead of parsing as text.

    >>> parse_spec("kth_largest:k=3").text
    'kth_largest(3, f1(x[t]) for t in T)'
    """
    if not isinstance(spec, str):
        raise InvalidSpecError([Problem(f"target spec must be a str, got {type(spec).__name__}")],
                               "catalogue spec")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise InvalidSpecError([Problem(f"seed must be an integer, got {seed!r}")], "catalogue spec")
    return _parsed(spec, int(seed))


@functools.lru_cache(maxsize=256)
def _parsed(spec: str, seed: int) -> Target:
    """Targets are immutable: one object per text, whose normal form and trees are computed once."""
    match = _SPEC.fullmatch(spec.strip())
    if match is None:
        return parse_target(spec, seed=seed)
    name, rest = match.group(1), match.group(2)
    _entry(name)  # an unknown name is the first thing to report
    return _build(name, seed, _parse_params(rest) if rest is not None else {})


def stated_readout(target) -> str:
    """Where the paper of ``target``'s catalogue entry reads the answer (``Entry.readout``); ``"output"`` for
    target text.

    >>> stated_readout(parse_spec("hop_k:k=3")), stated_readout(parse_spec("k_hop_induction:k=3"))
    ('last', 'output')
    """
    name = getattr(target, "name", None) or ""
    found = ENTRIES.get(name.split(":", 1)[0])
    return found.readout if found is not None else "output"


def as_target(target) -> Target:
    """What ``decide`` and the brute force take: a ``Target``, or a catalogue spec or target text."""
    if isinstance(target, str):
        return parse_spec(target)
    if not hasattr(target, "expr"):
        raise InvalidSpecError(f"target must be a Target or a string, got {type(target).__name__}", "target")
    return target


def describe(name: str) -> str:
    """A few lines on one entry: parameters, summary, source, and its default text.

    >>> print(describe("max_retrieval").splitlines()[0])
    max_retrieval: max over t of f1(x_t): one top-1 selection.
    """
    found = _entry(name)
    params = found.signature
    read = "" if found.readout == "output" else f"\nread at: the {found.readout} position (its paper's readout)"
    return (f"{found.name}{f'({params})' if params else ''}: {found.summary}\n"
            f"source: {found.source}\n"
            f"text: {found.builder(**found.defaults)}{read}")
