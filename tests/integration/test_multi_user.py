"""Sessions that meet on one server. Two users (user_id alice and bob, each with their own session), each
with a query named `counts`: each sees only its own in the SDK, in :queries, :peek and :watch's data, and in
the catalog; stopping one, or `:stop --all`, never touches the other's. Two sessions of one user whose
queries share a checkpoint: Spark stops the running one, and the start says so."""

from __future__ import annotations

import time

import pytest

import sparkscope
from sparkscope.core.rendering.dashboard import Dashboard
from tests.helpers import wait_for
from tests.integration.test_commands import Shell

pytestmark = pytest.mark.slow


@pytest.fixture
def users(server):
    sessions = {user: sparkscope.connect(f"sc://localhost:{server.port}/;user_id={user}", token=server.token)
                for user in ("alice", "bob")}
    yield sessions
    for session in sessions.values():
        session.streams.stop_all()
        session.close()


def start_counts(session, label: str):
    df = session.source.rate(rows_per_second=20).selectExpr(f"'{label}' AS owner").groupBy("owner").count()
    query = session.start(df, "counts", mode="complete")
    wait_for(lambda: session.peek("counts").rows, timeout=120, what=f"{label}'s first batch")
    return query


def test_each_user_sees_and_stops_only_their_own_counts(users):
    alice, bob = users["alice"], users["bob"]
    mine, theirs = start_counts(alice, "alice"), start_counts(bob, "bob")
    assert mine.id != theirs.id
    assert [q.id for q in alice.streams.queries()] == [mine.id]
    assert [q.id for q in bob.streams.queries()] == [theirs.id]
    assert [row[0] for row in alice.peek("counts").rows] == ["alice"]
    assert [row[0] for row in bob.peek("counts").rows] == ["bob"]

    alice_shell, bob_shell = Shell(alice), Shell(bob)
    ok, out, _ = alice_shell.run(":queries")
    assert ok and mine.id[:8] in out and theirs.id[:8] not in out
    ok, out, _ = bob_shell.run(":peek counts")
    assert ok and "bob" in out and "alice" not in out

    wait_for(lambda: [t.id for t in Dashboard(alice.streams.monitor, None, lambda name: "").tracks()] == [mine.id],
             timeout=30, what="alice's :watch showing her query only")
    assert [r.query_id for r in alice.streams.catalog_records() if r.state == "active"] == [mine.id]
    assert [r.query_id for r in bob.streams.catalog_records() if r.state == "active"] == [theirs.id]

    ok, out, _ = alice_shell.run(":stop --all")
    assert ok and "counts" in out
    assert not mine.is_active
    assert theirs.is_active
    batch = theirs.progress.batch_id if theirs.progress else -1
    wait_for(lambda: theirs.progress is not None and theirs.progress.batch_id > batch, timeout=60,
             what="bob's query still making batches after alice's :stop --all")
    assert [q.id for q in bob.streams.running()] == [theirs.id]


def test_a_start_on_a_running_query_s_checkpoint_says_that_spark_stopped_it(remote_url, data_dir):
    first, second = sparkscope.connect(remote_url), sparkscope.connect(remote_url)
    checkpoint, out = str(data_dir / "one-checkpoint"), str(data_dir / "out")
    try:
        earlier = first.start(first.source.rate(rows_per_second=5), "earlier", sink="parquet", path=out,
                              checkpoint=checkpoint)
        wait_for(lambda: earlier.progress is not None, 60, what="its first batch, which writes the checkpoint")
        record = next(r for r in first.streams.catalog_records() if r.name == "earlier")
        started = f"started by {record.started_by} at {time.strftime('%H:%M', time.localtime(record.started_at))}"
        later = second.start(second.source.rate(rows_per_second=5), "later", sink="parquet", path=out,
                             checkpoint=checkpoint)
        assert later.id == earlier.id  # Spark's query id lives in the checkpoint
        assert later.notes == [
            f"Spark stopped query earlier in session {first.session_id[:8]} ({started}) as this query started: both "
            f"use the checkpoint {checkpoint}, and Spark runs one query per checkpoint. Give each query a "
            "checkpointLocation of its own"]
        assert earlier.state == "stopped" and later.state == "active"
        assert {r.name: r.state for r in second.streams.catalog_records() if r.query_id == later.id} == {
            "earlier": "stopped", "later": "active"}

        again = second.start(second.source.rate(rows_per_second=5), "again_on_that_checkpoint", sink="parquet",
                             path=out,
                             checkpoint=checkpoint)
        assert again.notes == [
            f"Spark stopped query later as this query started: both use the checkpoint {checkpoint}, and Spark runs "
            "one query per checkpoint. Give each query a checkpointLocation of its own"]
        assert later.state == "stopped"
        again.stop()
        assert second.restart("again_on_that_checkpoint").notes == []  # its checkpoint was free: nothing to say
    finally:
        for session in (first, second):
            session.streams.stop_all()
            session.close()
