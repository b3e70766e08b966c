"""The monitor against a real server: pushed events, bounded history, a broken stream, polling."""

from __future__ import annotations

import threading

import pytest

from sparkscope.client.monitoring.monitor import Monitor
from tests.helpers import wait_for


class Recorder:
    def __init__(self):
        self.events = []
        self.lock = threading.Lock()

    def __call__(self, event):
        with self.lock:
            self.events.append(event)

    def kinds(self, name=None):
        with self.lock:
            return [e.kind for e in self.events if name is None or e.name == name]

    def batches(self, name):
        with self.lock:
            return [e.progress.batch_id for e in self.events if e.kind == "progress" and e.name == name]


def break_event_stream(spark) -> None:
    """Ask the server to end the listener's event stream, as a lost connection would."""
    import pyspark.sql.connect.proto as pb2

    command = pb2.Command()
    command.streaming_query_listener_bus_command.remove_listener_bus_listener = True
    spark.client.execute_command(command)


@pytest.fixture
def monitor(ss):
    monitor = Monitor(ss).start()
    yield monitor
    monitor.close()
    ss.streams.stop_all()


def test_started_progress_and_terminated_events_arrive_and_are_kept(ss, monitor):
    seen = Recorder()
    monitor.subscribe(seen)
    assert monitor.mode == "listener"
    query = ss.start(ss.source.rate(50), "mon_events", trigger="300 milliseconds")
    wait_for(lambda: len(seen.batches("mon_events")) >= 3)
    track = monitor.track("mon_events")
    assert track.state == "active"
    assert [p.batch_id for p in track.history][:3] == [0, 1, 2]
    assert track.latest.input_rows_per_second >= 0
    query.stop()
    wait_for(lambda: "terminated" in seen.kinds("mon_events"))
    assert seen.kinds("mon_events")[0] == "started"
    assert monitor.track("mon_events").state == "stopped"


def test_failed_query_is_reported_with_its_error(ss, monitor):
    from pyspark.sql import functions as F

    seen = Recorder()
    monitor.subscribe(seen)
    ss.start(ss.source.rate(20).select(F.expr("assert_true(value < 3)").alias("ok")), "mon_doomed")
    wait_for(lambda: "terminated" in seen.kinds("mon_doomed"))
    track = monitor.track("mon_doomed")
    assert track.state == "failed"
    assert track.error == "'(value < 3)' is not true!"
    terminated = [e for e in seen.events if e.kind == "terminated" and e.name == "mon_doomed"]
    assert terminated[0].error == "'(value < 3)' is not true!"


def test_a_monitor_started_after_a_query_knows_its_batches_at_once(remote_url):
    """The monitor's first look at the running queries used to wait for the session's lock until its
    5 s deadline and give up, so the REPL's :connect took 5 s more and a running query's batches were
    missing from its history until new ones came."""
    import sparkscope

    session = sparkscope.connect(remote_url)
    try:
        query = session.start(session.source.rate(5), "mon_seeded", trigger="1 hour")
        wait_for(lambda: query.progress is not None)  # batch 0 ran; the next one is an hour away
        assert [p.batch_id for p in session.streams.monitor.history("mon_seeded")] == [query.progress.batch_id]
    finally:
        session.close()


def test_history_is_bounded(ss):
    small = Monitor(ss, history_size=4).start()
    try:
        ss.start(ss.source.rate(10), "mon_bounded", trigger="200 milliseconds")
        wait_for(lambda: small.track("mon_bounded") and small.track("mon_bounded").latest
                 and small.track("mon_bounded").latest.batch_id >= 7)
        history = small.history("mon_bounded")
        assert len(history) == 4
        assert [p.batch_id for p in history] == list(range(history[0].batch_id, history[0].batch_id + 4))
    finally:
        small.close()
        ss.streams.stop_all()


def test_listener_is_registered_again_after_its_stream_breaks(ss, monitor):
    seen = Recorder()
    monitor.subscribe(seen)
    ss.start(ss.source.rate(10), "mon_broken", trigger="300 milliseconds")
    wait_for(lambda: len(seen.batches("mon_broken")) >= 2)
    broken_at = max(seen.batches("mon_broken"))
    break_event_stream(ss.spark)
    query = ss.streams.get("mon_broken")  # batches finish on the server while the stream is broken
    wait_for(lambda: query.progress is not None and query.progress.batch_id >= broken_at + 2)
    wait_for(lambda: monitor.reregistered >= 1)
    before = max(seen.batches("mon_broken"))
    wait_for(lambda: max(seen.batches("mon_broken")) >= before + 3)
    assert "notice" in seen.kinds()
    assert monitor.notices[0].startswith("The live event stream broke; listening again (back-filled")
    ids = [p.batch_id for p in monitor.history("mon_broken")]
    assert ids == list(range(ids[0], ids[-1] + 1)), "the gap was not back-filled"
    assert monitor.mode == "listener"


def test_a_stream_that_cannot_be_opened_again_says_the_user_s_listeners_went_with_it(remote_url, monkeypatch):
    """The event stream broke and a new one could not be opened (the monitor polls): the listeners the user had added
    with spark.streams.addListener were off pyspark's bus, and nothing said so. The notice names them, and adding one
    again, as it says, brings its events back."""
    import contextlib

    import sparkscope
    from pyspark.sql.streaming import StreamingQueryListener

    class BatchCounter(StreamingQueryListener):
        def __init__(self):
            self.batches: list[int] = []

        def onQueryStarted(self, event):
            pass

        def onQueryProgress(self, event):
            self.batches.append(event.progress.batchId)

        def onQueryIdle(self, event):
            pass

        def onQueryTerminated(self, event):
            pass

    counter = BatchCounter()
    session = sparkscope.connect(remote_url)
    try:
        monitor = session.streams.monitor.start()
        assert monitor.mode == "listener"
        session.spark.streams.addListener(counter)
        query = session.start(session.source.rate(10), "mon_users_listener", trigger="300 milliseconds")
        wait_for(lambda: counter.batches, what="a batch the user's listener heard")
        monkeypatch.setattr(monitor, "_register_again", lambda: False)  # the new stream cannot be opened
        break_event_stream(session.spark)
        wait_for(lambda: monitor.mode == "polling", what="the monitor to turn to polling")
        assert monitor.notices[-1] == ("The live event stream broke and could not be re-opened; polling instead; your "
                                       "listener BatchCounter was removed: add it again with spark.streams.addListener")
        heard = len(counter.batches)
        wait_for(lambda: query.progress is not None and query.progress.batch_id >= max(counter.batches) + 3,
                 what="three batches the removed listener did not hear")
        assert len(counter.batches) == heard, "the notice says the listener was removed, yet it still heard batches"
        session.spark.streams.addListener(counter)
        wait_for(lambda: len(counter.batches) >= heard + 2, what="the listener, added again, to hear batches")
    finally:
        with contextlib.suppress(Exception):
            session.spark.streams.removeListener(counter)
        session.streams.stop_all()
        session.close()


def test_polling_gives_the_same_numbers_as_the_listener(ss, monitor):
    polled = Monitor(ss, use_listener=False, poll_interval=0.2).start()
    try:
        assert polled.mode == "polling"
        ss.start(ss.source.rate(10), "mon_polled", trigger="1 second")
        wait_for(lambda: len(polled.history("mon_polled")) >= 2)
        pushed = {p.batch_id: p for p in monitor.history("mon_polled")}
        common = [p for p in polled.history("mon_polled") if p.batch_id in pushed]
        assert common, "no batch seen by both"
        for progress in common:
            assert progress == pushed[progress.batch_id]
        ss.streams.get("mon_polled").stop()
        wait_for(lambda: polled.track("mon_polled").state == "stopped")
    finally:
        polled.close()


def test_idle_event_for_a_query_without_new_data(ss, monitor, data_dir):
    seen = Recorder()
    monitor.subscribe(seen)
    ss.spark.conf.set("spark.sql.streaming.noDataProgressEventInterval", "200")
    try:
        ss.start(ss.source.files("json", str(data_dir), schema="a INT"), "mon_idle", trigger="200 milliseconds")
        wait_for(lambda: "idle" in seen.kinds("mon_idle"))
        assert monitor.track("mon_idle").idle_since is not None
    finally:
        ss.spark.conf.unset("spark.sql.streaming.noDataProgressEventInterval")


def test_polling_says_when_the_numbers_are_no_longer_live(sandbox, server):
    """A frozen network: the monitor says once that the numbers are stale (and from when), then that
    they are live again; before, a dead server stayed hidden behind the last numbers forever."""
    import sparkscope
    from tests.netproxy import Proxy

    token = (sandbox / "state" / "sparkscope" / "token").read_text().strip()
    with Proxy(server.port) as proxy:
        ss = sparkscope.connect(f"sc://localhost:{proxy.port}/;token={token}")
        try:
            polled = Monitor(ss, use_listener=False, poll_interval=0.2).start()
            seen = Recorder()
            polled.subscribe(seen)
            ss.start(ss.source.rate(5), "mon_stale", trigger="200 milliseconds")
            wait_for(lambda: polled.history("mon_stale"), what="a polled batch")
            proxy.freeze()
            wait_for(lambda: polled.stale_since is not None, timeout=60, what="the stale notice")
            stale = [e.message for e in seen.events if e.kind == "notice"]
            assert len(stale) == 1 and stale[0].startswith("The server is not answering (") and \
                stale[0].endswith(", not live"), stale
            proxy.thaw()
            wait_for(lambda: polled.stale_since is None, timeout=60, what="the live-again notice")
            assert [e.message for e in seen.events if e.kind == "notice"][-1] == \
                "The server answers again; the numbers are live"
            polled.close()
        finally:
            proxy.thaw()
            ss.close()


def _through_proxy(sandbox, proxy):
    import sparkscope

    token = (sandbox / "state" / "sparkscope" / "token").read_text().strip()
    return sparkscope.connect(f"sc://localhost:{proxy.port}/;token={token}")


def test_a_frozen_network_is_noticed_by_the_listener_and_missed_batches_are_back_filled(sandbox, server):
    """Listening, the stream goes quiet while a query runs: one call tells a frozen server (the numbers
    are called stale, with their time) from a live one; afterwards the monitor catches up."""
    from tests.netproxy import Proxy

    with Proxy(server.port) as proxy:
        ss = _through_proxy(sandbox, proxy)
        try:
            live = Monitor(ss, silent_after=2).start()
            assert live.mode == "listener"
            seen = Recorder()
            live.subscribe(seen)
            query = ss.start(ss.source.rate(5), "mon_frozen", trigger="200 milliseconds")
            wait_for(lambda: live.history("mon_frozen"), what="a pushed batch")
            proxy.freeze()
            wait_for(lambda: live.stale_since is not None, timeout=60, what="the not-answering notice")
            notices = [e for e in seen.events if e.kind == "notice"]
            assert notices[-1].code == "server_silent"
            assert notices[-1].message.startswith("The server is not answering; the numbers shown are from ")
            assert notices[-1].message.endswith(", not live")
            proxy.thaw()
            wait_for(lambda: live.stale_since is None, timeout=60, what="the live-again notice")
            target = query.progress.batch_id
            wait_for(lambda: live.track("mon_frozen").latest.batch_id >= target, timeout=60,
                     what="the monitor catching up with the batches the freeze hid")
            assert query.is_active
            messages = [e.message for e in seen.events if e.kind == "notice"]
            assert "The server answers again; the numbers are live" in messages
            live.close()
        finally:
            proxy.thaw()
            ss.streams.stop_all()
            ss.close()


def test_dropped_connections_reconnect_and_no_query_stops(sandbox, server):
    """Every TCP connection is cut (a router restart): the next call reconnects (it used to fail when
    it met the cut connection: sparkscope's retry policy retried nothing), the monitor keeps the numbers
    current, and the query never stopped."""
    from tests.netproxy import Proxy

    with Proxy(server.port) as proxy:
        ss = _through_proxy(sandbox, proxy)
        try:
            live = Monitor(ss, silent_after=2).start()
            query = ss.start(ss.source.rate(5), "mon_dropped", trigger="200 milliseconds")
            wait_for(lambda: live.history("mon_dropped"), what="a pushed batch")
            before = live.track("mon_dropped").latest.batch_id
            proxy.drop()
            # the very next call succeeds: pyspark's retries reconnect
            assert [q.name for q in ss.streams.queries() if q.state == "active"] == ["mon_dropped"]
            wait_for(lambda: live.track("mon_dropped").latest.batch_id > before + 5, timeout=60,
                     what="new batches seen by the monitor after the drop")
            assert query.is_active
            assert live.stale_since is None
            # pyspark's retries usually reattach the event stream itself, and nothing needs saying; when
            # the cut came mid-response the monitor opens a new one, or polls, and says which
            for notice in live.notices:
                assert (notice.startswith("The live event stream broke; listening again (back-filled ")
                        or notice == "The live event stream broke and could not be re-opened; polling instead"
                        ), notice
            live.close()
        finally:
            ss.streams.stop_all()
            ss.close()


def test_the_garbage_collector_stays_on_while_event_streams_wait(ss, monitor, remote_url):
    """pyspark switches the garbage collector off around each streaming RPC, while it waits for the next
    response too, and not thread-safely: a client joined to a session whose event stream another client
    holds (so its own registration waits for ever and it polls) would then keep every reference cycle,
    and a REPL with :watch open grew 60 MB a minute. sparkscope leaves collection on."""
    import gc

    import sparkscope

    ss.start(ss.source.rate(10), "mon_gc", trigger="200 milliseconds")
    wait_for(lambda: len(monitor.history("mon_gc")) >= 2)
    assert gc.isenabled()
    joined = sparkscope.connect(remote_url, session_id=ss.session_id)
    try:
        second = joined.streams.monitor  # the session's event stream is the first client's: this one polls
        # its first use starts it; polling begins once the registration has been given up (up to three 5 s
        # deadlines), which a loaded CI machine stretches past 30 s
        wait_for(lambda: len(second.history("mon_gc")) >= 2 and second.mode == "polling", 120)
        assert gc.isenabled(), "pyspark left the garbage collector off"
    finally:
        joined.close(stop_queries=False)  # leaves the session (shared with `ss`) to its first client
