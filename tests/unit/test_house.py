"""The house rules, read from the source: no import circle inside the package (imports inside functions and
under TYPE_CHECKING count), no function over 60 lines (a module holds one concern, however long)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "sparkscope"
MAX_FUNCTION = 60


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that `name` imports, anywhere in its source."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
    return {module for module in found if module in modules and module != name}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def test_the_cycle_finder_finds_a_cycle():
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_in_the_package():
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    assert graph["sparkscope.core.executor"], "the import graph is read (the executor imports modules of ours)"
    assert import_cycles(graph) == []


def test_no_function_over_60_lines():
    long = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION:
                    long.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name} ({lines} lines)")
    assert long == []


def _class_parents() -> dict[str, list[str]]:
    """Each class of ours, by name, with the names of its bases that are classes of ours too."""
    classes: dict[str, list[str]] = {}
    trees = [ast.parse(path.read_text()) for path in PACKAGE.rglob("*.py")]
    ours = {node.name for tree in trees for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(base).split(".")[-1] for base in node.bases]
                classes[node.name] = [base for base in bases if base in ours and base != node.name]
    return classes


def test_no_class_of_ours_is_stacked_three_deep():
    """Compose, don't stack: a class holds its parts (as the Session holds its QueryManager, SinkReader and
    QueryStarter). Errors are the one hierarchy, so exceptions are left aside."""
    parents = _class_parents()

    def depth(name: str) -> int:
        return 1 + max((depth(parent) for parent in parents.get(name, [])), default=0)

    def is_error(name: str) -> bool:
        return name.endswith(("Error", "Exception")) or any(is_error(parent) for parent in parents.get(name, []))

    deep = sorted(name for name in parents if depth(name) >= 3 and not is_error(name))
    assert deep == [], deep
    assert depth("AuthenticationFailed") == 3, "the depth is counted (the errors' own hierarchy is three deep)"


def test_no_class_of_ours_inherits_from_another_errors_and_protocols_aside():
    """A class holds its parts instead of inheriting them. The error hierarchy, and Protocols that extend Protocols,
    are the exceptions."""
    parents = _class_parents()
    protocols = {node.name for path in PACKAGE.rglob("*.py") for node in ast.walk(ast.parse(path.read_text()))
                 if isinstance(node, ast.ClassDef) and any(ast.unparse(b).endswith("Protocol") for b in node.bases)}

    def is_error(name: str) -> bool:
        return name.endswith(("Error", "Exception")) or any(is_error(parent) for parent in parents.get(name, []))

    stacked = sorted(name for name, bases in parents.items() if bases and not is_error(name) and name not in protocols)
    assert stacked == [], stacked
    assert parents["ServerUnreachable"] == ["ConnectionFailed"], "the rule reads the bases of our classes"
