"""Non-interactive use from a subprocess: -c, -f and --format json, with exact output and exit codes."""

from __future__ import annotations

import json

from tests.helpers import run_sparkscope



def test_c_runs_python_and_commands_with_exact_table_output(remote_url):
    result = run_sparkscope("--remote", remote_url, "-c", "x = 6 * 7; :sql select x from values (42) as t(x)")
    assert result.returncode == 0, result.stderr
    assert result.stdout == ("+----+\n"
                             "| x  |\n"
                             "|----|\n"
                             "| 42 |\n"
                             "+----+\n"
                             "(1 row)\n")
    assert "\x1b[" not in result.stdout  # a pipe gets plain text


def test_c_given_twice_runs_both_in_order(remote_url):
    result = run_sparkscope("--remote", remote_url, "-c", "x = 6", "-c", "x * 7")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "42"


def test_format_json_is_one_object_per_command(remote_url):
    result = run_sparkscope("--remote", remote_url, "--format", "json", "-c",
                 ":sql select 1 as a, 'x' as b; :conf spark.sql.shuffle.partitions")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines == [{"command": "sql", "ok": True, "rows": [{"a": 1, "b": "x"}]},
                     {"command": "conf", "ok": True, "message": "spark.sql.shuffle.partitions = 2"}]


def test_the_readme_s_script_with_format_json_after_it_prints_json(remote_url, tmp_path):
    """`sparkscope -f pipeline.sps --format json`, as the README and --help write it: the format is sparkscope's,
    not the script's sys.argv."""
    script = tmp_path / "pipeline.sps"
    script.write_text(":sql select 1 as a\nimport sys; print(sys.argv[1:])\n")
    result = run_sparkscope("--remote", remote_url, "-f", str(script), "--format", "json")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ['{"command": "sql", "ok": true, "rows": [{"a": 1}]}', "[]"]


def test_file_with_a_stream_start_sql_and_stop(remote_url, tmp_path):
    data = tmp_path / "numbers"
    data.mkdir()
    (data / "1.json").write_text("".join(f'{{"n": {n}}}\n' for n in range(1, 11)))
    script = tmp_path / "pipeline.sps"
    script.write_text(
        f"numbers = ss.source.files('json', '{data}', schema='n INT')\n"
        ":start evens numbers.where('n % 2 = 0') --trigger available-now\n"
        ":await evens --timeout 120\n"
        ":sql select sum(n) as total, count(*) as rows from evens\n"
        ":stop evens\n")
    result = run_sparkscope("--remote", remote_url, "-f", str(script))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("Started evens (id ") and lines[0].endswith(
        ") → bounded sink (last 10,000 rows), append mode, trigger available-now")
    assert lines[1:] == ["evens ended (stopped)", "+-------+------+", "| total | rows |", "|-------+------|",
                         "| 30    | 5    |", "+-------+------+", "(1 row)", "evens is not running (stopped)"]


def test_a_failing_command_gives_exit_code_1_and_one_line(remote_url):
    result = run_sparkscope("--remote", remote_url, "-c", ":peek nosuch; :sql select 1 as one")
    assert result.returncode == 1
    assert result.stderr.strip() == ("error: No query or table named 'nosuch'. "
                                     "List them with :queries, or start one with :start.")
    assert "| one |" in result.stdout  # later commands still ran


def test_format_json_reports_errors_on_stderr_with_exit_code(remote_url):
    result = run_sparkscope("--remote", remote_url, "--format", "json", "-c", ":stop")
    assert result.returncode == 1
    assert result.stdout == ""
    assert json.loads(result.stderr) == {"error": ":stop needs a query name", "hint": "Usage: :stop [NAME] [--all]"}


def test_a_script_that_is_not_utf8_is_one_line(remote_url, tmp_path):
    script = tmp_path / "latin1.sps"
    script.write_bytes("x = 'caf\u00e9'\n".encode("latin-1"))
    result = run_sparkscope("--remote", remote_url, "-f", str(script))
    assert result.returncode == 2
    assert result.stderr.strip() == (f"error: {script} is not utf-8 text (byte 8 cannot be decoded). Save the script as "
                                     "UTF-8, or name its encoding in a coding line.")



def _documented_c_examples() -> list[str]:
    """Every `sparkscope -c '…'` example in the README and in --help."""
    import re
    from pathlib import Path

    from sparkscope.core.arguments import EXAMPLES

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    found = re.findall(r"""sparkscope -c (['"])(.+?)\1""", readme + EXAMPLES)
    assert len(found) >= 2, found
    return [text for _, text in found]


def test_every_documented_c_example_runs(remote_url):
    for text in _documented_c_examples():
        result = run_sparkscope("--remote", remote_url, "-c", text)
        assert result.returncode == 0, f"{text!r} failed:\n{result.stderr}"
        assert "error:" not in result.stderr


def test_format_json_gives_values_as_json_and_errors_as_json_on_stderr(remote_url):
    # consecutive Python lines run as one block (';' is Python's too): commands in between split them
    result = run_sparkscope("--remote", remote_url, "--format", "json", "-c",
                 "1 + 1; :sql select 7 as n; {'a': [1, 2]}; :pek x; 1 / 0")
    assert result.returncode == 1
    assert [json.loads(line) for line in result.stdout.splitlines()] == [
        {"value": 2}, {"command": "sql", "ok": True, "rows": [{"n": 7}]}, {"value": {"a": [1, 2]}}]
    errors = [json.loads(line) for line in result.stderr.splitlines()]
    assert errors == [{"error": "Unknown command :pek", "hint": "Did you mean :peek? Type :help for the list"},
                      {"error": "ZeroDivisionError: division by zero", "hint": "See :trace for the traceback"}]


def test_format_json_start_up_errors_are_json_too():
    result = run_sparkscope("--remote", "http://nowhere:1", "--format", "json", "-c", ":queries")
    assert result.returncode == 2
    assert json.loads(result.stderr) == {"error": "'http://nowhere:1' is not a Spark Connect URL",
                                         "hint": "Use sc://host:port, e.g. sc://localhost:15002"}


def test_ss_start_in_code_is_recorded_once_and_restartable(remote_url):
    """Code that calls ss.start runs pyspark's writeStream…start() inside sparkscope; the REPL's wrapper
    for pasted pyspark code once recorded that start again, as a foreach_batch query, and said so."""
    result = run_sparkscope("--remote", remote_url, "-c",
                            "q = ss.start(ss.source.rate(1), 'once_recorded'); print(q.sink); q.stop()",
                            "-c", ":queries --all")
    assert result.returncode == 0, result.stderr
    assert "cannot be restarted" not in result.stdout + result.stderr
    assert result.stdout.startswith("bounded\n"), result.stdout
    row = next(line for line in result.stdout.splitlines() if "once_recorded" in line)
    assert "| stopped |" in row and "| yes " in row, row


def test_a_script_is_compiled_first_so_a_syntax_error_at_line_50_runs_nothing(remote_url, tmp_path):
    """As `python job.py`: nothing runs, and the error names the file and its line 50."""
    script = tmp_path / "job.py"
    script.write_text("print('first')\n" + "".join(f"x{i} = {i}\n" for i in range(2, 50)) +
                      "def broken(:\n    pass\nprint('after')\n")
    out = run_sparkscope("--remote", remote_url, "-f", str(script))
    assert (out.returncode, out.stdout) == (1, "")
    assert out.stderr.splitlines() == [f'  File "{script}", line 50', "    def broken(:", "               ^",
                                       "SyntaxError: invalid syntax"]
    commands = tmp_path / "steps.sps"  # colon-command lines keep their place in the count
    commands.write_text(":sql SELECT 1\n:queries\nprint('x')\nbad = (\n")
    out = run_sparkscope("--remote", remote_url, "-f", str(commands))
    assert (out.returncode, out.stdout) == (1, "")
    assert out.stderr.splitlines()[0] == f'  File "{commands}", line 4'


def test_a_py_script_stops_at_its_first_uncaught_exception_naming_its_file_and_line(remote_url, tmp_path):
    script = tmp_path / "raises.py"
    script.write_text("print('one')\nvalues = {}\n\n\n\nx = values['missing']\nprint('never')\n")
    out = run_sparkscope("--remote", remote_url, "-f", str(script))
    assert (out.returncode, out.stdout) == (1, "one\n")
    assert out.stderr.splitlines() == ["Traceback (most recent call last):", f'  File "{script}", line 6, in <module>',
                                       "    x = values['missing']", "KeyError: 'missing'"]
    spark_error = tmp_path / "sql.py"  # an error sparkscope tells in one line: where it happened, then the line
    spark_error.write_text("print('a')\n\ndf = spark.sql('SELECT * FROM missing_t')\nprint('never')\n")
    out = run_sparkscope("--remote", remote_url, "-f", str(spark_error))
    assert (out.returncode, out.stdout) == (1, "a\n")
    lines = out.stderr.splitlines()
    assert lines[:3] == ["Traceback (most recent call last):", f'  File "{spark_error}", line 3, in <module>',
                         "    df = spark.sql('SELECT * FROM missing_t')"]
    assert lines[3].startswith("error: The table or view `missing_t` cannot be found.") and len(lines) == 4


def test_a_script_of_commands_goes_on_after_a_failed_line_and_exits_1(remote_url, tmp_path):
    commands = tmp_path / "steps.sps"
    commands.write_text(":peek nosuch\nprint('goes on')\n")
    out = run_sparkscope("--remote", remote_url, "-f", str(commands))
    assert (out.returncode, out.stdout) == (1, "goes on\n")
    assert out.stderr.strip() == ("error: No query or table named 'nosuch'. List them with :queries, or start one "
                                  "with :start.")


def test_a_script_s_syntax_error_and_uncaught_exception_in_a_terminal(remote_url, tmp_path):
    """The same two rows of a script, run from a terminal (a pty): nothing runs before a syntax error, and the
    first uncaught exception ends a .py script with its file and line, exit code 1."""
    import pexpect

    from tests.e2e.conftest import clean, spawn

    broken = tmp_path / "broken.py"
    broken.write_text("print('first')\n" + "x = 1\n" * 48 + "def broken(:\n")
    child = spawn("--remote", remote_url, "-f", str(broken))
    child.expect(pexpect.EOF, timeout=60)
    child.close()
    assert child.exitstatus == 1
    assert clean(child.before).splitlines() == [f'  File "{broken}", line 50', "    def broken(:",
                                                "               ^", "SyntaxError: invalid syntax"]
    raises = tmp_path / "raises.py"
    raises.write_text("print('one')\nraise ValueError('the sensor id is missing')\nprint('never')\n")
    child = spawn("--remote", remote_url, "-f", str(raises))
    child.expect(pexpect.EOF, timeout=60)
    child.close()
    assert child.exitstatus == 1
    assert clean(child.before).splitlines() == ["one", "Traceback (most recent call last):",
                                                f'  File "{raises}", line 2, in <module>',
                                                "    raise ValueError('the sensor id is missing')",
                                                "ValueError: the sensor id is missing"]
