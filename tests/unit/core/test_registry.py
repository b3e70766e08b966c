"""Pure logic of repl/registry: no server."""

from __future__ import annotations


import pytest

from sparkscope.core.commands.listing import REGISTRY
from sparkscope.core.commands.registry import UsageError, split_commands


def _commands():
    return REGISTRY, list(REGISTRY.commands.values())


def test_command_parsing_keeps_expressions_whole():
    inv = REGISTRY.parse(':start counts spark.sql("select 1 as x") --sink memory --option a=b --option c=d')
    assert inv.args == ["counts", 'spark.sql("select 1 as x")']
    assert inv.opts == {"sink": "memory", "option": ["a=b", "c=d"]}
    assert REGISTRY.parse(":sql SELECT 1 -- comment").args == ["SELECT 1 -- comment"]
    assert REGISTRY.parse(":ls").command.name == "queries"


@pytest.mark.parametrize("line,message", [
    (":pek x", "Did you mean :peek?"), (":stop a b", "Too many arguments"), (":peek", "needs more arguments"),
    (":peek x --nope", "Unknown option --nope"), (":progress --last", "--last needs a value"),
    (":start x 'unclosed", "Unclosed quote"),
    (":produce t1 x --key --bootstrap H:P", "--key needs a value before --bootstrap"),
])
def test_command_parse_errors(line, message):
    with pytest.raises(UsageError, match=message):
        REGISTRY.parse(line)


def test_an_option_value_may_start_with_two_dashes_when_no_option_has_that_name():
    assert REGISTRY.parse(":produce t1 x --key --not-an-option").opts == {"key": "--not-an-option"}


def test_split_commands():
    assert split_commands(":start counts; :progress\nx = 1; y = 2") == [":start counts", ":progress", "x = 1; y = 2"]


def test_every_command_has_usage_and_summary():
    for cmd in REGISTRY.commands.values():
        assert cmd.usage.startswith(":" + cmd.name) and cmd.summary


def test_every_option_of_every_command_completes():
    from sparkscope.core.commands.completion import command_candidates
    from sparkscope.core.commands.registry import Kind

    registry, declared = _commands()
    for cmd in declared:
        for option in cmd.options:
            assert command_candidates(cmd, [], "--" + option.name[:1], list, list).count("--" + option.name) == 1
            for choice in option.choices if option.kind is not Kind.FLAG else ():
                assert choice in command_candidates(cmd, ["--" + option.name], "", list, list), (cmd.name, choice)


def test_usage_is_generated_from_what_the_parser_accepts():
    registry, _ = _commands()
    assert registry.usage("stop") == ":stop [NAME] [--all]"
    assert registry.usage("start") == (
        ":start NAME [EXPR] [--sink bounded|memory|console|table|kafka|parquet|json|csv|orc|text] [--keep N|TIME] [--grace TIME] "
        "[--path P] [--table T] "
        "[--mode append|update|complete] [--trigger 5s|once|available-now|continuous:1s] [--checkpoint P] "
        "[--option k=v]…")
    assert registry.usage("watch") == ":watch [NAME…]"
    assert registry.usage("alerts") == ":alerts [on|off|latency] [LIMIT]"


def test_arguments_complete_what_the_registry_declares():
    from sparkscope.core.commands.completion import command_candidates

    registry, _ = _commands()

    def offer(line_words, current, name):
        return command_candidates(registry.lookup(name), line_words, current, lambda: ["counts", "clicks"],
                                  lambda: ["events", "counts_df"])

    assert offer([], "c", "peek") == ["counts", "clicks"]
    assert offer(["counts"], "", "peek") == []  # N is not completed
    assert offer([], "", "start") == ["events", "counts_df"]
    assert offer([], "c", "explain") == ["counts", "clicks", "counts_df"]
    assert offer(["--sink"], "p", "start") == ["parquet"]
    assert offer([], "--sink=j", "start") == ["--sink=json"]
    assert offer(["--limit", "5"], "c", "tail") == ["counts", "clicks"]  # an option's value is not an argument
    assert offer([], "k", "help") == ["keys"]
    assert offer(["vi"], "o", "set") == ["on", "off"]


def test_an_unknown_command_suggests_only_a_close_name():
    import pytest

    from sparkscope.core.commands.listing import REGISTRY
    from sparkscope.core.commands.registry import UsageError

    with pytest.raises(UsageError) as slip:
        REGISTRY.parse(":strat ticks")
    assert str(slip.value) == "Unknown command :strat. Did you mean :start? Type :help for the list."
    with pytest.raises(UsageError) as nonsense:
        REGISTRY.parse(":nonsense")
    assert str(nonsense.value) == "Unknown command :nonsense. Type :help for the list."


def test_every_declared_command_is_in_the_registry():
    """:kept was declared with @command and never listed: the REPL answered "Unknown command :kept"."""
    import importlib
    import pkgutil

    from sparkscope.core import commands
    from sparkscope.core.commands.listing import REGISTRY
    from sparkscope.core.commands.registry import Command

    declared = {value.name for info in pkgutil.iter_modules(commands.__path__)
                for value in vars(importlib.import_module(f"sparkscope.core.commands.{info.name}")).values()
                if isinstance(value, Command)}
    assert "kept" in declared and declared - set(REGISTRY.commands) == set()
