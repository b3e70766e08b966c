"""Helpers shared by tests (not fixtures)."""

from __future__ import annotations

import sys
from pathlib import Path


def in_ci() -> bool:
    """Whether this run is CI's (CI=true): a prerequisite missing there fails the test instead of skipping it."""
    import os

    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def needs(missing: str | None):
    """A test that needs something of the machine (a JDK, nginx, Chromium, root): where `missing` says what is not
    here, it skips in one line, and under CI=true it fails with that line instead (a test that skips in CI did not
    run; .ci/run installs what CI needs)."""
    import functools

    import pytest

    def decorate(test):
        if missing is None:
            return test
        if not in_ci():
            return pytest.mark.skip(reason=missing)(test)

        @functools.wraps(test)
        def fails(*args, **kwargs):
            pytest.fail(f"CI=true, and this test cannot run: {missing} (.ci/run installs what CI needs)")

        return fails

    return decorate


def skip_or_fail(missing: str) -> None:
    """Inside a test: skip in one line because `missing` is not here, or fail with it under CI=true (see needs)."""
    import pytest

    if in_ci():
        pytest.fail(f"CI=true, and this test cannot run: {missing} (.ci/run installs what CI needs)")
    pytest.skip(missing)


def sparkscope_bin() -> str:
    return str(Path(sys.executable).parent / "sparkscope")


def wait_for(predicate, timeout: float = 30.0, every: float = 0.1, what: str = ""):
    """Poll `predicate` until it returns something true (returned), or fail after `timeout` seconds."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)  # polling a condition with a deadline, not synchronising by time
    raise AssertionError(f"timed out after {timeout}s waiting for {what or predicate}")


def run_sparkscope(*args: str, env: dict | None = None, timeout: float = 180, home=None, stdin: str | None = None,
                   drop: tuple[str, ...] = (), cwd=None):
    """The real `sparkscope` command, as a subprocess; its CompletedProcess (text). It never inherits a token
    from the environment (pass one in `env`); `home` is its XDG_STATE_HOME; `drop` leaves out more variables."""
    import os
    import subprocess

    full = {k: v for k, v in os.environ.items() if k not in ("SPARK_CONNECT_AUTHENTICATE_TOKEN", *drop)}
    if home is not None:
        full["XDG_STATE_HOME"] = str(home)
    full.update(env or {})
    return subprocess.run([sparkscope_bin(), *args], capture_output=True, text=True, timeout=timeout, env=full,
                          input=stdin, cwd=cwd)


class LineServer:
    """`nc -lk PORT` for Spark's socket source: waits for it to connect, then sends each line it is given."""

    def __init__(self) -> None:
        import socket
        import threading

        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connected = threading.Event()
        self.connection = None
        self._first: list[str] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import contextlib

        with contextlib.suppress(OSError):  # closed before anybody connected
            self.connection, _ = self.listener.accept()
            for line in self._first:
                self.connection.sendall((line + "\n").encode())
            self.connected.set()

    def send_on_connect(self, line: str) -> None:
        """Send `line` to each reader as soon as it connects (the first only: a socket source reads one)."""
        self._first.append(line)

    def send(self, line: str) -> None:
        assert self.connected.wait(60), "Spark's socket source never connected"
        assert self.connection is not None
        self.connection.sendall((line + "\n").encode())

    def close(self) -> None:
        for sock in (self.connection, self.listener):
            if sock is not None:
                sock.close()

    def __enter__(self) -> "LineServer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
