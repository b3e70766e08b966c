"""sparkscope on an older pyspark client: the README's session and SDK block, :start, :peek, :watch (a frame, in the
README's session), :state, a console sink, getOrCreate() then awaitTermination() and Ctrl-C, and a fed stream
(sparkscope.testing's memory source and :feed), each run by the client this venv holds against the embedded server
that client's wheel starts. `make test` runs this folder once per .venv-clients/ venv."""

from __future__ import annotations

import os
import re

from tests.e2e.test_feed import test_feed_shows_each_batch_s_rows_the_watermark_and_the_late_row_dropped
from tests.e2e.test_pyspark_as_written import (test_a_console_sink_prints_its_batches_above_the_prompt,
                                                test_ctrl_c_in_a_wait_leaves_the_query_running_and_making_batches)
from tests.e2e.test_readme import test_the_first_session_runs_as_written, test_the_sdk_example_runs_as_written
from tests.helpers import run_sparkscope, wait_for

__all__ = ["test_the_first_session_runs_as_written", "test_the_sdk_example_runs_as_written",
           "test_a_console_sink_prints_its_batches_above_the_prompt",
           "test_ctrl_c_in_a_wait_leaves_the_query_running_and_making_batches",
           "test_feed_shows_each_batch_s_rows_the_watermark_and_the_late_row_dropped"]

CLIENT = os.environ.get("SPARKSCOPE_CLIENT_PYSPARK")  # the version this venv was built with (the Makefile says)


def test_this_venv_runs_the_client_it_was_built_with():
    out = run_sparkscope("--version")
    assert out.returncode == 0, out.stderr
    found = re.fullmatch(r"sparkscope \S+ \(pyspark (\S+)\)\n", out.stdout)
    assert found, out.stdout
    if CLIENT:
        assert found.group(1) == CLIENT


def test_the_state_of_a_windowed_count_reads_on_this_client(repl, tmp_path):
    repl.run("spark.conf.set('spark.sql.shuffle.partitions', '2')")
    repl.run('events = spark.readStream.format("rate").option("rowsPerSecond", 20).load()')
    started = repl.run(f":start buckets events.groupBy((events.value % 3).alias('bucket')).count() "
                       f"--checkpoint {tmp_path / 'buckets'}")
    assert "Started buckets" in started, started
    box = {"seen": ""}

    def every_bucket_in_state() -> bool:  # a batch committed state for every bucket
        box["seen"] = repl.run(":state buckets")
        return all(re.search(rf"\|\s*{bucket}\s*\|\s*\d+\s*\|", box["seen"]) for bucket in (0, 1, 2))

    wait_for(every_bucket_in_state, timeout=120, every=0.5, what="the state of every bucket")
    seen = box["seen"]
    # the state store of Spark before 4.3 names an aliased grouping key _groupingexpression (4.3: the alias), and
    # :state shows what the store holds
    key = "bucket" if not CLIENT or CLIENT.startswith("4.3.") else "_groupingexpression"
    assert re.search(rf"\|\s*{key}\s*\|\s*count\s*\|\s*partition_id\s*\|", seen), seen
    repl.run(":stop --all")
