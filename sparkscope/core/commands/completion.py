"""What Tab offers after a colon command's words: its options, their choices, and its arguments, from what the
registry declares."""

from __future__ import annotations

from collections.abc import Callable

from ..commands.registry import Command, Complete, Kind


def command_candidates(cmd: Command, done: list[str], current: str, queries: Callable[[], list[str]],
                       dataframes: Callable[[], list[str]], commands: Callable[[], list[str]] = list) -> list[str]:
    """What may come next after `done` words of `cmd`, from what the registry declares."""
    if current.startswith("--"):
        key, eq, _ = current[2:].partition("=")
        option = cmd.option(key)
        if eq and option is not None:
            return [f"--{key}={choice}" for choice in option.choices if f"--{key}={choice}".startswith(current)]
        return [f"--{o.name}" for o in cmd.options if f"--{o.name}".startswith(current)]
    if done and done[-1].startswith("--"):
        option = cmd.option(done[-1][2:])
        if option is not None and option.kind is not Kind.FLAG:
            return [choice for choice in option.choices if choice.startswith(current)]
    position = 0
    for index, word in enumerate(done):
        previous = cmd.option(done[index - 1][2:]) if index and done[index - 1].startswith("--") else None
        if not word.startswith("--") and not (previous is not None and previous.kind is not Kind.FLAG):
            position += 1
    arg = cmd.arg(position)
    if arg is None:
        return []
    complete = arg.complete
    pool: list[str] = []
    if complete is Complete.CHOICES:
        pool = list(arg.choices)
    elif complete is Complete.COMMAND:
        pool = commands() + (["keys"] if "keys" in arg.metavar else [])
    if complete in (Complete.QUERY, Complete.QUERY_OR_DATAFRAME):
        pool += queries()
    if complete in (Complete.DATAFRAME, Complete.QUERY_OR_DATAFRAME):
        pool += [name for name in dataframes() if name not in pool]
    return [candidate for candidate in pool if candidate.startswith(current)]
