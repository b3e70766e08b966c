"""Running a script file through the executor as `python FILE` would: its text, its sys.path[0], and its pieces."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from ..client.errors import ConfigError


def run_file(executor: Any, path: str) -> bool:
    """Run a script as Python runs one: compiled first (a syntax error anywhere runs nothing and names its file and
    line), then piece by piece, with tracebacks naming the file. A .py script stops at its first error, as
    `python FILE` does; a script of commands (.sps, or any other name) goes on after a failed line, as a SQL
    client's -f does, and exits non-zero."""

    from .executor import has_commands

    text = script_text(path)
    name = "<stdin>" if path == "-" else path
    stops = name.endswith(".py")
    if stops and not has_commands(text):  # the whole file at once, as python compiles and runs it
        return executor.run(text, filename=name)
    return executor.run_script(text, filename=name, stops=stops)


def script_text(path: str) -> str:
    """A script's text as Python reads a source file: UTF-8 unless a PEP 263 coding line says otherwise, a UTF-8
    byte-order mark (Windows editors write one) dropped."""
    import io
    import tokenize

    try:
        data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"Cannot read {path} ({exc.strerror})", "Check the path") from None
    try:
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        except SyntaxError as exc:  # its first lines are not UTF-8 (said below, with the byte), or name no codec
            data.decode("utf-8")
            raise ConfigError(f"{path}: {exc.msg}", "Fix the coding line, or save the script as UTF-8") from None
        return data.decode(encoding).replace("\r\n", "\n")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not {exc.encoding} text (byte {exc.start} cannot be decoded)",
                          "Save the script as UTF-8, or name its encoding in a coding line") from None


def script_path(file: str | None) -> str:
    """sys.path[0] as `python FILE` sets it: the script's folder, its links resolved; '' for -c, stdin and the
    REPL, as Python has it there."""
    if not file or file == "-":
        return ""
    return os.path.dirname(os.path.realpath(file))
