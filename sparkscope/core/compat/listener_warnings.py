"""A StreamingQueryListener callback of the user's that raises: pyspark warns from its listener thread at each event,
and the REPL says each distinct warning once (as Python's default filter means to), in one line above the
prompt. Only while the REPL runs: its hook is taken off again when the REPL ends, and every other warning goes
where it went before."""

from __future__ import annotations

import re
import threading
import warnings
from collections.abc import Callable
from typing import Any

LISTENER_FAILED = r"Listener .* threw an exception"  # pyspark's warning, from its listener thread



class ListenerWarnings:
    """Shows pyspark's warnings of a listener that raised through `say`, from install() to uninstall()."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self._say = say
        self._shown: Any = None  # warnings.showwarning before install()
        self._filters: Any = None
        # What was said, so that each distinct warning is said once. Python's default filter alone does not hold:
        # any warnings.catch_warnings() in the process (codeop compiling each line typed, pyspark parsing a UDF)
        # bumps the filters' version, and the same warning shows again at the listener's next event.
        self._said: set[str] = set()
        self._lock = threading.Lock()  # pyspark warns from its listener thread

    def install(self) -> None:
        if self._shown is not None:
            return
        self._shown, self._filters = warnings.showwarning, list(warnings.filters)
        warnings.filterwarnings("default", message=LISTENER_FAILED, category=UserWarning)  # before pyspark's ignore
        warnings.showwarning = self._show

    def uninstall(self) -> None:
        if self._shown is None:
            return
        if warnings.showwarning == self._show:  # unless somebody replaced it since: theirs stays
            warnings.showwarning = self._shown
        warnings.filters[:] = self._filters  # type: ignore[index]  # a list at run time; typeshed says Sequence
        self._shown = self._filters = None

    def _show(self, message: Any, category: Any, filename: str, lineno: int, file: Any = None,
              line: Any = None) -> None:
        head, _, error = str(message).partition("\n")
        if re.match(LISTENER_FAILED, head):
            said = f"warning: {head}: {' '.join(error.split()) or 'no message'}"
            with self._lock:
                first = said not in self._said
                self._said.add(said)
            if first:
                self._say(said)
            return
        self._shown(message, category, filename, lineno, file, line)
