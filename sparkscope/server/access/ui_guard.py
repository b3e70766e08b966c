"""Web UIs only their owner can read.

Spark's web UIs (the driver's, and the standalone master's and workers') listen on TCP, and every
user of a machine can reach a loopback port. They show every SQL text and plan a user ran, every
setting, and the executors' output. The embedded server's UI is off unless asked for (`server start
--ui`). The master and workers of `--workers` cannot turn theirs off, so they run behind Spark's own
`org.apache.spark.ui.JWSFilter` (Spark 4): a request needs `Authorization: Bearer <JWS>`, a token
signed (HS256) with a key that only this user's state dir holds. sparkscope signs its own requests
to the master's JSON endpoint with it.
"""

from __future__ import annotations

import base64
import secrets

FILTER = "org.apache.spark.ui.JWSFilter"
KEY_CONF = f"spark.{FILTER}.param.secretKey"


def new_key() -> str:
    """A 256-bit HMAC key, base64url-encoded as the filter reads it."""
    return _b64(secrets.token_bytes(32))


def filter_settings(key: str) -> dict[str, str]:
    """The Spark settings that put a UI behind the filter (for a 0600 properties file, never argv)."""
    return {"spark.ui.filters": FILTER, KEY_CONF: key}


def bearer(key: str) -> str:
    """The Authorization header value the filter accepts: a JWS signed (HS256, by PyJWT) with `key`."""
    import jwt

    raw_key = base64.urlsafe_b64decode(key + "=" * (-len(key) % 4))
    return f"Bearer {jwt.encode({'sub': 'sparkscope'}, raw_key, algorithm='HS256')}"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
