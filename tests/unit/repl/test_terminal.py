"""The terminal: reattach hints, a dumb terminal's prompt, Ctrl-D typed ahead."""

from __future__ import annotations

import shlex

import pytest

from sparkscope.client.connection.remote import Target
from sparkscope.core.terminal import reattach_command


@pytest.mark.parametrize("target, tail", [
    (Target(host="spark.example", port=443, token="t0ken-from-url", params={"use_ssl": "true"}, token_source="url"),
     "(with your token in SPARK_CONNECT_AUTHENTICATE_TOKEN)"),
    (Target(host="spark.example", port=443, token="t0ken-from-env", token_source="env", source="env"),
     "(with SPARK_CONNECT_AUTHENTICATE_TOKEN set, as now)"),
    (Target(host="localhost", port=15002, token="t0ken-from-state", token_source="state", source="local"), ""),
])
def test_reattach_commands_work_as_printed_and_hold_no_token(target, tail):
    sid = "6f1d9d8e-7c1b-4a43-9d1e-0d4f3f7b2a10"
    line = reattach_command(target, sid)
    assert target.token not in line and "***" not in line
    command, _, note = line.partition("  (")
    argv = shlex.split(command)  # the shell reads it as one command: the URL's ';' is quoted
    assert argv[-2:] == ["--session-id", sid]
    if target.source != "local":
        url = argv[argv.index("--remote") + 1]
        assert url.startswith("sc://spark.example:") and "token" not in url
    else:
        assert "--remote" not in argv
    assert (("(" + note) if note else "") == tail


def test_a_profile_reattaches_by_its_name():
    target = Target(host="spark.example", token="t0ken-in-profile", token_source="profile", source="profile",
                    profile="prod")
    argv = shlex.split(reattach_command(target, "6f1d9d8e-7c1b-4a43-9d1e-0d4f3f7b2a10"))
    assert argv[1:3] == ["--profile", "prod"]


def test_output_above_a_dumb_terminals_prompt_starts_a_line_and_the_prompt_comes_again():
    import io

    from sparkscope.repl.terminal_io import AbovePlainPrompt

    screen = io.StringIO()
    proxy = AbovePlainPrompt(screen, lambda: "sparkscope> spa")
    proxy.write("a command's own output\n")  # no prompt waits: it passes as it is
    with proxy.showing():
        screen.write("sparkscope> spa")  # the prompt, and what was typed so far
        proxy.write("notice: Port 15002 is taken\n")
        proxy.write("alert: ")
        proxy.write("counts failed\n")
    proxy.write("after the prompt\n")
    assert screen.getvalue() == ("a command's own output\nsparkscope> spa\nnotice: Port 15002 is taken\n"
                                 "sparkscope> spa\nalert: counts failed\nsparkscope> spa"
                                 "after the prompt\n")


def test_a_ctrl_d_typed_between_prompts_is_found_and_a_typed_ahead_line_is_left():
    import io
    import os
    import pty

    from sparkscope.repl.terminal_io import eof_typed_ahead

    master, slave = pty.openpty()  # a new pty is in canonical mode, as the terminal is between prompts
    try:
        stdin = os.fdopen(slave, "rb", buffering=0, closefd=False)
        assert not eof_typed_ahead(stdin)  # nothing typed
        os.write(master, b"1 + 1\n")
        assert not eof_typed_ahead(stdin)
        assert os.read(slave, 100) == b"1 + 1\n"  # the line is still there for the prompt
        os.write(master, b"\x04")  # Ctrl-D on an empty line
        assert eof_typed_ahead(stdin)
        assert not eof_typed_ahead(stdin)  # taken
        assert not eof_typed_ahead(io.StringIO(""))  # not a terminal
    finally:
        os.close(master)
        os.close(slave)
