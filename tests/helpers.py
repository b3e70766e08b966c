"""Helpers shared by tests (not fixtures)."""

from __future__ import annotations

import sys
from pathlib import Path


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
                   drop: tuple[str, ...] = ()):
    """The real `sparkscope` command, as a subprocess; its CompletedProcess (text). It never inherits a token
    from the environment (pass one in `env`); `home` is its XDG_STATE_HOME; `drop` leaves out more variables."""
    import os
    import subprocess

    full = {k: v for k, v in os.environ.items() if k not in ("SPARK_CONNECT_AUTHENTICATE_TOKEN", *drop)}
    if home is not None:
        full["XDG_STATE_HOME"] = str(home)
    full.update(env or {})
    return subprocess.run([sparkscope_bin(), *args], capture_output=True, text=True, timeout=timeout, env=full,
                          input=stdin)
