"""The REPL's colon commands as IPython magics, with the same words and flags, in one IPython `Magics` class per
concern: CommandMagics (`%start counts`, `%peek counts --order bucket`; `%watch` and `%tail` follow queries in their
cell, streams.py; `%help` lists the magics), SessionMagics (`%sparkscope`: its connection flags read by the command
line's own parser, or any command by its name) and DatabricksMagics (`%%sql` for a cell of SQL, `%fs ls /tmp`). A name
IPython already has (`%ls`) stays IPython's: `%sparkscope ls` runs the command instead. Tab completes the magics'
options and the names of the queries. TakenMagics gives back, on unload, whatever they took."""

from __future__ import annotations

import re
import shlex
import sys
from typing import TYPE_CHECKING, Any

from IPython.core.magic import Magics, cell_magic, line_magic, magics_class

from ..core.commands.listing import REGISTRY
from ..core.commands.registry import UsageError
from ..core.rendering.results import Block, Table
from ..core.arguments import connection_parser
from ..core.commands.completion import command_candidates

if TYPE_CHECKING:  # pragma: no cover
    from .kernel import NotebookFrontEnd

IN_A_CELL = {  # what the commands that follow queries do in a notebook, where the cell holds their output
    "watch": "Every query's newest batch, rates, durations, trends and alerts, updating in this cell until the kernel "
             "is interrupted",
    "tail": "Each new micro-batch of a query, printed in this cell as it commits, until the kernel is interrupted "
            "(the query runs on)",
    "alerts": "Turn the one-line alerts on or off (they print in the cell that runs when they come, and in %watch)",
}
NOT_HERE = {"quit", "exit", "q"}  # a kernel is left by shutting it down; its session then ends, its queries run on
SPARKSCOPE_USAGE = ("%sparkscope [--remote sc://HOST:PORT] [--profile NAME] [--session-id ID] [--reattach], "
                    "or %sparkscope COMMAND [ARGS…]")


_CELL_MAGIC_FIRST_LINE = re.compile(r"^%(sql|md|python)\b[ \t]*(.*)$")


def databricks_cell(lines: list[str]) -> list[str]:
    """A Databricks cell as this kernel runs it (an IPython input transformer): a first line `%sql` with the SQL on
    the lines below is the cell magic %%sql, `%md` is IPython's %%markdown, `%python` is the Python below it. A
    one-line `%sql SELECT …` stays the line magic."""
    found = _CELL_MAGIC_FIRST_LINE.match(lines[0].rstrip("\n")) if lines else None
    if found is None or (found.group(1) == "sql" and not any(line.strip() for line in lines[1:])):
        return lines
    magic, first = found.groups()
    if magic == "python":
        return ([first + "\n"] if first else []) + lines[1:]
    head = "%%sql\n" if magic == "sql" else "%%markdown\n"
    return [head] + ([first + "\n"] if first else []) + lines[1:]


class TakenMagics:
    """What sparkscope's magics take of the shell: each name's magic before them (None: there was none), said in one
    line when there was one, and given back on unload, with the completers and the input transformer they added."""

    def __init__(self, shell: Any):
        self.shell = shell
        self._before: dict[tuple[str, str], Any] = {}  # (kind, name) -> the magic that was there (None: none)
        self._registered: list[CommandMagics | SessionMagics | DatabricksMagics] = []

    def register(self, magics: CommandMagics | SessionMagics | DatabricksMagics) -> None:
        table = self.shell.magics_manager.magics
        for kind, functions in magics.magics.items():
            for name in functions:
                before = table[kind].get(name)
                self._before[(kind, name)] = before
                if before is not None:
                    print(f"note: sparkscope's {'%%' if kind == 'cell' else '%'}{name} takes the place of the one "
                          f"{_origin(before)} gave (%unload_ext sparkscope gives it back)")
        self.shell.register_magics(magics)
        self._registered.append(magics)

    def give_back(self) -> None:
        table = self.shell.magics_manager.magics
        for (kind, name), before in self._before.items():
            if before is None:
                table[kind].pop(name, None)
            else:
                table[kind][name] = before
        for magics in self._registered:
            if self.shell.magics_manager.registry.get(type(magics).__name__) is magics:
                del self.shell.magics_manager.registry[type(magics).__name__]
            magics.taken_away()
        self._before.clear()
        self._registered.clear()


@magics_class
class CommandMagics(Magics):
    """The colon commands as line magics with the same words and flags (%start, %peek …), each completing its
    options and the names of the queries. A name the shell already has (%ls) stays the shell's: %sparkscope NAME
    runs ours."""

    def __init__(self, shell: Any, notebook: NotebookFrontEnd):
        super().__init__(shell)
        self.ipython = shell  # the shell, never None (Magics.shell may be)
        self.notebook = notebook
        self._completers: dict[str, Any] = {}  # %name -> our completer, registered in IPython's dispatcher
        taken = set(shell.magics_manager.magics["line"])
        for name in REGISTRY.names():
            if name in NOT_HERE:
                continue
            if name in taken:  # IPython's own (%ls): ours is %sparkscope ls
                notebook.magic_names[name] = f"%sparkscope {name}"
                continue
            self.magics["line"][name] = self._line(name)
            notebook.magic_names[name] = f"%{name}"
            completer = self._completer(name)
            self._completers[f"%{name}"] = completer
            shell.set_hook("complete_command", completer, str_key=f"%{name}")

    def taken_away(self) -> None:
        """Its completers out of IPython's dispatcher."""
        dispatcher = self.ipython.strdispatchers.get("complete_command")
        for key, completer in self._completers.items():
            chain = dispatcher.strs.get(key) if dispatcher is not None else None
            if chain is None:
                continue
            chain.chain = [(priority, hook) for priority, hook in chain.chain
                           if getattr(hook, "__func__", hook) is not completer]
            if not chain.chain:
                del dispatcher.strs[key]

    def _line(self, name: str) -> Any:
        def magic(line: str) -> None:
            self.run(name, line)

        magic.__name__ = name
        command = REGISTRY.lookup(name)
        magic.__doc__ = f"{command.usage.replace(':', '%', 1)}\n\n{IN_A_CELL.get(command.name, command.summary)}."
        return magic

    def run(self, name: str, line: str) -> None:
        """One command, as its colon line runs in the REPL; %watch, %tail and %help as a notebook has them."""
        from . import streams

        try:
            command = REGISTRY.lookup(name).name
            if command == "watch":  # read by the REPL's own parser: its options and arguments, its one-line errors
                streams.watch(self.notebook, REGISTRY.parse(f":watch {line}".rstrip()).args)
                return
            if command == "sql":  # as a Databricks %sql line reads in the REPL (an empty one says what to give)
                self.notebook.executor.run(f"%sql {line}".rstrip())
                return
            if command == "tail" and "--stop" not in line.split() and line.strip():
                line = f"{line} --follow" if "--follow" not in line.split() else line
            if command == "help" and not line.strip():
                self.notebook.executor.emit("help", self.help_table())
                return
            if command == "help" and line.strip().lstrip(":%") in IN_A_CELL:
                wanted = REGISTRY.lookup(line.strip().lstrip(":%"))
                self.notebook.executor.emit("help", Block(f"{self.notebook.as_magics(wanted.usage)}\n\n"
                                                          f"{IN_A_CELL[wanted.name]}."))
                return
        except UsageError as exc:
            self.notebook.executor.report(exc)
            return
        self.notebook.executor.run(f":{name} {line}".rstrip())

    def help_table(self) -> Table:
        rows = [[self.notebook.magic_names[name], self.notebook.as_magics(IN_A_CELL.get(name, command.summary))]
                for name, command in sorted(REGISTRY.commands.items()) if name in self.notebook.magic_names]
        rows += [["%%sql", "A cell of SQL, run as %sql runs it"], ["%fs", "dbutils.fs over this machine's files: "
                                                                          "ls, head, mkdirs, rm, cp, mv, put"],
                 ["%sparkscope", f"Connect ({SPARKSCOPE_USAGE.split(', or')[0]}), show the session, or run any "
                                 "command by its name"]]
        return Table(["magic", "what it does"], rows,
                     footer="Write PySpark in the cells: spark, ss, display and dbutils are ready. %help NAME shows "
                            "a magic's usage; display(df) of a streaming DataFrame updates in its cell.")

    def _completer(self, name: str) -> Any:
        command = REGISTRY.lookup(name)

        def complete(shell: Any, event: Any) -> list[str]:
            words = event.line.split()[1:]
            current = "" if event.line.endswith(" ") else (words[-1] if words else "")
            done = words if current == "" else words[:-1]
            return command_candidates(command, done, current, self._query_names, self._dataframe_names,
                                      REGISTRY.names)

        return complete

    def _query_names(self) -> list[str]:
        session = self.notebook.executor.session_or_none()
        return sorted({q.name for q in session.streams.known_queries()}) if session is not None else []

    def _dataframe_names(self) -> list[str]:
        from ..client.queries.dataframes import is_dataframe

        return sorted(k for k, v in list(self.notebook.shell.user_ns.items()) if is_dataframe(v) and not k.startswith("_"))


@magics_class
class SessionMagics(Magics):
    """%sparkscope: connect (its flags are the command line's), show the session, or run any command by its name."""

    def __init__(self, shell: Any, notebook: NotebookFrontEnd, commands: CommandMagics):
        super().__init__(shell)
        self.notebook = notebook
        self.commands = commands
        self.flags = connection_parser("%sparkscope", f"Usage: {SPARKSCOPE_USAGE}")

    def taken_away(self) -> None:
        """Nothing to take away but its magic, which TakenMagics gives back."""

    @line_magic
    def sparkscope(self, line: str) -> None:
        """%sparkscope --remote URL connects there; %sparkscope COMMAND … runs any command."""
        words = line.split(None, 1)
        if words and not words[0].startswith("-"):
            name = words[0].lstrip(":")
            if name in NOT_HERE:
                print("A notebook's session ends with its kernel (its queries run on): shut the kernel down to "
                      "leave", file=sys.stderr)
                return
            self.commands.run(name, words[1] if len(words) > 1 else "")
            return
        try:
            flags = self.flags.parse_args(_words(line))
        except UsageError as exc:
            self.notebook.executor.report(exc)
            return
        if flags.remote is None and flags.profile is None and flags.session_id is None and not flags.reattach:
            self.commands.run("session", "")
            return
        try:
            self.notebook.connect(flags.remote, flags.profile, flags.session_id, flags.reattach)
        except Exception as exc:
            self.notebook.executor.report(exc)


@magics_class
class DatabricksMagics(Magics):
    """What a Databricks notebook has: %%sql (and a first line `%sql` with SQL below it), %md, %python, and %fs."""

    def __init__(self, shell: Any, notebook: NotebookFrontEnd):
        super().__init__(shell)
        self.ipython = shell
        self.notebook = notebook
        shell.input_transformers_cleanup.append(databricks_cell)

    def taken_away(self) -> None:
        if databricks_cell in self.ipython.input_transformers_cleanup:
            self.ipython.input_transformers_cleanup.remove(databricks_cell)

    @cell_magic("sql")  # type: ignore[arg-type]  # IPython types the decorator factory as taking no method
    def sql_cell(self, line: str, cell: str) -> None:
        """%%sql: the cell's SQL, as :sql runs it, reaching Spark exactly as written (its comments, line breaks and
        the spaces inside its literals)."""
        statement = f"{line}\n{cell}".strip()
        if not statement:
            self.notebook.executor.report(UsageError("%%sql needs a statement", "e.g. SELECT * FROM counts"))
            return
        self.notebook.executor.run_command(f":sql {statement}")

    @line_magic
    def fs(self, line: str) -> None:
        """%fs ls|head|mkdirs|rm|cp|mv|put …, as in the REPL (dbutils.fs over this machine's files)."""
        self.notebook.executor.run(f"%fs {line}")


def register(shell: Any, notebook: NotebookFrontEnd) -> TakenMagics:
    """Every magic of sparkscope's in the shell; what they took, to give back."""
    taken = TakenMagics(shell)
    commands = CommandMagics(shell, notebook)
    for magics in (commands, SessionMagics(shell, notebook, commands), DatabricksMagics(shell, notebook)):
        taken.register(magics)
    return taken


def _origin(magic: Any) -> str:
    """Who gave a magic, in words: the module of its Magics class (another extension) or of its function."""
    owner = getattr(magic, "__self__", None)
    module = type(owner).__module__ if owner is not None else getattr(magic, "__module__", None)
    return f"{module.split('.')[0]}" if module else "another extension"


def _words(line: str) -> list[str]:
    """A magic's line as a shell splits it; an unclosed quote is a UsageError."""
    try:
        return shlex.split(line)
    except ValueError as exc:
        raise UsageError(f"%sparkscope cannot read {line!r} ({exc})", "Close the quote") from None
