"""Tokens never shown: redaction of every text sparkscope prints, and bounded errors."""

from __future__ import annotations

import pytest

from sparkscope.client.errors import SparkscopeError
from sparkscope.client.error_reading import translate
from sparkscope.client.secrets import redact, remember_secret


@pytest.mark.parametrize("text, secret", [
    ("Parameter 'token=c2VjcmV0MTIz==' should be provided as a key-value pair", "c2VjcmV0MTIz"),
    ("sc://h:1/;use_ssl=true;token=a%3Bb%3Dc;x=1", "a%3Bb%3Dc"),
    ("metadata authorization: Bearer s3cr3t-value", "s3cr3t-value"),
    ('{"token": "x", "url": "sc://h/;token=abc\\"def"}', "abc"),
])
def test_redact_hides_token_parameters_and_bearer_values(text, secret):
    assert secret not in redact(text)
    assert "***" in redact(text)


def test_redact_hides_known_tokens_anywhere_even_without_a_key():
    remember_secret("plain-known-token-42")
    assert redact("the value plain-known-token-42 showed up") == "the value *** showed up"
    assert redact("quoted plain-known-token-42".replace("-", "%2D")) != ""  # no crash on look-alikes


def test_our_own_hints_keep_their_placeholders():
    assert redact("Pass the server's token with ;token=… or SPARK_CONNECT_AUTHENTICATE_TOKEN") == (
        "Pass the server's token with ;token=… or SPARK_CONNECT_AUTHENTICATE_TOKEN")


def test_every_error_is_redacted_whatever_its_source():
    error = translate(ValueError("[INVALID_CONNECT_URL] Parameter 'token=c2VjcmV0MTIz==' should be key=value"))
    assert "c2VjcmV0MTIz" not in str(error)
    assert "c2VjcmV0MTIz" not in str(SparkscopeError("bad sc://x/;token=c2VjcmV0MTIz==", "hint token=c2VjcmV0MTIz"))


def test_long_input_is_not_echoed_in_full():
    error = SparkscopeError(f"'{'x' * 10_000}' is not a Python expression", "Check it")
    assert len(str(error)) < 200 and "10,002 chars" in str(error)
