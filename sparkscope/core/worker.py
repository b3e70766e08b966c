"""Running one input in a worker thread: Ctrl-C and a deadline return at once, the input's Spark calls are
interrupted by their operation tag (never interruptAll, which would stop streams), and a call that still does not
end is abandoned."""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any, Protocol

from ..client.deadline import Call
from ..client.errors import Cancelled, DeadlineExceeded
from ..client.queries.query import AWAIT_SLICE
from .context import CommandContext

CANCEL_WAIT = 0.5
FINISH_GRACE = 0.05  # after Ctrl-C, a cell that ends within this had run to its end: it is not called stopped  # after Ctrl-C, how long a command may take to wind down before it is abandoned
SLOW_NOTICE = 2.0
STILL_RUNNING = "(still running; Ctrl-C cancels it, and streaming queries keep running)"
CANCELLED = "Cancelled: the operation was interrupted; streaming queries keep running."
CELL_STOPPED = "KeyboardInterrupt: the cell stopped; streaming queries keep running."
CELL_BLOCKED = ("KeyboardInterrupt: the cell is blocked in a call that Ctrl-C cannot interrupt (a sleep, a read); it "
                "stops when that call returns, and nothing after it runs. Streaming queries keep running.")
FINISHED_FIRST = "note: the cell had finished when Ctrl-C came: everything in it ran."
ABANDONED = ("Cancelled: the server did not answer, so the call was abandoned; "
             "streaming queries keep running on the server.")


STUCK_SAMPLE = 2.0  # seconds of CPU sampled after a cancel


def cancel_notice(cancel: Cancelled, interactive: bool = True) -> str:
    """The line shown when Ctrl-C (or the deadline) ended an input. In a script, Ctrl-C ends the script, as it
    ends `python FILE`, and the script's exit then stops what it started: no line may promise otherwise."""
    if not interactive and cancel.by_keyboard:
        waiting = f" while waiting for {cancel.waited_on}" if cancel.waited_on else ""
        return f"KeyboardInterrupt: the script stopped{waiting}."
    if cancel.waited_on == "any query":
        return "Stopped waiting; the queries keep running (:stop NAME ends one)."
    if cancel.waited_on:
        return f"Stopped waiting for {cancel.waited_on}; it keeps running (:stop {cancel.waited_on} ends it)."
    if cancel.cell_stopped is not None:
        return CELL_STOPPED if cancel.cell_stopped else CELL_BLOCKED
    return ABANDONED if cancel.abandoned else CANCELLED


def stuck_tasks_note(session: Any) -> str | None:
    """After Ctrl-C cancelled a Spark job on the embedded server: the tasks Spark marked killed that still compute
    (an operator that never checks its kill flag runs on to the end of its partition), or None."""
    from .rendering.render import cores

    busy = session.server.busy_tasks(window=STUCK_SAMPLE)  # a task that obeys the cancel ends early in the sample
    if not busy:
        return None
    many = len(busy) != 1
    return (f"note: Spark did not stop {len(busy)} task{'s' if many else ''} of the cancelled command: "
            f"{cores(sum(busy))} stay busy until {'each' if many else 'it'} reaches the end of its partition "
            "(some operators, such as a sort's top-N, never check for a cancel). To end them now: sparkscope server "
            "stop, then sparkscope server start --restore (queries resume from their checkpoints). :session shows "
            "whether they still run.")


def raise_in(call: Call[Any], exc_type: type[BaseException]) -> None:
    """Raise `exc_type` in the call's thread at its next Python instruction (PyThreadState_SetAsyncExc). The user's
    cell runs in a worker thread, where SIGINT never lands: this is how Ctrl-C stops it, as Python's REPL does,
    instead of leaving it running behind the next prompt. A thread blocked in C (a sleep, a socket read) gets it
    when that call returns."""
    import ctypes

    if call.thread.ident is not None and call.running:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(call.thread.ident), ctypes.py_object(exc_type))


def command_timeout() -> float | None:
    from .settings import repl_setting

    value = float(repl_setting("command_timeout"))  # type: ignore[arg-type]
    return value if value > 0 else None


class CommandRunner(CommandContext, Protocol):
    """The executor, as the worker sees it: the one who starts each command's cancel event, and who says when a
    question waits for the user."""

    cancelled: threading.Event
    asking: threading.Event


def run_in_worker(ctx: CommandRunner, work: Callable[[], Any], *, deadline: float | None = None,
                  interrupt: bool = True, user_code: bool = False) -> Any:
    """Run `work` in a thread under an operation tag. Ctrl-C (or the deadline) returns at once:
    the tag is interrupted in the background (never interruptAll, which stops streams; never a
    call that waits on a query, which stops that query: interrupt=False) and a call that still
    does not end is abandoned."""
    tag = f"sparkscope-{uuid.uuid4().hex[:12]}"
    session = ctx.session_or_none()
    ctx.cancelled = threading.Event()
    from .compat.user_code import UserCall, running_user_code

    user_call = UserCall(ctx, ctx.cancelled) if user_code else None

    def tagged() -> Any:
        with running_user_code(user_call) if user_call else contextlib.nullcontext():
            if session is None:
                return work()
            if user_call:
                session.activate()  # getActiveSession() in the user's code finds it
            with session.client.operation(tag):
                return work()

    def give_up() -> bool:
        ctx.cancelled.set()
        if user_call is not None and user_call.waiting_on:
            # interrupting a wait on a query would stop the query: the wait ends by itself, at its slice's end.
            # Waiting for that end means what the cell does after it (display's tail stopping) is done before
            # Ctrl-C is answered: nothing prints after the answer.
            call.wait(AWAIT_SLICE + CANCEL_WAIT)
            return False
        if interrupt and session is not None:  # over a frozen network this itself may hang: not here
            threading.Thread(target=session.client.cancel, args=(tag,), daemon=True).start()
        if user_call is not None:
            raise_in(call, KeyboardInterrupt)
        return not call.wait(CANCEL_WAIT)

    call: Call[Any] = Call(tagged, "sparkscope-command")
    try:
        _wait(ctx, call, deadline, give_up)
    except KeyboardInterrupt:
        if user_call is not None and call.wait(FINISH_GRACE):  # the cell had ended (or was ending) as Ctrl-C came
            return _finished_first(ctx, call)
        waited_on = user_call.waiting_on if user_call is not None else None
        still_running = give_up()  # a wait (interrupt=False) just stops waiting: nothing is abandoned
        cell_stopped = None if user_call is None or waited_on else not still_running
        raise Cancelled(abandoned=still_running and interrupt, waited_on=waited_on, by_keyboard=True,
                        cell_stopped=cell_stopped) from None
    return call.result()


@contextlib.contextmanager
def _ctrl_c_as_a_flag() -> Any:
    """While it waits, Ctrl-C only raises a flag, read between two waits: a KeyboardInterrupt raised at any
    instruction can land inside Event.wait's own lock handling and leave that lock taken, and the next wait on it
    (the cell's end) then never returns: Ctrl-C hung a script for good on a busy machine. The caller raises
    KeyboardInterrupt itself, at a point where no lock is half-taken. Only the main thread receives signals."""
    import signal

    pressed = [False]
    if threading.current_thread() is not threading.main_thread():
        yield pressed
        return

    def on_sigint(signum: int, frame: Any) -> None:
        pressed[0] = True

    before = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield pressed
    finally:
        signal.signal(signal.SIGINT, before)


def _wait(ctx: CommandRunner, call: Call[Any], deadline: float | None, give_up: Callable[[], bool]) -> None:
    """Wait for the call: say once that it still runs (after SLOW_NOTICE), and give up at the deadline. While a
    question [y/N] waits for the user, neither runs: the user, not the server, is slow, and both count from the
    answer. Ctrl-C during the wait is a KeyboardInterrupt raised here, between two waits (_ctrl_c_as_a_flag)."""
    with _ctrl_c_as_a_flag() as pressed:
        _wait_for(ctx, call, deadline, give_up, pressed)
    if pressed[0]:
        raise KeyboardInterrupt


def _wait_for(ctx: CommandRunner, call: Call[Any], deadline: float | None, give_up: Callable[[], bool],
              pressed: list[bool]) -> None:
    started = time.monotonic()
    ends = started + deadline if deadline else None
    told = not ctx.interactive
    while not call.wait(0.05) and not pressed[0]:
        if ctx.asking.is_set():
            started = time.monotonic()
            ends = started + deadline if deadline else None
            continue
        if not told and time.monotonic() - started > SLOW_NOTICE:
            told = True  # say once that Ctrl-C is safe, like psql's cancel hint
            ctx.err.write(STILL_RUNNING + "\n")
            ctx.err.flush()
        if ends is not None and time.monotonic() > ends:
            give_up()
            raise DeadlineExceeded(f"The command got no answer within {deadline:g} s, so it was abandoned",
                                   "The server or network may be stuck; streaming queries keep running. "
                                   "[repl] command_timeout in config.toml sets the limit")


def _finished_first(ctx: CommandRunner, call: Call[Any]) -> Any:
    """Ctrl-C seen only after the cell ended (a long C call holds the interpreter, and the signal waits for it): its
    result stands, and the note says that it ran, instead of claiming it stopped."""
    ctx.err.write(FINISHED_FIRST + "\n")
    ctx.err.flush()
    return call.result()
