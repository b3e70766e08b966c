"""The `sparkscope` command: the REPL (default), non-interactive -c/-f, and `server …`.

Start-up is kept light: pyspark loads in the background after the prompt is drawn.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..client.errors import ConfigError, SparkscopeError
from .args import build_parser, split_script_args

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
    from ..repl import diagnostics

    diagnostics.configure(debug=args.debug)
    if args.version:
        from .. import __version__
        from ..client._pyspark import client_version

        print(f"sparkscope {__version__} (pyspark {client_version()})")
        return 0
    try:
        if args.subcommand == "server":
            from .server import server_main

            return server_main(args)
        if args.subcommand == "checkpoints":
            from .server import checkpoints_main

            return checkpoints_main(args)
        return repl_main(args)
    except SparkscopeError as exc:
        if args.debug:
            raise
        from ..repl.hints import repl_hint
        from ..repl.output.render import error_json, error_line

        if args.format == "json":
            print(error_json(exc.message, repl_hint(exc)), file=sys.stderr)
        else:
            print(error_line(exc), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


# -- REPL ----------------------------------------------------------------------------------------------
def _opener(args, on_server_wait=None):
    """The function that opens the REPL's session, from the command line's flags."""
    from ..repl.session_holder import session_opener

    return session_opener(args.remote, profile=args.profile, session_id=args.session_id, port=args.port,
                          reattach=bool(getattr(args, "reattach", False)), on_server_wait=on_server_wait)


def _describe_target(args) -> str:
    from ..client.connection.remote import resolve

    target = resolve(args.remote, profile=args.profile, session_id=args.session_id)
    return target.display if target else "local server"


def repl_main(args) -> int:
    from ..repl.executor import Executor

    display = _describe_target(args)  # validates URL/profile before anything else
    from ..repl.settings import check_repl_settings

    check_repl_settings()
    interactive = args.commands is None and args.file is None
    if not interactive:
        return batch_main(args)
    if not sys.stdin.isatty():
        args.file = "-"
        return batch_main(args)
    _take_back_ctrl_c()
    if sys.path:
        sys.path[0] = _script_path(None)
    executor = Executor(fmt=args.format, interactive=True, warm=False)
    executor.debug = args.debug
    if not args.debug:
        from ..repl.diagnostics import quiet_stderr

        quiet_stderr()

    def connect() -> None:
        executor.warm_up()  # after the first draw, on this thread, before the connecting thread imports pyspark
        executor.holder.connect_in_background(_opener(args, executor.holder.server_starting))
        _report_connection_later(executor, rejoined=bool(getattr(args, "reattach", False)) and not args.session_id)

    if args.init:  # the init script needs the session before the prompt
        connect()
        _run_file(executor, args.init)
    # Otherwise draw the prompt first: importing pyspark in parallel would slow the first draw.
    return _shell(executor, display, color=not args.no_color and "NO_COLOR" not in os.environ,
                  on_first_draw=None if args.init else connect)


def _shell(executor, display: str, color: bool, on_first_draw) -> int:
    """The prompt. Importing prompt-toolkit and building the prompt allocate much and free little, so
    Python's cyclic garbage collector waits until the prompt is drawn (it would scan those new objects
    a few hundred times: 4-5 ms of the 90 ms to the prompt)."""
    import gc

    def drawn() -> None:
        gc.enable()
        if on_first_draw is not None:
            on_first_draw()

    gc.disable()
    try:
        from ..repl.prompt.shell import run_shell

        return run_shell(executor, display, color=color, on_first_draw=drawn)
    finally:
        gc.enable()


def _take_back_ctrl_c() -> None:
    """At a terminal, Ctrl-C cancels the running command. A shell without job control starts a
    background command with SIGINT ignored (`sparkscope &` in a script, or a test runner started so),
    and Python keeps it ignored: the REPL would then have no way to cancel a long command."""
    import signal

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _report_connection_later(executor, rejoined: bool = False) -> None:
    import threading

    def watch() -> None:
        try:
            session = executor.holder.wait_connected()
            from ..client.logs import swallowed
            from ..repl.commands.catalog import lost_note, rejoin_note

            if rejoined:
                with swallowed("saying which session was rejoined"):
                    print(rejoin_note(session))
            with swallowed("looking for lost queries"):  # an extra: its failure is not the user's problem
                note = lost_note(session)
                if note:
                    print(note)
        except Exception as exc:
            from ..repl.output.render import error_line

            print(error_line(exc), file=sys.stderr)

    threading.Thread(target=watch, daemon=True).start()


def _run_file(executor, path: str) -> bool:
    """Run a script as Python runs one: compiled first (a syntax error anywhere runs nothing and names its file and
    line), then piece by piece, with tracebacks naming the file. A .py script stops at its first error, as
    `python FILE` does; a script of commands (.sps, or any other name) goes on after a failed line, as a SQL
    client's -f does, and exits non-zero."""

    from ..repl.executor import has_commands

    text = _script_text(path)
    name = "<stdin>" if path == "-" else path
    stops = name.endswith(".py")
    if stops and not has_commands(text):  # the whole file at once, as python compiles and runs it
        return executor.run(text, filename=name)
    return executor.run_script(text, filename=name, stops=stops)


def _script_text(path: str) -> str:
    """A script's text as Python reads a source file: UTF-8 unless a PEP 263 coding line says otherwise, a UTF-8
    byte-order mark (Windows editors write one) dropped."""
    import io
    import tokenize

    try:
        data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"Cannot read {path} ({exc.strerror})", "Check the path") from None
    try:
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        except SyntaxError as exc:  # its first lines are not UTF-8 (said below, with the byte), or name no codec
            data.decode("utf-8")
            raise ConfigError(f"{path}: {exc.msg}", "Fix the coding line, or save the script as UTF-8") from None
        return data.decode(encoding).replace("\r\n", "\n")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not {exc.encoding} text (byte {exc.start} cannot be decoded)",
                          "Save the script as UTF-8, or name its encoding in a coding line") from None


def _script_path(file: str | None) -> str:
    """sys.path[0] as `python FILE` sets it: the script's folder, its links resolved; '' for -c, stdin and the
    REPL, as Python has it there."""
    if not file or file == "-":
        return ""
    return os.path.dirname(os.path.realpath(file))


def batch_main(args) -> int:
    from ..repl.commands.registry import split_commands
    from ..repl.executor import Executor

    executor = Executor(fmt=args.format, interactive=False)
    executor.debug = args.debug
    executor.holder.set_session(_opener(args)())
    ok = True
    interrupted = False
    saved_argv = sys.argv
    if sys.path:
        sys.path[0] = _script_path(args.file)
    try:
        if args.init:
            ok = _run_file(executor, args.init) and ok
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
            ok = _run_file(executor, args.file) and ok
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
