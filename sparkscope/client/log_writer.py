"""Writes the embedded server's output into its log with the server's token hidden.

pyspark's foreachBatch worker (the bounded sink's too) prints the server's local Connect URL, token
included, when it starts, and the JVM copies that into its output. The server's stdout and stderr
therefore go through this small process, which replaces the token with *** before anything reaches
the disk. It runs as a file (`python -I log_writer.py LOG`), needing nothing else of sparkscope, gets
the token through its environment (never its arguments), and ends when the server closes its output.
"""

from __future__ import annotations

import os
import sys

TOKEN_ENV = "SPARKSCOPE_LOG_REDACT"
MASK = b"***"


def copy(source, sink, secret: bytes) -> None:  # type: ignore[no-untyped-def]
    """Copy lines from `source` to `sink` (binary files), each with `secret` masked, flushing each."""
    for line in iter(source.readline, b""):
        sink.write(line.replace(secret, MASK) if secret else line)
        sink.flush()


def main() -> None:
    secret = os.environ.pop(TOKEN_ENV, "").encode()
    with open(sys.argv[1], "ab", buffering=0) as sink:
        copy(sys.stdin.buffer, sink, secret)


if __name__ == "__main__":
    main()
