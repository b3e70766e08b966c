"""Writes the embedded server's output into its log with the server's tokens hidden.

pyspark's foreachBatch worker (the bounded sink's too) prints the server's local Connect URL, token
included, when it starts, and the JVM copies that into its output. The server's stdout and stderr
therefore go through this small process, which replaces each token (the server's own, and the one its Python
workers call back with) with *** before anything reaches the disk. It runs as a file (`python -I log_writer.py
LOG`), needing nothing of sparkscope but its delete guard (every write of sparkscope's goes through it), gets the
tokens through its environment (one a line, never its arguments), and ends when the server closes its output.

A server that runs for days must not fill the disk with its log: past MAX_BYTES the log is renamed to
LOG.1 (replacing the one before) and a new one begun, so at most twice that is kept.
"""

from __future__ import annotations

import os
import sys

from sparkscope.client import delete_guard

TOKEN_ENV = "SPARKSCOPE_LOG_REDACT"
MASK = b"***"
MAX_BYTES = 64 * 1024 * 1024


def copy(source, path: str, secrets: list[bytes], max_bytes: int = MAX_BYTES) -> None:  # type: ignore[no-untyped-def]
    """Append the lines of `source` (a binary file) to the log at `path`, each with every one of `secrets` masked
    and flushed at once; past `max_bytes` the log moves to `path`.1 and a new one begins."""
    sink = delete_guard.open_file(path, "ab", buffering=0)  # replaced when the log is rotated
    try:
        for line in iter(source.readline, b""):
            if sink.tell() + len(line) > max_bytes and sink.tell() > 0:
                sink.close()
                delete_guard.replace(path, path + ".1")
                sink = delete_guard.open_file(path, "ab", buffering=0)
                os.chmod(path, 0o600)
            for secret in secrets:
                line = line.replace(secret, MASK)
            sink.write(line)
    finally:
        sink.close()


def main() -> None:
    secrets = [secret.encode() for secret in os.environ.pop(TOKEN_ENV, "").splitlines() if secret]
    copy(sys.stdin.buffer, sys.argv[1], secrets)


if __name__ == "__main__":
    main()
