"""The Session's public surface: what moved keeps its old name for one release, with a warning that says where it
went; sql() says how it limits; reading a property asks the server nothing."""

from __future__ import annotations

import warnings

import pytest

import sparkscope


def test_an_old_name_still_answers_and_warns_where_it_went(ss):
    with pytest.warns(DeprecationWarning, match=r"^ss\.server_version is deprecated: use ss\.server\.version$") as said:
        old = ss.server_version
    assert said[0].filename == __file__
    assert old == ss.server.version and old.startswith("4.")
    with pytest.warns(DeprecationWarning, match=r"^ss\.spark_ui is deprecated: use ss\.server\.ui$"):
        assert ss.spark_ui() == ss.server.ui()
    with pytest.warns(DeprecationWarning, match=r"^ss\.checkpoint_root is deprecated: use ss\.server\.checkpoint_root\(\)$"):
        assert ss.checkpoint_root == ss.server.checkpoint_root()
    with pytest.raises(AttributeError, match="'Session' object has no attribute 'no_such_thing'"):
        ss.no_such_thing  # noqa: B018


def test_the_query_verbs_of_0_2_still_answer_on_the_session_and_warn_that_ss_streams_is_their_home(remote_url):

    with sparkscope.connect(remote_url) as mine:
        mine.start(mine.source.rate(5), "moved_verbs")
        with pytest.warns(DeprecationWarning, match=r"^ss\.query is deprecated: use ss\.streams\.get$") as said:
            found = mine.query("moved_verbs")
        assert said[0].filename == __file__
        assert found is mine.streams.get("moved_verbs") and found.name == "moved_verbs"
        with pytest.warns(DeprecationWarning, match=r"^ss\.queries is deprecated: use ss\.streams\.queries$"):
            assert [info.name for info in mine.queries()] == ["moved_verbs"]
        with pytest.warns(DeprecationWarning, match=r"^ss\.stop\(name\) is deprecated: use ss\.streams\.stop\(name\)"):
            mine.stop("moved_verbs")
        assert mine.streams.running() == []
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            mine.stop()  # as spark.stop(): the session ends
        with pytest.raises(sparkscope.ConfigError, match="This sparkscope session is closed"):
            mine.sql("SELECT 1")


def test_the_parts_of_0_2_that_copied_the_session_s_verbs_still_answer_and_warn_where_each_verb_went(ss):
    ss.sql("CREATE OR REPLACE TEMPORARY VIEW parts_of_0_2 AS SELECT * FROM VALUES (1, 'a'), (2, 'b') AS t(n, s)")
    with pytest.warns(DeprecationWarning, match=r"^ss\.sinks is deprecated: its verbs are the Session's own "
                                                r"\(ss\.peek, ss\.state, ss\.late, ss\.sql, ss\.explain, …\), "
                                                r"the rest is ss\.client$") as said:
        old = ss.sinks
    assert said[0].filename == __file__
    assert old.peek("parts_of_0_2", order_by="n").rows == [(1, "a"), (2, "b")]
    with pytest.warns(DeprecationWarning, match=r"^ss\.starter is deprecated: its verbs are the Session's own "
                                                r"\(ss\.start, ss\.restart, ss\.restart_lost\)"):
        assert callable(ss.starter.restart_lost)
    with pytest.warns(DeprecationWarning, match=r"^ss\.sink_dataframe is deprecated: use ss\.client\.sink_dataframe$"):
        assert ss.sink_dataframe("parts_of_0_2").count() == 2
    assert sorted(ss.client.sink_dataframe("parts_of_0_2").collect()) == [(1, "a"), (2, "b")]
    with pytest.warns(DeprecationWarning, match=r"^ss\.inherits_listener is deprecated: use ss\.client\.inherits_listener$"):
        assert ss.inherits_listener is False  # opened, not rejoined
    with pytest.warns(DeprecationWarning, match=r"^ss\.explain_error is deprecated: use ss\.client\.explain_error$"):
        error = sparkscope.ConfigError("a problem", "a fix")
        assert ss.explain_error(error) is error  # nothing the session knows of its cause


def test_an_old_keyword_still_works_and_warns(ss):
    with pytest.warns(DeprecationWarning, match=r"^queries\(all=…\) is deprecated: use catalogued=…$") as said:
        old = [info.name for info in ss.streams.queries(all=True)]
    assert said[0].filename == __file__  # the warning names the caller's line, not sparkscope's
    assert old == [info.name for info in ss.streams.queries(catalogued=True)]
    with pytest.raises(TypeError, match="got both 'all' and 'catalogued'"):
        ss.streams.queries(all=True, catalogued=True)


def test_sql_returns_at_most_its_limit_and_says_when_there_were_more(ss):
    cut = ss.sql("SELECT id FROM range(5)", limit=3)
    assert (cut.rows, cut.truncated) == ([(0,), (1,), (2,)], True)
    whole = ss.sql("SELECT id FROM range(5)", limit=5)
    assert (len(whole), whole.truncated) == (5, False)
    assert ss.sql("SELECT id FROM range(1500)", limit=None).rows[-1] == (1499,)
    with pytest.warns(DeprecationWarning, match=r"^sql\(n=…\) is deprecated: use limit=…$"):
        assert ss.sql("SELECT id FROM range(5)", n=2).rows == [(0,), (1,)]


def test_reading_the_monitor_starts_nothing_until_it_is_used(remote_url):

    with sparkscope.connect(remote_url) as fresh, warnings.catch_warnings():
        warnings.simplefilter("error")  # none of these is a deprecated name
        monitor = fresh.streams.monitor
        parts = (fresh.server, fresh.catalog, fresh.streams, fresh.client, fresh.url, fresh.session_id)
        assert all(part is not None for part in parts)
        assert monitor.mode == "stopped"  # no listener registered, no query listed
        assert monitor.tracks() == []
        assert monitor.mode in ("listener", "polling")
