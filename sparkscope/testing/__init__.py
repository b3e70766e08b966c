"""sparkscope.testing: deterministic tests of streaming logic over Spark Connect.

    src = ss.source.memory("id STRING, action STRING, ts TIMESTAMP")   # a source the test feeds
    q = ss.start(counts_of(src.df), "counts", mode="update")
    src.add([("p1", "open", "2018-03-02 10:15:20")])                  # one micro-batch
    q.process_all_available()
    check_answer(q, [(("2018-03-02 10:10:00", "2018-03-02 10:20:00"), "open", 1)])

The pytest plugin (sparkscope.testing.plugin, registered through the pytest11 entry point) gives a `sparkscope_session`
fixture: an embedded server for the test session, or `--sparkscope-remote URL`. docs/testing.md has the rest.
"""

from __future__ import annotations

from .checks import check_answer, check_dropped, check_last_batch, check_state, check_watermark, last_data_batch

__all__ = ["check_answer", "check_dropped", "check_last_batch", "check_state", "check_watermark", "last_data_batch"]
