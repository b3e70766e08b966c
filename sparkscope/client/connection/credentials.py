"""gRPC credentials for a Spark Connect channel: TLS (trusting the given CAs, or gRPC's default roots), or gRPC's
local credentials to localhost, each with the token as call credentials when there is one."""

from __future__ import annotations

from typing import Any


def channel_credentials(token: str | None, root_certificates: bytes | None = None, local: bool = False) -> Any:
    """gRPC sends call credentials (the token) only over a channel it deems secure: TLS, or `local`
    credentials, which it accepts for loopback addresses only."""
    import grpc

    # without root certificates, ssl_channel_credentials() trusts GRPC_DEFAULT_SSL_ROOTS_FILE_PATH when set, as
    # pyspark's channel does
    creds = grpc.local_channel_credentials() if local else grpc.ssl_channel_credentials(
        root_certificates=root_certificates)
    if token:
        creds = grpc.composite_channel_credentials(creds, grpc.access_token_call_credentials(token))
    return creds
