"""The REPL's command table in docs/repl.md, generated from the command registry (`make docs` writes it;
tests/unit/test_docs.py fails when the page and the registry drift apart)."""

from __future__ import annotations

import sys
from pathlib import Path

PAGE = Path(__file__).resolve().parents[1] / "docs" / "repl.md"
BEGIN = "<!-- commands: generated from the registry by `make docs`; do not edit by hand -->"
END = "<!-- end of the generated commands -->"


def command_table() -> str:
    from sparkscope.core.commands.listing import REGISTRY

    rows = ["| command | what it does |", "|---|---|"]
    for cmd in sorted(REGISTRY.commands.values(), key=lambda c: c.name):
        aliases = f" (also {', '.join(':' + a for a in cmd.aliases)})" if cmd.aliases else ""
        usage, summary = (text.replace("|", "\\|") for text in (cmd.usage, cmd.summary))
        rows.append(f"| `{usage}`{aliases} | {summary} |")
    return "\n".join(rows)


def page_with_table(page: str) -> str:
    head, _, rest = page.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n{command_table()}\n{END}{tail}"


def main() -> int:
    page = PAGE.read_text()
    if BEGIN not in page or END not in page:
        print(f"error: {PAGE} has no generated-commands markers", file=sys.stderr)
        return 1
    PAGE.write_text(page_with_table(page))
    print(f"wrote the command table of {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
