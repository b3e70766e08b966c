"""One real RPC against a Spark Connect server, with a deadline: is it there, and which Spark is it?

pyspark's own retry policy keeps retrying a refused connection for many minutes; an interactive
tool has to know within seconds. This asks AnalyzePlan(spark_version) directly over gRPC and then
releases the throwaway session it used.
"""

from __future__ import annotations

import contextlib
import socket
import uuid
from typing import Any

from .._pyspark import connect_service
from .credentials import channel_credentials
from ..errors import AuthenticationFailed, ConnectionFailed
from ..error_reading import answered_not_grpc, certificate_untrusted, jar_error
from .remote import Target


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _channel(target: Target) -> Any:
    """The channel pyspark's ChannelBuilder.toChannel would build (checked against pyspark 4.3.0): plain
    without a token; gRPC local credentials to 'localhost' (loopback only); TLS everywhere else.
    The token rides as call credentials, which gRPC refuses to send over a channel it deems insecure."""
    import grpc

    endpoint = f"{target.host}:{target.port}"
    if not target.use_ssl and not target.token:
        return grpc.insecure_channel(endpoint)
    creds = channel_credentials(target.token, target.root_certificates(), local=target.token_in_clear)
    return grpc.secure_channel(endpoint, creds)


def probe(target: Target, timeout: float = 3.0) -> str:
    """Return the server's Spark version, or raise ConnectionFailed / AuthenticationFailed."""
    import grpc

    session_id = str(uuid.uuid4())
    channel = _channel(target)
    try:
        pb, stub = connect_service(channel)
        user = pb.UserContext(user_id="sparkscope-probe")
        request = pb.AnalyzePlanRequest(session_id=session_id, user_context=user, client_type="sparkscope-probe")
        request.spark_version.SetInParent()
        try:
            response = stub.AnalyzePlan(request, timeout=timeout)
        except grpc.RpcError as exc:
            raise _probe_error(target, exc) from None
        with contextlib.suppress(grpc.RpcError):  # the probe's session is released best-effort
            stub.ReleaseSession(pb.ReleaseSessionRequest(session_id=session_id, user_context=user), timeout=timeout)
        return response.spark_version.version
    finally:
        channel.close()


def _probe_error(target: Target, exc: Any) -> ConnectionFailed:
    import grpc

    code = exc.code() if hasattr(exc, "code") else None
    details = (exc.details() if hasattr(exc, "details") else "") or ""
    where = f"{target.host}:{target.port}"
    if code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
        said = jar_error(details)  # a server sparkscope started says which user it refused the token to act as
        if isinstance(said, ConnectionFailed) and said.code == "not_your_user":
            return said
        hint = ("Pass the server's token with ;token=… or SPARK_CONNECT_AUTHENTICATE_TOKEN" if not target.token else
                "The token is neither the server's (spark.connect.authenticate.token) nor a user's it knows (sparkscope "
                "server users)")
        return AuthenticationFailed(f"{target.display} refused the connection: authentication failed", hint)
    if code == grpc.StatusCode.DEADLINE_EXCEEDED and port_open(target.host, target.port, timeout=1):
        return ConnectionFailed(f"{where} accepted the connection but did not answer as a Spark Connect server",
                                "Check the port, and whether it expects TLS (;use_ssl=true) or plaintext",
                                error_class=str(code))
    if target.needs_tls and port_open(target.host, target.port, timeout=1):
        why = ("a token is sent only over TLS, except to host 'localhost'" if not target.use_ssl
               else "use_ssl=true was asked for")
        if certificate_untrusted(details):
            return ConnectionFailed(f"The TLS certificate of {where} is not trusted",
                                    "Trust the CA that signed it: ca_file = \"/path/ca.pem\" in the profile, or "
                                    "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH=/path/ca.pem", code="tls_untrusted",
                                    error_class=str(code))
        return ConnectionFailed(f"The TLS handshake with {where} failed ({why})",
                                "If the server speaks plaintext, connect to sc://localhost:PORT on this machine, "
                                "or put a TLS proxy in front of it",
                                error_class=str(code))
    if code == grpc.StatusCode.UNAVAILABLE and answered_not_grpc(details):
        return ConnectionFailed(f"{where} answered, but not as a Spark Connect (gRPC) server",
                                "Check the port: a web server or another service listens there", code="not_grpc",
                                error_class=str(code))
    if code == grpc.StatusCode.UNAVAILABLE and not target.use_ssl and port_open(target.host, target.port, timeout=1):
        return ConnectionFailed(f"{where} closed the connection without answering: it may expect TLS",
                                "Add ;use_ssl=true to the URL if it does", code="plaintext_refused",
                                error_class=str(code))
    return ConnectionFailed(f"Cannot reach a Spark Connect server at {where}",
                            "Check the URL and that the server is running (sparkscope.LocalServer().status(), for the "
                            "embedded server)", code="server_not_found",
                            error_class=str(code))


def try_probe(target: Target, timeout: float = 3.0) -> str | None:
    try:
        return probe(target, timeout)
    except ConnectionFailed:
        return None
