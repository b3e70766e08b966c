"""Tokens never leave in clear: every text sparkscope shows, logs or raises goes through redact().

Pure logic with no imports from the rest of the client, so errors.py can use it too.
"""

from __future__ import annotations

import re
import threading
import urllib.parse

REDACTED = "***"

# token=VALUE up to the next separator; "…" (our own hints) and "***" are left as they are. The patterns
# are compiled on first use (re caches them), not at import: every start imports this module.
_TOKEN_PARAM = r"(?i)(token\s*=\s*)(?!…|\*\*\*)[^;'\"\s,)}\]]+"
_BEARER = r"(Bearer\s+)[^\s'\";,]+"
_SECRETS: set[str] = set()
_SECRETS_LOCK = threading.Lock()


def remember_secret(secret: str) -> None:
    """Every token this process has seen; redact() hides them wherever they turn up."""
    if secret and len(secret) >= 4:
        with _SECRETS_LOCK:
            _SECRETS.add(secret)
            _SECRETS.add(urllib.parse.quote(secret, safe=""))


def redact(text: str) -> str:
    """Hide tokens in any text (URLs, pyspark's and gRPC's messages, tracebacks): the value of every
    token=… parameter, every bearer credential, and every token this process knows, anywhere."""
    if not text:
        return text
    with _SECRETS_LOCK:
        secrets = sorted(_SECRETS, key=len, reverse=True)
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    text = re.sub(_TOKEN_PARAM, lambda m: m.group(1) + REDACTED, text)
    return re.sub(_BEARER, lambda m: m.group(1) + REDACTED, text)


__all__ = ["REDACTED", "redact", "remember_secret"]
