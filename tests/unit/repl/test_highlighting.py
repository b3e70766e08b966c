"""Pure logic of repl/highlighting: no server."""

from __future__ import annotations





def test_highlighting_tells_a_colon_command_from_python():
    from pygments.token import Keyword, Name, String

    from sparkscope.repl.highlighting import SparkscopeLexer

    tokens = list(SparkscopeLexer().get_tokens(":start counts --sink memory"))
    assert (Keyword, ":start") in tokens and (Name.Attribute, "--sink") in tokens
    python = list(SparkscopeLexer().get_tokens("counts = spark.readStream.format('rate').load()"))
    assert (Name, "counts") in python and (String.Single, "rate") in python
