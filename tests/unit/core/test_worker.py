from sparkscope.client.errors import Cancelled
from sparkscope.core.worker import cancel_notice


def test_ctrl_c_on_a_wait_in_the_repl_says_the_query_keeps_running():
    cancel = Cancelled(waited_on="console_1", by_keyboard=True)
    assert cancel_notice(cancel) == "Stopped waiting for console_1; it keeps running (:stop console_1 ends it)."


def test_ctrl_c_on_a_wait_in_a_script_says_the_script_stopped_and_promises_nothing_it_will_not_keep():
    cancel = Cancelled(waited_on="console_1", by_keyboard=True)
    assert cancel_notice(cancel, interactive=False) == ("KeyboardInterrupt: the script stopped while waiting for "
                                                        "console_1.")
    assert cancel_notice(Cancelled(by_keyboard=True), interactive=False) == "KeyboardInterrupt: the script stopped."


def test_a_cancel_by_the_server_in_a_script_is_not_called_a_keyboard_interrupt():
    assert cancel_notice(Cancelled(), interactive=False).startswith("Cancelled:")


def test_ctrl_c_that_comes_after_the_cell_finished_says_so_and_keeps_its_result(monkeypatch):
    """Ctrl-C seen only once the cell had ended (a long C call holds the interpreter, so the signal waits): the cell
    ran to its end, so its value stands, and the note says so instead of claiming it stopped. The grace a cell has to
    end is made long here, so that the test waits for the cell's end (a fact) and not for a busy machine's
    scheduler: with 50 ms it failed on a loaded CI machine."""
    import _thread
    import io
    import threading
    from types import SimpleNamespace

    from sparkscope.core import worker
    from sparkscope.core.worker import FINISHED_FIRST, STILL_RUNNING, run_in_worker
    from tests.helpers import wait_for

    monkeypatch.setattr(worker, "FINISH_GRACE", 60.0)

    ctx = SimpleNamespace(session_or_none=lambda: None, interactive=True, err=io.StringIO(), cancelled=None,
                          asking=threading.Event())

    def cell() -> str:
        # once the main thread waits on it (the fact: it said the cell still runs), Ctrl-C, seen by the main thread
        # at its next instruction, after this returns
        wait_for(lambda: STILL_RUNNING in ctx.err.getvalue(), timeout=30, what="the main thread to wait")
        _thread.interrupt_main()
        return "its value"

    assert threading.current_thread() is threading.main_thread()
    assert run_in_worker(ctx, cell, user_code=True) == "its value"
    assert ctx.err.getvalue() == f"{STILL_RUNNING}\n{FINISHED_FIRST}\n"


def test_ctrl_c_while_a_cell_runs_stops_it_and_leaves_the_sigint_handler_as_it_was():
    """Ctrl-C is a flag while the worker is waited on (a KeyboardInterrupt raised inside Event.wait's lock handling
    could leave the lock taken, and hang the next wait): the cell still stops, and SIGINT's handler is given back."""
    import _thread
    import io
    import signal
    import threading
    from types import SimpleNamespace

    import pytest

    from sparkscope.core.worker import STILL_RUNNING, run_in_worker
    from tests.helpers import wait_for

    ctx = SimpleNamespace(session_or_none=lambda: None, interactive=True, err=io.StringIO(), cancelled=None,
                          asking=threading.Event())
    def cell() -> None:
        wait_for(lambda: STILL_RUNNING in ctx.err.getvalue(), timeout=30, what="the main thread to wait")
        _thread.interrupt_main()
        count = 0
        while True:  # a Python loop: the KeyboardInterrupt raised in this thread stops it
            count += 1

    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(Cancelled) as stopped:
        run_in_worker(ctx, cell, user_code=True)
    assert stopped.value.cell_stopped is True and stopped.value.by_keyboard
    assert signal.getsignal(signal.SIGINT) is before


def test_no_timer_prints_into_a_question_and_it_counts_again_from_the_answer(monkeypatch):
    """`:restart --fresh` asks [y/N] inside its command: the user is slow, not the server, so "(still running…)"
    must not land on the question's line; once answered, the command is timed afresh."""
    import io
    import threading
    import time
    from types import SimpleNamespace

    from sparkscope.core import worker

    from tests.helpers import wait_for

    class Looked(threading.Event):
        """The question's flag, counting how often the wait looked at it."""

        looks = 0

        def is_set(self) -> bool:
            self.looks += 1
            return super().is_set()

    # long enough that the command's return after the answer is not itself "slow" on a busy machine (at 50 ms the
    # notice came between the answer and the return when CI's two workers were loaded)
    monkeypatch.setattr(worker, "SLOW_NOTICE", 1.0)
    ctx = SimpleNamespace(session_or_none=lambda: None, interactive=True, err=io.StringIO(), cancelled=None,
                          asking=Looked())
    said_while_asking: list[str] = []

    def command() -> str:
        ctx.asking.set()  # as Executor.confirm does around the question
        asked = time.monotonic()
        wait_for(lambda: time.monotonic() - asked > 4 * worker.SLOW_NOTICE, what="a slow answer")
        looks = ctx.asking.looks  # the fact: the wait looked again, well past the notice's time, while asking
        wait_for(lambda: ctx.asking.looks >= looks + 3, what="the wait to look at the question again")
        said_while_asking.append(ctx.err.getvalue())
        ctx.asking.clear()
        return "answered"

    assert worker.run_in_worker(ctx, command) == "answered"
    assert said_while_asking == [""] and ctx.err.getvalue() == ""  # it ended before the notice's time came again
