"""The one command registry: `@command(...)` registers a colon command with its usage and help.

Argument splitting keeps Python expressions intact: whitespace inside quotes or brackets does not
split, so `:start counts spark.sql("select 1 as x") --sink memory` has one expression.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass, field

from ..client.errors import ConfigError


class UsageError(ConfigError):
    """Bad arguments to a colon command."""


@dataclass
class Command:
    name: str
    func: Callable
    usage: str
    summary: str
    aliases: tuple[str, ...] = ()
    options: dict[str, str] = field(default_factory=dict)  # name -> "value" | "flag" | "multi"
    min_args: int = 0
    max_args: int | None = 0
    raw_tail: bool = False  # positional args after the first are one Python expression
    raw: bool = False  # everything after the name is one argument (SQL)
    needs_session: bool = True
    fullscreen: bool = False  # takes over the terminal: runs on the main thread, interactive only
    waits: bool = False  # waits on a query by design: no deadline, and Ctrl-C never interrupts its RPC


@dataclass
class Invocation:
    command: Command
    args: list[str]
    opts: dict[str, object]


class Registry:
    def __init__(self) -> None:
        self.commands: dict[str, Command] = {}
        self._aliases: dict[str, str] = {}

    def command(self, name: str, usage: str, summary: str, *, aliases: tuple[str, ...] = (),
                options: dict[str, str] | None = None, args: tuple[int, int | None] = (0, 0),
                raw_tail: bool = False, needs_session: bool = True, raw: bool = False,
                fullscreen: bool = False, waits: bool = False) -> Callable[[Callable], Callable]:
        def register(func: Callable) -> Callable:
            cmd = Command(name, func, usage, summary, aliases, dict(options or {}), min_args=args[0],
                          max_args=args[1], raw_tail=raw_tail, raw=raw, needs_session=needs_session,
                          fullscreen=fullscreen, waits=waits)
            self.commands[name] = cmd
            for alias in aliases:
                self._aliases[alias] = name
            return func

        return register

    def names(self) -> list[str]:
        return sorted(self.commands) + sorted(self._aliases)

    def lookup(self, name: str) -> Command:
        key = self._aliases.get(name, name)
        if key in self.commands:
            return self.commands[key]
        close = difflib.get_close_matches(name, self.names(), n=1, cutoff=0.5)
        hint = f"Did you mean :{close[0]}? " if close else ""
        raise UsageError(f"Unknown command :{name}", hint + "Type :help for the list")

    def parse(self, line: str) -> Invocation:
        text = line.strip()
        if not text.startswith(":"):
            raise UsageError("Commands start with ':'", "Type :help")
        name, _, rest = text[1:].partition(" ")
        if not name:
            raise UsageError("Empty command", "Type :help for the list")
        cmd = self.lookup(name)
        if cmd.raw:
            args_raw = [rest.strip()] if rest.strip() else []
            if len(args_raw) < cmd.min_args:
                raise UsageError(f":{cmd.name} needs more arguments", f"Usage: {cmd.usage}")
            return Invocation(cmd, args_raw, {})
        tokens = split_args(rest)
        args: list[str] = []
        opts: dict[str, object] = {}
        i = 0
        while i < len(tokens):
            token = tokens[i]
            if token.startswith("--") and len(token) > 2 and not token[2].isdigit():
                key, eq, value = token[2:].partition("=")
                kind = cmd.options.get(key)
                if kind is None:
                    known = " ".join(f"--{o}" for o in cmd.options) or "none"
                    raise UsageError(f"Unknown option --{key} for :{cmd.name}", f"Options: {known}")
                if kind == "flag":
                    if eq:
                        raise UsageError(f"--{key} takes no value", f"Usage: {cmd.usage}")
                    opts[key] = True
                else:
                    if not eq:
                        i += 1
                        if i >= len(tokens):
                            raise UsageError(f"--{key} needs a value", f"Usage: {cmd.usage}")
                        value = tokens[i]
                    value = unquote(value)
                    if kind == "multi":
                        opts.setdefault(key, [])
                        opts[key].append(value)  # type: ignore[union-attr]
                    else:
                        opts[key] = value
            else:
                args.append(token)
            i += 1
        raw_expression = cmd.raw_tail and len(args) > 1
        args = [unquote(args[0]), " ".join(args[1:])] if raw_expression else [unquote(a) for a in args]
        if len(args) < cmd.min_args:
            raise UsageError(f":{cmd.name} needs more arguments", f"Usage: {cmd.usage}")
        if cmd.max_args is not None and len(args) > cmd.max_args:
            raise UsageError(f"Too many arguments for :{cmd.name}: {' '.join(args[cmd.max_args:])}",
                             f"Usage: {cmd.usage}")
        return Invocation(cmd, args, opts)


def split_args(text: str) -> list[str]:
    """Split on whitespace outside quotes and brackets."""
    tokens: list[str] = []
    current: list[str] = []
    depth = 0
    quote: str | None = None
    escaped = False
    for ch in text:
        if quote:
            current.append(ch)
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        elif ch.isspace() and depth == 0:
            if current:
                tokens.append("".join(current))
                current = []
            continue
        current.append(ch)
    if quote:
        raise UsageError("Unclosed quote in the command", "Close the quote")
    if current:
        tokens.append("".join(current))
    return tokens


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
    parts, current, quote, depth = [], [], None, 0
    for ch in line:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == ";" and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(ch)
    parts.append("".join(current))
    return parts


REGISTRY = Registry()
command = REGISTRY.command
