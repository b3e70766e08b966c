"""The REPL's line for a listener callback that raised: each distinct warning said once, however often pyspark warns."""

from __future__ import annotations

import warnings

from sparkscope.core.compat.listener_warnings import ListenerWarnings


def _pyspark_warns(error: str) -> None:
    """What pyspark's listener bus does when a callback raises (pyspark/sql/connect/streaming/query.py)."""
    warnings.warn(f"Listener <__main__.Listener object at 0x7f00> threw an exception\n{error}", stacklevel=1)  # as pyspark: its own line


def test_a_warning_repeated_after_the_filters_changed_is_said_once_and_another_is_said_too():
    said: list[str] = []
    hook = ListenerWarnings(said.append)
    hook.install()
    try:
        _pyspark_warns("name 'print_progress' is not defined")
        with warnings.catch_warnings():  # as codeop does for each line typed: Python's registry starts again
            pass
        _pyspark_warns("name 'print_progress' is not defined")
        _pyspark_warns("name 'print_started' is not defined")
    finally:
        hook.uninstall()
    assert said == [
        "warning: Listener <__main__.Listener object at 0x7f00> threw an exception: name 'print_progress' is not defined",
        "warning: Listener <__main__.Listener object at 0x7f00> threw an exception: name 'print_started' is not defined",
    ]
