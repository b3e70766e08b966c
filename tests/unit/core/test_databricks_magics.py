"""A Databricks %sql magic, as the REPL and a notebook's %sql line run it: the SQL reaches Spark as written."""

from __future__ import annotations

import pytest

from sparkscope.core.commands.registry import UsageError
from sparkscope.core.compat.databricks import magic


def test_the_sql_of_a_sql_magic_is_passed_on_as_written():
    assert magic("%sql select 'a  b' as s, length('a  b') as n") == ":sql select 'a  b' as s, length('a  b') as n"
    assert magic("%sql\n-- a comment\nselect 1 as one\n") == ":sql -- a comment\nselect 1 as one"
    with pytest.raises(UsageError, match="%sql needs a statement"):
        magic("%sql   ")
