"""One process of this machine at a time: an exclusive lock on a file, waited for with a deadline.

The lock is the filelock library's: the kernel's flock on Linux and macOS, msvcrt's locking on Windows. Either goes
with the process that holds it, so a process killed while it holds one leaves nothing locked behind. Where neither
exists, filelock's soft lock (the file's existence) stands in.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from . import delete_guard

_KEEP_FILE: dict[str, Any] | None = None
WAIT_STEP = 0.25  # seconds between calls of on_wait while another process holds the lock


def _keeping_the_file() -> dict[str, Any]:
    """filelock 4 removes a lock file on release unless asked not to (3.x never did on Linux and macOS): sparkscope
    deletes nothing but through its guard, and a file removed while another process waits on it locks nothing."""
    import inspect

    from filelock import FileLock, SoftFileLock

    if issubclass(FileLock, SoftFileLock):  # no kernel lock here: the file's existence is the lock, removed to release
        return {}
    return {"preserve_lock_file": True} if "preserve_lock_file" in inspect.signature(FileLock).parameters else {}


class LockWaitExpired(Exception):
    """The lock was still held by another process when the deadline passed."""


@contextlib.contextmanager
def held(path: Path, timeout: float, on_wait: Callable[[float], None] | None = None) -> Iterator[None]:
    """Hold the lock of `path` (a 0600 file, made when missing) for the block. While another process holds it,
    wait up to `timeout` seconds, calling `on_wait(seconds waited)` each WAIT_STEP; then LockWaitExpired."""
    from filelock import FileLock, Timeout

    global _KEEP_FILE
    if _KEEP_FILE is None:
        _KEEP_FILE = _keeping_the_file()

    delete_guard.check(path, "overwrite")  # where the lock file lands, before it is made (and, for a soft lock,
    # removed: filelock's own way of releasing it)
    lock = FileLock(str(path), mode=0o600, **_KEEP_FILE)
    begin = time.monotonic()
    while True:
        waited = time.monotonic() - begin
        try:
            lock.acquire(timeout=max(0.0, min(WAIT_STEP, timeout - waited)) if on_wait else max(0.0, timeout))
            break
        except Timeout:
            waited = time.monotonic() - begin
            if waited >= timeout:
                raise LockWaitExpired(str(path)) from None
            if on_wait is not None:
                on_wait(waited)
    try:
        yield
    finally:
        lock.release()
