"""Pure logic of core/arguments: no server."""

from __future__ import annotations

import os

import pytest



def test_what_follows_a_script_is_the_scripts_own_argv():
    from sparkscope.core.arguments import split_script_args

    assert split_script_args(["-f", "job.py", "localhost", "9999"]) == (["-f", "job.py"], ["localhost", "9999"])
    assert split_script_args(["--remote", "sc://h:1", "job.py", "-f", "x"]) == (
        ["--remote", "sc://h:1", "-f", "job.py"], ["-f", "x"])  # the script's own flags are its own
    assert split_script_args(["-fjob.sps", "a"]) == (["-fjob.sps"], ["a"])
    assert split_script_args(["-c", "print('x.py')", "--detach"]) == (["-c", "print('x.py')", "--detach"], [])
    assert split_script_args(["server", "start", "--port", "1"]) == (["server", "start", "--port", "1"], [])


def test_sparkscope_s_own_options_right_after_the_script_are_sparkscope_s():
    """`sparkscope -f pipeline.sps --format json`, as the README and --help write it: the format is sparkscope's; the
    first other word, or `--`, begins the script's own arguments."""
    from sparkscope.core.arguments import split_script_args

    assert split_script_args(["-f", "p.sps", "--format", "json"]) == (["-f", "p.sps", "--format", "json"], [])
    assert split_script_args(["-f", "p.sps", "--format=json", "--debug", "in.csv", "--format", "csv"]) == (
        ["-f", "p.sps", "--format=json", "--debug"], ["in.csv", "--format", "csv"])
    assert split_script_args(["-f", "job.py", "--", "--format", "csv"]) == (["-f", "job.py"], ["--format", "csv"])


@pytest.mark.parametrize("argv, subcommand", [
    (["--remote", "sc://spark.example:15002"], None),
    (["-c", "1", "--format", "json"], None),
    (["server", "status", "--format", "json"], "server"),
    (["--port", "15010", "checkpoints"], "checkpoints"),
])
def test_the_command_line_builds_the_subcommands_only_when_named(argv, subcommand):
    from sparkscope.core.arguments import build_parser

    args = build_parser(argv).parse_args(argv)
    assert args.subcommand == subcommand


def test_a_mistyped_subcommand_still_lists_the_real_ones(capsys):
    from sparkscope.__main__ import main

    with pytest.raises(SystemExit) as exit_:
        main(["serve"])
    assert exit_.value.code == 2
    assert "invalid choice: 'serve' (choose from 'checkpoints', 'server')" in capsys.readouterr().err


def test_output_into_a_pipe_closed_early_ends_quietly():
    """`sparkscope server logs | head -1`: the reader has gone, so the command ends as `cat` would, without
    a BrokenPipeError traceback (the real command, its stdout a pipe whose read end is closed)."""
    import subprocess

    from tests.helpers import sparkscope_bin

    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run([sparkscope_bin(), "--version"], stdout=write_end, stderr=subprocess.PIPE, text=True,
                              timeout=60)
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (141, "")


def test_server_s_usage_lists_every_subcommand_and_stop_and_status_take_a_port():
    from sparkscope.core.arguments import build_parser

    parser = build_parser(["server", "--help"])
    server = next(action for action in parser._subparsers._group_actions[0].choices.values()  # noqa: SLF001
                  if action.prog.endswith("server"))
    usage = server.format_usage()
    for name in ("start", "stop", "status", "token", "check", "kept", "users", "check-java", "logs"):
        assert name in usage, (name, usage)
    assert build_parser(["server", "stop"]).parse_args(["server", "stop", "--port", "15003"]).port == 15003
    assert build_parser(["server", "status"]).parse_args(["server", "status", "--port", "15003"]).port == 15003
