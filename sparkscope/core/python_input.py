"""Python input in the REPL: how a value is shown, and a traceback of the user's own code."""

from __future__ import annotations

import traceback
from typing import Any

from ..client.error_reading import translate
from ..client.queries.dataframes import is_dataframe


def describe(value: Any) -> str:
    """repr for the REPL; a DataFrame shows its schema and whether it streams, without running a job."""
    if is_dataframe(value):
        try:
            fields = ", ".join(f"{f.name}: {f.dataType.simpleString()}" for f in value.schema.fields)
            kind = "streaming DataFrame" if value.isStreaming else "DataFrame"
            return f"{kind}[{fields}]"
        except Exception as exc:
            return f"DataFrame (invalid: {translate(exc)})"
    if type(value).__name__ == "Rows" and hasattr(value, "columns"):
        from .rendering.render import render
        from .rendering.results import Table

        return render(Table(value.columns, value.rows))
    return repr(value)


def from_pyspark(exc: BaseException) -> bool:
    module = type(exc).__module__ or ""
    return module.startswith(("pyspark", "grpc", "py4j"))


def mentions_session(source: str) -> bool:
    return any(name in source for name in ("spark", "ss.", "ss ", "F.", "T.", "col(", "expr(", "lit(", "window("))


def _source_line(lines: list[str], lineno: int | None) -> str:
    return lines[lineno - 1].strip() if lineno and 0 < lineno <= len(lines) else ""


def user_frames(exc: BaseException, source: str, filename: str = "<input>", first_line: int = 1) -> str:
    """The traceback's header and the frames of the user's own code only (from `filename`, where `source` starts
    at `first_line`), as Python prints them."""
    lines = [""] * (first_line - 1) + source.splitlines()
    frames = [traceback.FrameSummary(f.filename, f.lineno, f.name, line=_source_line(lines, f.lineno))
              for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
    if not frames:
        return ""
    # a recursion's repeated frames collapse, as Python prints them: [Previous line repeated N more times]
    return "Traceback (most recent call last):\n" + "".join(traceback.StackSummary.from_list(frames).format())


def syntax_error_text(exc: SyntaxError) -> str:
    """Python's own lines for a syntax error, as `python FILE` prints them: the one line at fault and its caret.
    For a statement continued over lines with backslashes, Python 3.11 quotes every line of the statement in
    the exception and puts the caret under none of them; this quotes the line at fault alone."""
    text, offset = exc.text, exc.offset
    if text and offset and "\n" in text.rstrip("\n"):
        start = text.rfind("\n", 0, max(offset - 1, 0)) + 1
        line = text[start:].split("\n", 1)[0]
        exc = SyntaxError(exc.msg, (exc.filename, exc.lineno, offset - start, line + "\n", exc.lineno,
                                    offset - start + 1))
    return "".join(traceback.format_exception_only(SyntaxError, exc))


def user_traceback(exc: BaseException, source: str, filename: str = "<input>", first_line: int = 1) -> str:
    """A traceback of the user's own code only: its frames (see user_frames) and the final line."""
    out = [user_frames(exc, source, filename, first_line)]
    out.extend(traceback.format_exception_only(type(exc), exc))
    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ else []
    last = frames[-1] if frames else None  # where it raised: a line of the user's, or of a library's
    lines = [""] * (first_line - 1) + source.splitlines()
    failed_at = (_source_line(lines, last.lineno) if last.filename == filename else last.line) if last else ""
    failed_at = failed_at or ""
    if isinstance(exc, TypeError) and "isStreaming(" in failed_at:  # the line that raised calls the property
        out.append("hint: isStreaming is a property, not a method: write df.isStreaming without ()\n")
    python_word = {"true": "True", "false": "False", "null": "None"}.get(getattr(exc, "name", None) or "")
    if isinstance(exc, NameError) and python_word:  # Scala's or JSON's word, as Spark's docs write some options
        out.append(f"hint: Python writes {python_word}\n")
    return "".join(out)
