"""One process of this machine at a time: an exclusive lock on a file, waited for with a deadline.

The lock is the kernel's (flock): it goes with the process that holds it, so a process killed while it holds
one leaves nothing locked behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from . import delete_guard

POLL_SECONDS = 0.05  # flock cannot be waited on with a deadline: it is tried again this often


class LockWaitExpired(Exception):
    """The lock was still held by another process when the deadline passed."""


@contextlib.contextmanager
def held(path: Path, timeout: float, on_wait: Callable[[float], None] | None = None) -> Iterator[None]:
    """Hold the lock of `path` (a 0600 file, made when missing) for the block. While another process holds it,
    wait up to `timeout` seconds, calling `on_wait(seconds waited)` each time round; then LockWaitExpired."""
    fd = delete_guard.open_fd(path, os.O_CREAT | os.O_RDWR)
    try:
        begin = time.monotonic()
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                waited = time.monotonic() - begin
                if waited > timeout:
                    raise LockWaitExpired(str(path)) from None
                if on_wait is not None:
                    on_wait(waited)
                time.sleep(POLL_SECONDS)
        yield
    finally:
        os.close(fd)  # releases the lock
