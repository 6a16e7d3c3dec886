"""Imports over the whole repository, read from the source: no module imports another in a circle (inside a
package too, where pyproject.toml's layer contracts do not look), and no module reaches for another module's
private name (a leading underscore).

The graph is built from the AST of every module of ``infoflow_smt``, ``experiments`` and ``proofs``, with
every import statement counted wherever it stands: at the top, inside a function (a lazy import is still a
dependency the reader follows), and under ``if TYPE_CHECKING:`` (an annotation names the module it comes
from: a cycle is a cycle for the reader, whether or not Python runs it). ``import a.b.c`` is an edge to
``a.b.c``; ``from a.b import c`` is one to ``a.b.c`` when that is a module, else to ``a.b``; a package is its
``__init__.py``. Imports of anything outside the three packages are left out. Dynamic imports
(``importlib.import_module`` of a string) are not statements and are not seen.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import networkx as nx
from support.paths import ROOT

PACKAGES = ("infoflow_smt", "experiments", "proofs")


@dataclass(frozen=True)
class Source:
    name: str           # the dotted module name; a package's is its __init__.py's
    path: Path
    tree: ast.Module

    @property
    def is_package(self) -> bool:
        return self.path.name == "__init__.py"


def sources(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, Source]:
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = Source(name, path, ast.parse(path.read_text(), str(path)))
    return found


def _absolute(source: Source, node: ast.ImportFrom) -> str:
    """The module a ``from ... import`` names, with a relative one resolved against ``source``."""
    if not node.level:
        return node.module or ""
    package = source.name.split(".") if source.is_package else source.name.split(".")[:-1]
    base = package[:len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


@dataclass(frozen=True)
class Edge:
    target: str    # the module imported
    line: int
    names: tuple[str, ...] = ()   # ``from target import names`` (names that are not modules themselves)


def edges(source: Source, modules: set[str]) -> list[Edge]:
    """Every import of ``source`` of a module in ``modules``, wherever the statement stands."""
    found = []
    for node in ast.walk(source.tree):
        if isinstance(node, ast.Import):
            found += [Edge(alias.name, node.lineno) for alias in node.names if alias.name in modules]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(source, node)
            names = []
            for alias in node.names:
                if f"{base}.{alias.name}" in modules:
                    found.append(Edge(f"{base}.{alias.name}", node.lineno))
                else:
                    names.append(alias.name)
            if names and base in modules:
                found.append(Edge(base, node.lineno, tuple(names)))
    return found


def import_graph(found: dict[str, Source]) -> nx.DiGraph:
    """Modules as nodes; an edge for each module another imports, with the line (``line``) of one import."""
    graph = nx.DiGraph()
    graph.add_nodes_from(found)
    for source in found.values():
        for edge in edges(source, set(found)):
            if edge.target != source.name:
                graph.add_edge(source.name, edge.target, line=edge.line)
    return graph


def cycles(graph: nx.DiGraph) -> list[str]:
    """Each circle of imports, as ``a (line) -> b (line) -> ... -> a``."""
    text = []
    for cycle in nx.simple_cycles(graph):
        first = cycle.index(min(cycle))   # each circle read from its first module in sorted order
        cycle = cycle[first:] + cycle[:first]
        steps = [f"{a} (l.{graph.edges[a, b]['line']})" for a, b in zip(cycle, cycle[1:] + cycle[:1])]
        text.append(" -> ".join(steps + [cycle[0]]))
    return sorted(text)


class _PrivateUses(ast.NodeVisitor):
    """``from m import _name`` and ``m._name`` (``m`` bound to another module of the packages by an import)
    in one module: each with its line."""

    def __init__(self, source: Source, modules: set[str], root: Path):
        self.source, self.modules, self.root, self.found = source, modules, root, []
        self.bound: dict[str, str] = {}   # a local name -> the module it is bound to
        for node in ast.walk(source.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname and alias.name in modules:
                        self.bound[alias.asname] = alias.name
                    elif not alias.asname and alias.name.split(".")[0] in modules:
                        self.bound[alias.name.split(".")[0]] = alias.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(source, node)
                for alias in node.names:
                    if f"{base}.{alias.name}" in modules:
                        self.bound[alias.asname or alias.name] = f"{base}.{alias.name}"
                    elif base in modules and base != source.name and _private(alias.name):
                        self.found.append(f"{self._where(node)}: from {base} import {alias.name}")

    def _where(self, node: ast.AST) -> str:
        return f"{self.source.path.relative_to(self.root)}:{node.lineno}"

    def _module(self, node: ast.expr) -> str | None:
        """The module an expression such as ``wp`` or ``infoflow_smt.lang`` names, if it names one."""
        if isinstance(node, ast.Name):
            return self.bound.get(node.id)
        if isinstance(node, ast.Attribute):
            outer = self._module(node.value)
            if outer is not None and f"{outer}.{node.attr}" in self.modules:
                return f"{outer}.{node.attr}"
        return None

    def visit_Attribute(self, node: ast.Attribute) -> None:
        module = self._module(node.value)
        if module is not None and module != self.source.name and _private(node.attr):
            self.found.append(f"{self._where(node)}: {module}.{node.attr}")
        self.generic_visit(node)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_uses(found: dict[str, Source], root: Path = ROOT) -> list[str]:
    """``path:line: what`` for every private name one module reads of another."""
    uses = []
    for source in found.values():
        visitor = _PrivateUses(source, set(found), root)
        visitor.visit(source.tree)
        uses += visitor.found
    return sorted(uses)


# ---- the repository ----------------------------------------------------------------------------------------
def test_no_module_imports_another_in_a_circle() -> None:
    graph = import_graph(sources())
    assert graph.number_of_nodes() > 100 and graph.number_of_edges() > 300   # the whole repository was read
    assert cycles(graph) == []


def test_no_module_reads_another_modules_private_name() -> None:
    assert private_uses(sources()) == []


# ---- the readers, on modules written out here ------------------------------------------------------------
def _write(root: Path, files: dict[str, str]) -> dict[str, Source]:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return sources(root, ("pkg",))


def test_a_circle_through_a_function_and_type_checking_is_found(tmp_path: Path) -> None:
    found = _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "from pkg import b\n",
        "pkg/b.py": "def f():\n    from .c import g\n",
        "pkg/c.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import A\n"
                     "def g(): pass\n"),
        "pkg/d.py": "import pkg.a\nimport os\n",
    })
    graph = import_graph(found)
    assert cycles(graph) == ["pkg.a (l.1) -> pkg.b (l.2) -> pkg.c (l.3) -> pkg.a"]
    assert set(graph.successors("pkg.d")) == {"pkg.a"}      # os is outside the packages


def test_a_package_and_its_modules_are_told_apart(tmp_path: Path) -> None:
    found = _write(tmp_path, {
        "pkg/__init__.py": "from .sub import thing\n",
        "pkg/sub/__init__.py": "from . import leaf\nfrom .. import top\nthing = 1\n",
        "pkg/sub/leaf.py": "from pkg.sub import thing\n",
        "pkg/top.py": "",
    })
    graph = import_graph(found)
    assert set(graph.edges) == {("pkg", "pkg.sub"), ("pkg.sub", "pkg.sub.leaf"), ("pkg.sub", "pkg.top"),
                                ("pkg.sub.leaf", "pkg.sub")}
    assert cycles(graph) == ["pkg.sub (l.1) -> pkg.sub.leaf (l.1) -> pkg.sub"]


def test_private_names_read_from_another_module_are_found(tmp_path: Path) -> None:
    found = _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/plan.py": "def _fixed(q): return q\ndef fixed(q): return _fixed(q)\n__all__ = ['fixed']\n",
        "pkg/weights.py": ("from pkg import plan as wp\nfrom pkg.plan import _fixed, fixed\nimport pkg.plan\n"
                           "x = wp._fixed(1) + wp.fixed(2) + pkg.plan._fixed(3) + len(wp.__all__)\n"
                           "class K:\n    def _own(self): return self._own\n"),
    })
    assert private_uses(found, tmp_path) == ["pkg/weights.py:2: from pkg.plan import _fixed",
                                             "pkg/weights.py:4: pkg.plan._fixed",
                                             "pkg/weights.py:4: pkg.plan._fixed"]
