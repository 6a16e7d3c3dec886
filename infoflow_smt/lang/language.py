"""Target text <-> ``expr`` trees: a strict, safe parser and its canonical printer.

The text is read by ``ast.parse(text, mode="eval")`` into Python's syntax tree, which is then walked
against a whitelist (see docs/api.md, "Target text"). Nothing is ever evaluated, executed or imported:
the syntax tree is only inspected. Every problem found is collected and raised once, as one
``InvalidSpecError`` whose problems carry 1-based character columns into the text.

**Named sub-expressions.** Definitions ``name = E`` may come before the target, separated by ``;`` or new
lines (``p1 = argmax(dot(x[t-1], x[T]) for t in range(2, T+1)); x[argmax(dot(x[u-1], x[p1]) for u in
range(2, T+1))]``): each name stands for its expression wherever it is used later, as if written there (``x[p1]``
for the token at a named selection's winner, ``x[p1 + 1]`` for the one after it). A definition reads no index
variable it does not bind (it means the same wherever it is used); where it is used inside a reduction that
binds one of its own variables, that variable is renamed. The text is still only inspected: ``ast.parse`` in
``exec`` mode reads the statements, and nothing but ``name = E`` definitions and one final expression is
accepted. ``to_named_text`` prints a target back with its nested selections named.

Value kinds are checked while walking: ``x[...]`` is a d-vector, and so is a bare parameter name, which
may only be a direct argument of ``dot`` (``dot(a1, x[t])``) or the matrix of ``bilinear(A1, a, b)``;
everything else is a scalar, ``dot``/``norm``/``bilinear`` take vectors and selections need a scalar body.

>>> to_text(parse_target_expr("min( dot(x[s],x[t]) for s in T for t in T )"))
'min(dot(x[s], x[t]) for s in T for t in T)'
"""
from __future__ import annotations

import ast
import bisect
import io
import math
import re
import tokenize
from dataclasses import dataclass

from infoflow_smt.errors import InvalidSpecError, Problem
from infoflow_smt.lang import refused_names, shift
from infoflow_smt.lang.expr import (
    ANSWER,
    BUILTIN_FUNCTIONS,
    AllPositions,
    Binding,
    BinOp,
    Call,
    Content,
    Domain,
    Expr,
    FixedIndex,
    Neg,
    Num,
    OffsetIndex,
    Param,
    Range,
    Reduce,
    ReduceKind,
    Subset,
    VarIndex,
    children,
    domain_variables,
    free_variables,
    height,
    map_children,
    rename,
)
from infoflow_smt.limits import (
    MAX_DEPTH,
    MAX_DIGITS,
    MAX_JOINT,
    MAX_NESTING,
    MAX_OFFSET,
    MAX_POSITION,
    MAX_RANK,
    MAX_TEXT_CHARS,
)
from infoflow_smt.words import plural

_REDUCTIONS = {kind.value: kind for kind in ReduceKind}
_ARITY = {"dot": 2, "norm": 1, "bilinear": 3}
_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}
_BAD_OPS = {ast.FloorDiv: "//", ast.Mod: "%", ast.MatMult: "@", ast.LShift: "<<", ast.RShift: ">>",
            ast.BitOr: "|", ast.BitXor: "^ (for powers write **)", ast.BitAnd: "&"}
_SUBSET = re.compile(r"S[1-9][0-9]*\Z")
_RESERVED = refused_names.REFUSED | set(_REDUCTIONS) | BUILTIN_FUNCTIONS | {"x", "T", "range"}
_CONSTRUCTS = {
    ast.Attribute: "attribute access (a.b)", ast.Lambda: "lambda", ast.ListComp: "list comprehension",
    ast.SetComp: "set comprehension", ast.DictComp: "dict comprehension",
    ast.List: "list", ast.Tuple: "tuple",
    ast.Set: "set", ast.Dict: "dict", ast.JoinedStr: "f-string", ast.Compare: "comparison",
    ast.BoolOp: "boolean operator", ast.IfExp: "if-expression", ast.Starred: "starred expression",
    ast.NamedExpr: "assignment expression (:=)", ast.Slice: "slice", ast.Await: "await", ast.Yield: "yield",
    ast.GeneratorExp: "generator expression outside min/max/argmin/argmax/kth_largest/sum/mean",
}
SCALAR, VECTOR = "scalar", "vector"
_Result = tuple[Expr | None, str | None]  # (the tree or None after a problem, its value kind if known)
NAME_PREFIXES = ("p", "q", "w", "a", "b", "c")   # names ``to_named_text`` gives: p1, p2, ... (a prefix no name uses)


@dataclass(frozen=True)
class _Definition:
    """A named sub-expression: what it stands for, its value kind, where it is defined, how many reductions
    nest in it."""

    expr: Expr | None
    kind: str | None
    column: int
    height: int


def _fail(message: str, column: int | None = None) -> InvalidSpecError:
    return InvalidSpecError([Problem(message, column)], subject="target")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class _Source:
    """The text handed to ``ast.parse``, and how to map its offsets back to the user's text."""

    parsed: str                  # leading whitespace stripped, kth_largest generators parenthesized
    shift: int                   # characters stripped at the start
    inserted: tuple[int, ...]    # offsets in ``parsed`` of the inserted parentheses, ascending

    @classmethod
    def of(cls, text: str) -> _Source:
        stripped = text.lstrip()  # mode="eval" refuses leading indentation
        parsed, inserted = _parenthesize_kth(stripped)
        return cls(parsed, len(text) - len(stripped), inserted)

    def column(self, lineno: int, offset: int, in_bytes: bool = True) -> int:
        """1-based character column, in the user's text, of ``(lineno, offset)`` in ``parsed``.

        ast offsets count UTF-8 bytes within a line; SyntaxError offsets count characters.
        """
        lines = self.parsed.split("\n")
        line = lines[lineno - 1] if 0 < lineno <= len(lines) else ""
        chars = len(line.encode()[:offset].decode(errors="ignore")) if in_bytes else offset
        absolute = sum(len(part) + 1 for part in lines[:lineno - 1]) + chars
        return self.shift + absolute - bisect.bisect_left(self.inserted, absolute) + 1


def _parenthesize_kth(text: str) -> tuple[str, tuple[int, ...]]:
    """Wrap the generator of ``kth_largest(k, E for t in D)`` in parentheses.

    Python accepts an unparenthesized generator only as a call's sole argument, but api.md writes
    kth_largest this way. The text is tokenized (never run), and ``(``/``)`` are inserted around what
    follows the first top-level comma of a ``kth_largest(`` call when that part has a top-level ``for``
    and no other comma. Returns the new text and the offsets of the inserted characters in it.
    """
    if "kth_largest" not in text:
        return text, ()  # nothing to wrap: tokenizing costs a tenth of a cold decision
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return text, ()  # ast.parse reports the problem
    starts = [0]
    for line in text.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    inserts: list[tuple[int, str]] = []
    # per open bracket: [is "kth_largest(", offset after its 1st comma, saw "for" after it, saw a 2nd comma]
    frames: list[list] = []
    previous = ""
    for tok in tokens:
        if tok.type == tokenize.OP and tok.string in "([{":
            frames.append([tok.string == "(" and previous == "kth_largest", None, False, False])
        elif tok.type == tokenize.OP and tok.string in ")]}" and frames:
            is_kth, comma, saw_for, extra = frames.pop()
            if is_kth and comma is not None and saw_for and not extra:
                inserts += [(comma, "("), (starts[tok.start[0] - 1] + tok.start[1], ")")]
        elif frames and frames[-1][0] and tok.string == "," and tok.type == tokenize.OP:
            if frames[-1][1] is None:
                frames[-1][1] = starts[tok.end[0] - 1] + tok.end[1]
            else:
                frames[-1][3] = True
        elif frames and frames[-1][0] and tok.type == tokenize.NAME and tok.string == "for":
            frames[-1][2] = frames[-1][1] is not None
        previous = tok.string
    pieces, positions, last = [], [], 0
    for offset, char in sorted(inserts):
        pieces.append(text[last:offset])
        positions.append(sum(len(piece) for piece in pieces))
        pieces.append(char)
        last = offset
    pieces.append(text[last:])
    return "".join(pieces), tuple(positions)


class _Walker(ast.NodeVisitor):
    """One walk over one syntax tree, a method per construct (``visit_Call``, ...): records problems
    instead of stopping at the first. Each ``visit_*`` takes the node and the index variables in scope and
    returns (the ``Expr`` or None after a problem, its value kind if known)."""

    def __init__(self, source: _Source):
        self.source = source
        self.problems: list[Problem] = []
        self.names: dict[str, int] = {}      # parameter / function name -> first column
        self.variables: dict[str, int] = {}  # index variable -> first column
        self.nesting = 0                     # reductions enclosing the node being walked
        self.definitions: dict[str, _Definition] = {}   # named sub-expressions, in the order they are defined
        self.used: set[str] = set()          # the definitions used so far
        self.identifiers: set[str] = set()   # every name the text writes: a renamed variable avoids them

    def column(self, node: ast.AST) -> int:
        return self.source.column(node.lineno, node.col_offset)

    def problem(self, node: ast.AST, message: str) -> None:
        self.problems.append(Problem(message, self.column(node)))

    def expr(self, node: ast.AST, scope: tuple[str, ...]) -> _Result:
        if isinstance(node, ast.Name) and node.id in self.definitions:
            return self.defined(node, scope)
        visit = getattr(self, f"visit_{type(node).__name__}", None)
        if visit is None:
            self.problem(node, f"unsupported construct: {_CONSTRUCTS.get(type(node), type(node).__name__)}")
            return None, None
        return visit(node, scope)

    # ---- named sub-expressions (module docstring) ------------------------------------------------------
    def program(self, statements: list[ast.stmt]) -> Expr | None:
        """``name = E`` definitions, then the target: the target with every name standing for its expression."""
        self.identifiers = {n.id for s in statements for n in ast.walk(s) if isinstance(n, ast.Name)}
        for statement in statements[:-1]:
            if isinstance(statement, ast.Assign):
                self.define(statement)
            else:
                self.problem(statement, "only the last line is the target; the lines before it define names, "
                                        "as in p = argmax(...)")
        last = statements[-1]
        result = None
        if isinstance(last, ast.Expr):
            result, _ = self.expr(last.value, (ANSWER,))
        else:
            self.problem(last, "the text ends with a definition: write the target after it, as in "
                               "p = argmax(f1(x[t]) for t in T); x[p]")
        for name, definition in self.definitions.items():
            if name not in self.used:
                self.problems.append(Problem(f"{name!r} is defined but never used", definition.column))
        return result

    def define(self, statement: ast.Assign) -> None:
        target = statement.targets[0]
        if len(statement.targets) != 1 or not isinstance(target, ast.Name):
            self.problem(statement, "a definition names one expression: name = E")
            return
        name = target.id
        if self.bad_name(target, name, "a name for an expression"):
            return
        if name == ANSWER or name in self.names or name in self.variables:
            used = ("names the answering position" if name == ANSWER else
                    "is already a parameter or function name" if name in self.names else "is already an index variable")
            self.problem(target, f"name {name!r} {used}; define another name")
            return
        value, kind = self.expr(statement.value, (ANSWER,))   # closed: it means the same wherever it is used
        self.definitions[name] = _Definition(value, kind, self.column(target), 0 if value is None else height(value))

    def defined(self, node: ast.Name, scope: tuple[str, ...]) -> _Result:
        """A name defined before: its expression as if written here, its variables that ``scope`` binds renamed."""
        definition = self.definitions[node.id]
        self.used.add(node.id)
        if definition.expr is None:
            return None, definition.kind
        if self.nesting + definition.height > MAX_NESTING:
            self.problem(node, f"with {node.id} written out, reductions nest more than {MAX_NESTING} deep, over the "
                               f"limit of {MAX_NESTING} (infoflow_smt.limits)")
            return None, definition.kind
        clash = _bound_variables(definition.expr) & set(scope)
        if not clash:
            return definition.expr, definition.kind
        taken = self.identifiers | set(scope) | _bound_variables(definition.expr)
        names = {}
        for var in sorted(clash):
            names[var] = next(f"{var}{i}" for i in range(2, len(taken) + 3) if f"{var}{i}" not in taken)
            taken.add(names[var])
        return rename(definition.expr, names), definition.kind

    def defined_position(self, node: ast.Name, scope: tuple[str, ...]):
        """A name used as a position, ``x[p]``: it must name an argmax/argmin."""
        value, _ = self.defined(node, scope)
        if value is not None and not (isinstance(value, Reduce) and value.kind.returns_index):
            self.problem(node, f"{node.id!r} names a value, not a position: only a name for argmax(...) or "
                               f"argmin(...) can index x")
            return None
        return value

    # ---- leaves -------------------------------------------------------------------------------------
    def visit_Constant(self, node: ast.Constant, scope: tuple[str, ...]) -> _Result:
        value = node.value
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            self.problem(node, f"unsupported literal {value!r:.40}: only numbers are allowed")
            return None, None
        try:
            number = float(value)
        except OverflowError:
            number = float("inf")
        if not math.isfinite(number):
            self.problem(node, f"number {value!r:.40} is not finite")
            return None, SCALAR
        return Num(number), SCALAR

    def visit_Name(self, node: ast.Name, scope: tuple[str, ...], parameter_allowed: bool = False) -> _Result:
        """A bare name: a parameter vector, allowed only as a direct argument of ``dot`` (see expr.Param)."""
        if node.id in scope:
            self.problem(node, f"index variable {node.id!r} used as a value; write x[{node.id}]")
            return None, None
        if self.bad_name(node, node.id, "a value"):
            return None, None
        if not parameter_allowed:
            self.problem(node, f"parameter {node.id!r} can only be an argument of dot(...), as in "
                               f"dot({node.id}, x[t]), or the matrix of bilinear({node.id}, a, b)")
            return None, VECTOR
        self.names.setdefault(node.id, self.column(node))
        return Param(node.id), VECTOR

    def visit_Subscript(self, node: ast.Subscript, scope: tuple[str, ...]) -> _Result:
        if not (isinstance(node.value, ast.Name) and node.value.id == "x"):
            self.problem(node, "only x can be indexed, as in x[t]")
            return None, None
        index = self.index(node.slice, scope)
        return (Content(index) if index is not None else None), VECTOR

    # ---- arithmetic ---------------------------------------------------------------------------------
    def visit_BinOp(self, node: ast.BinOp, scope: tuple[str, ...]) -> _Result:
        (left, lkind), (right, rkind) = self.expr(node.left, scope), self.expr(node.right, scope)
        kind = VECTOR if VECTOR in (lkind, rkind) else (SCALAR if lkind == rkind == SCALAR else None)
        op = _BINOPS.get(type(node.op))
        if op is None:
            shown = _BAD_OPS.get(type(node.op), type(node.op).__name__)
            self.problem(node, f"operator {shown} is not supported; use + - * / **")
        ok = op is not None and left is not None and right is not None
        return (BinOp(op, left, right) if ok else None), kind

    def visit_UnaryOp(self, node: ast.UnaryOp, scope: tuple[str, ...]) -> _Result:
        operand, kind = self.expr(node.operand, scope)
        if isinstance(node.op, ast.USub):
            return (Neg(operand) if operand is not None else None), kind
        if isinstance(node.op, ast.UAdd):  # +e is e
            return operand, kind
        self.problem(node, f"unary operator {'not' if isinstance(node.op, ast.Not) else '~'} is not supported")
        return None, kind

    # ---- names and positions ------------------------------------------------------------------------
    def bad_name(self, node: ast.AST, name: str, what: str) -> bool:
        """Report (and return True) if ``name`` cannot serve as ``what``."""
        if name in self.definitions:
            self.used.add(name)
            self.problem(node, f"{name!r} names an expression defined before and cannot be used as {what}")
        elif name.startswith("_"):
            self.problem(node, f"name {name!r}: names starting with '_' are not allowed")
        elif name in ("x", "T"):
            hint = "; write x[t]" if name == "x" else "; T is only allowed in x[...] and domains"
            self.problem(node, f"{name!r} cannot be used as {what}{hint}")
        elif _SUBSET.match(name):
            self.problem(node, f"subset {name} cannot be used as {what}; write 'for t in {name}'")
        elif what == "a function" and refused_names.refusal(name):
            self.problem(node, refused_names.refusal(name))
        elif name in _RESERVED or refused_names.refusal(name):
            self.problem(node, f"{name!r} is reserved and cannot be used as {what}")
        else:
            return False
        return True

    def within(self, node: ast.AST, value: int, limit: int, what: str) -> bool:
        """Whether ``value`` respects ``limit`` (reported when it does not)."""
        if abs(value) > limit:
            self.problem(node, f"{what} {value} is over the limit of {limit} (infoflow_smt.limits)")
            return False
        return True

    def index(self, node: ast.AST, scope: tuple[str, ...]):
        """``t``, ``3``, ``T``, ``T-2``, ``t-1``, ``t+2`` or ``argmax(...)``/``argmin(...)``."""
        if isinstance(node, ast.Constant) and _is_int(node.value):
            if node.value < 1:
                self.problem(node, f"position {node.value} is outside the sequence: "
                                   "positions are 1-based (x[1] first)")
                return None
            return FixedIndex(node.value) if self.within(node, node.value, MAX_POSITION, "position") else None
        if isinstance(node, ast.Name):
            if node.id == "T":
                return FixedIndex(0, True)
            if node.id in self.definitions:
                return self.defined_position(node, scope)
            return VarIndex(node.id) if self.bound(node, node.id, scope) else None
        if (isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub))
                and isinstance(node.left, ast.Name) and node.left.id not in self.definitions
                and isinstance(node.right, ast.Constant) and _is_int(node.right.value)):
            return self.shifted(node, scope)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _REDUCTIONS:
            if node.func.id in ("argmin", "argmax"):
                return self.reduction(node, node.func.id, scope)[0]
            self.problem(node, f"only argmin(...)/argmax(...) can index x, not {node.func.id}(...)")
            return None
        if (isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub))
                and (_is_selection(node.left) or isinstance(node.left, ast.Name) and node.left.id in self.definitions)
                and _int_literal(node.right) is not None):
            return self.after_selection(node, scope)
        self.problem(node, "unsupported index: expected x[t], x[1], x[T], x[T-1], x[t-1], x[t+1], "
                           "x[argmax(...)] or x[argmax(...) + 1] (or a name for an argmax: x[p], x[p + 1])")
        return None

    def after_selection(self, node: ast.BinOp, scope: tuple[str, ...]):
        """``argmax(...) + c`` or ``argmin(...) - c``: the token ``c`` positions after (before) the selected one,
        read as the shifted selection (``shift``: the same function, in the offset form)."""
        selection = (self.defined_position(node.left, scope) if isinstance(node.left, ast.Name)
                     else self.reduction(node.left, node.left.func.id, scope)[0])
        c = _int_literal(node.right) * (1 if isinstance(node.op, ast.Add) else -1)
        if selection is None or not self.within(node, c, MAX_OFFSET, "offset"):
            return None
        if c == 0:
            return selection
        why = shift.problem(selection, c, MAX_OFFSET)
        if why:
            self.problem(node, why)
            return None
        return shift.shifted(selection, c)

    def shifted(self, node: ast.BinOp, scope: tuple[str, ...]):
        """``T-k`` or ``t+k``/``t-k``."""
        name = node.left.id
        offset = node.right.value if isinstance(node.op, ast.Add) else -node.right.value
        if name == "T":
            if offset < 0:
                return FixedIndex(-offset, True) if self.within(node, -offset, MAX_POSITION, "position T-") \
                    else None
            self.problem(node, f"position {ast.unparse(node)} is not inside the sequence; "
                               "use T or T-k with k >= 1")
            return None
        if not self.bound(node.left, name, scope) or not self.within(node, offset, MAX_OFFSET, "offset"):
            return None
        return OffsetIndex(name, offset) if offset else VarIndex(name)

    def bound(self, node: ast.AST, name: str, scope: tuple[str, ...]) -> bool:
        if name not in scope:
            self.problem(node, f"unbound index variable {name!r}: no enclosing 'for {name} in ...'")
        return name in scope

    # ---- calls and reductions ---------------------------------------------------------------------
    def visit_Call(self, node: ast.Call, scope: tuple[str, ...]) -> _Result:
        if not isinstance(node.func, ast.Name):
            self.problem(node, "only named functions can be called, as in f1(x[t])")
            return None, None
        name = node.func.id
        for keyword in node.keywords:
            self.problem(keyword, f"keyword arguments are not allowed (in {name}(...))")
        if name in _REDUCTIONS:
            return self.reduction(node, name, scope)
        if name == "range":
            self.problem(node, "range(a, b) is only allowed as a domain: 'for t in range(a, b)'")
            return None, None
        if name in scope:
            self.problem(node, f"index variable {name!r} cannot be called")
            return None, None
        if name not in BUILTIN_FUNCTIONS and self.bad_name(node.func, name, "a function"):
            return None, None
        arity = _ARITY.get(name)
        arity_ok = arity is None or len(node.args) == arity
        if not arity_ok:  # the arguments are still walked below, to report their problems too
            self.problem(node, f"{name} takes {plural(arity, 'argument')}, got {len(node.args)}")
        if arity is None:
            if not node.args:
                self.problem(node, f"function {name} needs at least one argument")
            self.names.setdefault(name, self.column(node))
        args = [self.argument(name, position, arg, scope, arity) for position, arg in enumerate(node.args)]
        ok = arity_ok and bool(args) and all(a is not None for a in args)
        return (Call(name, tuple(args)) if ok else None), SCALAR

    def argument(self, name: str, position: int, arg: ast.AST, scope: tuple[str, ...], arity: int | None):
        """One argument of a call: the matrix of ``bilinear``, a parameter of ``dot``, or an expression."""
        if name == "bilinear" and position == 0:
            if isinstance(arg, ast.Name) and not self.bad_name(arg, arg.id, "a matrix parameter"):
                self.names.setdefault(arg.id, self.column(arg))
                return Param(arg.id)
            self.problem(arg, "the first argument of bilinear must be a matrix name, as in bilinear(A1, a, b)")
            return None
        if name == "dot" and isinstance(arg, ast.Name) and arg.id not in self.definitions:
            value, kind = self.visit_Name(arg, scope, parameter_allowed=True)
        else:
            value, kind = self.expr(arg, scope)
        if arity is not None and kind == SCALAR:
            self.problem(arg, f"argument {position + 1} of {name} must be a vector (like x[t]), not a scalar")
        return value

    def reduction(self, node: ast.Call, name: str, scope: tuple[str, ...]) -> _Result:
        kind = _REDUCTIONS[name]
        generators = [a for a in node.args if isinstance(a, ast.GeneratorExp)]
        shape_ok, k = self.reduction_shape(node, name, kind)
        if not generators:
            return None, SCALAR
        gen = generators[-1]
        if len(gen.generators) > 1 and (kind is ReduceKind.KTH_LARGEST or kind.returns_index):
            self.problem(node, f"{name} takes exactly one 'for' clause")
        if len(gen.generators) > MAX_JOINT:
            self.problem(node, f"{name} binds {len(gen.generators)} variables, over the limit of "
                               f"{MAX_JOINT} (infoflow_smt.limits)")
        self.nesting += 1
        if self.nesting == MAX_NESTING + 1:
            self.problem(node, f"reductions nest more than {MAX_NESTING} deep, over the limit of "
                               f"{MAX_NESTING} (infoflow_smt.limits)")
        bindings, inner = self.bindings(gen, scope)
        if bindings and kind in (ReduceKind.SUM, ReduceKind.MEAN) and _internally_bounded(bindings):
            self.problem(node, f"{name} binds a variable over a range bounded by another variable of the same "
                               f"{name}: supported in a joint min/max only; nest it, as in "
                               f"{name}({name}(... for t in range(1, s)) for s in T)")
        body, body_kind = self.expr(gen.elt, inner)
        self.nesting -= 1
        # a selection of a vector compares numbers only on scalar tokens (d = 1): decide and evaluate check d
        result_kind = body_kind if kind in (ReduceKind.SUM, ReduceKind.MEAN) or not kind.returns_index \
            else SCALAR
        ok = shape_ok and body is not None and bindings is not None
        return (Reduce(kind, body, bindings, k) if ok else None), result_kind

    def reduction_shape(self, node: ast.Call, name: str, kind: ReduceKind) -> tuple[bool, int | None]:
        """Whether the call has the reduction's shape, and ``k`` for kth_largest."""
        if kind is not ReduceKind.KTH_LARGEST:
            shape_ok = len(node.args) == 1 and isinstance(node.args[0], ast.GeneratorExp)
            values = len(node.args) > 1 and kind in (ReduceKind.MIN, ReduceKind.MAX) \
                and not any(isinstance(a, ast.GeneratorExp) for a in node.args)
            why = (f"{name}(a, b) of values is not smooth (not differentiable where they tie), and the model's "
                   "functions are smooth; ") if values else ""
            if not shape_ok:
                self.problem(node, f"{why}{name} takes one generator expression: {name}(E for t in D)")
            return shape_ok, None
        shape_ok = len(node.args) == 2 and isinstance(node.args[1], ast.GeneratorExp)
        first = node.args[0] if node.args else node
        k = None
        if isinstance(first, ast.Constant) and _is_int(first.value) and first.value >= 1:
            k = first.value if self.within(first, first.value, MAX_RANK, "rank k") else None
        elif shape_ok:
            shown = ast.unparse(first)[:40]  # unparse only prints the syntax tree back
            self.problem(first, f"k of kth_largest must be an integer literal >= 1, got {shown}")
        if not shape_ok:
            self.problem(node, "kth_largest takes one generator expression: kth_largest(k, E for t in D)")
        return shape_ok and k is not None, k

    def bindings(self, gen: ast.GeneratorExp,
                 scope: tuple[str, ...]) -> tuple[tuple[Binding, ...], tuple[str, ...]]:
        result: list[Binding] = []
        here: list[str] = []
        for clause in gen.generators:
            target = clause.target
            if clause.is_async or clause.ifs:
                where = clause.ifs[0] if clause.ifs else target
                self.problem(where, "'if' filters and 'async for' are not supported")
            if not isinstance(target, ast.Name):
                self.problem(target, "a 'for' clause binds one index variable name, as in 'for t in T'")
                continue
            var = target.id
            if self.bad_name(target, var, "an index variable"):
                pass
            elif var == ANSWER:
                self.problem(target, f"index variable {var!r} names the answering position (an answer at every "
                                     "position) and cannot be bound by a reduction; use another name")
            elif var in scope:
                self.problem(target, f"index variable {var!r} is already bound by an enclosing reduction; "
                                     "use a fresh name")
            elif var in here:
                self.problem(target, f"index variable {var!r} is bound twice in one reduction")
            self.variables.setdefault(var, self.column(target))
            domain = self.domain(clause.iter, scope + tuple(here))  # earlier clauses enclose this one
            here.append(var)
            if domain is not None:
                result.append(Binding(var, domain))
        # Any problem above makes the whole walk fail, so bindings need no validity flag of their own.
        return tuple(result), scope + tuple(here)

    def domain(self, node: ast.AST, scope: tuple[str, ...]) -> Domain | None:
        if isinstance(node, ast.Name) and node.id == "T":
            return AllPositions()
        if isinstance(node, ast.Name) and _SUBSET.match(node.id):
            if len(node.id) - 1 > MAX_DIGITS:  # the number seeds a realization: a 64-bit integer
                self.problem(node, f"subset {node.id[:24]}...: its number has {len(node.id) - 1} digits, over "
                                   f"the limit of {MAX_DIGITS} (infoflow_smt.limits)")
            return Subset(node.id)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range"
                and len(node.args) == 2 and not node.keywords):
            start, stop = self.range_bound(node.args[0], scope), self.range_bound(node.args[1], scope)
            return Range(start, stop) if start is not None and stop is not None else None
        self.problem(node, "unsupported domain: expected 'for t in T', 'for t in S1' "
                           "or 'for t in range(a, b)'")
        return None

    def range_bound(self, node: ast.AST, scope: tuple[str, ...]) -> FixedIndex | VarIndex | OffsetIndex | None:
        """An integer literal >= 1, ``T``, ``T-k`` or ``T+1`` (so that ``range(2, T+1)`` reaches T), or an
        enclosing index variable plus or minus a constant, ``s`` or ``s + 1`` (``range(1, s)``: before s)."""
        if isinstance(node, ast.Name) and node.id != "T":
            if node.id in scope:
                return VarIndex(node.id)
            self.problem(node, f"range bound {node.id!r} is not an index variable bound before this clause "
                               "(an enclosing reduction's, or an earlier 'for' of this one)")
            return None
        if (isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)) and isinstance(node.left, ast.Name)
                and node.left.id != "T" and isinstance(node.right, ast.Constant) and _is_int(node.right.value)):
            if node.left.id not in scope:
                self.problem(node, f"range bound {ast.unparse(node)[:40]}: {node.left.id!r} is not an index "
                                   "variable bound before this clause")
                return None
            offset = node.right.value if isinstance(node.op, ast.Add) else -node.right.value
            if not self.within(node, offset, MAX_OFFSET, "range bound offset"):
                return None
            return OffsetIndex(node.left.id, offset) if offset else VarIndex(node.left.id)
        if isinstance(node, ast.Constant) and _is_int(node.value) and node.value >= 1:
            return FixedIndex(node.value) if self.within(node, node.value, MAX_POSITION, "range bound") else None
        if isinstance(node, ast.Name) and node.id == "T":
            return FixedIndex(0, True)
        if (isinstance(node, ast.BinOp) and isinstance(node.left, ast.Name) and node.left.id == "T"
                and isinstance(node.right, ast.Constant) and _is_int(node.right.value)):
            k = node.right.value
            if isinstance(node.op, ast.Sub) and k >= 1:
                return FixedIndex(k, True) if self.within(node, k, MAX_POSITION, "range bound T-") else None
            if isinstance(node.op, ast.Add) and k == 1:
                return FixedIndex(-1, True)
        self.problem(node, "unsupported range bound: expected a positive integer, T, T-k, T+1, "
                           "or an enclosing variable s, s+k, s-k")
        return None

    def cross_check(self) -> None:
        for name, column in self.names.items():
            if name in self.variables:
                self.problems.append(Problem(f"{name!r} is used both as an index variable and as a parameter "
                                             "or function name", column))


def _bound_variables(e: Expr) -> frozenset[str]:
    """Every index variable a reduction inside ``e`` binds."""
    own = frozenset(e.variables) if isinstance(e, Reduce) else frozenset()
    return own.union(*(_bound_variables(c) for c in children(e)))


def _statements(parsed: str) -> list[ast.stmt] | None:
    """The statements of text that defines names before its target (``p = E; x[p]``), or None when the text is
    not a list of definitions and expressions (its syntax error is then the one ``mode="eval"`` reports)."""
    try:
        body = ast.parse(parsed, mode="exec").body   # builds the syntax tree only; nothing runs
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return body if body and all(isinstance(s, (ast.Assign, ast.Expr)) for s in body) else None


def _written_out(statements: list[ast.stmt], parsed: str) -> tuple[int, int]:
    """Bounds on the characters and the syntax depth of the target with every name written out (a name used
    twice in each of a chain of definitions doubles at every link: refused before anything is built)."""
    chars: dict[str, int] = {}
    depth: dict[str, int] = {}
    starts = [0]   # the offset of each line's start (in UTF-8 bytes, as ast counts: a bound on characters)
    for line in parsed.encode().split(b"\n"):
        starts.append(starts[-1] + len(line) + 1)
    size = deepest = 0
    for statement in statements:
        value = statement.value
        uses = [n.id for n in ast.walk(value) if isinstance(n, ast.Name) and n.id in chars]
        own = starts[value.end_lineno - 1] + value.end_col_offset - starts[value.lineno - 1] - value.col_offset
        size = own + sum(chars[n] for n in uses)
        deepest = _depth(value) + max((depth[n] for n in uses), default=0)
        if isinstance(statement, ast.Assign) and isinstance(statement.targets[0], ast.Name):
            chars[statement.targets[0].id], depth[statement.targets[0].id] = size, deepest
    return size, deepest


def _is_selection(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("argmin", "argmax")


def _int_literal(node: ast.AST) -> int | None:
    """An integer literal, possibly negated (``1``, ``-2``), or None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int_literal(node.operand)
        return None if inner is None else -inner
    return node.value if isinstance(node, ast.Constant) and _is_int(node.value) else None


def _internally_bounded(bindings: tuple[Binding, ...]) -> bool:
    """Whether a binding's range is bounded by a variable of the same clause list."""
    own = {b.var for b in bindings}
    return any(domain_variables(b.domain) & own for b in bindings)


def parse_target_expr(text: str) -> Expr:
    """Parse target text into an ``Expr``; raise one ``InvalidSpecError`` listing every problem.

    >>> parse_target_expr("x[1] + x[T]")  # doctest: +NORMALIZE_WHITESPACE
    BinOp(op='+', left=Content(index=FixedIndex(position=1, from_end=False)),
          right=Content(index=FixedIndex(position=0, from_end=True)))
    """
    if not isinstance(text, str):
        raise _fail(f"target text must be a str, got {type(text).__name__}")
    if not text.strip():
        raise _fail("empty target text")
    if len(text) > MAX_TEXT_CHARS:
        raise _fail(f"target text has {len(text)} characters, over the limit of {MAX_TEXT_CHARS} "
                    "(infoflow_smt.limits)")
    source = _Source.of(text)
    statements = None
    try:
        tree = ast.parse(source.parsed, mode="eval")  # builds the syntax tree only; nothing runs
    except SyntaxError as error:
        statements = _statements(source.parsed)   # names defined before the target (module docstring)
        if statements is None:
            column = source.column(error.lineno or 1, max((error.offset or 1) - 1, 0), in_bytes=False)
            raise _fail(f"syntax error: {error.msg}", column) from None
    except ValueError as error:  # null bytes
        raise _fail(f"cannot parse target text: {error}") from None
    except (RecursionError, MemoryError):  # the parser's own stack overflows on absurd nesting
        raise _fail("target text is nested too deeply") from None
    size, depth = (len(text), _depth(tree.body)) if statements is None else _written_out(statements, source.parsed)
    if depth > MAX_DEPTH:
        raise _fail(f"the expression is {depth} operations deep, over the limit of {MAX_DEPTH} "
                    "(infoflow_smt.limits.MAX_DEPTH): every later step walks it recursively")
    if size > MAX_TEXT_CHARS:
        raise _fail(f"the target with its names written out has about {size} characters, over the limit of "
                    f"{MAX_TEXT_CHARS} (infoflow_smt.limits)")
    walker = _Walker(source)
    try:
        if statements is None:
            result, _ = walker.expr(tree.body, (ANSWER,))  # the answering position is in scope everywhere
        else:
            result = walker.program(statements)
    except RecursionError:
        walker.problems.append(Problem("target text is nested too deeply"))
        result = None
    walker.cross_check()
    if walker.problems or result is None:
        # left to right, as the reader meets them (the cross-check comes last in the walk)
        problems = sorted(walker.problems, key=lambda p: (p.position is None, p.position or 0))
        raise InvalidSpecError(problems or [Problem("invalid target text")], subject="target")
    return result


def _depth(node: ast.AST) -> int:
    """The depth of a syntax tree, without recursion (a flat sum of many terms is as deep as it is long)."""
    deepest, stack = 0, [(node, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in ast.iter_child_nodes(node)
                     if not isinstance(child, (ast.expr_context, ast.operator, ast.unaryop)))
    return deepest


# ---- printing -------------------------------------------------------------------------------------
_PREC = {"+": 1, "-": 1, "*": 2, "/": 2}
_UNARY, _POW, _ATOM = 3, 4, 5


def to_text(expr: Expr) -> str:
    """Canonical text for ``expr``, with minimal parentheses; ``parse_target_expr(to_text(e)) == e``.

    >>> to_text(Neg(BinOp("**", Content(VarIndex("t")), Num(2.0))))
    '-x[t]**2'
    """
    return _show(expr)[0]


def to_named_text(expr: Expr) -> str:
    """Text for ``expr`` in which every selection whose winner's token a reduction reads (``x[argmax(...)]``
    inside another reduction, reading no variable bound outside it) is named once, innermost first, in the
    definitions the parser reads back (module docstring): ``parse_target_expr(to_named_text(e)) == e``. Without
    such a selection it is ``to_text(e)``.

    >>> to_named_text(parse_target_expr(
    ...     "x[argmax(dot(x[u-1], x[argmax(dot(x[t-1], x[T]) for t in range(2, T+1))]) for u in range(2, T+1))]"))
    'p1 = argmax(dot(x[t-1], x[T]) for t in range(2, T+1)); x[argmax(dot(x[u-1], x[p1]) for u in range(2, T+1))]'
    """
    nested = _nested_winners(expr)
    if not nested:
        return to_text(expr)
    prefix = fresh_prefix(_names_in(expr))
    names = {selection: f"{prefix}{i}" for i, selection in enumerate(nested, start=1)}

    def named(e: Expr) -> Expr:
        if isinstance(e, Content) and isinstance(e.index, Reduce) and e.index in names:
            return Content(VarIndex(names[e.index]))
        return map_children(e, named)

    lines = [f"{names[s]} = {to_text(map_children(s, named))}" for s in nested]
    return "; ".join([*lines, to_text(named(expr))])


def fresh_prefix(used: set[str]) -> str:
    """A prefix for names ``prefix1, prefix2, ...`` that none of the ``used`` names can be taken for.

    >>> fresh_prefix({"p1", "t"}), fresh_prefix(set())
    ('q', 'p')
    """
    taken = {re.sub(r"[0-9]+\Z", "", name) for name in used if re.search(r"[0-9]\Z", name)}
    return next(p * n for n in range(1, len(taken) + 2) for p in NAME_PREFIXES if p * n not in taken)


def _nested_winners(expr: Expr) -> list[Reduce]:
    """The selections whose winner's token a reduction reads, reading no variable bound outside them, innermost
    first, each once."""
    found: dict[Reduce, None] = {}

    def visit(e: Expr, inside: bool) -> None:
        for child in children(e):
            visit(child, inside or isinstance(e, Reduce))
        if (inside and isinstance(e, Content) and isinstance(e.index, Reduce) and e.index.kind.returns_index
                and free_variables(e.index) <= {ANSWER}):
            found.setdefault(e.index)

    visit(expr, False)
    return list(found)


def _names_in(e: Expr) -> set[str]:
    """Every name ``e`` writes: index variables, parameters, functions."""
    names = set(e.variables) if isinstance(e, Reduce) else set()
    if isinstance(e, (Param, Call)):
        names.add(e.name)
    if isinstance(e, Content) and isinstance(e.index, (VarIndex, OffsetIndex)):
        names.add(e.index.name)
    for child in children(e):
        names |= _names_in(child)
    return names


def _number(value: float) -> str:
    if not math.isfinite(value):
        raise _fail(f"cannot print the non-finite number {value!r}")
    # Integers print as ints ("2", not "2.0"); huge ones keep repr so the text stays short.
    return str(int(value)) if value.is_integer() and abs(value) < 1e16 else repr(value)


def fixed_to_text(index: FixedIndex) -> str:
    """A fixed position as the target's text writes it, in ``x[...]`` or as a range bound: ``FixedIndex(2)``
    -> ``"2"``, ``FixedIndex(0, True)`` -> ``"T"``, ``(1, True)`` -> ``"T-1"``, ``(-1, True)`` -> ``"T+1"``."""
    if not index.from_end:
        return str(index.position)
    return "T" if index.position == 0 else f"T{-index.position:+d}"


def domain_to_text(domain: Domain) -> str:
    """``T``, ``S1`` or ``range(a, b)``."""
    if isinstance(domain, AllPositions):
        return "T"
    if isinstance(domain, Subset):
        return domain.name
    return f"range({_bound_text(domain.start)}, {_bound_text(domain.stop)})"


def _bound_text(bound) -> str:
    """A range bound: fixed (``3``, ``T-1``) or an index variable plus a constant (``s``, ``s+1``)."""
    if isinstance(bound, VarIndex):
        return bound.name
    if isinstance(bound, OffsetIndex):
        return f"{bound.name}{bound.offset:+d}"
    return fixed_to_text(bound)


def _index_text(index) -> str:
    if isinstance(index, VarIndex):
        return index.name
    if isinstance(index, OffsetIndex):
        return f"{index.name}{index.offset:+d}"
    if isinstance(index, FixedIndex):
        return fixed_to_text(index)
    return _show(index)[0]


def _show(e: Expr) -> tuple[str, int]:
    """(text, precedence of its outermost operator)."""
    if isinstance(e, Num):
        return ("-" + _number(-e.value), _UNARY) if e.value < 0 else (_number(e.value), _ATOM)
    if isinstance(e, Content):
        return f"x[{_index_text(e.index)}]", _ATOM
    if isinstance(e, Param):
        return e.name, _ATOM
    if isinstance(e, Call):
        return f"{e.name}({', '.join(_show(a)[0] for a in e.args)})", _ATOM
    if isinstance(e, Reduce):
        clauses = " ".join(f"for {b.var} in {domain_to_text(b.domain)}" for b in e.bindings)
        inner = f"{_show(e.body)[0]} {clauses}"
        if e.kind is ReduceKind.KTH_LARGEST:
            return f"kth_largest({e.k}, {inner})", _ATOM
        return f"{e.kind.value}({inner})", _ATOM
    if isinstance(e, Neg):
        text, prec = _show(e.operand)
        return "-" + (f"({text})" if prec <= _UNARY else text), _UNARY  # -(-a) rather than --a
    if isinstance(e, BinOp):
        (left, lp), (right, rp) = _show(e.left), _show(e.right)
        if e.op == "**":  # right-associative, binds tighter than unary minus on its left only
            left = f"({left})" if lp <= _POW else left
            right = f"({right})" if rp < _UNARY else right
            return f"{left}**{right}", _POW
        prec = _PREC[e.op]
        left = f"({left})" if lp < prec else left
        right = f"({right})" if rp <= prec else right
        return f"{left} {e.op} {right}", prec
    raise _fail(f"not a target expression: {type(e).__name__}")
