"""Two users on one server (user_id alice and bob, each with their own session), each with a query
named `counts`: each sees only its own in the SDK, in :queries, :peek and :watch's data, and in the
catalog; stopping one, or `:stop --all`, never touches the other's."""

from __future__ import annotations

import pytest

import sparkscope
from sparkscope.repl.output.dashboard import Dashboard
from tests.helpers import wait_for
from tests.integration.test_commands import Shell

pytestmark = pytest.mark.slow


@pytest.fixture
def users(server):
    sessions = {user: sparkscope.connect(f"sc://localhost:{server.port}/;user_id={user}", token=server.token)
                for user in ("alice", "bob")}
    yield sessions
    for session in sessions.values():
        session.stop_all()
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
    assert [q.id for q in alice.queries()] == [mine.id]
    assert [q.id for q in bob.queries()] == [theirs.id]
    assert [row[0] for row in alice.peek("counts").rows] == ["alice"]
    assert [row[0] for row in bob.peek("counts").rows] == ["bob"]

    alice_shell, bob_shell = Shell(alice), Shell(bob)
    ok, out, _ = alice_shell.run(":queries")
    assert ok and mine.id[:8] in out and theirs.id[:8] not in out
    ok, out, _ = bob_shell.run(":peek counts")
    assert ok and "bob" in out and "alice" not in out

    wait_for(lambda: [t.id for t in Dashboard(alice.monitor, None, lambda name: "").tracks()] == [mine.id],
             timeout=30, what="alice's :watch showing her query only")
    assert [r.query_id for r in alice.catalog_records() if r.state == "active"] == [mine.id]
    assert [r.query_id for r in bob.catalog_records() if r.state == "active"] == [theirs.id]

    ok, out, _ = alice_shell.run(":stop --all")
    assert ok and "counts" in out
    assert not mine.is_active
    assert theirs.is_active
    batch = theirs.progress.batch_id if theirs.progress else -1
    wait_for(lambda: theirs.progress is not None and theirs.progress.batch_id > batch, timeout=60,
             what="bob's query still making batches after alice's :stop --all")
    assert [q.id for q in bob.running()] == [theirs.id]
