"""Pure logic of client/remote: no server."""

from __future__ import annotations

import os

import pytest

from sparkscope.client.errors import ConfigError
from sparkscope.client.paths import for_server
from sparkscope.client.connection.remote import Target, parse_url, redact, resolve


def test_parse_url_with_params_token_and_session():
    t = parse_url("sc://h.example:443/;use_ssl=true;token=abc;session_id=0b8a0c56-8f5e-4c8a-9d5c-7d3f2b9c1e00")
    assert (t.host, t.port, t.use_ssl, t.token) == ("h.example", 443, True, "abc")
    assert t.display == "sc://h.example:443/;use_ssl=true;session_id=0b8a0c56-8f5e-4c8a-9d5c-7d3f2b9c1e00;token=***"
    assert "abc" not in repr(t)
    assert parse_url("sc://localhost").port == 15002


@pytest.mark.parametrize("bad,message", [
    ("http://x:1", "is not a Spark Connect URL"), ("sc://x:port", "'port' is not a valid port"),
    ("sc://", "has no host"), ("sc://x:1/;session_id=nope", "'nope' is not a session id"),
    ("sc://x:1/;junk", "Bad parameter 'junk'"),
])
def test_parse_url_errors(bad, message):
    with pytest.raises(ConfigError, match=message):
        parse_url(bad)


def test_relative_paths_are_made_absolute_only_for_a_server_on_this_machine(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert parse_url("sc://localhost:1").on_this_machine and parse_url("sc://127.0.0.1:1").on_this_machine
    assert not parse_url("sc://spark.example:1").on_this_machine
    assert for_server("data/events", True) == str(tmp_path / "data" / "events")
    assert for_server("data/events", False) == "data/events"
    for unchanged in ("/abs/dir", "s3a://bucket/key", "file:/tmp/x", "hdfs://nn/x"):
        assert for_server(unchanged, True) == unchanged


def test_redact_hides_tokens_everywhere():
    assert redact("sc://h:1/;token=abc;x=1") == "sc://h:1/;token=***;x=1"
    assert redact(":connect sc://h/;TOKEN=zz") == ":connect sc://h/;TOKEN=***"


def test_precedence_flag_env_profile_local(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text('default_profile = "dev"\n[profiles.dev]\nremote = "sc://prof:3"\ntoken_env = "DEV_TOKEN"\n')
    env = {"SPARK_REMOTE": "sc://env:2", "DEV_TOKEN": "t0k"}
    assert resolve("sc://flag:1", env=env, config_path=config).host == "flag"
    assert resolve(None, env=env, config_path=config).source == "env"
    picked = resolve(None, env={"DEV_TOKEN": "t0k"}, config_path=config)
    assert (picked.host, picked.source, picked.token) == ("prof", "profile", "t0k")
    assert resolve(None, env={}, config_path=tmp_path / "missing.toml") is None
    assert resolve("sc://f:1", env={"SPARK_CONNECT_AUTHENTICATE_TOKEN": "e"}, config_path=config).token == "e"


def test_profile_with_token_must_be_private(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text('[profiles.p]\nremote = "sc://h:1"\ntoken = "secret"\n')
    os.chmod(config, 0o644)
    with pytest.raises(ConfigError, match="holds a token but other users can read it"):
        resolve(None, profile="p", env={}, config_path=config)
    os.chmod(config, 0o600)
    assert resolve(None, profile="p", env={}, config_path=config).token == "secret"


def test_url_values_are_unquoted_and_tokens_requoted_for_pyspark():
    target = parse_url("sc://h:1/;token=a%3Bb%3D%3D")
    assert target.token == "a;b==" and target.token_source == "url"
    assert target.url(with_token=True) == "sc://h:1/;token=a%3Bb%3D%3D"
    assert "a;b" not in target.display


@pytest.mark.parametrize("host, ssl, token, in_clear, tls", [
    ("localhost", False, "t0ken", True, False),    # pyspark: local credentials, loopback only
    ("127.0.0.1", False, "t0ken", False, True),    # anything else with a token: TLS
    ("spark.example", False, "t0ken", False, True),
    ("spark.example", True, None, False, True),
    ("spark.example", False, None, False, False),
])
def test_the_token_rule_is_pysparks(host, ssl, token, in_clear, tls):
    target = Target(host=host, token=token, params={"use_ssl": "true"} if ssl else {})
    assert target.token_in_clear is in_clear
    assert target.needs_tls is tls


@pytest.mark.parametrize("host", ["h" * 5000, "a." + "b" * 64 + ".com", ("x" * 60 + ".") * 5])
def test_a_host_name_past_dns_limits_is_one_line_not_an_idna_traceback(host):
    with pytest.raises(ConfigError) as caught:
        parse_url(f"sc://{host}:15002")
    assert "host name" in caught.value.message and "too long" in caught.value.message


def test_ordinary_hosts_still_parse():
    assert parse_url("sc://spark.example.com:15002").host == "spark.example.com"
    assert parse_url("sc://[::1]:15002").host == "::1"


def test_a_profile_s_token_env_that_is_not_set_is_said(tmp_path, caplog):
    config = tmp_path / "c.toml"
    config.write_text('[profiles.dev]\nremote = "sc://prof:3"\ntoken_env = "DEV_TOKEN"\n')
    with caplog.at_level("WARNING", logger="sparkscope"):
        picked = resolve(None, profile="dev", env={}, config_path=config)
    assert picked.token is None
    assert caplog.messages == ["profile 'dev' takes its token from $DEV_TOKEN, which is not set: connecting without "
                               "a token"]
    caplog.clear()
    with caplog.at_level("WARNING", logger="sparkscope"):
        assert resolve(None, profile="dev", env={"DEV_TOKEN": "t"}, config_path=config).token == "t"
    assert caplog.messages == []
