"""Ctrl-C during a wait in a notebook: IPython raises KeyboardInterrupt in the cell's thread wherever it happens to be.
Wherever it lands in the wait, the wait ends with StoppedWaiting (the query runs on), never with another error."""

from __future__ import annotations

import inspect
import sys
import threading

import pytest

from sparkscope.core.compat import waits
from sparkscope.core.compat.user_code import StoppedWaiting, UserCall

# the first line of _beside after it has said that it waits: the waiting loop, where Ctrl-C is expected
_LINES, _FIRST = inspect.getsourcelines(waits._beside)
_LOOP_FROM = _FIRST + next(i for i, line in enumerate(_LINES) if "log.debug(" in line) + 1


def _interrupted_after(events: int):
    """A trace function (this thread only) that raises KeyboardInterrupt at the given count of Python events (calls,
    lines, returns) once _beside has reached its waiting loop, as a signal's handler would there."""
    seen = {"armed": False, "count": 0}

    def trace(frame, event, arg):
        if not seen["armed"]:
            if frame.f_code is waits._beside.__code__ and event == "line" and frame.f_lineno >= _LOOP_FROM:
                seen["armed"] = True
            else:
                return trace
        seen["count"] += 1
        if seen["count"] == events:
            raise KeyboardInterrupt
        return trace

    return trace


@pytest.mark.parametrize("events", range(1, 41))
def test_ctrl_c_anywhere_in_a_notebook_s_wait_stops_the_wait_and_says_so(events):
    release = threading.Event()
    call = UserCall(executor=None, cancelled=threading.Event(), interrupted_here=True)  # type: ignore[arg-type]
    call.waiting_on = "beats"
    sys.settrace(_interrupted_after(events))
    try:
        with pytest.raises(StoppedWaiting) as stopped:
            waits._beside(call, lambda: release.wait(30))
    finally:
        sys.settrace(None)
        release.set()
    assert stopped.value.what == "beats"
    assert call.cancelled.is_set(), "the wait stopped, but the sliced wait beside it was not told to end"
