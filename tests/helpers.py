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


def run_sparkscope(*args: str, env: dict | None = None, timeout: float = 180):
    """The real `sparkscope` command, as a subprocess; its CompletedProcess (text)."""
    import os
    import subprocess

    return subprocess.run([sparkscope_bin(), *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})
