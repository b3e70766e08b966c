"""Pure logic behind issue 28: the signed UI header, task slots, sort orders, name and host limits, typed settings."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

import pytest

from sparkscope.server import ui_guard
from sparkscope.client.errors import ConfigError
from sparkscope.client.queries.planning import check_name, sort_order
from sparkscope.client.connection.remote import parse_url
from sparkscope.server.sizing import local_master


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def test_the_bearer_is_a_jws_signed_with_the_key_and_the_key_stays_out_of_it():
    key = ui_guard.new_key()
    assert len(_unb64(key)) == 32  # 256 bits: JWSFilter's HS256 needs at least that
    scheme, token = ui_guard.bearer(key).split(" ")
    header, payload, signature = token.split(".")
    assert scheme == "Bearer" and json.loads(_unb64(header))["alg"] == "HS256"
    expected = hmac.new(_unb64(key), f"{header}.{payload}".encode(), hashlib.sha256).digest()
    assert _unb64(signature) == expected
    assert key not in token
    assert ui_guard.bearer(ui_guard.new_key()) != ui_guard.bearer(key)
    assert ui_guard.filter_settings(key) == {"spark.ui.filters": "org.apache.spark.ui.JWSFilter",
                                             "spark.org.apache.spark.ui.JWSFilter.param.secretKey": key}


def test_local_star_gets_four_slots_per_core_and_one_task_per_core():
    assert local_master("local[*]", cores=2) == ("local[8]", {"spark.default.parallelism": "2"})
    assert local_master("local[3]", cores=2) == ("local[3]", {})
    assert local_master("spark://127.0.0.1:7077", cores=2) == ("spark://127.0.0.1:7077", {})


@pytest.mark.parametrize("spec, keys", [
    ("value", [("value", False)]),
    ("value desc", [("value", True)]),
    ("value DESC, name", [("value", True), ("name", False)]),
    ("a asc,b desc", [("a", False), ("b", True)]),
    ("`odd` desc", [("odd", True)]),
])
def test_sort_orders_say_their_direction_as_sql_does(spec, keys):
    assert sort_order(spec) == keys


def test_a_sort_order_that_is_not_columns_says_how_to_write_one():
    with pytest.raises(ConfigError) as caught:
        sort_order("value down")
    assert "Cannot sort by 'value down'" in caught.value.message and '"value desc, name"' in caught.value.hint


def test_a_query_name_too_long_for_a_folder_is_refused_with_the_limit():
    assert check_name("q" * 200) == "q" * 200
    with pytest.raises(ConfigError) as caught:
        check_name("q" * 10_000)
    assert caught.value.message == "A query name of 10,000 characters is too long"
    assert "at most 200" in caught.value.hint


@pytest.mark.parametrize("host", ["h" * 5000, "a." + "b" * 64 + ".com", ("x" * 60 + ".") * 5])
def test_a_host_name_past_dns_limits_is_one_line_not_an_idna_traceback(host):
    with pytest.raises(ConfigError) as caught:
        parse_url(f"sc://{host}:15002")
    assert "host name" in caught.value.message and "too long" in caught.value.message


def test_ordinary_hosts_still_parse():
    assert parse_url("sc://spark.example.com:15002").host == "spark.example.com"
    assert parse_url("sc://[::1]:15002").host == "::1"


def test_repl_settings_of_the_wrong_type_are_named_once_and_the_default_applies(tmp_path, monkeypatch, caplog):
    import logging

    from sparkscope.repl import settings

    (tmp_path / "sparkscope").mkdir()
    (tmp_path / "sparkscope" / "config.toml").write_text('[repl]\ncommand_timeout = "soon"\npager = 7\nvi = true\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setattr(settings, "_said", set())
    logger = logging.getLogger("sparkscope")
    monkeypatch.setattr(logger, "propagate", True)
    with caplog.at_level(logging.WARNING, logger="sparkscope"):
        settings.check_repl_settings()
        assert settings.repl_setting("command_timeout") == 300.0
        assert settings.repl_setting("pager") is None
        assert settings.repl_setting("vi") is True
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 2, said
    assert "command_timeout = 'soon'" in said[0] and "a number of seconds" in said[0]
    assert "pager = 7" in said[1] and "pager = false" in said[1]
