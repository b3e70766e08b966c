"""When Python source is a whole statement: the one rule for the prompt, `-f` scripts and `-c`.

Like the standard interactive interpreter: an open bracket or string always continues; a compound
statement (def, for, with …) continues while lines are indented, and at the prompt until a blank
line. In a script a blank line inside a block does not end it; the next unindented line does.
"""

from __future__ import annotations

import ast
import codeop
from collections.abc import Iterator

_CLAUSES = ("else", "elif", "except", "finally", "case")


def is_complete(source: str) -> bool:
    """True when `source` can run as it is (a syntax error counts: it is reported when run)."""
    if source.lstrip().startswith(":") or not source.strip():
        return True
    try:
        return codeop.compile_command(source, "<input>", "single") is not None
    except (SyntaxError, OverflowError, ValueError):
        return True


def is_open(source: str) -> bool:
    """An unclosed bracket or string: whatever comes next belongs to this statement."""
    return not is_complete(source + "\n")


def enter_submits(text: str) -> bool:
    """At the prompt: does Enter run `text` (True) or start another line of it (False)?

    IPython's rule (check_complete): a complete statement runs, however its last line is indented
    when that line continues it (a `\\` chain, the inside of brackets now closed); a compound
    statement (def, for, with, if …) that ends in its indented body waits for a blank line."""
    lines = text.split("\n")
    if len(lines) > 1 and not lines[-1].strip():  # a blank line ends the block, as in python
        return not is_open(text.rstrip())
    if not is_complete(text):
        return False
    return len(lines) == 1 or not _ends_in_block(text, lines)


def script_statements(text: str) -> Iterator[str]:
    """The pieces of a script in order: each Python statement (with its block) or colon-command line."""
    return (piece for _, piece in numbered_statements(text))


def numbered_statements(text: str) -> Iterator[tuple[int, str]]:
    """script_statements, each with the line of the script it starts on (colon-command lines count too)."""
    pending: list[str] = []
    start = 0
    for number, line in enumerate(text.splitlines(), 1):
        if pending:
            source = "\n".join(pending)
            if is_open(source) or not line.strip() or line[:1] in (" ", "\t") or line.lstrip().startswith(
                    ("#", *_CLAUSES)):
                pending.append(line)
                continue
            yield start, source.rstrip() + "\n"
            pending = []
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.lstrip().startswith(":"):
            yield number, line.strip()
            continue
        if is_complete(line) and not line.rstrip().endswith(":"):
            yield number, line
        else:
            pending, start = [line], number
    if pending:
        yield start, "\n".join(pending).rstrip() + "\n"


def first_syntax_error(pieces: list[tuple[int, str]], filename: str) -> SyntaxError | None:
    """The first Python piece of a script that Python cannot compile, with its line in the script, as `python
    FILE` finds it before running anything (colon commands and % magics are the REPL's, not Python's)."""
    for line, piece in pieces:
        if piece.lstrip().startswith((":", "%")):
            continue
        try:
            compile("\n" * (line - 1) + piece, filename, "exec", dont_inherit=True)
        except SyntaxError as exc:
            return exc
    return None


_COMPOUND = tuple(getattr(ast, name) for name in ("If", "For", "AsyncFor", "While", "With", "AsyncWith", "FunctionDef",
                                                   "AsyncFunctionDef", "ClassDef", "Try", "TryStar", "Match")
                  if hasattr(ast, name))


def _ends_in_block(text: str, lines: list[str]) -> bool:
    """The last statement is compound and its body is still being typed (the last line is indented)."""
    if not lines[-1].startswith((" ", "\t")):
        return False
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return False  # reported when it runs
    return bool(tree.body) and isinstance(tree.body[-1], _COMPOUND)


def indent_for(text: str) -> str:
    """The indentation of the next line at the prompt: as the last one, one level more after ':'."""
    last = text.splitlines()[-1] if text.splitlines() else ""
    indent = last[: len(last) - len(last.lstrip())]
    return indent + ("    " if last.rstrip().endswith(":") else "")
