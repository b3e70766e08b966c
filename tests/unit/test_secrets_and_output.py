"""Pure logic of issue 15: redaction, the token rule, reattach hints, bounded errors and tables."""

from __future__ import annotations

import shlex

import pytest

from sparkscope.client.errors import SparkscopeError, translate
from sparkscope.client.connection.remote import Target, parse_url
from sparkscope.client.secrets import redact, remember_secret
from sparkscope.repl.output.render import fit_widths, render
from sparkscope.repl.output.results import Table
from sparkscope.repl.prompt.terminal import reattach_command


@pytest.mark.parametrize("text, secret", [
    ("Parameter 'token=c2VjcmV0MTIz==' should be provided as a key-value pair", "c2VjcmV0MTIz"),
    ("sc://h:1/;use_ssl=true;token=a%3Bb%3Dc;x=1", "a%3Bb%3Dc"),
    ("metadata authorization: Bearer s3cr3t-value", "s3cr3t-value"),
    ('{"token": "x", "url": "sc://h/;token=abc\\"def"}', "abc"),
])
def test_redact_hides_token_parameters_and_bearer_values(text, secret):
    assert secret not in redact(text)
    assert "***" in redact(text)


def test_redact_hides_known_tokens_anywhere_even_without_a_key():
    remember_secret("plain-known-token-42")
    assert redact("the value plain-known-token-42 showed up") == "the value *** showed up"
    assert redact("quoted plain-known-token-42".replace("-", "%2D")) != ""  # no crash on look-alikes


def test_our_own_hints_keep_their_placeholders():
    assert redact("Pass the server's token with ;token=… or SPARK_CONNECT_AUTHENTICATE_TOKEN") == (
        "Pass the server's token with ;token=… or SPARK_CONNECT_AUTHENTICATE_TOKEN")


def test_every_error_is_redacted_whatever_its_source():
    error = translate(ValueError("[INVALID_CONNECT_URL] Parameter 'token=c2VjcmV0MTIz==' should be key=value"))
    assert "c2VjcmV0MTIz" not in str(error)
    assert "c2VjcmV0MTIz" not in str(SparkscopeError("bad sc://x/;token=c2VjcmV0MTIz==", "hint token=c2VjcmV0MTIz"))


def test_url_values_are_unquoted_and_tokens_requoted_for_pyspark():
    target = parse_url("sc://h:1/;token=a%3Bb%3D%3D")
    assert target.token == "a;b==" and target.token_source == "url"
    assert target.url(with_token=True) == "sc://h:1/;token=a%3Bb%3D%3D"
    assert "a;b" not in target.display


@pytest.mark.parametrize("host, ssl, token, in_clear, tls", [
    ("localhost", False, "t0ken", True, False),    # pyspark: local credentials, loopback only
    ("127.0.0.1", False, "t0ken", False, True),    # anything else with a token: TLS
    ("spark.example", False, "t0ken", False, True),
    ("spark.example", True, None, False, True),
    ("spark.example", False, None, False, False),
])
def test_the_token_rule_is_pysparks(host, ssl, token, in_clear, tls):
    target = Target(host=host, token=token, params={"use_ssl": "true"} if ssl else {})
    assert target.token_in_clear is in_clear
    assert target.needs_tls is tls


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


def test_long_input_is_not_echoed_in_full():
    error = SparkscopeError(f"'{'x' * 10_000}' is not a Python expression", "Check it")
    assert len(str(error)) < 200 and "10,002 chars" in str(error)


def test_fit_widths_is_linear_and_fits():
    rows = [["h"] * 200, ["x" * 10_000] * 200]
    widths = fit_widths(rows, 3000)
    assert sum(widths) <= 3000 and min(widths) >= 6
    assert fit_widths([["ab", "c" * 50]], 30) == [2, 28]


def test_every_line_fits_the_terminal():
    wide = Table([f"column{i}" for i in range(200)], [["v" * 10_000] * 200])
    narrow = Table(["a", "b"], [["x" * 10_000, "y" * 50]])
    for table in (wide, narrow):
        out = render(table, width=80)
        assert max(len(line) for line in out.splitlines()) <= 80
    assert "RECORD 1" in render(wide, width=80)  # too many columns for 80: one record at a time
    assert "RECORD" not in render(narrow, width=80)


def test_completion_never_reads_properties_or_calls_dir_on_instances():
    from sparkscope.repl.prompt.shell import python_matches

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


def test_the_server_log_writer_masks_the_token_in_every_line(tmp_path):
    import io
    import subprocess
    import sys

    from sparkscope.server import log_writer

    lines = b"starting\nworker is starting with url sc://localhost:1/;token=tok-123 and sessionId x\ntok-123tok-123\n"
    copied = tmp_path / "copied.log"
    log_writer.copy(io.BytesIO(lines), str(copied), b"tok-123")
    assert copied.read_bytes() == (b"starting\nworker is starting with url sc://localhost:1/;token=*** and "
                                   b"sessionId x\n******\n")
    log = tmp_path / "server.log"  # as the server runs it: a file of its own, the token in its environment
    done = subprocess.run([sys.executable, "-I", log_writer.__file__, str(log)], input=lines,
                          env={log_writer.TOKEN_ENV: "tok-123"}, timeout=30)
    assert done.returncode == 0 and b"tok-123" not in log.read_bytes() and log.read_bytes().count(b"***") == 3


def test_the_server_log_is_rotated_so_a_server_running_for_days_cannot_fill_the_disk(tmp_path):
    import io

    from sparkscope.server import log_writer

    log = tmp_path / "server.log"
    log.write_bytes(b"== an earlier start\n")
    lines = b"".join(b"line %03d of a chatty server\n" % i for i in range(100))  # 27 bytes each
    log_writer.copy(io.BytesIO(lines), str(log), b"", max_bytes=1000)
    kept, previous = log.read_bytes(), (tmp_path / "server.log.1").read_bytes()
    assert len(kept) <= 1000 and len(previous) <= 1000
    numbers = [int(line[5:8]) for line in (previous + kept).splitlines() if line.startswith(b"line")]
    assert numbers == list(range(numbers[0], 100))  # the newest lines, none lost between the two files
    assert oct(log.stat().st_mode & 0o777) == "0o600"


def test_completing_while_the_connecting_thread_imports_pyspark_offers_names_and_keeps_the_prompt(monkeypatch):
    """The connecting thread imports pyspark while the user types. A module it is still running is in
    sys.modules without its classes: asking it for DataFrame crashed the prompt (a CI run ended the REPL with
    "partially initialized module 'pyspark.sql.connect.dataframe' has no attribute 'DataFrame'")."""
    import sys
    import types

    from prompt_toolkit.document import Document

    from sparkscope.client.queries.dataframes import is_dataframe
    from sparkscope.repl.prompt.shell import ShellCompleter

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


def test_output_above_a_dumb_terminals_prompt_starts_a_line_and_the_prompt_comes_again():
    import io

    from sparkscope.repl.prompt.terminal import AbovePlainPrompt

    screen = io.StringIO()
    screen.write("sparkscope> spa")  # the prompt, and what was typed so far
    proxy = AbovePlainPrompt(screen, lambda: "sparkscope> spa")
    proxy.write("notice: Port 15002 is taken\n")
    proxy.write("alert: ")
    proxy.write("counts failed\n")
    assert screen.getvalue() == ("sparkscope> spa\nnotice: Port 15002 is taken\nsparkscope> spa\n"
                                 "alert: counts failed\nsparkscope> spa")


def test_a_ctrl_d_typed_between_prompts_is_found_and_a_typed_ahead_line_is_left():
    import io
    import os
    import pty

    from sparkscope.repl.prompt.terminal import eof_typed_ahead

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


def test_control_characters_in_values_and_errors_print_as_escapes_and_keep_the_borders():
    from sparkscope.repl.output.render import error_line, render_table, visible
    from sparkscope.repl.output.results import Table

    value = "a\x1b]0;pwned\x07b\tc\x9bd\r"
    text = render_table(Table(["v", "n"], [[value, 1], ["x", 2]]), width=120)
    assert "\x1b" not in text and "\x07" not in text and "\t" not in text and "\x9b" not in text
    assert "| a\\x1b]0;pwned\\x07b\\tc\\x9bd\\r | 1 |" in text
    assert len({len(line) for line in text.splitlines()[:-1]}) == 1  # every line of the table as wide
    assert visible("plain, ünïcode ✓") == "plain, ünïcode ✓"
    assert "\x1b" not in error_line(ValueError("bad \x1b[31mred"))
