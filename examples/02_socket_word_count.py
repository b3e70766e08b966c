"""Seed 001: word count over a socket source.

The script opens its own line server (like `nc -lk 9999`) and types two lines into it; pass
--port to read from a server you run yourself instead (e.g. `nc -lk 9999`, then type).

    .venv/bin/python examples/02_socket_word_count.py [--port 9999]
"""

from __future__ import annotations

import socket
import threading
import time

from _common import example, show
from pyspark.sql import functions as F

LINES = b"apache spark\nspark streaming spark\n"


def line_server() -> int:
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = server.accept()
        conn.sendall(LINES)
        time.sleep(60)  # keep the connection open: a closed socket ends the stream
        conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return server.getsockname()[1]


def options(parser) -> None:
    parser.add_argument("--port", type=int, help="read lines from this port on localhost")
    parser.add_argument("--seconds", type=float, default=15, help="how long to count (default 15)")


with example(__doc__, options) as (ss, _, args):
    port = args.port or line_server()
    lines = ss.source.socket("127.0.0.1", port)
    words = lines.select(F.explode(F.split(lines.value, " ")).alias("word"))
    query = ss.start(words.groupBy("word").count(), "word_counts")
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        query.process_all_available()
        if not args.port and sum(n for _, n in ss.peek("word_counts").rows) == 5:
            break
        time.sleep(0.5)
    show("word counts", ss.peek("word_counts", order_by="word"))
    query.stop()
