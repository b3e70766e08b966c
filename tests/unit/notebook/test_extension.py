"""%load_ext sparkscope in an in-process IPython shell, before any session opens (it opens on first use): the magics
it registers, what stays IPython's, the names its messages use, and a failure as one line."""

from __future__ import annotations

import pytest


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

    assert not extension._loaded[id(shell)][0].executor.holder.started  # display() alone opened no session


def _notebook(shell):
    from sparkscope.notebook import extension

    return extension._loaded[id(shell)][0]


def test_a_cell_that_binds_t_or_f_or_names_spark_in_a_string_opens_no_session(shell):
    for source in ("T = 3", "F = 1\nprint(F)", "x = 'spark.range(3)'  # spark", "def f(spark):\n    return spark",
                   "import pyspark.sql.types as T\nT.StringType()"):
        assert shell.run_cell(source).success, source
        assert not _notebook(shell).executor.holder.started, source


def test_a_cell_needs_the_session_when_its_code_reads_a_name_the_session_gives():
    from sparkscope.notebook.kernel import needs_session

    assert needs_session("spark.range(3).count()", {})
    assert needs_session("df = ss.source.rate(10)", {})
    assert needs_session("print(T.StringType())", {})
    assert needs_session("x = col('a')", {})
    assert not needs_session("spark.range(1)", {"spark": object()})  # already there
    assert not needs_session("T = 3", {})
    assert not needs_session("for T in range(3):\n    print(T)", {})
    assert not needs_session("get_ipython().run_cell_magic('sql', '', 'select * from spark')", {})
    assert not needs_session("this is not python", {})


class Mine(Exception):
    pass


@pytest.fixture
def bare_shell():
    """An IPython shell with no sparkscope loaded (a test loads it)."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False
    made = InteractiveShell.instance(config=config)
    yield made
    from sparkscope.notebook import extension

    if id(made) in extension._loaded:
        made.run_line_magic("unload_ext", "sparkscope")
    InteractiveShell.clear_instance()


def test_another_extension_s_exception_handler_runs_while_loaded_and_comes_back_on_unload(bare_shell):
    seen = []

    def handler(shell, etype, value, tb, tb_offset=None):
        seen.append(etype.__name__)

    bare_shell.set_custom_exc((Mine, ZeroDivisionError), handler)
    bare_shell.run_line_magic("load_ext", "sparkscope")
    bare_shell.run_cell("1 / 0")
    bare_shell.user_ns["Mine"] = Mine
    bare_shell.run_cell("raise Mine('theirs')")
    assert seen == ["ZeroDivisionError", "Mine"]  # chained: theirs, not sparkscope's nor IPython's
    bare_shell.run_line_magic("unload_ext", "sparkscope")
    bare_shell.run_cell("1 / 0")
    assert seen == ["ZeroDivisionError", "Mine", "ZeroDivisionError"]
    assert bare_shell.custom_exceptions == (Mine, ZeroDivisionError)


def test_unload_gives_back_the_magics_and_names_sparkscope_took_and_a_reload_works(bare_shell, capsys):
    ran = []

    def their_sql(line, cell):
        ran.append(cell.strip())

    bare_shell.register_magic_function(their_sql, "cell", "sql")
    bare_shell.user_ns["display"] = "the user's own display"
    bare_shell.run_line_magic("load_ext", "sparkscope")
    said = capsys.readouterr().out
    assert "note: sparkscope's %%sql takes the place of the one test_extension gave (%unload_ext sparkscope gives it back)" \
        in said
    line, cell = bare_shell.magics_manager.magics["line"], bare_shell.magics_manager.magics["cell"]
    assert cell["sql"].__module__ == "sparkscope.notebook.magics" and "peek" in line
    assert "dbutils" in bare_shell.user_ns and bare_shell.user_ns["display"] != "the user's own display"
    bare_shell.run_line_magic("unload_ext", "sparkscope")
    assert "peek" not in line and "sparkscope" not in line and "fs" not in line
    bare_shell.run_cell("%%sql\nselect 1")
    assert ran == ["select 1"]  # theirs again
    assert bare_shell.user_ns["display"] == "the user's own display" and "dbutils" not in bare_shell.user_ns
    assert "%peek" not in bare_shell.strdispatchers["complete_command"].strs
    bare_shell.run_line_magic("load_ext", "sparkscope")  # a second load is a first one
    assert "peek" in line and cell["sql"].__module__ == "sparkscope.notebook.magics"
    bare_shell.run_line_magic("help", "")
    assert "| %peek " in capsys.readouterr().out


def test_a_bad_option_or_command_is_said_in_the_notebook_s_own_spelling(shell, capsys):
    shell.run_line_magic("watch", "--bogus")
    shell.run_line_magic("sparkscope", "nosuchcmd")
    shell.run_line_magic("help", "nosuch")
    said = capsys.readouterr()
    assert (said.out + said.err).strip().splitlines() == [
        "error: Unknown option --bogus for %watch. Options: none.",
        "error: Unknown command %nosuchcmd. Type %help for the list.",
        "error: Unknown command %nosuch. Type %help for the list."]
    assert not _notebook(shell).executor.holder.started


def test_pyspark_s_own_warnings_stay_quiet_while_loaded_and_speak_again_after(bare_shell, capsys):
    import warnings

    def pyspark_warns(text):  # as pyspark's retry loop and listener bus warn, from their own modules
        warnings.warn_explicit(text, UserWarning, "retries.py", 311, module="pyspark.sql.connect.client.retries",
                               registry={})

    bare_shell.run_line_magic("load_ext", "sparkscope")
    capsys.readouterr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        bare_shell.run_line_magic("unload_ext", "sparkscope")  # a fresh filter list: load again inside it
        bare_shell.run_line_magic("load_ext", "sparkscope")
        pyspark_warns("[RETRIES_EXCEEDED] The maximum number of retries has been exceeded.")
        assert caught == []
        bare_shell.run_line_magic("unload_ext", "sparkscope")
        pyspark_warns("[RETRIES_EXCEEDED] The maximum number of retries has been exceeded.")
        assert [str(w.message) for w in caught] == ["[RETRIES_EXCEEDED] The maximum number of retries has been "
                                                    "exceeded."]


def test_sparkscope_reads_its_flags_with_the_command_line_s_parser_and_a_bad_one_is_one_line(shell, capsys):
    shell.run_line_magic("sparkscope", "--bogus")
    shell.run_line_magic("sparkscope", "--remote")
    shell.run_line_magic("sparkscope", "--remote 'sc://unclosed")
    said = capsys.readouterr()
    assert (said.out + said.err).strip().splitlines() == [
        "error: %sparkscope: unrecognized arguments: --bogus. Usage: %sparkscope [--remote sc://HOST:PORT] [--profile "
        "NAME] [--session-id ID] [--reattach], or %sparkscope COMMAND [ARGS…].",
        "error: %sparkscope: argument --remote: expected one argument. Usage: %sparkscope [--remote sc://HOST:PORT] "
        "[--profile NAME] [--session-id ID] [--reattach], or %sparkscope COMMAND [ARGS…].",
        "error: %sparkscope cannot read \"--remote 'sc://unclosed\" (No closing quotation). Close the quote."]
    assert not _notebook(shell).executor.holder.started


def test_the_magics_are_ipython_magics_classes_one_per_concern_and_go_with_unload(bare_shell):
    bare_shell.run_line_magic("load_ext", "sparkscope")
    registry = bare_shell.magics_manager.registry
    assert {"CommandMagics", "SessionMagics", "DatabricksMagics"} <= set(registry)
    line, cell = bare_shell.magics_manager.magics["line"], bare_shell.magics_manager.magics["cell"]
    assert line["peek"] is registry["CommandMagics"].magics["line"]["peek"]
    assert line["sparkscope"].__self__ is registry["SessionMagics"]
    assert cell["sql"].__self__ is registry["DatabricksMagics"] and line["fs"].__self__ is registry["DatabricksMagics"]
    bare_shell.run_line_magic("unload_ext", "sparkscope")
    assert not {"CommandMagics", "SessionMagics", "DatabricksMagics"} & set(registry)
