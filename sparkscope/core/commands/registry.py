"""The one command registry: `@command(...)` declares a colon command with its usage and help, and
`Registry` holds the declared ones (listing.py lists them).

Argument splitting keeps Python expressions intact: whitespace inside quotes or brackets does not
split, so `:start counts spark.sql("select 1 as x") --sink memory` has one expression.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from ...client.errors import ConfigError
from ..rendering.results import Result

if TYPE_CHECKING:  # pragma: no cover
    from ..context import CommandContext

    CommandFunc = Callable[[CommandContext, list[str], "Options"], Result]


class UsageError(ConfigError):
    """Bad arguments to a colon command."""


class Kind(Enum):
    """What an option takes."""

    FLAG = "flag"  # --follow
    VALUE = "value"  # --limit N
    MULTI = "multi"  # --option k=v, given again for each value


class Complete(Enum):
    """What completes an argument or an option's value."""

    NOTHING = "nothing"
    QUERY = "query"  # names of this session's queries
    DATAFRAME = "dataframe"  # DataFrames in the namespace
    QUERY_OR_DATAFRAME = "query or dataframe"
    COMMAND = "command"  # colon commands
    CHOICES = "choices"  # the listed choices


class Runs(Enum):
    """How the executor runs a command."""

    WORKER = "worker"  # in a worker thread with a deadline; Ctrl-C interrupts its RPCs
    WAITS = "waits"  # waits on a query by design: no deadline, and Ctrl-C never interrupts its RPC
    FULLSCREEN = "fullscreen"  # takes over the terminal: on the main thread, interactive only


class Tail(Enum):
    """How the words after the command name are read."""

    WORDS = "words"  # each word (quotes and brackets kept together) is one argument
    EXPRESSION = "expression"  # the first word is an argument, the rest one Python expression
    RAW = "raw"  # everything is one argument (SQL)


@dataclass(frozen=True)
class Arg:
    metavar: str  # NAME, EXPR, N …
    optional: bool = False
    repeat: bool = False
    complete: Complete = Complete.NOTHING
    choices: tuple[str, ...] = ()

    def usage(self) -> str:
        text = "|".join(self.choices) if self.choices and self.metavar == "" else self.metavar
        text += "…" if self.repeat else ""
        return f"[{text}]" if self.optional else text


@dataclass(frozen=True)
class Opt:
    name: str
    kind: Kind = Kind.FLAG
    metavar: str = ""
    choices: tuple[str, ...] = ()

    def usage(self) -> str:
        if self.kind is Kind.FLAG:
            return f"[--{self.name}]"
        value = "|".join(self.choices) if self.choices else self.metavar or "VALUE"
        return f"[--{self.name} {value}]" + ("…" if self.kind is Kind.MULTI else "")


def valued(name: str, metavar: str = "", choices: tuple[str, ...] = ()) -> Opt:
    return Opt(name, Kind.VALUE, metavar, choices)


def flag(name: str) -> Opt:
    return Opt(name, Kind.FLAG)


def multi(name: str, metavar: str = "") -> Opt:
    return Opt(name, Kind.MULTI, metavar)


@dataclass
class Command:
    name: str
    func: CommandFunc
    summary: str
    args: tuple[Arg, ...] = ()
    options: tuple[Opt, ...] = ()
    aliases: tuple[str, ...] = ()
    tail: Tail = Tail.WORDS
    runs: Runs = Runs.WORKER
    needs_session: bool = True

    @property
    def usage(self) -> str:
        """Generated from the declared arguments and options, so it cannot drift from the parser."""
        return " ".join([f":{self.name}", *(a.usage() for a in self.args), *(o.usage() for o in self.options)])

    @property
    def min_args(self) -> int:
        return sum(1 for a in self.args if not a.optional and not a.repeat)

    @property
    def max_args(self) -> int | None:
        return None if any(a.repeat for a in self.args) else len(self.args)

    def option(self, name: str) -> Opt | None:
        return next((o for o in self.options if o.name == name), None)

    def arg(self, index: int) -> Arg | None:
        if index < len(self.args):
            return self.args[index]
        return self.args[-1] if self.args and self.args[-1].repeat else None


class Options(dict[str, "str | bool | list[str]"]):
    """A command's options as given: a flag is True, a value its text, a repeated option its list."""

    def flag(self, name: str) -> bool:
        return self.get(name) is True

    def text(self, name: str) -> str | None:
        value = self.get(name)
        return value if isinstance(value, str) else None

    def each(self, name: str) -> list[str]:
        value = self.get(name)
        return list(value) if isinstance(value, list) else []


@dataclass
class Invocation:
    command: Command
    args: list[str]
    opts: Options


def command(name: str, summary: str, *, args: tuple[Arg, ...] = (), options: tuple[Opt, ...] = (),
            aliases: tuple[str, ...] = (), tail: Tail = Tail.WORDS, runs: Runs = Runs.WORKER,
            needs_session: bool = True) -> Callable[[CommandFunc], Command]:
    """Declare a colon command: the function, with its usage and help. commands/listing.py registers it."""
    def declare(func: CommandFunc) -> Command:
        return Command(name, func, summary, tuple(args), tuple(options), aliases, tail, runs, needs_session)

    return declare


def typo_distance(a: str, b: str) -> int:
    """Edits from `a` to `b`: a letter added, dropped, changed, or two neighbours swapped (Damerau-Levenshtein)."""
    rows = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        rows[i][0] = i
    for j in range(len(b) + 1):
        rows[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            rows[i][j] = min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                rows[i][j] = min(rows[i][j], rows[i - 2][j - 2] + 1)
    return rows[len(a)][len(b)]


def closest(name: str, names: list[str]) -> str | None:
    """The name `name` is a slip of (:strat for :start, :peak for :peek), or None: one edit for a short name, two
    for a longer one; never a mere likeness (:nonsense is no :connect)."""
    allowed = 1 if len(name) <= 4 else 2
    ranked = sorted((typo_distance(name, known), known) for known in names)
    return ranked[0][1] if ranked and ranked[0][0] <= allowed else None


class Registry:
    """The colon commands, from an explicit list (listing.REGISTRY is the REPL's)."""

    def __init__(self, commands: Iterable[Command]) -> None:
        self.commands: dict[str, Command] = {}
        self._aliases: dict[str, str] = {}
        for cmd in commands:
            if cmd.name in self.commands or cmd.name in self._aliases:
                raise ValueError(f"two commands are named :{cmd.name}")
            self.commands[cmd.name] = cmd
            for alias in cmd.aliases:
                self._aliases[alias] = cmd.name

    def names(self) -> list[str]:
        return sorted(self.commands) + sorted(self._aliases)

    def usage(self, name: str) -> str:
        return self.lookup(name).usage

    def lookup(self, name: str) -> Command:
        key = self._aliases.get(name, name)
        if key in self.commands:
            return self.commands[key]
        close = closest(name, self.names())
        hint = f"Did you mean :{close}? " if close else ""
        raise UsageError(f"Unknown command :{name}", hint + "Type :help for the list")

    def parse(self, line: str) -> Invocation:
        text = line.strip()
        if not text.startswith(":"):
            raise UsageError("Commands start with ':'", "Type :help")
        name, _, rest = text[1:].partition(" ")
        if not name:
            raise UsageError("Empty command", "Type :help for the list")
        cmd = self.lookup(name)
        if cmd.tail is Tail.RAW:
            args_raw = [rest.strip()] if rest.strip() else []
            if len(args_raw) < cmd.min_args:
                raise UsageError(f":{cmd.name} needs more arguments", f"Usage: {cmd.usage}")
            return Invocation(cmd, args_raw, Options())
        tokens = split_args(rest)
        args: list[str] = []
        opts = Options()
        i = 0
        while i < len(tokens):
            token = tokens[i]
            if token.startswith("--") and len(token) > 2 and not token[2].isdigit():
                key, eq, given = token[2:].partition("=")
                option = cmd.option(key)
                if option is None:
                    known = " ".join(f"--{o.name}" for o in cmd.options) or "none"
                    raise UsageError(f"Unknown option --{key} for :{cmd.name}", f"Options: {known}")
                if option.kind is Kind.FLAG:
                    if eq:
                        raise UsageError(f"--{key} takes no value", f"Usage: {cmd.usage}")
                    opts[key] = True
                else:
                    if not eq:
                        i += 1
                        if i >= len(tokens):
                            raise UsageError(f"--{key} needs a value", f"Usage: {cmd.usage}")
                        given = tokens[i]
                        if given.startswith("--") and cmd.option(given[2:].partition("=")[0]) is not None:
                            raise UsageError(f"--{key} needs a value before {given}", f"Usage: {cmd.usage}")
                    given = unquote(given)
                    if option.kind is Kind.MULTI:
                        opts[key] = [*opts.each(key), given]
                    else:
                        opts[key] = given
            else:
                args.append(token)
            i += 1
        raw_expression = cmd.tail is Tail.EXPRESSION and len(args) > 1
        args = [unquote(args[0]), " ".join(args[1:])] if raw_expression else [unquote(a) for a in args]
        if len(args) < cmd.min_args:
            raise UsageError(f":{cmd.name} needs more arguments", f"Usage: {cmd.usage}")
        if cmd.max_args is not None and len(args) > cmd.max_args:
            raise UsageError(f"Too many arguments for :{cmd.name}: {' '.join(args[cmd.max_args:])}",
                             f"Usage: {cmd.usage}")
        return Invocation(cmd, args, opts)


def key_value(text: str, example: str, *, value_required: bool = True) -> tuple[str, str | None]:
    """`KEY=VALUE` (spaces around both trimmed) as (key, value); value None for a bare KEY when allowed.
    `example` shows the right form in the error, e.g. "--option key=value"."""
    key, eq, given = text.partition("=")
    if not key.strip() or (value_required and not eq):
        raise UsageError(f"'{text}' is not KEY=VALUE", f"Write {example}")
    return key.strip(), given.strip() if eq else None


def key_values(pairs: list[str], example: str) -> dict[str, str]:
    return {key: str(given) for key, given in (key_value(pair, example) for pair in pairs)}


def _top_level(text: str, strict: bool) -> Iterator[tuple[str, bool]]:
    """Each character, and whether it stands outside quotes and brackets: the one scanner behind
    splitting commands into words and `-c` text into commands."""
    depth = 0
    quote: str | None = None
    escaped = False
    for ch in text:
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
            yield ch, False
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        yield ch, depth == 0 and quote is None
    if quote and strict:
        raise UsageError("Unclosed quote in the command", "Close the quote")


def _split_top_level(text: str, at: Callable[[str], bool], strict: bool = False) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    for ch, top in _top_level(text, strict):
        if top and at(ch):
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return parts


def split_args(text: str) -> list[str]:
    """Split on whitespace outside quotes and brackets."""
    return [word for word in _split_top_level(text, str.isspace, strict=True) if word]


def unquote(token: str) -> str:
    if len(token) >= 2 and token[0] == token[-1] and token[0] in "\"'":
        return token[1:-1]
    return token


def split_commands(text: str) -> list[str]:
    """Split `-c` text into commands at newlines and at ';' outside quotes and brackets.

    Python pieces next to each other stay one input (`x = 1; y = 2`); a piece starting with ':'
    is a colon command of its own.
    """
    out: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        python: list[str] = []
        for part in _split_semicolons(line):
            if part.strip().startswith(":"):
                if python:
                    out.append("; ".join(python))
                    python = []
                out.append(part.strip())
            elif part.strip():
                python.append(part.strip() if python else part.rstrip())
        if python:
            out.append("; ".join(python))
    return out


def _split_semicolons(line: str) -> list[str]:
    return _split_top_level(line, lambda ch: ch == ";")
