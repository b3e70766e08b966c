"""The SDK's public API, read from the code: every name of `sparkscope.__all__`, `sparkscope.client.__all__` and
`sparkscope.testing.__all__`, every class a user can reach from them (through properties and return types), each
class's public methods and properties with their signatures and the first line of their docstrings, what each error
carries (code, data, message, hint), and the pytest plugin's options and fixtures.

It writes two things (`make docs`):
- tests/unit/public_api.txt, the API's snapshot: tests/unit/test_public_api.py fails when the API changes and the
  snapshot was not updated on purpose;
- the API reference at the end of docs/sdk.md (tests/unit/test_docs.py fails when it is stale).
"""

from __future__ import annotations

import inspect
import os
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# the snapshot a test compares with (SPARKSCOPE_API_SNAPSHOT: another one, for the test that shows lint fails)
SNAPSHOT = Path(os.environ.get("SPARKSCOPE_API_SNAPSHOT") or ROOT / "tests" / "unit" / "public_api.txt")
PAGE = ROOT / "docs" / "sdk.md"
BEGIN = "<!-- api: generated from the docstrings by `make docs`; do not edit by hand -->"
END = "<!-- end of the generated API -->"


def _signature(function: Any) -> str:
    """A signature as written in the source (annotations are strings there: `from __future__ import annotations`)."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return "(…)"
    parts = []
    star = False
    for parameter in signature.parameters.values():
        if parameter.kind is parameter.KEYWORD_ONLY and not star:
            parts.append("*")
        star = star or parameter.kind in (parameter.KEYWORD_ONLY, parameter.VAR_POSITIONAL)
        parts.append(str(parameter).replace("'", ""))
    shown = f"({', '.join(parts)})"
    if signature.return_annotation is not inspect.Signature.empty:
        shown += f" -> {str(signature.return_annotation).strip(chr(39))}"
    return shown.replace("(self, ", "(").replace("(self)", "()").replace("(cls, ", "(").replace("(cls)", "()")


def _summary(thing: Any) -> str:
    doc = inspect.getdoc(thing) or ""
    first = doc.split("\n\n")[0].replace("\n", " ").strip()
    return first


def _members(cls: type) -> list[tuple[str, Any]]:
    """A class's own public members (not object's), in source order where it has one."""
    members = []
    for name, value in cls.__dict__.items():
        if name.startswith("_") and name not in ("__init__", "__enter__", "__exit__", "__iter__"):
            continue
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if callable(value) or isinstance(value, property):
            members.append((name, value))
    return members


def _property(value: property) -> str:
    """`property -> Type`, the type as written in the source."""
    returned = _signature(value.fget).partition(" -> ")[2] if value.fget is not None else ""
    return f"property -> {returned}" if returned else "property"


def _classes_by_name() -> dict[str, type]:
    """Every class sparkscope's modules define, by name: what an annotation names is looked up here."""
    import importlib

    found: dict[str, type] = {}
    for path in sorted((ROOT / "sparkscope").rglob("*.py")):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        if name.split(".")[1:2] in (["repl"], ["core"], ["cli"], ["notebook"], ["jars"]):
            continue  # the REPL, the command line and the notebook use the API; they hand none of it out
        loaded = importlib.import_module(name)
        for value in vars(loaded).values():
            if inspect.isclass(value) and value.__module__ == name and not value.__name__.startswith("_"):
                found.setdefault(value.__name__, value)
    return found


def _named(annotation: str, classes: dict[str, type]) -> list[type]:
    """The sparkscope classes an annotation names (`list[Query] | None` names Query)."""
    return [classes[word] for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", annotation) if word in classes]


def _reachable(roots: list[type], classes: dict[str, type]) -> list[type]:
    """The roots and every sparkscope class their public members hand out (properties and return types), and
    theirs: what a user can get hold of from the exported names."""
    seen: list[type] = []
    todo = list(roots)
    while todo:
        cls = todo.pop(0)
        if cls in seen or issubclass(cls, BaseException) and cls not in roots:
            continue
        seen.append(cls)
        for _, value in _members(cls):
            shown = _property(value) if isinstance(value, property) else _signature(value)
            todo.extend(_named(shown.rpartition("->")[2], classes))
    return seen


def _error_attributes(cls: type) -> list[tuple[str, str, str]]:
    """What an error carries besides its message: the attributes its __init__ sets, and its class-level code."""
    import ast
    import textwrap

    found = []
    if "code" in cls.__dict__:
        found.append(("code", f"= {cls.__dict__['code']!r}", "what a script can match on instead of the message"))
    init = cls.__dict__.get("__init__")
    if init is not None:
        tree = ast.parse(textwrap.dedent(inspect.getsource(init)))
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Attribute):
                target = node.targets[0]
                if isinstance(target.value, ast.Name) and target.value.id == "self" and not target.attr.startswith("_"):
                    found.append((target.attr, "attribute", ""))
    return found


def _entries_of_class(qualified: str, cls: type) -> list[tuple[str, str, str]]:
    bases = [base.__name__ for base in cls.__bases__ if base is not object]
    found = [(qualified, f"class({', '.join(bases)})" if bases else "class", _summary(cls))]
    if issubclass(cls, BaseException):
        found += [(f"{qualified}.{name}", kind, summary) for name, kind, summary in _error_attributes(cls)]
        members = [(name, value) for name, value in _members(cls) if name != "__init__" or cls.__name__ ==
                   "SparkscopeError"]
    else:  # made by sparkscope (connect(), a Session's methods), not by the user: no __init__ to show
        members = [(name, value) for name, value in _members(cls) if name != "__init__"]
    for member, value in members:
        shown = _property(value) if isinstance(value, property) else _signature(value)
        found.append((f"{qualified}.{member}", shown, _summary(value)))
    return found


def _plugin() -> list[tuple[str, str, str]]:
    """The pytest plugin's command-line options and fixtures (sparkscope.testing.plugin)."""
    from sparkscope.testing import plugin

    found = []
    options: list[tuple[tuple[str, ...], dict[str, Any]]] = []

    class Group:
        def addoption(self, *names: str, **attributes: Any) -> None:
            options.append((names, attributes))

    class Parser:
        def getgroup(self, name: str) -> Group:
            return Group()

    plugin.pytest_addoption(Parser())
    for names, attributes in options:
        found.append((f"pytest {' '.join(names)}", f"option {attributes.get('metavar', '')}".rstrip(),
                      attributes.get("help", "")))
    for name, value in vars(plugin).items():
        wrapped = getattr(value, "__wrapped__", None) or getattr(value, "__pytest_wrapped__", None)
        marker = getattr(value, "_fixture_function_marker", None) or getattr(value, "_pytestfixturefunction", None)
        if marker is None or name.startswith("_"):
            continue
        function = getattr(wrapped, "obj", wrapped) or value
        scope = getattr(marker, "scope", "function")
        found.append((f"pytest fixture {name}", f"fixture(scope={scope})", _summary(function)))
    return found


def entries() -> list[tuple[str, str, str]]:
    """(qualified name, signature or kind, summary) for every part of the public API: the names `sparkscope` and
    `sparkscope.testing` export, every class a user can reach from them, and the pytest plugin's options and
    fixtures."""
    import sparkscope
    import sparkscope.client
    import sparkscope.testing

    classes = _classes_by_name()
    found: list[tuple[str, str, str]] = []
    roots: list[type] = []
    for module, names in (("sparkscope", sorted(set(sparkscope.__all__) | set(sparkscope.client.__all__))),
                          ("sparkscope.testing", sorted(sparkscope.testing.__all__))):
        for name in names:
            if name == "__version__":
                continue
            thing = getattr(sys.modules[module], name)
            if inspect.isclass(thing):
                roots.append(thing)
                found += _entries_of_class(f"{module}.{name}", thing)
            else:
                found.append((f"{module}.{name}", _signature(thing), _summary(thing)))
                roots.extend(_named(_signature(thing).rpartition("->")[2], classes))
    for cls in _reachable(roots, classes):
        if cls not in roots and not any(entry[0] == f"sparkscope.{cls.__name__}" for entry in found):
            found += _entries_of_class(f"{cls.__module__}.{cls.__name__}", cls)
    return found + _plugin()


def snapshot() -> str:
    return "".join(f"{name}{'' if kind.startswith('(') else ' '}{kind}\n" for name, kind, _ in entries())


def reference() -> str:
    lines = ["## API reference", "",
             "Every public name of `sparkscope` and `sparkscope.testing`, every class you can reach from them (a "
             "Session's parts, what its methods return), and the pytest plugin's options and fixtures, from the "
             "docstrings.", ""]
    for name, kind, summary in entries():
        depth = 1 if name.startswith("pytest ") else name.count(".")
        shown = f"`{name}{kind}`" if kind.startswith("(") else f"`{name}` ({kind})"
        lines.append(f"{'  ' * (depth - 1)}- {shown}{': ' + summary if summary else ''}")
    return "\n".join(lines)


def page_with_reference(page: str) -> str:
    head, _, rest = page.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head.rstrip()}\n\n{BEGIN}\n{reference()}\n{END}\n{tail.lstrip()}"


def main() -> int:
    SNAPSHOT.write_text(snapshot())
    PAGE.write_text(page_with_reference(PAGE.read_text()))
    print(f"wrote {SNAPSHOT.relative_to(ROOT)} and the API reference of {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
