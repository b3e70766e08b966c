"""Connection resolution against the real server: flag, SPARK_REMOTE, profile, embedded default."""

from __future__ import annotations

import os

import pytest

import sparkscope
from sparkscope.client.errors import ConfigError
from sparkscope.server.connecting import resolve_target


def _sql_one(ss) -> int:
    return ss.sql("select 41 + 1 as answer").rows[0][0]


def test_connect_with_flag(remote_url):
    with sparkscope.connect(remote_url) as ss:
        assert ss.server.target.source == "flag"
        assert _sql_one(ss) == 42
        assert ss.server.version == "4.3.0"


def test_connect_with_spark_remote_env(remote_url, monkeypatch):
    monkeypatch.setenv("SPARK_REMOTE", remote_url)
    with sparkscope.connect() as ss:
        assert ss.server.target.source == "env"
        assert _sql_one(ss) == 42


def test_connect_with_profile(remote_url, sandbox, monkeypatch):
    config = sandbox / "config" / "sparkscope" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[profiles.dev]\nremote = "{remote_url}"\n')
    try:
        with sparkscope.connect(profile="dev") as ss:
            assert ss.server.target.source == "profile"
            assert _sql_one(ss) == 42
        with pytest.raises(ConfigError, match="No profile named 'prod'"):
            sparkscope.connect(profile="prod")
    finally:
        config.unlink()


def test_connect_with_nothing_configured_uses_the_embedded_server(server):
    assert "SPARK_REMOTE" not in os.environ
    target = resolve_target(start_server=False)
    assert target.source == "local" and target.port == server.port
    with sparkscope.connect(start_server=False) as ss:
        assert _sql_one(ss) == 42


def test_session_ids_are_distinct_and_reattach_keeps_queries(remote_url):
    first = sparkscope.connect(remote_url)
    query = first.start(first.source.rate(5), "kept")
    session_id = first.session_id
    first.close(stop_queries=False)
    second = sparkscope.connect(remote_url, session_id=session_id)
    try:
        assert second.session_id == session_id
        found = second.streams.get("kept")
        assert found.id == query.id and found.state == "active"
    finally:
        second.close(stop_queries=True)
    third = sparkscope.connect(remote_url)
    try:
        assert third.session_id != session_id
        assert third.streams.queries() == []
    finally:
        third.close()


def test_connect_leaves_the_process_as_it_found_it(remote_url, tmp_path):
    """A program that uses sparkscope.connect() keeps its own environment and pyspark settings: what a session
    needs (SPARK_CONNECT_MODE_ENABLED, pyspark's gc switch off) is undone when the last session closes."""
    import subprocess
    import sys

    script = tmp_path / "library_user.py"
    script.write_text(
        "import os, sys\n"
        "import sparkscope\n"
        "from pyspark.sql.connect.client import core\n"
        "from pyspark.sql import functions as F\n"
        "gc_before = core.disable_gc\n"
        "ss = sparkscope.connect(sys.argv[1])\n"
        "inner = sparkscope.connect(sys.argv[1])\n"
        "print('open', os.environ.get('SPARK_CONNECT_MODE_ENABLED'), core.disable_gc is gc_before)\n"
        "print('column', ss.spark.range(3).select(F.sum('id')).collect()[0][0])\n"
        "inner.close()\n"
        "print('one closed', os.environ.get('SPARK_CONNECT_MODE_ENABLED'))\n"
        "ss.close()\n"
        "print('closed', os.environ.get('SPARK_CONNECT_MODE_ENABLED'), core.disable_gc is gc_before)\n")
    env = {k: v for k, v in os.environ.items() if k != "SPARK_CONNECT_MODE_ENABLED"}
    done = subprocess.run([sys.executable, str(script), remote_url], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["open 1 False", "column 3", "one closed 1", "closed None True"]


def test_the_warm_up_runs_its_query_and_a_caller_can_wait_for_it(remote_url):
    """The REPL warms a server it just started while the user types (a command sent meanwhile waits for it)."""
    import logging

    failures: list[str] = []
    handler = logging.Handler(logging.DEBUG)
    handler.emit = lambda record: failures.append(record.getMessage())  # type: ignore[method-assign]
    logger = logging.getLogger("sparkscope")
    logger.addHandler(handler)
    saved = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        with sparkscope.connect(remote_url) as ss:
            ss.server.warmed()  # no warm-up running: returns at once
            ss.server.warm_up()
            ss.server.warmed()
            assert not [m for m in failures if "warming up the server" in m], failures
            assert _sql_one(ss) == 42
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved)
