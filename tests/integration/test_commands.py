"""The colon commands in-process, against a real session, without a terminal: most REPL behaviour
is checked here in milliseconds of client time; tests/e2e keeps what needs a pty."""

from __future__ import annotations

import io
import os
import shutil
import re

import pytest

import sparkscope
from benchmarks.common import RpcCounter
from sparkscope.core.executor import Executor
from tests.helpers import wait_for


class Shell:
    def __init__(self, session):
        self.out, self.err = io.StringIO(), io.StringIO()
        self.executor = Executor(out=self.out, err=self.err)
        self.executor.holder.set_session(session)
        self.session = session

    def run(self, line: str) -> tuple[bool, str, str]:
        """Run one input; (succeeded, what went to stdout, what went to stderr)."""
        start_out, start_err = self.out.tell(), self.err.tell()
        ok = self.executor.run(line)
        self.out.seek(start_out), self.err.seek(start_err)
        out, err = self.out.read(), self.err.read()
        return ok, out, err

    def wait_for_a_batch(self, name: str) -> None:
        """Until `name` has committed a batch: a query stopped while it writes its first batch leaves a checkpoint
        no other query can start on (Spark finds no whole batch, yet files), which a test of a second query on
        that checkpoint is not about."""
        query = self.session.streams.get(name)
        wait_for(lambda: query.progress is not None, timeout=60, what=f"a batch of {name}")


@pytest.fixture(scope="module")
def shell(remote_url):
    session = sparkscope.connect(remote_url)
    yield Shell(session)
    session.close()


@pytest.fixture(autouse=True)
def _stop_queries_left_running(shell):
    """Whatever a test started is stopped, even when the test failed."""
    yield
    shell.session.streams.stop_all()


def test_start_peek_and_stop(shell, data_dir):
    (data_dir / "e.json").write_text('{"action": "Open"}\n{"action": "Close"}\n{"action": "Open"}\n')
    assert shell.run(f"events = spark.readStream.schema('action STRING').json('{data_dir}')") == (True, "", "")
    ok, out, err = shell.run(":start actions events.groupBy('action').count()")
    assert ok and re.fullmatch(r"Started actions \(id [0-9a-f]{8}\) → memory sink, complete mode, "
                               r"trigger default\n", out), (out, err)
    shell.run(":await actions --all-available")
    ok, out, _ = shell.run(":peek actions --order action")
    assert ok and re.search(r"\| Close\s+\| 1\s+\|\n\| Open\s+\| 2\s+\|", out), out
    ok, out, _ = shell.run(":stop actions")
    assert ok and out.startswith("Stopped actions")


def test_progress_of_every_query_is_one_rpc_when_the_monitor_listens(shell):
    shell.session.streams.reset_terminated()  # earlier tests' stopped queries have no cached progress
    for name in ("p_one", "p_two", "p_three"):
        shell.run(f":start {name} ss.source.rate(5) --trigger 200ms")
    monitor = shell.session.streams.monitor
    wait_for(lambda: all(monitor.history(n) for n in ("p_one", "p_two", "p_three")), what="a batch of each")
    counter = RpcCounter(shell.session.spark)
    ok, out, _ = shell.run(":progress")
    assert ok and all(f"| {n} " in out for n in ("p_one", "p_two", "p_three")), out
    assert counter.count == 1, counter.by_method  # streams.active; each query's progress from the monitor
    counter = RpcCounter(shell.session.spark)
    ok, out, _ = shell.run(":progress --json")
    assert ok and counter.count == 1 and out.count('"batchId"') == 3


def test_explain_of_a_name_that_is_not_a_query_uses_the_namespace(shell):
    shell.run("ticks = spark.readStream.format('rate').load()")
    ok, out, err = shell.run(":explain ticks")
    assert ok and re.search(r"StreamingRelation\b.*\brate\b", out), (out, err)
    ok, _, err = shell.run(":explain 42")
    assert not ok and err == "error: '42' is not a query or a DataFrame. Give a query name or a DataFrame.\n"


def test_usage_errors_are_one_line_and_lose_nothing(shell):
    shell.run(":start keep ss.source.rate(1)")
    cases = {
        ":stop keep extra": "error: Too many arguments for :stop: extra. Usage: :stop [NAME] [--all].\n",
        ":start keep ss.source.rate(1)": "error: A query named 'keep' is already running. Stop it first (:stop keep) "
                                        "or pick another name.\n",
        ":start x ss.source.rate(1) --option nokey": "error: 'nokey' is not KEY=VALUE. Write --option key=value.\n",
        ":peek keep --bogus": "error: Unknown option --bogus for :peek. Options: --where --order --vertical --export "
                              "--force.\n",
        ":tail": "error: :tail needs a query name. Usage: :tail [NAME] [--follow] [--limit N] [--stop].\n",
        ":sql SELECT * FROM no_such_table": None,
    }
    for line, expected in cases.items():
        ok, out, err = shell.run(line)
        assert not ok and out == "", (line, out)
        if expected is None:
            assert err.startswith("error: The table or view `no_such_table` cannot be found") and \
                err.endswith("Check the name with :sql SHOW TABLES, or start the query that creates it.\n"), err
        else:
            assert err == expected, line
    ok, out, _ = shell.run(":queries")
    assert re.search(r"\| keep\s+\| [0-9a-f]{8} \| active", out), "a bad input lost the running query"


def test_a_paste_of_python_and_commands_runs_line_by_line_as_a_script_does(shell):
    """Issue 55 row 21: a bracketed paste arrives as one input; it was compiled as Python (a SyntaxError, nothing
    ran), or the second command became the first one's expression."""
    ok, out, err = shell.run("x = 1\n:start pc ss.source.rate(1)\ny = x + 1")
    assert ok and out.startswith("Started pc ") and err == "", (out, err)
    assert (shell.executor.namespace["x"], shell.executor.namespace["y"]) == (1, 2)
    ok, out, err = shell.run(":start pd ss.source.rate(1)\n:queries")
    assert ok, err
    assert out.startswith("Started pd ") and re.search(r"\| pd\s+\| [0-9a-f]{8} \| active", out), out


def test_a_script_with_a_blank_line_inside_a_def_runs(shell, tmp_path):
    from sparkscope.core.scripts import run_file as _run_file

    script = tmp_path / "script.py"
    script.write_text("def double(x):\n    y = x * 2\n\n    return y\n\nanswer = double(21)\n:conf spark.sql.shuffle.partitions\n")
    assert _run_file(shell.executor, str(script))
    assert shell.executor.namespace["answer"] == 42


def test_start_says_in_one_line_when_restart_could_not_bring_the_query_back(shell):
    shell.run("lookup = spark.createDataFrame([(1, 'a')], 'id INT, v STRING')")
    ok, out, err = shell.run(":start joined ss.source.rate(1).crossJoin(lookup)")
    assert ok and err == "", err
    assert out.splitlines()[1] == ("note: :restart cannot bring joined back later: it reads data held in this "
                                   "session (a DataFrame built from a Python list or pandas)")


def test_restart_fresh_asks_and_forget_keeps_the_checkpoint_unless_asked(shell, tmp_path):
    out_dir = tmp_path / "out"
    shell.run(f":start kept ss.source.rate(5) --sink parquet --path {out_dir}")
    shell.run(":stop kept")
    checkpoint = shell.session.catalog.get(shell.session.url, "kept").checkpoint
    ok, out, _ = shell.run(":restart kept --fresh")  # the confirmation says no (not a terminal)
    assert ok and out == "Nothing was changed.\n"
    ok, out, err = shell.run(":restart kept --fresh --yes")
    assert ok and re.fullmatch(r"Restarted kept \(id [0-9a-f]{8}\) with a new checkpoint → parquet sink, append "
                               r"mode\n", out), (out, err)
    assert os.path.isdir(checkpoint), "the old checkpoint was deleted"
    ok, _, err = shell.run(":forget kept")
    assert not ok and err == "error: kept is running. Stop it first: :stop kept.\n"
    shell.run(":stop kept")
    new_checkpoint = shell.session.catalog.get(shell.session.url, "kept").checkpoint
    ok, out, _ = shell.run(":forget kept")
    assert ok and out == f"Forgot kept; its checkpoint stays at {new_checkpoint}.\n"
    assert os.path.isdir(new_checkpoint)
    ok, _, err = shell.run(":restart kept")
    assert not ok and err == "error: No query named 'kept' in the catalog of " \
                             f"{shell.session.url}. See what it holds with :queries --all.\n"


def test_forget_deletes_a_checkpoint_only_when_sparkscope_made_it(shell, tmp_path):
    """A checkpoint the user gave is forgotten, never deleted, and the line says where it stays; the one sparkscope
    made under the server's checkpoint root goes."""
    given = tmp_path / "my-checkpoint"
    shell.run(f":start given ss.source.rate(5) --sink memory --checkpoint {given}")
    shell.run(":start made ss.source.rate(5) --sink memory")
    made = shell.session.catalog.get(shell.session.url, "made").checkpoint
    shell.run(":stop given")
    shell.run(":stop made")
    assert given.is_dir() and os.path.isdir(made)
    ok, out, err = shell.run(":forget given --delete-checkpoint --yes")
    assert ok and out == (f"Forgot given; its checkpoint stays at {given}: it was given, not made by sparkscope, and "
                          "sparkscope deletes only the checkpoints it made.\n"), err
    assert (given / "metadata").is_file()
    ok, out, err = shell.run(":forget made --delete-checkpoint --yes")
    assert ok and out == f"Forgot made and deleted its checkpoint {made}.\n", err
    assert not os.path.exists(made)


def test_a_checkpoint_is_deleted_only_by_the_record_that_made_it_and_used_by_no_other(shell):
    """g2 started on g1's checkpoint (sparkscope made it for g1): forgetting g2 with its checkpoint keeps it, and g1
    still resumes from it; a third record on a made checkpoint keeps it for the others too."""
    shell.run(":start g1 ss.source.rate(5)")
    g1 = shell.session.catalog.get(shell.session.url, "g1").checkpoint
    shell.wait_for_a_batch("g1")
    shell.run(":stop g1")
    ok, _, err = shell.run(f":start g2 ss.source.rate(5) --checkpoint {g1}")
    assert ok, err
    shell.run(":stop g2")
    ok, out, err = shell.run(":forget g2 --delete-checkpoint --yes")
    assert ok and out == f"Forgot g2; its checkpoint stays at {g1}: sparkscope made it for g1, not for g2.\n", err
    assert os.path.isdir(g1)
    ok, out, err = shell.run(":restart g1")
    assert ok and re.search(r"Restarted g1 \(id [0-9a-f]{8}\) from its checkpoint \(after batch \d+\)", out), (out, err)
    shell.run(":stop g1")
    ok, _, err = shell.run(f":start g3 ss.source.rate(5) --checkpoint {g1}")
    shell.run(":stop g3")
    ok, out, err = shell.run(":forget g1 --delete-checkpoint --yes")
    assert ok and out == f"Forgot g1; its checkpoint stays at {g1}: g3 uses it too.\n", err
    assert os.path.isdir(g1)


def test_a_restart_on_a_checkpoint_another_query_runs_on_says_spark_stopped_it(shell):
    """Issue 55 row 43: :start said so, :restart did not."""
    shell.run(":start ra ss.source.rate(5)")
    checkpoint = shell.session.catalog.get(shell.session.url, "ra").checkpoint
    shell.wait_for_a_batch("ra")
    shell.run(":stop ra")
    ok, _, err = shell.run(f":start rb ss.source.rate(5) --checkpoint {checkpoint}")
    assert ok, err
    assert shell.session.streams.get("rb").is_active
    ok, out, err = shell.run(":restart ra")
    assert ok, err
    assert out.splitlines()[1:2] == [f"note: Spark stopped query rb as this query started: both use the checkpoint "
                                     f"{checkpoint}, and Spark runs one query per checkpoint. Give each query a "
                                     "checkpointLocation of its own"], out
    shell.run(":stop --all")


def test_starting_anew_a_stopped_query_that_could_resume_says_its_state_stays_behind(shell):
    """Issue 55 row 48: the record was replaced without a word, and the earlier query's state orphaned."""
    shell.run(":start wcount ss.source.rate(5).groupBy((col('value') % 2).alias('k')).count()")
    first = shell.session.catalog.get(shell.session.url, "wcount").checkpoint
    shell.wait_for_a_batch("wcount")
    shell.run(":stop wcount")
    ok, out, err = shell.run(":start wcount ss.source.rate(5).groupBy((col('value') % 3).alias('k')).count()")
    assert ok, err
    assert re.fullmatch(r"note: the catalog's record of the earlier wcount, stopped after batch \d+, is replaced by "
                        rf"this query, which starts afresh: its checkpoint {re.escape(first)} stays, with its state\. "
                        r"Restarting a stopped query \(ss\.restart\('wcount'\)\), not starting it anew, resumes it "
                        r"from its checkpoint", out.splitlines()[-1]), out
    assert os.path.isdir(first)
    shell.run(":stop wcount")


def test_feed_finds_a_query_before_its_first_batch_and_shows_a_complete_mode_result(shell):
    """Issue 55 rows 10 and 11: right after :start, the query had reported no batch and was not found (the
    recorded plan's options were not read: a protobuf map); a complete-mode query's result was never shown."""
    shell.run("src = ss.source.memory('k STRING')")
    shell.run("src.add([('a',)])")
    ok, _, err = shell.run(":start fresh_counts src.df.groupBy('k').count()")
    assert ok, err
    ok, out, err = shell.run(":feed src ('b',), ('b',)")
    assert ok, err
    lines = out.splitlines()
    assert lines[0] == "Added batch 1 of src (2 rows)"
    assert re.fullmatch(r"fresh_counts, its result after batch \d+", lines[1]), out
    assert sorted(tuple(cell.strip() for cell in row.split("|")[1:3]) for row in lines
                  if row.startswith("| ") and "count" not in row) == [("a", "1"), ("b", "2")], out
    assert "no running query reads it" not in out


def test_a_restart_of_a_query_whose_source_folder_is_gone_says_so(shell, tmp_path):
    """Issue 55 row 47: Spark's "Option 'basePath' not found"."""
    source = tmp_path / "gone"
    source.mkdir()
    (source / "1.json").write_text('{"n": 1}\n')
    shell.run(f":start from_files spark.readStream.schema('n INT').json('{source}')")
    shell.run(":await from_files --all-available")
    shell.run(":stop from_files")
    shutil.rmtree(source)  # this test's own folder
    ok, _, err = shell.run(":restart from_files")
    assert (ok, err) == (False, f"error: from_files reads {source}, which is gone: the files of its next batches "
                                "(and of the last one, if Spark reads it again) are not there. Put the folder back, "
                                "or start a new query on the data that is there.\n")


def test_a_checkpoint_sparkscope_made_that_was_deleted_is_made_again_as_sparkscope_s(shell):
    shell.run(":start remade ss.source.rate(5)")
    checkpoint = shell.session.catalog.get(shell.session.url, "remade").checkpoint
    shell.run(":stop remade")
    shutil.rmtree(checkpoint)  # this test's query's checkpoint, in this test run's own state folder
    ok, out, err = shell.run(":restart remade")
    assert ok, err
    shell.run(":stop remade")
    ok, out, _ = shell.run(":checkpoints")
    row = next(line for line in out.splitlines() if os.path.basename(checkpoint) in line)
    assert row.rstrip().endswith("| sparkscope |"), row


def test_queries_all_and_checkpoints_show_the_catalog(shell):
    shell.run(":start listed ss.source.rate(5) --sink memory")  # a memory sink resumes nothing from it
    shell.run(":stop listed")
    ok, out, _ = shell.run(":queries --all")
    assert ok and re.search(r"\| listed\s+\|( [0-9a-f]{8} \|)?( [0-9a-f]{8} \|)? stopped", out), out  # id, session
    ok, out, _ = shell.run(":checkpoints")
    assert ok and re.search(r"\| listed-[0-9a-f]{8}\s+\| [\d.]+ (B|KiB)\s+\| \d+s\s+\| listed \(stopped\)\s+\| no", out), out


def test_a_start_spark_refuses_leaves_no_checkpoint_listed(shell):
    """A query that never started (Spark refused it, or Ctrl-C came first) has no checkpoint to list."""
    shell.run("counted = ss.source.rate(5).groupBy('value').count()")
    ok, _, err = shell.run(":start refused counted --mode append --sink memory")
    assert not ok and err.startswith("error: "), err
    assert "Traceback" not in err
    ok, out, _ = shell.run(":checkpoints")
    assert ok and "refused" not in out, out
