"""The kernel's side of `%load_ext sparkscope`: the REPL's executor inside an IPython shell.

The kernel's namespace is the executor's, so `spark`, `ss`, `display` and `dbutils` are the user's names, and a magic
reads the DataFrames the cells made. The session opens the first time a cell or a magic needs it: the embedded
server, SPARK_REMOTE, or where `%sparkscope --remote URL` says. While a cell runs it is the user's input, as a line is
in the REPL (habits/user_code.py): getOrCreate() gives this session, a wait on a query never stops it, a console sink
prints its batches in the cell. A failure of Spark or sparkscope is one line, as in the REPL; %trace shows its
traceback. Any other exception is IPython's own.
"""

from __future__ import annotations

import re
import sys
import threading
import traceback
from collections.abc import Callable
from typing import Any, TextIO, cast

from ..client.errors import SparkscopeError, translate
from ..client.logs import swallowed
from ..client.secrets import redact
from ..repl.commands.registry import UsageError
from ..repl.executor import Executor
from ..repl.habits.user_code import StoppedWaiting, UserCall, mark_user_code
from ..repl.output.render import error_line
from ..repl.python_input import from_pyspark
from ..repl.session_holder import session_opener
from ..repl.worker import CELL_STOPPED

_CTRL_C = re.compile(r"(^|(?<=[.!?] )|(?<=\n))?Ctrl-C")  # capitalised where a sentence starts
_SESSION_NAMES = re.compile(r"\b(spark|ss|F|T)\b|\b(col|expr|lit|window)\(")  # display, dbutils: there before it


def _mentions_session(source: str) -> bool:
    """Whether Python code uses a name the session gives (spark, ss …): it must be connected before the code runs."""
    return _SESSION_NAMES.search(source) is not None


class CellFailed(Exception):
    """A cell's failure as one line: IPython shows an exception's own rendering of itself in place of a traceback."""

    def _render_traceback_(self) -> list[str]:
        return [str(self)]


class MagicWords:
    """A text stream that writes to the kernel's current stdout or stderr with each colon command named as the
    magic that runs it here (`:stop counts` is `%stop counts`)."""

    def __init__(self, stream: Callable[[], TextIO], spell: Callable[[str], str]):
        self._stream = stream
        self._spell = spell

    def write(self, text: str) -> int:
        return self._stream().write(self._spell(text))

    def flush(self) -> None:
        self._stream().flush()

    def isatty(self) -> bool:
        return False


class Notebook:
    """sparkscope in one IPython shell: its executor, its cell hooks and its one-line errors."""

    def __init__(self, shell: Any):
        self.shell = shell
        self.magic_names: dict[str, str] = {}  # command -> how it is typed here (%peek, or %sparkscope ls)
        self.executor = Executor(out=cast(TextIO, MagicWords(lambda: sys.stdout, self.spell)),
                                 err=cast(TextIO, MagicWords(lambda: sys.stderr, self.spell)), interactive=True,
                                 namespace=shell.user_ns, present=self._present, confirm=self._confirm)
        self.executor.holder.connect_on_demand(session_opener(None, on_server_wait=self.executor.holder.server_starting))
        self._words: re.Pattern[str] | None = None
        self._cell = ""  # the source of the cell that runs

    # -- loading ---------------------------------------------------------------------------------------
    def load(self, display: Any) -> None:
        """The cell hooks, the one-line errors and `display` (IPython's own for anything but a DataFrame) in the
        shell; the magics are registered beside this (extension.py)."""
        self.shell.user_ns["display"] = display
        self.shell.events.register("pre_run_cell", self._before_cell)
        self.shell.events.register("post_run_cell", self._after_cell)
        self.shell.set_custom_exc((Exception, KeyboardInterrupt), self._one_line)
        print("sparkscope is loaded: spark, ss, display and dbutils are ready (the session opens when first used; "
              "%sparkscope --remote URL chooses the server). %help lists the magics.")

    def unload(self) -> None:
        with swallowed("unregistering the cell hooks"):
            self.shell.events.unregister("pre_run_cell", self._before_cell)
            self.shell.events.unregister("post_run_cell", self._after_cell)
        self.shell.set_custom_exc((), None)
        self.close()

    def close(self) -> None:
        """The session ends, its queries left running on their server (reattach with the command it prints)."""
        if self.executor.holder.started and self.executor.session_or_none() is not None:
            note = self.executor.finish(detach=True)
            if note:
                print(self.spell(note))

    # -- the session --------------------------------------------------------------------------------------
    def connect(self, remote: str | None, profile: str | None, session_id: str | None, reattach: bool) -> None:
        """%sparkscope --remote URL …: the session opens there (another session replaces this one, whose queries
        keep running)."""
        opener = session_opener(remote, profile=profile, session_id=session_id, reattach=reattach,
                                on_server_wait=self.executor.holder.server_starting)
        if not self.executor.holder.started:
            self.executor.holder.connect_in_background(opener)
            session = self.executor.session  # "Connected to …" follows: no "(connecting…)" before it
            print(f"Connected to {session.url} (session {session.session_id[:8]}, Spark {session.server.version})")
            return
        from ..repl.commands.session import connected
        from ..repl.output.results import SwitchSession

        self.executor.emit("connect", self.executor.apply(SwitchSession(opener, connected)))

    def session(self) -> Any:
        """The session, opened the first time it is needed."""
        if self.executor.connecting:
            print("(connecting…)", file=sys.stderr)
        return self.executor.session

    # -- cells ---------------------------------------------------------------------------------------------
    def _before_cell(self, info: Any) -> None:
        mark_user_code(UserCall(self.executor, threading.Event(), interrupted_here=True))
        self._cell = getattr(info, "raw_cell", "") or ""
        source = "\n".join(line for line in self._cell.splitlines()
                           if not line.lstrip().startswith(("%", "!")))  # a magic opens the session if it needs it
        if source and not source.lstrip().startswith("%%") and _mentions_session(source) and \
                "spark" not in self.shell.user_ns:
            try:
                self.session()
            except Exception as exc:  # the cell runs on and meets the missing name: this line says why
                print(self.spell(error_line(exc)), file=sys.stderr)

    def _after_cell(self, result: Any) -> None:
        mark_user_code(None)
        with swallowed("opening a session in place of the one spark.stop() closed"):
            self.executor.input_ended()

    def _one_line(self, shell: Any, etype: type, value: BaseException, tb: Any, tb_offset: int | None = None) -> None:
        """IPython's handler of the cell's exceptions: Spark's and sparkscope's failures as the REPL says them,
        in one line; Ctrl-C in a wait says that the query runs on; anything else as IPython shows it."""
        self.executor.last_traceback = redact("".join(traceback.format_exception(etype, value, tb)))
        line = self._line_for(value)
        if line is None:
            shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
        else:  # the kernel's error output (the cell failed): this one line, as its value and as its traceback
            said = CellFailed(self.spell(line))
            shell.showtraceback((CellFailed, said, None))

    def _line_for(self, value: BaseException) -> str | None:
        words = self._cell.strip().split(None, 1)
        if words[:1] == ["%run"] and isinstance(value.__cause__, OSError) and "not found" in str(value.__cause__):
            # a Databricks %run of another notebook, which has no file here
            return error_line(UsageError(f"%run found no file {words[1] if len(words) > 1 else ''}".rstrip(),
                                         "In a kernel %run runs a Python file or a notebook (give its .py or .ipynb); "
                                         "a Databricks notebook's %run of another notebook needs that one here"))
        if isinstance(value, StoppedWaiting):
            what = value.what
            return (f"Stopped waiting for {what}; it keeps running (:stop {what} ends it)." if what != "any query"
                    else "Stopped waiting; the queries keep running (:stop NAME ends one).")
        if isinstance(value, KeyboardInterrupt):
            return CELL_STOPPED
        if isinstance(value, SparkscopeError) or from_pyspark(value):
            error = translate(value)
            session = self.executor.session_or_none()
            if session is not None:
                error = session.explain_error(error)
            return error_line(error)
        return None

    # -- output ----------------------------------------------------------------------------------------------
    def _present(self, name: str, result: Any) -> None:
        """A magic's result: HTML in a notebook, text in a console, and its JSON beside them (output.py)."""
        if result is None:
            return
        from IPython.display import display

        from .output import Shown

        display(Shown(name, result, self.spell))

    def _confirm(self, question: str) -> bool:
        """A notebook cannot answer a [y/N] question in the middle of a magic: the answer is no, said so."""
        print(f"note: {question.strip()} A notebook cannot answer this: give the magic's --yes (or --force) flag.",
              file=sys.stderr)
        return False

    def spell(self, text: str) -> str:
        """`text` as this kernel's user acts: each colon command named as the magic that runs it here, and Ctrl-C
        as the kernel's interrupt."""
        if self._words is None:
            names = sorted(self.magic_names, key=len, reverse=True)
            if not names:
                return text
            self._words = re.compile(r"(?<![\w/:.%-]):(" + "|".join(map(re.escape, names)) + r")(?![\w-])")
        text = self._words.sub(lambda m: self.magic_names[m.group(1)], text)
        return _CTRL_C.sub(lambda m: "An interrupt" if m.group(1) is not None else "an interrupt", text)
