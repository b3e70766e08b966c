"""Syntax highlighting of the input line: Python, and colon commands. pygments loads only here, once the
first prompt is drawn (the empty first line has nothing to highlight)."""

from __future__ import annotations

from prompt_toolkit.lexers import PygmentsLexer
from pygments.lexer import RegexLexer, bygroups, using
from pygments.lexers.python import PythonLexer
from pygments.token import Keyword, Name, Operator, String, Text


class SparkscopeLexer(RegexLexer):
    """Python, except that a line starting with ':' is a colon command."""

    name = "sparkscope"
    tokens = {
        "root": [
            (r"^(:\w+)", Keyword, "command"),
            (r"(?s).+", using(PythonLexer)),
        ],
        "command": [
            (r"(--[\w-]+)", Name.Attribute),
            (r"(\"[^\"]*\"|'[^']*')", String),
            (r"(\s+)", Text),
            (r"([=;])", Operator),
            (r"([^\s]+)", bygroups(Name)),
        ],
    }


def input_lexer() -> PygmentsLexer:
    return PygmentsLexer(SparkscopeLexer)
