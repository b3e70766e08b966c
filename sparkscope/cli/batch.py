"""The batch runner: `sparkscope -c COMMAND`, `-f FILE` and a piped stdin run without a prompt, and exit with a code."""

from __future__ import annotations

import sys
from typing import Any

from ..core.scripts import run_file, script_path
from ..core.session_holder import opener_from_args


def run_batch(args: Any) -> int:
    from ..core.commands.registry import split_commands
    from ..core.executor import Executor

    executor = Executor(fmt=args.format, interactive=False)
    executor.debug = args.debug
    executor.holder.set_session(opener_from_args(args)())
    ok = True
    interrupted = False
    saved_argv = sys.argv
    if sys.path:
        sys.path[0] = script_path(args.file)
    try:
        if args.init:
            ok = run_file(executor, args.init) and ok
        if args.commands is not None and not executor.exit_requested:
            for item in (item for text in args.commands for item in split_commands(text)):
                ok = executor.run(item.strip()) and ok
                if executor.exit_requested:
                    break
        if args.file and not executor.exit_requested:
            # as `python FILE ARGS…` runs it: its own sys.argv, __file__, and __name__ == "__main__"
            sys.argv = [args.file, *getattr(args, "script_args", [])]
            if args.file != "-":
                executor.namespace["__file__"] = args.file
            executor.echo_values = not args.file.endswith(".py")
            ok = run_file(executor, args.file) and ok
    except KeyboardInterrupt:  # Ctrl-C ends the script; the exit rules below decide about its queries
        interrupted = True
    finally:
        sys.argv = saved_argv
        message = executor.finish(detach=args.detach)
        if message:
            print(message, file=sys.stderr)
    if interrupted:
        return 130
    if executor.exit_requested:
        return executor.exit_code
    return 0 if ok else 1
