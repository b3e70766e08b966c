"""The Spark UI's guard: the signed header."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

from sparkscope.server.access import ui_guard


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
