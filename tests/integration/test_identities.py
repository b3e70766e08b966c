"""Each user of a shared server is someone (issue 61): the test server, as `sparkscope server start` made it, with
three identities: its owner (the server's own token, the `ss` fixture's), ana and bob (`sparkscope server users add`).
Bob tries, as a hostile second user would, every way into what is ana's: with a plain pyspark client, with calls into
sparkscope's jar that sparkscope never makes, and through sparkscope's own SDK and REPL commands. Each gets one line;
ana's query runs on with its rows, and the server lives."""

from __future__ import annotations

import json
import re
import uuid

import pytest

import sparkscope
from sparkscope.client.errors import AuthenticationFailed, ConfigError, ConnectionFailed
from sparkscope.client._pyspark import foreach_jvm_writer
from tests.helpers import wait_for
from tests.identities import FEED_WRITER, RING, call, pyspark_client, users
from tests.integration.test_commands import Shell

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tokens(server):
    with users("ana", "bob") as made:
        yield made


@pytest.fixture(scope="module")
def ana(server, tokens):
    """Ana's sparkscope session (her token, no user id given: the server runs it as her), with a bounded query."""
    session = sparkscope.connect(f"sc://localhost:{server.port}", token=tokens["ana"])
    query = session.start(session.source.rate(20), "orders", keep=50)
    wait_for(lambda: session.peek("orders").rows, timeout=120, what="ana's first rows")
    yield session, query
    session.streams.stop_all()
    session.close()


def anas_rows_go_on(ana_session) -> None:
    query = ana_session.streams.get("orders")
    batch = query.progress.batch_id
    wait_for(lambda: query.progress.batch_id > batch, timeout=60, what="ana's query making batches")
    assert ana_session.peek("orders").rows


def test_a_user_s_token_acts_as_that_user_whatever_the_client_sends(server, tokens, ana):
    ana_session, _ = ana
    assert ana_session.user == "ana"  # the server says who she is: not this machine's login name
    with pyspark_client(server.port, tokens["bob"], user_id="ana", session_id=ana_session.session_id) as bob, \
            pytest.raises(Exception) as refused:
        print(bob.streams.active)
    assert ("SPARKSCOPE_NOT_YOUR_USER: this token is user 'bob''s, and the request names user 'ana'; connect as bob "
            "(;user_id=bob), or without a user_id") in str(refused.value)
    with pyspark_client(server.port, tokens["bob"], user_id="ana", session_id=ana_session.session_id) as bob, \
            pytest.raises(Exception, match="SPARKSCOPE_NOT_YOUR_USER"):
        bob.cloneSession()  # a copy of her session: refused as joining it is
    with pytest.raises(AuthenticationFailed) as said:  # sparkscope's SDK says the server's line
        sparkscope.connect(f"sc://localhost:{server.port}/;user_id=ana", token=tokens["bob"])
    assert str(said.value) == ("This token is user 'bob''s, and the request names user 'ana'. Connect as bob "
                               "(;user_id=bob), or without a user_id.")
    with pytest.raises(ConnectionFailed) as said:
        sparkscope.connect(f"sc://localhost:{server.port}", token=tokens["bob"], session_id=ana_session.session_id)
    assert str(said.value).startswith(f"The server has no session {ana_session.session_id} of this user (it was "
                                      "closed, timed out, the server restarted, or it is another user's)")
    with pyspark_client(server.port, tokens["bob"], session_id=str(uuid.uuid4())) as bob:
        assert bob.streams.active == []  # his login name is taken as his: a session of his own
        assert bob.range(3).count() == 3
    anas_rows_go_on(ana_session)


def test_the_server_s_own_token_reaches_no_user_s_sessions(server, tokens, ana):
    ana_session, _ = ana
    with pyspark_client(server.port, server.token, user_id="ana", session_id=ana_session.session_id) as owner, \
            pytest.raises(Exception) as refused:
        print(owner.streams.active)
    assert ("SPARKSCOPE_NOT_YOUR_USER: 'ana' is a user of this server with a token of their own, and only that token "
            "acts as 'ana'; connect with another user_id") in str(refused.value)


def test_without_a_token_or_with_one_the_server_does_not_know_nothing_runs(server, tokens):
    with pyspark_client(server.port, None) as nobody, \
            pytest.raises(Exception, match="SPARKSCOPE_NO_TOKEN: this server needs a token"):
        nobody.range(1).count()
    with pytest.raises(AuthenticationFailed) as said:
        sparkscope.connect(f"sc://localhost:{server.port}", token="not-" + tokens["bob"])
    assert str(said.value) == (f"sc://localhost:{server.port}/;token=*** refused the connection: authentication "
                               "failed. The token is neither the server's (spark.connect.authenticate.token) nor a "
                               "user's it knows (sparkscope server users).")


def test_no_answer_gives_bob_ana_s_session_id_and_the_owner_sees_totals_only(server, ss, tokens, ana):
    ana_session, query = ana
    with pyspark_client(server.port, tokens["bob"]) as bob:
        listed = json.dumps(call(bob, "list"))
        assert ana_session.session_id not in listed and "ana" not in listed and query.view not in listed
        said = call(bob, "hello", protocol=3)[0]
        assert (said["identities"], said["admin"], said["caller"][0]) == (True, False, "bob")
    mine = [item.name for item in ana_session.kept()]
    assert query.view in mine
    assert {item.session for item in ana_session.kept()} == {ana_session.session_id}
    assert ss.kept_by_others() == [item for item in ss.kept_by_others() if item.user in ("ana", "bob")]
    anas = next(item for item in ss.kept_by_others() if item.user == "ana")
    assert anas.rings >= 1 and anas.bytes > 0
    everything = json.dumps(call(ss.spark, "list"))
    assert ana_session.session_id not in everything and query.view not in everything
    assert query.view not in [item.name for item in ss.kept()]


def test_the_jar_refuses_what_sparkscope_never_sends_and_ana_s_rows_stay(server, tokens, ana):
    ana_session, query = ana
    schema = '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}'
    with pyspark_client(server.port, tokens["bob"]) as bob:
        with pytest.raises(Exception) as refused:
            call(bob, "make_ring", name="huge", schema=schema, rows=2_000_000_000)
        assert ("SPARKSCOPE_LIMIT: a ring keeps at most 1,000,000 rows on this server, and 2,000,000,000 were asked "
                "for (spark.sparkscope.limit.rows on the server raises it)") in str(refused.value)
        with pytest.raises(Exception) as refused:
            call(bob, "make_ring", name="forever", schema=schema, grace_ms=10**13)
        assert ("SPARKSCOPE_LIMIT: a grace period is at most 7 days on this server, and 115,740.7 days was asked for "
                "(spark.sparkscope.limit.grace on the server raises it)") in str(refused.value)
        made = 0
        with pytest.raises(Exception) as refused:  # thousands of names: refused from the 65th on
            for number in range(1000):
                call(bob, "make_feed", name=f"squat_{number}", schema=schema)
                made += 1
        assert made == 64 and "SPARKSCOPE_LIMIT: one user keeps at most 64 rings and feeds at once" in str(
            refused.value)
        assert call(bob, "forget", name="squat_0") == [{"forgotten": True}]
        with pytest.raises(Exception, match="SPARKSCOPE_NAME_TAKEN: you already have a feed named 'squat_1', so no "
                                            "ring can have that name"):
            call(bob, "make_ring", name="squat_1", schema=schema)
        for number in range(1, 64):
            call(bob, "forget", name=f"squat_{number}")
        # ana's names are not bob's: her ring and her feed are, for him, names nobody has
        feed = ana_session.source.memory("id BIGINT")
        feed.add([(1,)])
        with pytest.raises(Exception, match="SPARKSCOPE_FEED_GONE"):
            bob.range(3).write.format(FEED_WRITER).option("feed", feed.name).mode("append").save()
        with pytest.raises(Exception, match="SPARKSCOPE_RING_GONE"):
            bob.read.format(RING).option("ring", query.view).load().collect()
        assert call(bob, "forget", name=query.view) == [{"forgotten": False}]
        with pytest.raises(Exception, match="SPARKSCOPE_RING_GONE"):  # the writer a real-time query gets
            call(bob, "ring_writer", name=query.view)
        forged = bob_s_writer_forged_for(bob, query.view)
        with pytest.raises(Exception, match="SPARKSCOPE_NOT_YOUR_RING: this query's writer names a ring of another "
                                            "user's"):
            foreach_jvm_writer(bob.readStream.format("rate").load().writeStream, forged).start().awaitTermination(120)
        with pytest.raises(Exception, match="SPARKSCOPE_NOT_OWNER: only the server's owner"):
            call(bob, "forget", name=query.view, user="ana")
        assert call(bob, "free", all="true") == []  # nothing of his ended; all=true is the owner's alone
        # the bytes one user keeps: a batch past them is refused (the test server allows 64 MB a user)
        call(bob, "make_feed", name="wide", schema='{"type":"struct","fields":[{"name":"s","type":"string",'
                                                    '"nullable":true,"metadata":{}}]}')
        with pytest.raises(Exception) as refused:
            bob.range(80_000).selectExpr("repeat('x', 1000) AS s").write.format(FEED_WRITER) \
                .option("feed", "wide").mode("append").save()
        assert "SPARKSCOPE_LIMIT: this batch takes " in str(refused.value)
        assert "(spark.sparkscope.limit.bytes on the server raises it)" in str(refused.value)
    assert next(item for item in ana_session.kept() if item.name == feed.name).rows == 1  # her batch, untouched
    assert len(ana_session.peek("orders", n=100).rows) == 50
    anas_rows_go_on(ana_session)


def bob_s_writer_forged_for(bob, anas_ring: str) -> bytes:
    """The jar's writer into a ring of bob's, its bytes changed to name ana's ring instead (a ring's key in them is its
    user, NUL in Java's modified UTF-8, its name): what a hostile client can send as a foreach writer."""
    import base64

    mine = "x" * len(anas_ring)
    call(bob, "make_ring", name=mine, schema=bob.readStream.format("rate").load().schema.json())
    packet = base64.b64decode(call(bob, "ring_writer", name=mine)[0]["packet"])
    key = b"bob\xc0\x80" + mine.encode()
    assert packet.count(key) == 1, packet
    return packet.replace(key, b"ana\xc0\x80" + anas_ring.encode())


def test_bob_s_own_sdk_and_commands_reach_nothing_of_ana_s(server, tokens, ana):
    ana_session, query = ana
    with sparkscope.connect(f"sc://localhost:{server.port}", token=tokens["bob"]) as bob:
        assert bob.user == "bob"
        orders = bob.start(bob.source.rate(5), "orders", keep=5)  # his own query of the same name
        wait_for(lambda: bob.peek("orders").rows, timeout=120, what="bob's own orders")
        assert orders.view != query.view
        shell = Shell(bob)
        ok, out, _ = shell.run(":kept")
        assert ok and ana_session.session_id[:8] not in out and "orders" in out
        ok, out, _ = shell.run(":kept --free")  # what his earlier clients left, never anything of hers
        assert ok and ana_session.session_id[:8] not in out and query.view not in out
        with pytest.raises(Exception, match="TABLE_OR_VIEW_NOT_FOUND"):  # her view is her session's
            bob.spark.table(query.view).collect()
        bob.streams.stop("orders")
        with pytest.raises(ConfigError, match="is longer than the longest, 7 days"):
            bob.start(bob.source.rate(5), "kept_forever", grace="30d")
    assert len(ana_session.peek("orders", n=100).rows) == 50
    anas_rows_go_on(ana_session)


def test_a_removed_user_s_token_stops_working_and_their_sessions_end(server, ss):
    from tests.identities import add_user, remove_user

    with users("carol") as made:
        carol = sparkscope.connect(f"sc://localhost:{server.port}", token=made["carol"])
        carol.start(carol.source.rate(5), "carols", keep=5)
        wait_for(lambda: carol.peek("carols").rows, timeout=120, what="carol's rows")
        assert [(t.rings, t.in_use) for t in ss.kept_by_others() if t.user == "carol"] == [(1, 1)]
        remove_user("carol")
        wait_for(lambda: [t.in_use for t in ss.kept_by_others() if t.user == "carol"] == [0], timeout=60,
                 what="carol's query ended with her session (what it kept is in its grace period)")
        with pytest.raises(AuthenticationFailed, match="nor a user.s it knows"):
            sparkscope.connect(f"sc://localhost:{server.port}", token=made["carol"])
        with pytest.raises(Exception, match="SPARKSCOPE_UNKNOWN_TOKEN"):  # her client, left open
            carol.spark.range(1).count()
        made["carol"] = add_user("carol")  # the block removes her again


def test_server_check_says_a_user_id_is_an_identity_here_and_the_limits(server):
    from tests.helpers import run_sparkscope

    checked = run_sparkscope("server", "check", timeout=180)
    assert re.search(r"\| users +\| - +\| identities: the server checks every request's token, and a user's token "
                     r"acts as that user only", checked.stdout), checked.stdout
    assert re.search(r"\| limits +\| - +\| 1,000,000 rows a ring, a grace period of at most 7 days, 64 rings and feeds "
                     r"and 64 MiB a user, [\d,]+ MiB for every user together", checked.stdout), checked.stdout
