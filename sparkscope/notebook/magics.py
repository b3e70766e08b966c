"""The REPL's colon commands as IPython magics, with the same words and flags: `%start counts`, `%peek counts --order
bucket`, `%%sql` for a cell of SQL, `%fs ls /tmp`. A name IPython already has (`%ls`) stays IPython's: `%sparkscope ls`
runs the command instead, as `%sparkscope` runs any of them. `%watch` and `%tail` follow queries in their cell
(streams.py); `%help` lists the magics. Tab completes the magics' options and the names of the queries."""

from __future__ import annotations

import re
import shlex
import sys
from typing import TYPE_CHECKING, Any

from ..core.commands.listing import REGISTRY
from ..core.commands.registry import UsageError
from ..core.rendering.results import Block, Table
from ..core.commands.completion import command_candidates

if TYPE_CHECKING:  # pragma: no cover
    from .kernel import Notebook

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


class Magics:
    def __init__(self, notebook: Notebook):
        self.notebook = notebook
        self._replaced: dict[tuple[str, str], Any] = {}  # (kind, name) -> the magic that was there (None: none)
        self._completers: dict[str, Any] = {}  # %name -> our completer, registered in IPython's dispatcher

    def register(self) -> None:
        """The magics in the shell. A name IPython or another extension has as a line magic stays theirs (ours is
        %sparkscope NAME); %%sql, %sparkscope and %fs take the place of any magic of their name, each said in one
        line, and unregister gives it back."""
        shell = self.notebook.shell
        taken = set(shell.magics_manager.magics["line"])
        for name in REGISTRY.names():
            if name in NOT_HERE:
                continue
            if name in taken:  # IPython's own (%ls): ours is %sparkscope ls
                self.notebook.magic_names[name] = f"%sparkscope {name}"
                continue
            self._add(self._line(name), "line", name)
            self.notebook.magic_names[name] = f"%{name}"
            completer = self._completer(name)
            self._completers[f"%{name}"] = completer
            shell.set_hook("complete_command", completer, str_key=f"%{name}")
        self._add(self.sparkscope, "line", "sparkscope")
        self._add(self.sql_cell, "cell", "sql")
        self._add(self.fs, "line", "fs")
        shell.input_transformers_cleanup.append(databricks_cell)

    def _add(self, function: Any, kind: str, name: str) -> None:
        shell = self.notebook.shell
        before = shell.magics_manager.magics[kind].get(name)
        self._replaced[(kind, name)] = before
        if before is not None:
            print(f"note: sparkscope's {'%%' if kind == 'cell' else '%'}{name} takes the place of the one "
                  f"{_origin(before)} gave (%unload_ext sparkscope gives it back)")
        shell.register_magic_function(function, kind, name)

    def unregister(self) -> None:
        """Every magic, completer and input transformer register added, taken away; each magic it replaced, back."""
        shell = self.notebook.shell
        for (kind, name), before in self._replaced.items():
            if before is None:
                shell.magics_manager.magics[kind].pop(name, None)
            else:
                shell.magics_manager.magics[kind][name] = before
        dispatcher = shell.strdispatchers.get("complete_command")
        for key, completer in self._completers.items():
            chain = dispatcher.strs.get(key) if dispatcher is not None else None
            if chain is None:
                continue
            chain.chain = [(priority, hook) for priority, hook in chain.chain
                           if getattr(hook, "__func__", hook) is not completer]
            if not chain.chain:
                del dispatcher.strs[key]
        if databricks_cell in shell.input_transformers_cleanup:
            shell.input_transformers_cleanup.remove(databricks_cell)

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
                self.notebook.executor.emit("help", Block(f"{self.notebook.spell(wanted.usage)}\n\n"
                                                          f"{IN_A_CELL[wanted.name]}."))
                return
        except UsageError as exc:
            self.notebook.executor.report(exc)
            return
        self.notebook.executor.run(f":{name} {line}".rstrip())

    def sparkscope(self, line: str) -> None:
        """%sparkscope --remote URL connects there; %sparkscope COMMAND … runs any command."""
        words = line.split(None, 1)
        if words and not words[0].startswith("-"):
            name = words[0].lstrip(":")
            if name in NOT_HERE:
                print("A notebook's session ends with its kernel (its queries run on): shut the kernel down to "
                      "leave", file=sys.stderr)
                return
            self.run(name, words[1] if len(words) > 1 else "")
            return
        try:
            remote, profile, session_id, reattach = _connect_flags(line)
        except UsageError as exc:
            self.notebook.executor.report(exc)
            return
        if remote is None and profile is None and session_id is None and not reattach:
            self.run("session", "")
            return
        try:
            self.notebook.connect(remote, profile, session_id, reattach)
        except Exception as exc:
            self.notebook.executor.report(exc)

    def sql_cell(self, line: str, cell: str) -> None:
        """%%sql: the cell's SQL, as :sql runs it, reaching Spark exactly as written (its comments, line breaks and
        the spaces inside its literals)."""
        statement = f"{line}\n{cell}".strip()
        if not statement:
            self.notebook.executor.report(UsageError("%%sql needs a statement", "e.g. SELECT * FROM counts"))
            return
        self.notebook.executor.run_command(f":sql {statement}")

    def fs(self, line: str) -> None:
        """%fs ls|head|mkdirs|rm|cp|mv|put …, as in the REPL (dbutils.fs over this machine's files)."""
        self.notebook.executor.run(f"%fs {line}")

    def help_table(self) -> Table:
        rows = [[self.notebook.magic_names[name], self.notebook.spell(IN_A_CELL.get(name, command.summary))]
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


def _origin(magic: Any) -> str:
    """Who gave a magic, in words: the module of its Magics class (another extension) or of its function."""
    owner = getattr(magic, "__self__", None)
    module = type(owner).__module__ if owner is not None else getattr(magic, "__module__", None)
    return f"{module.split('.')[0]}" if module else "another extension"


def _connect_flags(line: str) -> tuple[str | None, str | None, str | None, bool]:
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise UsageError(f"%sparkscope cannot read {line!r} ({exc})", "Close the quote") from None
    values: dict[str, str] = {}
    reattach = False
    index = 0
    while index < len(words):
        word = words[index]
        key, eq, given = word.partition("=")
        if key == "--reattach" and not eq:
            reattach = True
        elif key in ("--remote", "--profile", "--session-id"):
            if not eq:
                index += 1
                if index >= len(words):
                    raise UsageError(f"{key} needs a value", f"Usage: {SPARKSCOPE_USAGE}")
                given = words[index]
            values[key] = given
        else:
            raise UsageError(f"%sparkscope does not know {word}", f"Usage: {SPARKSCOPE_USAGE}")
        index += 1
    return values.get("--remote"), values.get("--profile"), values.get("--session-id"), reattach

