"""Connecting: to the server the user configured (--remote, SPARK_REMOTE, a profile), or else to the embedded
server of this machine, started here when it is not running. `sparkscope.connect()` is this module's; the SDK's
Session (sparkscope.client) never starts a process, and sees the embedded server through EmbeddedServer."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..client.errors import ConfigError, SparkscopeError
from ..client.logs import log, swallowed
from ..client.connection.remote import Target, resolve
from ..client.session import KEEPALIVE_SECONDS, Session
from .info import ServerInfo
from .local import UI_READERS, LocalServer


class EmbeddedServer:
    """The embedded server of the state dir `home`, as a Session looks at it (client.session_server.LocalServerView): reads
    its state file and the processes of this machine, and never starts, stops or deletes anything."""

    def __init__(self, home: Path | None = None):
        self._server = LocalServer(home)

    def _serving(self, port: int) -> ServerInfo | None:
        """The embedded server, when it is alive and serves `port` (one read of its state file)."""
        info = self._server.alive()
        return info if info is not None and info.port == port else None

    def ui(self, port: int) -> str | None:
        info = self._serving(port)
        if info is None:
            return None
        return f"{info.ui_url}: {UI_READERS}" if info.ui_url else "off (sparkscope server start --ui turns it on)"

    def serves(self, port: int) -> bool:
        return self._serving(port) is not None

    def restarted_under(self, port: int, token: str | None) -> bool:
        info = self._server.alive()
        return info is not None and info.port == port and info.token != token

    def busy_tasks(self, port: int, window: float) -> list[float] | None:
        info = self._serving(port)
        return self._server.busy_tasks(window, info) if info is not None else None

    def out_of_memory_exit(self) -> SparkscopeError | None:
        return self._server.out_of_memory_exit()


def open_session(target: Target, *, server_home: Path | None = None, **options: Any) -> Session:
    """Session.open, seeing the embedded server of `server_home` (for :session's UI row, the restart and
    out-of-memory explanations, and the tasks a cancel left running)."""
    return Session.open(target, server_home=server_home, here=EmbeddedServer(server_home), **options)


def reattach(target: Target, *, server_home: Path | None = None, **options: Any) -> Session:
    return Session.reattach(target, server_home=server_home, here=EmbeddedServer(server_home), **options)


def resolve_target(remote: str | None = None, *, token: str | None = None, profile: str | None = None,
                   session_id: str | None = None, start_server: bool = True,
                   server_home: Path | None = None,
                   on_server_wait: Callable[[float, str], None] | None = None, port: int | None = None) -> Target:
    """The endpoint to use; starts (or reuses) the embedded local server when nothing is configured
    (on `port`, or 15002 or the next free port after it)."""
    target = resolve(remote, profile=profile, token=token, session_id=session_id)
    server = LocalServer(server_home)
    if target is not None and port is not None:
        log.warning("--port names the embedded server's port, and is not used: sparkscope connects to %s",
                    target.display)
    if target is not None:
        if target.token is None and target.on_this_machine:
            # our own embedded server, named by URL: its token is in our state dir (like Jupyter's)
            info = server.running()
            if info is not None and info.port == target.port and info.token:
                target = replace(target, host="localhost", token=info.token, token_source="state")
        return target
    info = server.running()
    if info is not None and port is not None and info.port != port:
        raise ConfigError(f"The local server already runs on port {info.port}, not {port}",
                          "Leave out --port, or stop it first: sparkscope server stop")
    if info is not None and not info.ready:  # another sparkscope is starting it (`server start &`): wait for it
        info = server.start(port=port, on_wait=on_server_wait, token=token)
    if info is None:
        if not start_server:
            raise ConfigError("No remote is configured and the local server is not running",
                              "Start it with: sparkscope server start")
        loading = _import_pyspark_meanwhile()
        try:
            info = server.start(port=port, on_wait=on_server_wait, token=token)
        finally:
            loading.join()  # pyspark is imported by one thread at a time (a second one can meet half a module)
    return info.target(token).with_session(session_id)


def _import_pyspark_meanwhile() -> threading.Thread:
    """Import pyspark's Connect client (a second of pandas, pyarrow and gRPC) while the server starts,
    instead of after it answers."""
    import importlib

    def load() -> None:
        with swallowed("importing pyspark ahead of the session"):
            importlib.import_module("pyspark.sql.connect.session")

    loading = threading.Thread(target=load, name="sparkscope-import", daemon=True)
    loading.start()
    return loading


def connect(remote: str | None = None, *, token: str | None = None, profile: str | None = None,
            session_id: str | None = None, start_server: bool = True, timeout: float = 5.0,
            server_home: Path | None = None, keepalive: float = KEEPALIVE_SECONDS,
            ca_file: str | None = None) -> Session:
    """Connect to Spark: `remote` URL > SPARK_REMOTE > profile > the embedded local server.

    `ca_file`: a PEM file of the CAs to trust for TLS (`;use_ssl=true`), instead of the profile's
    `ca_file` or gRPC's default roots. Fails within `timeout` seconds when the server cannot be reached.
    """
    target = resolve_target(remote, token=token, profile=profile, session_id=session_id,
                            start_server=start_server, server_home=server_home)
    if ca_file:
        target = replace(target, ca_file=ca_file)
    return Session.open(target, timeout=timeout, keepalive=keepalive, server_home=server_home,
                        here=EmbeddedServer(server_home))
