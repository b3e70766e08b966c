"""Completion at the prompt."""

from __future__ import annotations


def test_completion_never_reads_properties_or_calls_dir_on_instances():
    from sparkscope.repl.shell import python_matches

    class Remote:
        rpcs = 0

        @property
        def schema(self):
            Remote.rpcs += 1
            return self

        def __dir__(self):
            Remote.rpcs += 1
            return ["columns"]

        def count(self):
            return 0

    namespace = {"df": Remote()}
    assert python_matches("df.c", namespace) == ["df.count"]
    assert python_matches("df.sch", namespace) == ["df.schema"]
    assert python_matches("df.schema.", namespace) == []  # completing after a property would read it
    assert Remote.rpcs == 0
    assert python_matches("pri", {}) == ["print"]


def test_completing_while_the_connecting_thread_imports_pyspark_offers_names_and_keeps_the_prompt(monkeypatch):
    """The connecting thread imports pyspark while the user types. A module it is still running is in
    sys.modules without its classes: asking it for DataFrame crashed the prompt (a CI run ended the REPL with
    "partially initialized module 'pyspark.sql.connect.dataframe' has no attribute 'DataFrame'")."""
    import sys
    import types

    from prompt_toolkit.document import Document

    from sparkscope.client.queries.dataframes import is_dataframe
    from sparkscope.repl.shell import ShellCompleter

    monkeypatch.setitem(sys.modules, "pyspark.sql.connect.dataframe", types.ModuleType("half_imported"))
    assert is_dataframe(object()) is False

    class Executor:
        namespace = {"counts": object()}

        def session_or_none(self):
            raise RuntimeError("the session blew up")

    completer = ShellCompleter(Executor())  # type: ignore[arg-type]
    offered = [c.text for c in completer.get_completions(Document(":start "), None)]
    assert offered == []  # a failing lookup offers nothing; it does not raise into prompt-toolkit
    assert [c.text for c in completer.get_completions(Document(":sta"), None)] == [":start", ":state", ":status"]
