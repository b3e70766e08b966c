"""Connection resolution against the real server: flag, SPARK_REMOTE, profile, embedded default."""

from __future__ import annotations

import os

import pytest

import sparkscope
from sparkscope.client.errors import ConfigError
from sparkscope.client.session import resolve_target


def _sql_one(ss) -> int:
    return ss.sql("select 41 + 1 as answer").rows[0][0]


def test_connect_with_flag(remote_url):
    with sparkscope.connect(remote_url) as ss:
        assert ss.target.source == "flag"
        assert _sql_one(ss) == 42
        assert ss.server_version == "4.3.0"


def test_connect_with_spark_remote_env(remote_url, monkeypatch):
    monkeypatch.setenv("SPARK_REMOTE", remote_url)
    with sparkscope.connect() as ss:
        assert ss.target.source == "env"
        assert _sql_one(ss) == 42


def test_connect_with_profile(remote_url, sandbox, monkeypatch):
    config = sandbox / "config" / "sparkscope" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[profiles.dev]\nremote = "{remote_url}"\n')
    try:
        with sparkscope.connect(profile="dev") as ss:
            assert ss.target.source == "profile"
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
        found = second.query("kept")
        assert found.id == query.id and found.state == "active"
    finally:
        second.close(stop_queries=True)
    third = sparkscope.connect(remote_url)
    try:
        assert third.session_id != session_id
        assert third.queries() == []
    finally:
        third.close()
