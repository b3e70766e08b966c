"""Pure logic of server/ports: no server."""

from __future__ import annotations





def test_a_free_server_port_is_outside_the_ephemeral_range_and_free():
    """A server restarted on its port after a crash found it taken by another client's outgoing
    connection (its source port, handed out from the ephemeral range) in the meantime."""
    import socket
    from pathlib import Path

    from sparkscope.server.ports import free_port

    ephemeral_low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    for _ in range(20):
        port = free_port()
        assert 20000 <= port < max(ephemeral_low, 21000)
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def test_wait_until_free_says_whether_a_port_was_let_go():
    import socket

    from sparkscope.server.ports import wait_until_free

    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    assert wait_until_free(port, timeout=0.2) is False  # still held: it says so after the timeout
    holder.close()
    assert wait_until_free(port, timeout=5) is True
