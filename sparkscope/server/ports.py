"""Ports of this machine, one helper each: whether a port is free, waiting for one to be, a random one for a
server, and the embedded server's own (15002, or the next free one)."""

from __future__ import annotations

import random
import socket
import time

from ..client.connection.probe import port_open
from ..client.connection.remote import DEFAULT_PORT
from ..client.errors import ServerError
from ..client.logs import log as logger
from ..client.processes import ephemeral_port_low
from .sizing import check_port


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def usable(port: int) -> bool:
    return not port_open("127.0.0.1", port, timeout=0.3) and _port_free(port)


def wait_until_free(port: int, timeout: float = 5.0) -> bool:
    """Until nothing holds `port` (False if something still does after `timeout` seconds). A JVM that has
    just ended shows as a zombie while its other threads still exit; its listening socket closes with the
    last of them (27 ms after SIGKILL on a quiet machine)."""
    deadline = time.monotonic() + timeout
    while not usable(port):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def next_free_port(preferred: int, tries: int = 50) -> int:
    """`preferred` if nothing listens there, else the next port up that is free (then any free one)."""
    for port in range(preferred, min(preferred + tries, 65536)):
        if usable(port):
            return port
    return free_port()


SERVER_PORTS = (20000, 32768)  # below Linux's default ephemeral range (32768-60999)


def free_port() -> int:
    """A free port for a server, outside the kernel's ephemeral range when it can: a port from that range
    is also every outgoing connection's source port, so a server that is restarted on its port (after
    a crash, with its queries) could find it taken by some client's connection in the meantime."""
    low, high = _server_port_range()
    for _ in range(100):
        port = random.randrange(low, high)
        if usable(port):
            return port
    with socket.socket() as sock:  # everything there taken: any port the kernel gives
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _server_port_range() -> tuple[int, int]:
    low, high = SERVER_PORTS
    ephemeral_low = ephemeral_port_low()
    if ephemeral_low is not None:
        high = min(high, ephemeral_low)
    return low, max(high, low + 1000)


def usable_port() -> int:
    """A port nothing listens on, for a process we are about to start."""
    return next_free_port(free_port())


def port_for_server(port: int | None) -> int:
    """The port asked for, checked; or 15002, else the next free one after it."""
    if port is None:
        port = next_free_port(DEFAULT_PORT)
        if port != DEFAULT_PORT:
            logger.warning("Port %d is taken by another program or server; the embedded server uses "
                           "port %d (sparkscope --port N picks one)", DEFAULT_PORT, port)
    check_port(port)
    if not usable(port):
        raise ServerError(f"Port {port} is already in use by another program", "Pick another port with --port N")
    return port
