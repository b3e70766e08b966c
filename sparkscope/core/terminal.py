"""What the REPL does with the user's terminal beyond printing: commands to type again, and a pager."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from typing import Any


def command_name() -> str:
    """How to run sparkscope again, as printed: `sparkscope` when that is on PATH, else the full path
    of the script that is running (after `make run`, .venv/bin is not on PATH)."""
    here = os.path.realpath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if os.path.basename(here) != "sparkscope":
        return "sparkscope"  # started some other way (python -m, an embedding program)
    found = shutil.which("sparkscope")
    return "sparkscope" if found and os.path.realpath(found) == here else shlex.quote(here)


def reattach_command(target: Any, session_id: str) -> str:
    """A command that reattaches to a session, runnable as printed: quoted, and never with the token
    in it (that comes from where it came from: the state dir, the environment, a profile)."""
    parts = [command_name()]
    if target.source == "profile" and target.profile:
        parts += ["--profile", shlex.quote(target.profile)]
    elif target.source != "local":
        parts += ["--remote", shlex.quote(target.bare_url)]
    parts += ["--session-id", session_id]
    command = " ".join(parts)
    if target.token_source in ("url", "argument"):
        command += "  (with your token in SPARK_CONNECT_AUTHENTICATE_TOKEN)"
    elif target.token_source == "env":
        command += "  (with SPARK_CONNECT_AUTHENTICATE_TOKEN set, as now)"
    return command


def pager_command() -> list[str] | None:
    """The pager for output taller than the screen: [repl] pager in config.toml (false: none), else
    $PAGER (empty: none), else `less -SRXF` like pgcli."""
    from .settings import repl_setting

    configured = repl_setting("pager")
    if configured is False:
        return None
    command = str(configured) if configured else os.environ.get("PAGER", "less -SRXF")
    argv = shlex.split(command)
    return argv if argv and shutil.which(argv[0]) else None


def page(text: str) -> bool:
    """Show `text` through the pager when it is taller than the terminal; False when it was not paged."""
    import subprocess

    from prompt_toolkit.utils import is_dumb_terminal

    if not sys.stdout.isatty() or text.count("\n") + 2 < shutil.get_terminal_size((80, 24)).lines:
        return False
    if is_dumb_terminal():  # no screen to page on, and a pager there would read the lines typed next
        return False
    argv = pager_command()
    if argv is None:
        return False
    sys.stdout.flush()
    try:
        subprocess.run(argv, input=text + "\n", text=True, check=False)
    except OSError:
        return False
    return True
