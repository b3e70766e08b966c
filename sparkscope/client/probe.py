"""One real RPC against a Spark Connect server, with a deadline: is it there, and which Spark is it?

pyspark's own retry policy keeps retrying a refused connection for many minutes; an interactive
tool has to know within seconds. This asks AnalyzePlan(spark_version) directly over gRPC and then
releases the throwaway session it used.
"""

from __future__ import annotations

import contextlib
import socket
import uuid

from .errors import AuthenticationFailed, ConnectionFailed
from .remote import Target


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _channel(target: Target):
    import grpc

    endpoint = f"{target.host}:{target.port}"
    if target.use_ssl:
        creds = grpc.ssl_channel_credentials()
        if target.token:
            creds = grpc.composite_channel_credentials(creds, grpc.access_token_call_credentials(target.token))
        return grpc.secure_channel(endpoint, creds)
    return grpc.insecure_channel(endpoint)


def probe(target: Target, timeout: float = 3.0) -> str:
    """Return the server's Spark version, or raise ConnectionFailed / AuthenticationFailed."""
    import grpc
    from pyspark.sql.connect.proto import base_pb2 as pb
    from pyspark.sql.connect.proto import base_pb2_grpc as pb_grpc

    metadata = []
    if target.token and not target.use_ssl:
        metadata.append(("authorization", f"Bearer {target.token}"))
    session_id = str(uuid.uuid4())
    user = pb.UserContext(user_id="sparkscope-probe")
    channel = _channel(target)
    try:
        stub = pb_grpc.SparkConnectServiceStub(channel)
        request = pb.AnalyzePlanRequest(session_id=session_id, user_context=user, client_type="sparkscope-probe")
        request.spark_version.SetInParent()
        try:
            response = stub.AnalyzePlan(request, timeout=timeout, metadata=metadata)
        except grpc.RpcError as exc:
            code = exc.code() if hasattr(exc, "code") else None
            if code == grpc.StatusCode.UNAUTHENTICATED or code == grpc.StatusCode.PERMISSION_DENIED:
                hint = (
                    "Pass the server's token with ;token=… or SPARK_CONNECT_AUTHENTICATE_TOKEN"
                    if not target.token
                    else "The token does not match the server's spark.connect.authenticate.token"
                )
                raise AuthenticationFailed(f"{target.display} refused the connection: authentication failed", hint) from None
            raise ConnectionFailed(
                f"Cannot reach a Spark Connect server at {target.host}:{target.port}",
                "Check the URL and that the server is running (sparkscope server status)",
                error_class=str(code),
            ) from None
        with contextlib.suppress(grpc.RpcError):  # the probe's session is released best-effort
            stub.ReleaseSession(
                pb.ReleaseSessionRequest(session_id=session_id, user_context=user), timeout=timeout, metadata=metadata
            )
        return response.spark_version.version
    finally:
        channel.close()


def try_probe(target: Target, timeout: float = 3.0) -> str | None:
    try:
        return probe(target, timeout)
    except ConnectionFailed:
        return None
