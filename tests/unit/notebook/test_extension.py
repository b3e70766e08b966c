"""%load_ext sparkscope in an in-process IPython shell, before any session opens (it opens on first use): the magics
it registers, what stays IPython's, the names its messages use, and a failure as one line."""

from __future__ import annotations

import pytest

pytest.importorskip("IPython")


@pytest.fixture
def shell():
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False  # nothing written to the sandbox's IPython folder
    made = InteractiveShell.instance(config=config)
    made.run_line_magic("load_ext", "sparkscope")
    yield made
    made.run_line_magic("unload_ext", "sparkscope")
    InteractiveShell.clear_instance()


def test_each_colon_command_is_a_line_magic_that_completes_and_ls_stays_ipython_s(shell):
    line, cell = shell.magics_manager.magics["line"], shell.magics_manager.magics["cell"]
    for name in ("start", "peek", "queries", "progress", "state", "late", "feed", "stop", "forget", "checkpoints",
                 "server", "watch", "tail", "sparkscope", "fs"):
        assert name in line, name
    assert "sql" in cell and "quit" not in line and "exit" not in line
    assert line["ls"].__module__ != "sparkscope.notebook.magics"  # IPython's alias, untouched
    from IPython.core.completer import provisionalcompleter

    with provisionalcompleter():
        assert "%peek" in [found.text for found in shell.Completer.completions("%pee", 4)]


def test_help_lists_the_magics_by_the_names_they_are_typed_here(shell, capsys):
    shell.run_line_magic("help", "")
    out = capsys.readouterr().out
    assert "| %peek " in out and "| %sparkscope " in out and "| %%sql " in out, out
    assert "%help keys lists the keys" in out and ":help" not in out, out


def test_a_failure_of_sparkscope_in_a_cell_is_one_line_with_the_magics_names(shell, capsys):
    shell.run_cell("from sparkscope.client.errors import ConfigError\n"
                   "raise ConfigError('counts is not running', 'Start it with :start counts, or press Ctrl-C')")
    out = capsys.readouterr()
    said = (out.out + out.err).strip()
    assert said == "error: counts is not running. Start it with %start counts, or press an interrupt.", said


def test_any_other_exception_keeps_ipython_s_traceback(shell, capsys):
    shell.run_cell("1 / 0")
    out = capsys.readouterr()
    assert "ZeroDivisionError" in out.out + out.err and "Traceback" in out.out + out.err


def test_quit_is_not_a_magic_and_sparkscope_quit_says_how_a_kernel_is_left(shell, capsys):
    shell.run_line_magic("sparkscope", "quit")
    assert capsys.readouterr().err.strip() == ("A notebook's session ends with its kernel (its queries run on): shut "
                                               "the kernel down to leave")


def test_a_databricks_sql_cell_of_several_lines_is_the_sql_cell_magic_and_md_is_markdown(shell):
    assert shell.transform_cell("%sql \n\nselect count(*)\n  from sensors\n") == (
        "get_ipython().run_cell_magic('sql', '', '\\nselect count(*)\\n  from sensors\\n')\n")
    assert shell.transform_cell("%sql select 1\n") == "get_ipython().run_line_magic('sql', 'select 1')\n"
    assert shell.transform_cell("%md # Title\ntext\n") == (
        "get_ipython().run_cell_magic('markdown', '', '# Title\\ntext\\n')\n")
    assert shell.transform_cell("%python\nx = 1\n") == "x = 1\n"


def test_display_of_anything_but_a_dataframe_stays_ipython_s(shell, capsys):
    class Rich:
        def _repr_markdown_(self):
            return "**rich**"

        def __repr__(self):
            return "Rich()"

    shell.run_cell("display('hello', 42)")
    assert capsys.readouterr().out.split() == ["'hello'", "42"]
    shell.user_ns["rich"] = Rich()
    shell.run_cell("display(rich)")
    assert capsys.readouterr().out.strip() == "Rich()"  # a console shows text/plain, as IPython's display does
    from sparkscope.notebook import extension

    assert not extension._loaded[id(shell)].executor.holder.started  # display() alone opened no session
