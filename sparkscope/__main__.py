"""The `sparkscope` command: it reads the command line and hands it to a front end: the REPL (the default), the
batch runner (-c, -f, a pipe) or the server commands (`server …`, `checkpoints …`). `python -m sparkscope` runs it too.

Start-up is kept light: pyspark loads in the background after the prompt is drawn.
"""

from __future__ import annotations

import os
import sys

from .client.errors import SparkscopeError
from .core.arguments import build_parser, split_script_args


def main(argv: list[str] | None = None) -> int:
    """The command. Its output piped into a reader that stops early (`sparkscope server logs | head`) ends
    it quietly, as `cat` does, instead of with a BrokenPipeError traceback."""
    try:
        try:
            return _main(argv)
        finally:
            sys.stdout.flush()  # inside the try: what print() or argparse's help kept in the buffer
    except BrokenPipeError:
        # stdout is gone: point it at /dev/null so that the interpreter's own flush at exit stays quiet
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for a program a closed pipe ended


def _main(argv: list[str] | None) -> int:
    # grpcio 1.81+ restarts its poller in a forked child, where closing the inherited descriptors before
    # exec makes it die of EBADF (grpc/grpc#43055): a pager or server the REPL starts while a channel is
    # open could never run. sparkscope forks only to exec, so gRPC's fork handlers have nothing to do.
    os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
    ours, script_args = split_script_args(sys.argv[1:] if argv is None else list(argv))
    args = build_parser(ours).parse_args(ours)
    # gRPC's C core logs its own lines on stderr (a failed TLS handshake: "=== Source Location Trace: ===", file
    # names of its source): each failure is said once, in sparkscope's one line; --debug shows gRPC's too
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR" if args.debug else "NONE")
    args.script_args = script_args
    from .core import diagnostics

    diagnostics.configure(debug=args.debug)
    if args.version:
        from . import __version__
        from .client._pyspark import client_version

        print(f"sparkscope {__version__} (pyspark {client_version()})")
        return 0
    try:
        if args.subcommand == "server":
            from .cli.server import server_main

            return server_main(args)
        if args.subcommand == "checkpoints":
            from .cli.server import checkpoints_main

            return checkpoints_main(args)
        from .core.settings import check_repl_settings
        from .core.session_holder import describe_target

        display = describe_target(args)  # validates the URL or profile before anything else
        check_repl_settings()
        if args.commands is None and args.file is None:
            if sys.stdin.isatty():
                from .repl.app import run_repl

                return run_repl(args, display)
            args.file = "-"  # a pipe: its lines run as a script
        from .cli.batch import run_batch

        return run_batch(args)
    except SparkscopeError as exc:
        if args.debug:
            raise
        from .core.hints import repl_hint
        from .core.rendering.render import error_json, error_line

        if args.format == "json":
            print(error_json(exc.message, repl_hint(exc)), file=sys.stderr)
        else:
            print(error_line(exc), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
