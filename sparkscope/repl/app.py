"""The REPL: the prompt at a terminal, drawn first, with the session connecting behind it."""

from __future__ import annotations

import os
import sys
from typing import Any

from ..core.executor import Executor
from ..core.scripts import run_file, script_path
from ..core.session_holder import opener_from_args


def run_repl(args: Any, display: str) -> int:
    """The REPL on the command line's flags; `display` names what it connects to."""
    _take_back_ctrl_c()
    if sys.path:
        sys.path[0] = script_path(None)
    executor = Executor(fmt=args.format, interactive=True, warm=False)
    executor.debug = args.debug
    if not args.debug:
        from ..core.diagnostics import quiet_stderr

        quiet_stderr()

    def connect() -> None:
        executor.warm_up()  # after the first draw, on this thread, before the connecting thread imports pyspark
        executor.holder.connect_in_background(opener_from_args(args, executor.holder.server_starting))
        _report_connection_later(executor, rejoined=bool(getattr(args, "reattach", False)) and not args.session_id)

    if args.init:  # the init script needs the session before the prompt
        connect()
        run_file(executor, args.init)
    # Otherwise draw the prompt first: importing pyspark in parallel would slow the first draw.
    return _shell(executor, display, color=not args.no_color and "NO_COLOR" not in os.environ,
                  on_first_draw=None if args.init else connect)


def _shell(executor, display: str, color: bool, on_first_draw) -> int:
    """The prompt. Importing prompt-toolkit and building the prompt allocate much and free little, so
    Python's cyclic garbage collector waits until the prompt is drawn (it would scan those new objects
    a few hundred times: 4-5 ms of the 90 ms to the prompt)."""
    import gc

    def drawn() -> None:
        gc.enable()
        if on_first_draw is not None:
            on_first_draw()

    gc.disable()
    try:
        from .shell import run_shell

        return run_shell(executor, display, color=color, on_first_draw=drawn)
    finally:
        gc.enable()


def _take_back_ctrl_c() -> None:
    """At a terminal, Ctrl-C cancels the running command. A shell without job control starts a
    background command with SIGINT ignored (`sparkscope &` in a script, or a test runner started so),
    and Python keeps it ignored: the REPL would then have no way to cancel a long command."""
    import signal

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _report_connection_later(executor, rejoined: bool = False) -> None:
    import threading

    def watch() -> None:
        try:
            session = executor.holder.wait_connected()
            from ..client.logs import swallowed
            from ..core.commands.catalog import lost_note, rejoin_note

            if rejoined:
                with swallowed("saying which session was rejoined"):
                    print(rejoin_note(session))
            with swallowed("looking for lost queries"):  # an extra: its failure is not the user's problem
                note = lost_note(session)
                if note:
                    print(note)
        except Exception as exc:
            from ..core.rendering.render import error_line

            print(error_line(exc), file=sys.stderr)

    threading.Thread(target=watch, daemon=True).start()
