"""A user's own theorems as data: a TOML file of claims, read and validated (docs/claims.md).

A claim names a target, an architecture (or every architecture), the verdict expected, and optionally the
cost exponent and the frontier of minimal architectures, and the decoder setting it is stated in: the causal
mask (``causal``), where the answer is read (``readout``), the rank rule (``rank_aware``) and one sequence length
(``seq_len``); what it leaves out is the target's, as ``infoflow decide`` takes it (``model.defaults``). ``load`` reads a file into ``Claim`` values, checking
every key and value first and raising one ``InvalidSpecError`` that lists every problem; ``claim_check.check``
asks the prover. Reading never executes anything: targets go through the whitelisting parser, exponents and
widths through ``expression`` below.
"""
from __future__ import annotations

import ast
import tomllib
from dataclasses import dataclass
from pathlib import Path

import sympy

from infoflow_smt.errors import InfoflowError, InvalidSpecError, Problem
from infoflow_smt.files import input_file
from infoflow_smt.lang.catalogue import parse_spec
from infoflow_smt.lang.target import Target
from infoflow_smt.limits import MAX_CLAIMS_BYTES, MAX_TIMEOUT
from infoflow_smt.model.architecture import Architecture
from infoflow_smt.model.defaults import settings
from infoflow_smt.symbols import T
from infoflow_smt.words import printable

EVERY = "every"                        # architecture = "every": the claim is over every (L, h)
SHAPES = ("bounded", "grows")          # exponent words: free of T and finite / depends on T
VERDICTS = ("feasible", "infeasible")
SETTING_KEYS = {"causal", "readout", "rank_aware", "seq_len"}   # the decoder setting a claim is stated in
KEYS = {"name", "source", "target", "heads", "architecture", "embed_dim", "input_dim", "positional", "expect",
        "exponent", "frontier", "max_layers", "max_heads", "timeout"} | SETTING_KEYS
DEFAULT_KEYS = {"embed_dim", "input_dim", "positional", "timeout"} | SETTING_KEYS   # what [defaults] may set
READOUTS = ("output", "last")


@dataclass(frozen=True)
class Claim:
    """One claim: on ``heads`` (or, when ``heads`` is None, on every ``(L, h)`` within the optional bounds),
    ``target`` is ``expect``; ``exponent`` and ``frontier``, when given, must match too."""

    name: str
    spec: str                                   # the target as written
    target: Target
    expect: str                                 # "feasible" / "infeasible"
    heads: tuple[int, ...] | None               # None: every architecture
    embed_dim: int | sympy.Expr = 32
    input_dim: int = 2
    positional: bool = False
    exponent: sympy.Expr | str | None = None    # an expression in T, "bounded" or "grows"
    frontier: tuple[tuple[int, int], ...] | None = None
    max_layers: int | None = None               # every architecture: only L <= max_layers ...
    max_heads: int | None = None                # ... and h <= max_heads
    timeout: float | None = None
    source: str | None = None
    causal: bool = False                        # the decoder's mask
    readout: str = "output"                     # where the answer is read: the output token, or "last" (T)
    rank_aware: bool = False                    # the rank rule
    seq_len: int | None = None                  # one sequence length instead of every large T

    @property
    def every(self) -> bool:
        return self.heads is None

    @property
    def architecture(self) -> Architecture:
        """The architecture of a one-architecture claim (with one head of one layer for an every-claim: its
        width, token dimension, positional encoding and setting)."""
        return Architecture(heads=self.heads or (1,), embed_dim=self.embed_dim, input_dim=self.input_dim,
                            positional=self.positional, causal=self.causal, readout=self.readout,
                            rank_aware=self.rank_aware)

    def where(self) -> str:
        """The architecture part of the claim, in words, with the setting when one is on (``report.setting``'s
        words: the causal mask, the readout at the last position, the rank rule) and the one length."""
        arch = self.architecture
        on = [w for w, flag in (("causal mask", self.causal), ("read at the last position", self.readout == "last"),
                                ("rank rule", self.rank_aware)) if flag]
        on += [f"at T = {self.seq_len}"] if self.seq_len is not None else []
        rest = f"E={arch.embed_dim}, d={arch.input_dim}{', positional' if arch.positional else ''}" + \
            "".join(f", {w}" for w in on)
        if not self.every:
            return f"{arch.shape}, {rest}"
        bounds = [f"L <= {self.max_layers}"] * (self.max_layers is not None) + \
                 [f"h <= {self.max_heads}"] * (self.max_heads is not None)
        return f"every (L, h){' with ' + ', '.join(bounds) if bounds else ''}, {rest}"

    def __str__(self) -> str:
        """The claim in one line of printable text (the target as written, its comments and all)."""
        parts = [f"{printable(self.spec)} is {self.expect} on {self.where()}"]
        if self.exponent is not None:
            parts.append(f"exponent {self.exponent}")
        if self.frontier is not None:
            parts.append(f"frontier {format_shapes(self.frontier)}")
        return "; ".join(parts)


def format_shapes(shapes) -> str:
    return ", ".join(f"({L}, {h})" for L, h in shapes) if shapes else "none"


def load(path: str | Path) -> tuple[Claim, ...]:
    """The claims of a TOML file; a bad file raises ``InvalidSpecError`` naming every bad key and value.

    The file holds ``[[claim]]`` tables and an optional ``[defaults]`` table (``embed_dim``, ``input_dim``,
    ``positional``, ``timeout``) that every claim takes unless it sets its own. It must be a plain file of at
    most ``limits.MAX_CLAIMS_BYTES`` (a FIFO or ``/dev/zero`` is refused unread).
    """
    path = input_file(path, "claims file", MAX_CLAIMS_BYTES)
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise InvalidSpecError(f"cannot read {path}: {err.strerror or err}", "claims file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise InvalidSpecError(f"{path} is not TOML: {err}", "claims file") from None
    except RecursionError:   # tomllib reads nested arrays and tables recursively
        raise InvalidSpecError(f"{path}: arrays or tables nested too deep to be claims", "claims file") from None
    return parse(document, str(path))


def parse(document: dict, where: str = "claims") -> tuple[Claim, ...]:
    """The claims of an already decoded TOML document (``load`` without the file)."""
    problems: list[Problem] = []
    unknown = set(document) - {"claim", "defaults"}
    if unknown:
        problems.append(Problem(f"{where}: unknown table {', '.join(sorted(unknown))!s} (known: claim, defaults)"))
    defaults = document.get("defaults", {})
    if not isinstance(defaults, dict) or set(defaults) - DEFAULT_KEYS:
        problems.append(Problem(f"{where}: [defaults] may set only {', '.join(sorted(DEFAULT_KEYS))}"))
        defaults = {}
    tables = document.get("claim", [])
    if not isinstance(tables, list) or not tables:
        problems.append(Problem(f"{where}: no [[claim]] tables"))
        tables = []
    claims, names = [], set()
    for i, table in enumerate(tables, 1):
        label = f"{where}: claim {i}"
        if isinstance(table, dict) and isinstance(table.get("name"), str):
            label += f" ({table['name']!r})"
        claim = _claim(defaults | table if isinstance(table, dict) else table, label, problems)
        if claim is not None:
            if claim.name in names:
                problems.append(Problem(f"{label}: the name is used twice"))
            names.add(claim.name)
            claims.append(claim)
    if problems:
        raise InvalidSpecError(problems, "claims file")
    return tuple(claims)


def _claim(table, label: str, problems: list[Problem]) -> Claim | None:
    """One claim, or None after adding what is wrong with it to ``problems``."""
    found: list[str] = []
    if not isinstance(table, dict):
        problems.append(Problem(f"{label}: a claim is a table of keys"))
        return None
    for key in sorted(set(table) - KEYS):
        found.append(f"unknown key {key!r} (known: {', '.join(sorted(KEYS))})")
    for key in ("name", "target", "expect"):
        if key not in table:
            found.append(f"missing key {key!r}")
    name, spec = table.get("name"), table.get("target")
    _expect_type(found, "name", name, str)
    _expect_type(found, "source", table.get("source"), str)
    expect = table.get("expect")
    if expect is not None and expect not in VERDICTS:
        found.append(f"expect = {expect!r}: give one of {', '.join(VERDICTS)}")
    target = _target(spec, found) if isinstance(spec, str) else None
    if spec is not None and not isinstance(spec, str):
        found.append(f"target = {spec!r}: give a catalogue name or target text (a string)")
    heads = _heads(table, found)
    fields = _fields(table, target, heads is None, found)
    if found:
        problems.extend(Problem(f"{label}: {message}") for message in found)
        return None
    claim = Claim(name=name, spec=spec, target=target, expect=expect, heads=heads, source=table.get("source"),
                  **fields)
    try:
        claim.architecture  # noqa: B018 - the architecture's own checks (width, dimension, limits)
    except InvalidSpecError as err:
        problems.extend(Problem(f"{label}: {p}") for p in err.problems)
        return None
    return claim


def _target(spec: str, found: list[str]) -> Target | None:
    try:
        return parse_spec(spec)
    except InvalidSpecError as err:
        found.append(f"target = {spec!r}: {err}")
        return None


def _heads(table: dict, found: list[str]) -> tuple[int, ...] | None:
    """The heads of a one-architecture claim; None for an every-architecture claim."""
    heads, every = table.get("heads"), table.get("architecture")
    if every is not None and every != EVERY:
        found.append(f"architecture = {every!r}: the only value is {EVERY!r} (or give heads = [h1, h2, ...])")
    if (heads is None) == (every is None):
        found.append("give either heads = [h1, h2, ...] (one architecture) or architecture = \"every\"")
        return None
    if heads is None:
        return None
    if not (isinstance(heads, list) and heads and all(_whole(h) for h in heads)):
        found.append(f"heads = {heads!r}: give a list of whole numbers >= 1, one per layer")
        return None
    return tuple(heads)


def _fields(table: dict, target: Target | None, every: bool, found: list[str]) -> dict:
    """The optional keys, read and checked; defaults as ``infoflow decide`` takes them."""
    embed_dim = table.get("embed_dim", 32)
    if isinstance(embed_dim, str):
        embed_dim = _expression(embed_dim, "embed_dim", found)
    elif not _whole(embed_dim):
        found.append(f"embed_dim = {embed_dim!r}: give a whole number or an expression in T such as \"2*T\"")
    input_dim, positional = table.get("input_dim"), table.get("positional")
    if input_dim is not None and not _whole(input_dim):
        found.append(f"input_dim = {input_dim!r}: give a whole number >= 1")
    _expect_type(found, "positional", positional, bool)
    setting = _setting(table, every, found)
    if target is not None and not found:   # what the claim leaves out is the target's, as on the command line
        settled = settings(target, causal=setting["causal"], input_dim=input_dim, positional=positional,
                           readout=setting["readout"])
        input_dim, positional, setting["readout"] = settled["input_dim"], settled["positional"], settled["readout"]
    exponent = table.get("exponent")
    if exponent is not None:
        exponent = _exponent(exponent, found)
    frontier = _frontier(table.get("frontier"), every, found)
    bounds = {key: table.get(key) for key in ("max_layers", "max_heads")}
    for key, value in bounds.items():
        if value is not None and (not every or not _whole(value)):
            found.append(f"{key} = {value!r}: a whole number >= 1, only with architecture = \"every\"")
    timeout = table.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not 0 < timeout <= MAX_TIMEOUT):
        found.append(f"timeout = {timeout!r}: give a positive number of seconds up to {MAX_TIMEOUT:.0f} "
                     "(infoflow_smt.limits.MAX_TIMEOUT)")
    return dict(embed_dim=embed_dim, input_dim=input_dim, positional=positional, exponent=exponent,
                frontier=frontier, timeout=timeout, **bounds, **setting)


def _setting(table: dict, every: bool, found: list[str]) -> dict:
    """``causal``, ``readout``, ``rank_aware`` and ``seq_len``, read and checked (``readout`` None: the target's).
    A claim over every architecture is decided by ``decide_all``, which asks at the output token, for all large
    T, at a width that does not grow with the heads: the keys it cannot honour are refused, each saying what to
    ask instead."""
    causal, rank_aware = table.get("causal", False), table.get("rank_aware", False)
    _expect_type(found, "causal", causal, bool)
    _expect_type(found, "rank_aware", rank_aware, bool)
    readout, seq_len = table.get("readout"), table.get("seq_len")
    if readout is not None and readout not in READOUTS:
        found.append(f"readout = {readout!r}: give one of {', '.join(map(repr, READOUTS))}")
    if seq_len is not None and (not _whole(seq_len) or seq_len < 2):
        found.append(f"seq_len = {seq_len!r}: give a whole number >= 2 (or leave it out: every large T)")
    if every:
        refused = {"readout": readout == "last", "rank_aware": rank_aware is True, "seq_len": seq_len is not None}
        found.extend(f"{key} = {_toml(table[key])} with architecture = \"every\": the frontier is decided at the output "
                     f"token, for all large T, without the rank rule; state it on one architecture (heads = [...])"
                     for key, on in refused.items() if on)
        readout = "output" if readout is None else readout
    return {"causal": causal if isinstance(causal, bool) else False, "readout": readout,
            "rank_aware": rank_aware if isinstance(rank_aware, bool) else False, "seq_len": seq_len}


def _toml(value) -> str:
    return str(value).lower() if isinstance(value, bool) else repr(value)


def _exponent(value, found: list[str]):
    if isinstance(value, str) and value.strip() in SHAPES:
        return value.strip()
    if isinstance(value, int) and not isinstance(value, bool):
        return sympy.Integer(value)
    if isinstance(value, str):
        return _expression(value, "exponent", found)
    found.append(f"exponent = {value!r}: give an expression in T (\"T/8 - 1\", \"1\", \"oo\"), \"bounded\" "
                 "or \"grows\"")
    return None


def _frontier(value, every: bool, found: list[str]) -> tuple[tuple[int, int], ...] | None:
    if value is None:
        return None
    if not every:
        found.append("frontier is a claim over every architecture: add architecture = \"every\" (without heads)")
        return None
    if not (isinstance(value, list) and all(isinstance(p, list) and len(p) == 2 and all(map(_whole, p))
                                            for p in value)):
        found.append(f"frontier = {value!r}: give a list of [layers, heads] pairs, [] for none")
        return None
    return tuple(sorted((L, h) for L, h in value))


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _expect_type(found: list[str], key: str, value, kind: type) -> None:
    if value is not None and not isinstance(value, kind):
        found.append(f"{key} = {value!r}: give a {'string' if kind is str else 'true or false'}")


class _NotAnExpression(InfoflowError):
    pass


def expression(text: str) -> sympy.Expr:
    """An exponent or a width written in ``T``: numbers, ``T``, ``oo``, ``+ - * / **`` (a whitelist, never
    executed), whose value is real: ``oo - oo`` or ``0 * oo`` (undefined) is refused as ``1/0`` is; raises
    ``InvalidSpecError``.

    >>> expression("T/8 - 1")
    T/8 - 1
    """
    try:
        if len(text) > 200:
            raise _NotAnExpression
        value = _value(ast.parse(text.strip(), mode="eval").body)
    except (SyntaxError, _NotAnExpression, ZeroDivisionError):
        raise InvalidSpecError(f"{text!r} is not an expression in T (numbers, T, oo, + - * / **)",
                               "expression") from None
    if value.has(sympy.nan, sympy.zoo) or value.is_extended_real is False:
        raise InvalidSpecError(f"{text!r} has no real value (oo - oo, 0*oo and oo/oo are undefined)", "expression")
    return value


_OPERATORS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
              ast.Div: lambda a, b: a / b}


def _value(node) -> sympy.Expr:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return sympy.nsimplify(node.value)
    if isinstance(node, ast.Name) and node.id in ("T", "oo"):
        return T if node.id == "T" else sympy.oo
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return -_value(node.operand) if isinstance(node.op, ast.USub) else _value(node.operand)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _value(node.left), _value(node.right)
        if isinstance(node.op, ast.Div) and right == 0:
            raise ZeroDivisionError
        return _OPERATORS[type(node.op)](left, right)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        left, right = _value(node.left), _value(node.right)
        if right.is_Rational and abs(right) <= 4:   # no huge powers
            return left ** right
    raise _NotAnExpression


def _expression(text: str, key: str, found: list[str]):
    try:
        return expression(text)
    except InvalidSpecError as err:
        found.append(f"{key} = {text!r}: {err.problems[0]}")
        return None
