"""What sparkscope keeps on a server (the rings of the bounded sink, the feeds of the memory source) has an owner, a
bound in every batch, and an end that needs no client (client/queries/server_jar.py, sparkscope/jars/…/v2/), against
the real server: clients that leave without closing, another user's session, the listing and the free, and a jar of
another protocol loaded beside this one."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkscope.client.errors import SparkscopeError
from sparkscope.client.error_reading import call
from sparkscope.client.queries.bounded_sink import SINK_CLASS
from sparkscope.client.queries.memory_source import WRITER
from tests.helpers import wait_for
from tests.left_behind import leave_behind

OLD_JAR = Path(__file__).resolve().parents[1] / "fixtures" / "sparkscope-protocol1.jar"

def _kept(ss, name: str):
    return next((item for item in ss.kept() if item.name == name), None)


def test_a_killed_client_s_ring_ends_a_grace_period_after_its_query_is_stopped_elsewhere(ss, remote_url):
    ring, session = leave_behind(remote_url, "kill", "stream")
    item = _kept(ss, ring)
    assert item is not None and (item.kind, item.query, item.state, item.session) == (
        "ring", "left_behind", "running", session)  # its query runs on: the ring with it
    assert item.rows > 0 and item.bytes > 0
    ss.streams.stop("left_behind")  # it runs in the session its client left: stopped there, or QueryNotFound
    wait_for(lambda: _kept(ss, ring) is None, timeout=30, what="the ring freed after its 1 s of grace")


def test_a_ring_whose_client_exited_with_its_session_open_ends_with_its_query(ss, remote_url, data_dir):
    ring, _ = leave_behind(remote_url, "exit", "stream")
    assert _kept(ss, ring).state == "running"  # its session is open on the server, and the query runs in it
    ss.streams.stop("left_behind")
    wait_for(lambda: _kept(ss, ring) is None, timeout=30, what="the ring freed after its 1 s of grace")


def test_a_feed_whose_session_ended_without_its_client_is_dropped(ss, remote_url):
    feed, _ = leave_behind(remote_url, "release", "feed")
    wait_for(lambda: _kept(ss, feed) is None, timeout=30, what="the feed freed a second after its session ended")


def test_a_feed_lets_go_of_the_batches_its_query_committed(ss):
    """Spark commits a batch's source offsets as it plans the next batch (as with its own MemoryStream): the
    feed then lets go of the rows up to there, and keeps the newest batch until a next one."""
    src = ss.source.memory("id INT")
    query = ss.start(src.df, "fed_and_dropped")
    for batch in range(3):
        src.add([(batch * 10 + i,) for i in range(5)])
    query.process_all_available()
    assert (_kept(ss, src.name).rows, _kept(ss, src.name).state) == (5, "running")  # the third batch's rows
    assert len(ss.peek("fed_and_dropped", n=100).rows) == 15
    src.add([(99,)])  # a batch after the others: numbered on, and read
    query.process_all_available()
    assert ss.peek("fed_and_dropped", n=1).rows[0][0] == 99
    assert _kept(ss, src.name).rows == 1


@pytest.fixture
def other_user(remote_url):
    import sparkscope

    session = sparkscope.connect(f"{remote_url}/;user_id=mallory")
    yield session
    session.close()


def test_a_name_is_its_user_s_so_another_user_finds_nothing_by_it(ss, other_user):
    """On a server where user ids are labels (here the server's own token, which acts as any id that is no user's),
    another id's names are still not its own: a read, a forget or a feed by a name of this user's finds nothing."""
    query = ss.start(ss.source.rate(20), "private_rows", keep=100)
    wait_for(lambda: ss.peek("private_rows").rows, what="rows kept")
    src = ss.source.memory("id INT")
    read = other_user.spark.read.format(SINK_CLASS).option("ring", query.view).load()  # the name from its progress
    with pytest.raises(Exception, match="SPARKSCOPE_RING_GONE"):  # as plain pyspark raises it
        read.collect()
    with pytest.raises(SparkscopeError) as refused:  # as sparkscope says it
        call(read.collect)
    assert str(refused.value).startswith("Sparkscope's sink keeps no such rows on this server")
    assert other_user._jar.drop(query.view) is False
    with pytest.raises(Exception, match="SPARKSCOPE_FEED_GONE"):
        other_user.spark.createDataFrame([(1,)], "id INT").write.format(WRITER).option("feed", src.name) \
            .mode("append").save()
    assert [item.name for item in other_user.kept()] == []
    assert other_user.free_kept() == []  # nothing of theirs to free, and nothing of ours freed
    assert _kept(ss, query.view) is not None and _kept(ss, src.name) is not None
    assert ss.peek("private_rows").rows


def test_two_users_may_both_have_a_query_of_the_same_name(ss, other_user):
    ss.start(ss.source.rate(20).selectExpr("'mine' AS whose"), "same_name", keep=10)
    other_user.start(other_user.source.rate(20).selectExpr("'theirs' AS whose"), "same_name", keep=10)
    wait_for(lambda: ss.peek("same_name").rows and other_user.peek("same_name").rows, what="rows in both")
    assert {row[0] for row in ss.peek("same_name").rows} == {"mine"}
    assert {row[0] for row in other_user.peek("same_name").rows} == {"theirs"}
    other_user.streams.stop_all()


def test_the_same_user_s_second_session_reads_the_rows(ss, remote_url):
    import sparkscope

    ss.start(ss.source.rate(20), "shared_rows", keep=50)
    wait_for(lambda: len(ss.peek("shared_rows", n=100).rows) == 50, what="50 rows kept")
    with sparkscope.connect(remote_url) as second:  # a second REPL of the same user: its own session
        assert len(second.peek("shared_rows", n=100).rows) == 50


def test_the_listing_shows_each_holding_and_the_free_frees_only_what_nothing_uses(ss):
    running = ss.start(ss.source.rate(20), "listed_running", keep=10)
    stopped = ss.start(ss.source.rate(20), "listed_stopped", keep=10, grace="10m")
    wait_for(lambda: ss.peek("listed_running").rows and ss.peek("listed_stopped").rows, what="rows in both")
    stopped.stop()
    wait_for(lambda: _kept(ss, stopped.view).state == "ended", what="the stopped query's ring to end")
    item = _kept(ss, stopped.view)
    assert (item.query, item.yours, item.rows, item.grace) == ("listed_stopped", True, 10, 600.0)
    assert 590 < item.ends_in <= 600  # freed by itself ten minutes after its query ended
    freed = ss.free_kept()  # this one, and what earlier tests' stopped queries left in their grace period
    assert stopped.view in [thing.name for thing in freed] and {thing.state for thing in freed} == {"ended"}
    names = [thing.name for thing in ss.kept()]
    assert running.view in names and stopped.view not in names
    assert len(ss.peek("listed_running").rows) == 10


def test_the_jar_says_its_protocol_and_one_of_another_protocol_works_beside_it(ss, remote_url):
    """The jar's classes live in a package named after their protocol: an older sparkscope's jar, loaded on the same
    server (here as a session's artifact), keeps its own classes and registry, and both work."""
    import sparkscope

    assert ss._jar.hello["protocol"] == 3
    schema = '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}'
    with sparkscope.connect(remote_url) as old:
        old.spark.addArtifacts(str(OLD_JAR))
        read = old.spark.read.format("sparkscope.sink.KeepNewest").option("ring", "protocol1_ring")
        assert read.option("schema", schema).load().columns == ["id", "__sparkscope_batch"]  # it made a ring
        mine = ss.start(ss.source.rate(20), "beside_protocol1", keep=5)
        wait_for(lambda: len(ss.peek("beside_protocol1").rows) == 5, what="rows of this protocol's ring")
        assert read.load().collect() == []  # the old ring, read by the old classes
        assert "protocol1_ring" not in [item.name for item in ss.kept()] and mine.view in [
            item.name for item in ss.kept()]
        read.option("forget", "true").load().collect()


def test_one_batch_of_many_rows_sends_the_driver_only_what_each_writer_keeps(ss, tmp_path):
    """A batch of 2,000,000 rows into a ring of 100: each writer task sends the driver at most 100 rows (the batch
    has a few partitions: two files of a million rows), where Spark's memory sink would send all two million."""
    folder = tmp_path / "many"
    ss.spark.range(2_000_000).selectExpr("id", "id % 7 AS k").write.parquet(str(folder))
    df = ss.spark.readStream.schema("id BIGINT, k BIGINT").parquet(str(folder))
    query = ss.start(df, "one_big_batch", keep=100, trigger="available-now")
    assert query.await_termination(timeout=300)
    assert query.state == "stopped" and query.exception is None
    assert query.progress.input_rows == 2_000_000
    assert len(ss.peek("one_big_batch", n=1000).rows) == 100
    assert 100 <= _kept(ss, query.view).last_batch_received <= 100 * 8
