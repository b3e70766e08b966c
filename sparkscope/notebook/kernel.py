"""The kernel's side of `%load_ext sparkscope`: the REPL's executor inside an IPython shell.

The kernel's namespace is the executor's, so `spark`, `ss`, `display` and `dbutils` are the user's names, and a magic
reads the DataFrames the cells made. The session opens the first time a cell or a magic needs it: a cell needs it
when its code reads a name the session gives (`spark`, `ss`, `F` …) that the cell does not bind itself (`T = 3` binds
T), read from the cell's syntax tree, never its text. It opens on the embedded server, SPARK_REMOTE, or where
`%sparkscope --remote URL` says.

An extension lives in someone else's shell: it changes only what it registers, chains to what was there (another
extension's exception handler) and puts everything back when it unloads (its magics give back the ones they
replaced; the names it put in the namespace go, and those they hid come back). While a cell runs it is the user's input, as a line is
in the REPL (compat/user_code.py): getOrCreate() gives this session, a wait on a query never stops it, a console sink
prints its batches in the cell. A failure of Spark or sparkscope is one line, as in the REPL; %trace shows its
traceback. Any other exception is IPython's own.
"""

from __future__ import annotations

import ast
import contextlib
import re
import sys
import threading
import traceback
import warnings
from collections.abc import Callable, Container
from typing import Any, TextIO, cast

from ..client.errors import SparkscopeError
from ..client.error_reading import translate
from ..client.logs import swallowed
from ..client.secrets import redact
from ..core.commands.registry import UsageError
from ..core.executor import Executor
from ..core.compat.user_code import StoppedWaiting, UserCall, mark_user_code
from ..core.rendering.render import error_line
from ..core.python_input import from_pyspark
from ..core.session_holder import session_opener
from ..core.worker import CELL_STOPPED

_CTRL_C = re.compile(r"(^|(?<=[.!?] )|(?<=\n))?Ctrl-C")  # capitalised where a sentence starts
_UNKNOWN = re.compile(r"(Unknown command ):([\w-]+)")
# the names the session gives the namespace (core/session_holder.py); display and dbutils are there before it
SESSION_NAMES = frozenset({"spark", "ss", "SparkSession", "F", "T", "window", "col", "expr", "lit"})
NAMES_GIVEN = ("display", "dbutils", *sorted(SESSION_NAMES))  # every name the extension may put in the namespace


def needs_session(source: str, defined: Container[str]) -> bool:
    """Whether Python code reads a name the session gives that neither the code binds (an assignment, an import, a
    def, a parameter) nor `defined` (the namespace) holds: the session must then be open before the code runs.
    Code that does not parse needs nothing (it fails as Python says)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    read: set[str] = set()
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update(alias.asname or alias.name.split(".")[0] for alias in node.names)
    return any(name not in defined for name in (read & SESSION_NAMES) - bound)


class CellFailed(Exception):
    """A cell's failure as one line: IPython shows an exception's own rendering of itself in place of a traceback."""

    def _render_traceback_(self) -> list[str]:
        return [str(self)]


class MagicNamingStream:
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


class NotebookFrontEnd:
    """sparkscope in one IPython shell: its executor, its cell hooks and its one-line errors."""

    def __init__(self, shell: Any):
        self.shell = shell
        # the names of the namespace that sparkscope's own hide from here on (the executor puts dbutils there now)
        self._hidden: dict[str, Any] = {name: shell.user_ns[name] for name in NAMES_GIVEN if name in shell.user_ns}
        self.magic_names: dict[str, str] = {}  # command -> how it is typed here (%peek, or %sparkscope ls)
        self.executor = Executor(out=cast(TextIO, MagicNamingStream(lambda: sys.stdout, self.as_magics)),
                                 err=cast(TextIO, MagicNamingStream(lambda: sys.stderr, self.as_magics)), interactive=True,
                                 namespace=shell.user_ns, present=self._present, confirm=self._confirm)
        self.executor.holder.connect_on_demand(session_opener(None, on_server_wait=self.executor.holder.server_starting))
        self._words: re.Pattern[str] | None = None
        self._cell = ""  # the source of the cell that runs
        self._their_exceptions: tuple[tuple[type, ...], Any] = ((), None)  # another handler's, chained to
        self._filters: list[Any] = []  # the warnings filters load added

    # -- loading ---------------------------------------------------------------------------------------
    def load(self, display: Any) -> None:
        """The cell hooks, the one-line errors (chained to the exception handler another extension set) and `display`
        (IPython's own for anything but a DataFrame) in the shell; the magics are registered beside this
        (extension.py)."""
        self.shell.user_ns["display"] = display
        self.shell.events.register("pre_run_cell", self._before_cell)
        self.shell.events.register("post_run_cell", self._after_cell)
        theirs = (tuple(self.shell.custom_exceptions), self.shell.CustomTB)
        self._their_exceptions = theirs
        self.shell.set_custom_exc(tuple(dict.fromkeys((Exception, KeyboardInterrupt, *theirs[0]))), self._one_line)
        before = list(warnings.filters)  # pyspark's own warnings (a lost connection's retries, its listener bus):
        warnings.filterwarnings("ignore", module=r"pyspark(\..*)?")  # sparkscope says what happened, in one line
        self._filters = [entry for entry in warnings.filters if entry not in before]
        print("sparkscope is loaded: spark, ss, display and dbutils are ready (the session opens when first used; "
              "%sparkscope --remote URL chooses the server). %help lists the magics.")

    def unload(self) -> None:
        """Everything load changed, put back: the hooks, the exception handler that was there, the namespace's names
        (sparkscope's go, those they hid come back); the session ends, its queries run on."""
        with swallowed("unregistering the cell hooks"):
            self.shell.events.unregister("pre_run_cell", self._before_cell)
            self.shell.events.unregister("post_run_cell", self._after_cell)
        self.shell.custom_exceptions, self.shell.CustomTB = self._their_exceptions
        for entry in self._filters:
            with contextlib.suppress(ValueError):
                cast(list, warnings.filters).remove(entry)
        self.close()
        namespace = self.shell.user_ns
        given = {"display": namespace.get("display"), "dbutils": self.executor.dbutils, **self.executor.holder.given}
        for name in NAMES_GIVEN:
            if name in namespace and name in given and namespace[name] is given[name]:  # not the user's own since
                del namespace[name]
            if name in self._hidden and name not in namespace:
                namespace[name] = self._hidden[name]

    def close(self) -> None:
        """The session ends, its queries left running on their server (reattach with the command it prints)."""
        if self.executor.holder.started and self.executor.session_or_none() is not None:
            note = self.executor.finish(detach=True)
            if note:
                print(self.as_magics(note))

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
        from ..core.commands.session import connected
        from ..core.rendering.results import SwitchSession

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
        try:  # IPython's own reading of the cell: a magic is a call whose words are strings (it opens what it needs)
            source = self.shell.transform_cell(self._cell)
        except Exception:  # the cell fails as IPython says
            return
        if needs_session(source, self.shell.user_ns):
            try:
                self.session()
            except Exception as exc:  # the cell runs on and meets the missing name: this line says why
                print(self.as_magics(error_line(exc)), file=sys.stderr)

    def _after_cell(self, result: Any) -> None:
        mark_user_code(None)
        with swallowed("opening a session in place of the one spark.stop() closed"):
            self.executor.input_ended()

    def _one_line(self, shell: Any, etype: type, value: BaseException, tb: Any, tb_offset: int | None = None) -> Any:
        """IPython's handler of the cell's exceptions: Spark's and sparkscope's failures as the REPL says them,
        in one line; Ctrl-C in a wait says that the query runs on; anything else as IPython shows it."""
        self.executor.last_traceback = redact("".join(traceback.format_exception(etype, value, tb)))
        line = self._line_for(value)
        theirs, their_handler = self._their_exceptions
        if line is None and theirs and isinstance(value, theirs):  # another extension's, as it was before us
            return their_handler(etype, value, tb, tb_offset=tb_offset)
        if line is None:
            shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
        else:  # the kernel's error output (the cell failed): this one line, as its value and as its traceback
            said = CellFailed(self.as_magics(line))
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
                error = session.client.explain_error(error)
            return error_line(error)
        return None

    # -- output ----------------------------------------------------------------------------------------------
    def _present(self, name: str, result: Any) -> None:
        """A magic's result: HTML in a notebook, text in a console, and its JSON beside them (output.py)."""
        if result is None:
            return
        from IPython.display import display

        from .output import NotebookResult

        display(NotebookResult(name, result, self.as_magics))

    def _confirm(self, question: str) -> bool:
        """A notebook cannot answer a [y/N] question in the middle of a magic: the answer is no, said so."""
        print(f"note: {question.strip()} A notebook cannot answer this: give the magic's --yes (or --force) flag.",
              file=sys.stderr)
        return False

    def as_magics(self, text: str) -> str:
        """`text` as this kernel's user acts: each colon command named as the magic that runs it here, and Ctrl-C
        as the kernel's interrupt."""
        if self._words is None:
            names = sorted(self.magic_names, key=len, reverse=True)
            if not names:
                return text
            self._words = re.compile(r"(?<![\w/:.%-]):(" + "|".join(map(re.escape, names)) + r")(?![\w-])")
        text = self._words.sub(lambda m: self.magic_names[m.group(1)], text)
        text = _UNKNOWN.sub(r"\1%\2", text)  # a command there is none of, spelled as it was typed here
        return _CTRL_C.sub(lambda m: "An interrupt" if m.group(1) is not None else "an interrupt", text)
