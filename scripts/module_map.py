"""The module list of docs/architecture.md ("The modules, one line each"), from each module's docstring: `make docs`
writes it, and tests/unit/test_docs.py fails when it and the package drift apart."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "sparkscope"
PAGE = ROOT / "docs" / "architecture.md"
BEGIN = "## The modules, one line each"


def first_paragraph(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    return " ".join(doc.split("\n\n")[0].split())


def module_map() -> str:
    lines = [BEGIN, ""]
    for folder in sorted({path.parent for path in PACKAGE.rglob("*.py")}):
        lines += ["", f"### `{folder.relative_to(ROOT)}/`", ""]
        lines += [f"- `{path.name}`: {first_paragraph(path)}" for path in sorted(folder.glob("*.py"))]
    return "\n".join(lines) + "\n"


def page_with_map(page: str) -> str:
    head, _, _ = page.partition(BEGIN)
    return head + module_map()


def main() -> int:
    PAGE.write_text(page_with_map(PAGE.read_text()))
    print(f"wrote the module list of {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
