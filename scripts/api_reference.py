"""The SDK's public API, read from the code: every name of `sparkscope.__all__` and `sparkscope.client.__all__`, each
class's public methods and properties, with their signatures and the first line of their docstrings.

It writes two things (`make docs`):
- tests/unit/public_api.txt, the API's snapshot: tests/unit/test_public_api.py fails when the API changes and the
  snapshot was not updated on purpose;
- the API reference at the end of docs/sdk.md (tests/unit/test_docs.py fails when it is stale).
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOT = ROOT / "tests" / "unit" / "public_api.txt"
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
        if name.startswith("_") and name not in ("__enter__", "__exit__"):
            continue
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if callable(value) or isinstance(value, property):
            members.append((name, value))
    return members


def entries() -> list[tuple[str, str, str]]:
    """(qualified name, signature or kind, summary) for every part of the public API."""
    import sparkscope
    import sparkscope.client

    found = []
    names = sorted(set(sparkscope.__all__) | set(sparkscope.client.__all__))
    for name in names:
        if name == "__version__":
            continue
        thing = getattr(sparkscope, name)
        if inspect.isclass(thing):
            bases = [base.__name__ for base in thing.__bases__ if base is not object]
            found.append((f"sparkscope.{name}", f"class({', '.join(bases)})" if bases else "class", _summary(thing)))
            if issubclass(thing, BaseException):
                continue  # an error's API is its class, code and message: SparkscopeError has them
            for member, value in _members(thing):
                shown = "property" if isinstance(value, property) else _signature(value)
                found.append((f"sparkscope.{name}.{member}", shown, _summary(value)))
        else:
            found.append((f"sparkscope.{name}", _signature(thing), _summary(thing)))
    return found


def snapshot() -> str:
    return "".join(f"{name}{'' if kind.startswith('(') else ' '}{kind}\n" for name, kind, _ in entries())


def reference() -> str:
    lines = ["## API reference", "",
             "Every public name of `sparkscope` (its errors are `sparkscope.client`'s too), from the docstrings.", ""]
    for name, kind, summary in entries():
        depth = name.count(".")
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
