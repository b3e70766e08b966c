"""Code written for pyspark runs as written in the REPL, `-c`, `-f` and `-i`: the pyspark methods whose answer a
Connect client in a REPL must give differently, wrapped once per process (client/_pyspark/ only wraps them; the
habits decide, one concern a module):

- sessions.py: `getOrCreate()` gives the REPL's session; `spark.stop()` closes it and a new one takes its place.
- waits.py: waits on a query never stop it; Ctrl-C ends the wait.
- start.py (with console.py and kafka.py): console sinks print here, Kafka through what the server has, a fresh
  checkpoint for a query that names none.
- listener_warnings.py: a listener that raises is said above the prompt.

Only the calls that the user's code makes in the executor's worker are affected (user_code.py).
"""

from __future__ import annotations

import threading

from ...client import _pyspark
from . import console, kafka, sessions, start, waits

_installed = False
_install_lock = threading.Lock()


def install() -> None:
    """Wrap the pyspark methods, once per process (once a session is open: pyspark is imported then)."""
    global _installed
    with _install_lock:
        if _installed:
            return
        classes = _pyspark.pyspark_classes()
        _pyspark.intercept(classes["ClassicBuilder"], "getOrCreate", sessions.get_or_create)
        _pyspark.intercept(classes["ConnectBuilder"], "getOrCreate", sessions.get_or_create)
        _pyspark.intercept(classes["StreamingQuery"], "awaitTermination", waits.await_termination)
        _pyspark.intercept(classes["StreamingQuery"], "processAllAvailable", waits.process_all_available)
        _pyspark.intercept(classes["StreamingQuery"], "stop", console.stop_query)
        _pyspark.intercept(classes["StreamingQueryManager"], "awaitAnyTermination", waits.await_any_termination)
        _pyspark.intercept(classes["ConnectSession"], "stop", sessions.stop_session)
        _pyspark.intercept(*_pyspark.connect_start_method(), start.start)
        for reader in _pyspark.connect_readers():
            _pyspark.intercept(reader, "load", kafka.load)
        _pyspark.intercept(*_pyspark.connect_save_method(), kafka.save)
        _installed = True
