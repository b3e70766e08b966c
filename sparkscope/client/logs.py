"""The `sparkscope` logger, and `swallowed()`: the one way the client ignores a failure on purpose.

The library adds no handlers (a notebook or script decides where records go). The CLI sends
warnings to the terminal as "notice: …" and everything, debug records included, to the client
log in the state dir; `--debug` shows the debug records on the terminal too.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

log = logging.getLogger("sparkscope")


@contextlib.contextmanager
def swallowed(what: str) -> Iterator[None]:
    """Ignore an Exception raised inside, after logging it at debug level with its traceback."""
    try:
        yield
    except Exception:
        log.debug("ignored a failure while %s", what, exc_info=True)
