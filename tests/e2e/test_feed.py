"""`:feed` in the REPL, typed as a person follows seed 002's lesson: a memory source, a windowed count with a
10-minute watermark, three batches fed; the late row is dropped and the watermark said."""

from __future__ import annotations

import re


def test_feed_shows_each_batch_s_rows_the_watermark_and_the_late_row_dropped(repl):
    repl.run("spark.conf.set('spark.sql.shuffle.partitions', '2')")
    repl.run('mobile = ss.source.memory("id STRING, action STRING, ts TIMESTAMP")')
    started = repl.run(':start counts mobile.df.withWatermark("ts", "10 minutes")'
                       '.groupBy(F.window("ts", "10 minutes"), "action").count() --mode update')
    assert "Started counts" in started, started
    first = repl.run(':feed mobile ("p1", "open", "2018-03-02 10:15:20"), ("p2", "open", "2018-03-02 10:22:40"), '
                     '("p3", "open", "2018-03-02 10:33:50")', timeout=120)
    assert "Added batch 0 of mobile (3 rows)" in first, first
    assert re.search(r"counts, batch 0: 3 rows in, 3 out", first), first
    assert "counts: watermark 2018-03-02 10:23:50 (a row at or before it is late from the next batch on)" in first
    late = repl.run(':feed mobile ("p5", "open", "2018-03-02 10:11:35")', timeout=120)
    assert "Added batch 1 of mobile (1 row)" in late, late
    assert re.search(r"counts, batch \d+: 1 row in, none out", late), late  # no empty table
    assert re.search(r"counts, batch \d+: 1 late row dropped \(its event time at or before the watermark "
                     r"2018-03-02 10:23:50\)", late), late
    wrong = repl.run(":feed counts (1,)")
    assert wrong.strip().splitlines()[-1].startswith("error: 'counts' is not a memory source."), wrong
    repl.run(":stop --all")
