"""The `sparkscope` command: the REPL (default), non-interactive -c/-f, and `server …`.

Start-up is kept light: pyspark loads in the background after the prompt is drawn.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..client.errors import ConfigError, SparkscopeError

EXAMPLES = """\
examples:
  sparkscope                                   REPL on the embedded local server (started if needed)
  sparkscope --remote sc://spark.example:15002 REPL on a remote Spark Connect server
  sparkscope -c 'ticks = ss.source.rate(10); :start ticks; :queries'
                                               run Python and commands, then exit
  sparkscope -f pipeline.sps --format json     run a script, one JSON object per command
  sparkscope --session-id <uuid>               reattach to a session left running
  sparkscope server start|stop|status|logs     manage the embedded local server

connection precedence: --remote > SPARK_REMOTE > --profile / SPARKSCOPE_PROFILE > embedded local server.
tokens: ;token=… in the URL or SPARK_CONNECT_AUTHENTICATE_TOKEN (never on the command line in shared
machines: process arguments are visible to other users).
"""


class _Parser(argparse.ArgumentParser):
    """Bad flags get one line, like every other error, instead of a usage block."""

    def error(self, message: str):
        from ..client.secrets import redact

        self.exit(2, f"error: {redact(message)}. Run '{self.prog} --help' for usage.\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="sparkscope", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="A terminal REPL and SDK for Spark Structured Streaming over Spark Connect.",
        epilog=EXAMPLES)
    parser.add_argument("--remote", metavar="URL", help="Spark Connect URL, sc://host:port[/;token=…]")
    parser.add_argument("--profile", metavar="NAME", help="a [profiles.NAME] entry of the config file")
    parser.add_argument("--session-id", metavar="UUID", help="reattach to an existing server session")
    parser.add_argument("--reattach", action="store_true",
                        help="rejoin your most recent session on the server whose queries still run")
    parser.add_argument("--port", type=_port, metavar="N",
                        help="port of the embedded local server (default 15002, or the next free one)")
    parser.add_argument("-c", dest="commands", metavar="TEXT", action="append",
                        help="run these commands/Python lines (';' or newline separated) and exit; repeatable, "
                             "like psql's -c, each in order")
    parser.add_argument("-f", dest="file", metavar="FILE",
                        help="run a script of commands and Python, then exit; what follows FILE is the script's "
                             "sys.argv[1:] (sparkscope FILE.py ARGS… works too)")
    parser.add_argument("-i", dest="init", metavar="FILE", help="run a script, then open the prompt")
    parser.add_argument("--format", choices=("table", "json", "vertical"), default="table",
                        help="how command results are printed (default: table)")
    parser.add_argument("--no-color", action="store_true", help="no colours or highlighting")
    parser.add_argument("--detach", action="store_true",
                        help="on exit leave running queries on the server (default for -c/-f: stop them)")
    parser.add_argument("--debug", action="store_true", help="show full tracebacks")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="subcommand", metavar="{server,checkpoints}")
    checkpoints = sub.add_parser("checkpoints", help="list the embedded server's checkpoints; prune old ones",
                                 description="List the embedded server's checkpoints with size, age and the "
                                             "query each belongs to; 'prune --older-than 7d' deletes those no "
                                             "restartable query needs.")
    checkpoints.add_argument("action", nargs="?", choices=["list", "prune"], default="list")
    checkpoints.add_argument("--older-than", metavar="AGE", default=None, help="with prune: 30m, 12h, 7d, 2w")
    server = sub.add_parser("server", help="manage the embedded local Spark Connect server",
                            description="Manage the embedded local Spark Connect server (a JVM started from "
                                        "the pip-installed pyspark). Its pid, port and log live in "
                                        "$XDG_STATE_HOME/sparkscope/.")
    actions = server.add_subparsers(dest="action", metavar="{start,stop,status,logs,token}", required=True)
    start = actions.add_parser("start", help="start the server, or reuse the running one")
    start.add_argument("--port", type=_port, default=None, help="gRPC port (default 15002)")
    start.add_argument("--master", default="local[*]", help="local[*] (default) or spark://host:7077")
    start.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                       help="extra Spark configuration; repeatable")
    start.add_argument("--timeout", type=_seconds, default=180.0,
                       help="seconds to wait for the server (default 180)")
    start.add_argument("--restore", action="store_true",
                       help="then restart, from their checkpoints, the catalogued queries that were running on it")
    start.add_argument("--no-token", action="store_true",
                       help="let any local user connect without a token (not recommended)")
    start.add_argument("--driver-memory", default=None, metavar="SIZE",
                       help="the server's driver heap, e.g. 4g (default: a quarter of this machine's RAM, "
                            "from 1g to 8g)")
    start.add_argument("--ui", action="store_true",
                       help="turn on the Spark UI (off by default: every user of this machine could read it)")
    start.add_argument("--workers", type=_workers, default=0, metavar="N",
                       help="run on a standalone cluster of this machine: a master and N workers (Spark's own "
                            "classes, everything on 127.0.0.1), instead of local mode")
    start.add_argument("--worker-cores", type=_workers, default=None, metavar="N",
                       help="cores per worker (default: this machine's cores shared among the workers)")
    start.add_argument("--worker-memory", default="2g", metavar="SIZE",
                       help="memory per worker for its executor (default 2g)")
    stop = actions.add_parser("stop", help="stop the server this machine's sparkscope started")
    stop.add_argument("--grace", type=_seconds, default=20.0, help="seconds before SIGKILL (default 20)")
    actions.add_parser("status", help="pid, port, URL, uptime, Spark version, auth and log path")
    actions.add_parser("token", help="print the server's token, for a plain pyspark client (stdout only)")
    actions.add_parser("check-java", help="check that Java 17 or newer is installed (one line either way)")
    logs = actions.add_parser("logs", help="print the server log")
    logs.add_argument("-f", "--follow", action="store_true", help="keep printing new lines")
    logs.add_argument("-n", "--lines", type=int, default=200, help="lines to show (default 200)")
    return parser


# options of ours that take a value: a value is never the script
_VALUED = {"--remote", "--profile", "--session-id", "--port", "-c", "-i", "--format"}


def split_script_args(argv: list[str]) -> tuple[list[str], list[str]]:
    """sparkscope's own arguments, and the script's: everything after `-f FILE` (or after `FILE.py`,
    which means `-f FILE.py`) belongs to the script, as with `python FILE ARGS…`."""
    index = 0
    while index < len(argv):
        arg = argv[index]
        if arg in ("server", "checkpoints", "--"):
            break
        if arg == "-f" and index + 1 < len(argv):
            return argv[: index + 2], argv[index + 2:]
        if arg.startswith("-f") and not arg.startswith("--") and len(arg) > 2:
            return argv[: index + 1], argv[index + 1:]
        if arg in _VALUED:
            index += 2
            continue
        if not arg.startswith("-") and arg.endswith(".py"):
            return [*argv[:index], "-f", arg], argv[index + 1:]
        index += 1
    return argv, []


def _workers(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 16:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number from 1 to 16")
    return value


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 < port < 65536:
        raise argparse.ArgumentTypeError(f"'{text}' is not a port: use a number from 1 to 65535")
    return port


def _seconds(text: str) -> float:
    import math

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of seconds: use a positive number, e.g. 30")
    return value


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
    # grpcio 1.81+ restarts its poller in a forked child, where closing the inherited descriptors before
    # exec makes it die of EBADF (grpc/grpc#43055): a pager or server the REPL starts while a channel is
    # open could never run. sparkscope forks only to exec, so gRPC's fork handlers have nothing to do.
    os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
    ours, script_args = split_script_args(sys.argv[1:] if argv is None else list(argv))
    args = build_parser().parse_args(ours)
    args.script_args = script_args
    from . import diagnostics

    diagnostics.configure(debug=args.debug)
    if args.version:
        from .. import __version__

        print(f"sparkscope {__version__}")
        return 0
    try:
        if args.subcommand == "server":
            return server_main(args)
        if args.subcommand == "checkpoints":
            return checkpoints_main(args)
        return repl_main(args)
    except SparkscopeError as exc:
        if args.debug:
            raise
        from .hints import repl_hint
        from .render import error_json, error_line

        if args.format == "json":
            print(error_json(exc.message, repl_hint(exc)), file=sys.stderr)
        else:
            print(error_line(exc), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


# -- server ------------------------------------------------------------------------------------------
def _human(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h {minutes:02d}m {secs:02d}s" if hours else f"{minutes}m {secs:02d}s"


def _restore(info) -> int:
    """Restart the catalogued queries that were running on this server when it stopped or died, in a
    session left open on the server (they keep running after this command ends)."""
    from ..client.session import Session
    from .terminal import command_name

    session = Session.open(info.target(None), keepalive=0)
    restored, failed = [], []
    try:
        for record in session.lost_queries():
            try:
                restored.append(session.restart(record.name).name)
            except SparkscopeError as exc:
                failed.append(f"{record.name}: {exc}")
    finally:
        session.close(stop_queries=False)
    if restored:
        print(f"Restored {', '.join(restored)} from their checkpoints in session {session.session_id}. "
              f"Reattach with: {command_name()} --reattach")
    else:
        print("No queries to restore: none of the catalogued queries was running on this server.")
    for line in failed:
        print(f"error: could not restore {line}", file=sys.stderr)
    return 1 if failed else 0


def checkpoints_main(args) -> int:
    from ..client.catalog import Catalog
    from ..client.server import LocalServer
    from .commands_catalog import checkpoint_report
    from .render import render

    if args.action == "prune" and not args.older_than:
        raise ConfigError("prune needs --older-than AGE", "e.g. sparkscope checkpoints prune --older-than 7d")
    table = checkpoint_report(LocalServer().checkpoint_root, Catalog().records(),
                              args.older_than if args.action == "prune" else None)
    print(render(table, args.format))
    return 0


def server_main(args) -> int:
    from ..client.server import UI_READERS, LocalServer
    from ..client.server_sizing import local_master
    from ..client.spark_install import java_version
    from .registry import key_values

    if args.action == "check-java":
        print(f"Java {java_version()} found")
        return 0
    server = LocalServer()
    if args.action == "start":
        tty = sys.stderr.isatty()

        def waiting(elapsed: float, stage: str) -> None:
            if tty:
                sys.stderr.write(f"\rStarting Spark Connect server: {stage}… {elapsed:4.1f}s".ljust(70))
                sys.stderr.flush()

        if args.no_token:
            print("warning: --no-token lets every user of this machine run code as you through the server",
                  file=sys.stderr)
        if args.workers and args.master != "local[*]":
            raise ConfigError("--workers starts its own cluster, so --master cannot be given with it",
                              "Leave out one of them")
        started = server.start(port=args.port, master=args.master,
                               conf=key_values(args.conf, "--conf spark.some.key=value"), timeout=args.timeout,
                               on_wait=waiting, require_token=not args.no_token, workers=args.workers,
                               worker_cores=args.worker_cores, worker_memory=args.worker_memory,
                               driver_memory=args.driver_memory, ui=args.ui)
        if tty:
            sys.stderr.write("\r" + " " * 70 + "\r")
        auth = "token required" if started.auth else "no token"
        if started.reused:
            print(f"Spark Connect server already running: {started.url} (pid {started.pid}, "
                  f"Spark {started.version}, {auth})")
        else:
            print(f"Spark Connect server started in {started.startup_seconds:.1f}s: {started.url} "
                  f"(pid {started.pid}, Spark {started.version}, {auth})")
            print(f"log: {started.log}")
        if started.ui_url:
            print(f"Spark UI: {started.ui_url}: {UI_READERS}")
        elif args.ui:
            print("warning: --ui is ignored: the server was already running without its UI "
                  "(sparkscope server stop, then start it with --ui)", file=sys.stderr)
        if started.cluster is not None:
            print(f"cluster: {started.cluster.master_url} with {len(started.cluster.workers)} workers "
                  f"(master UI {started.cluster.webui}, readable only with this user's key)")
        return _restore(started) if args.restore else 0
    if args.action == "token":
        info = server.running()
        if info is None:
            print("error: No local server is running. Start one with: sparkscope server start", file=sys.stderr)
            return 3
        if not info.token:
            print("error: The local server runs without a token (started with --no-token)", file=sys.stderr)
            return 1
        print(info.token)
        return 0
    if args.action == "stop":
        info = server.stop(grace=args.grace)
        # Spark Connect lists only the caller's own session's queries, so name what ended in general terms
        print(f"Stopped the Spark Connect server (pid {info.pid}): the streaming queries of every session on it "
              "have ended." if info else "No local server is running.")
        if info is not None and info.cluster is not None:
            pids = ", ".join(str(member.pid) for member in info.cluster.members)
            print(f"Stopped its cluster: the master and {len(info.cluster.workers)} workers (pids {pids}).")
        return 0
    if args.action == "status":
        info = server.status()
        if info is None:
            print("No local server is running. Start one with: sparkscope server start")
            return 3
        auth = (f"token required ({server.token_path}, mode 0600; sparkscope server token prints it)"
                if info.auth else "off: any local user can connect (started with --no-token)")
        resident = info.memory_bytes
        memory = (f"driver heap {info.driver_memory or 'Spark default (1g)'}"
                  + (f", resident {resident / 2**30:.1f} GiB" if resident else "")
                  + " (sparkscope server start --driver-memory SIZE)")
        rows = [("pid", info.pid), ("port", info.port), ("url", info.url), ("uptime", _human(info.uptime)),
                ("spark", info.version or "not answering"), ("auth", auth), ("memory", memory),
                ("ui", f"{info.ui_url}: {UI_READERS}" if info.ui_url else "off (sparkscope server start --ui)"),
                ("log", info.log)]
        rows += _cluster_rows(info.cluster) if info.cluster is not None else [("master", local_master("local[*]")[0])]
        for key, value in rows:
            print(f"{key:<7} {value}")
        return 0
    if args.action == "logs":
        try:
            for line in server.log_lines(follow=args.follow, last=args.lines):
                print(line, flush=True)
        except KeyboardInterrupt:
            pass
        return 0
    return 1  # pragma: no cover - argparse enforces the choices


def _cluster_rows(cluster) -> list[tuple[str, object]]:
    """The master and each worker: pid, and the cores and memory the master says it has."""
    rows: list[tuple[str, object]] = [("master", f"{cluster.master_url} (pid {cluster.master.pid}, "
                                                 f"UI {cluster.webui})")]
    try:
        known = cluster.worker_status()
    except OSError:
        known = []
    for index, member in enumerate(cluster.workers):
        state = "stopped" if not member.alive() else "not registered"
        detail = ""
        w = cluster.status_of(member, known)
        if w is not None:
            state = w.state.lower()
            detail = (f", {w.cores} cores ({w.cores_used} used), {w.memory_mb / 1024:.1f} GiB "
                      f"({w.memory_used_mb / 1024:.1f} used)")
        rows.append((f"worker{index + 1}", f"pid {member.pid}, {state}{detail}"))
    return rows


# -- REPL ----------------------------------------------------------------------------------------------
def _opener(args, on_server_wait=None):
    """The function that opens the REPL's session; `on_server_wait(elapsed, stage)` hears how the start of
    the embedded server goes, when it has to be started."""
    from ..client.errors import ConnectionFailed
    from ..client.session import Session, resolve_target
    from .diagnostics import quiet_pyspark_loggers

    opened = []

    def open_session():
        quiet_pyspark_loggers()
        target = resolve_target(args.remote, profile=args.profile, session_id=args.session_id,
                                on_server_wait=on_server_wait, port=args.port)
        try:
            if getattr(args, "reattach", False) and not args.session_id:
                session = Session.reattach(target)
            else:
                session = Session.open(target)
        except ConnectionFailed as exc:
            # :connect again after the server restarted: the session named at start is gone from it, so
            # a new one (else the hint, "run :connect", would name the command that just failed)
            if not opened or exc.code not in ("session_unknown", "nothing_to_reattach"):
                raise
            session = Session.open(target.with_session(None))
        opened.append(session.session_id)
        return session

    return open_session


def _describe_target(args) -> str:
    from ..client.remote import resolve

    target = resolve(args.remote, profile=args.profile, session_id=args.session_id)
    return target.display if target else "local server"


def repl_main(args) -> int:
    from .executor import Executor

    display = _describe_target(args)  # validates URL/profile before anything else
    from .settings import check_repl_settings

    check_repl_settings()
    interactive = args.commands is None and args.file is None
    if not interactive:
        return batch_main(args)
    if not sys.stdin.isatty():
        args.file = "-"
        return batch_main(args)
    _take_back_ctrl_c()
    executor = Executor(fmt=args.format, interactive=True)
    executor.debug = args.debug
    if not args.debug:
        from .diagnostics import quiet_stderr

        quiet_stderr()
    from .shell import run_shell

    def connect() -> None:
        executor.connect_in_background(_opener(args, executor.server_starting))
        _report_connection_later(executor)

    if args.init:  # the init script needs the session before the prompt
        connect()
        _run_file(executor, args.init)
    # Otherwise draw the prompt first: importing pyspark in parallel would slow the first draw.
    return run_shell(executor, display, color=not args.no_color and "NO_COLOR" not in os.environ,
                     on_first_draw=None if args.init else connect)


def _take_back_ctrl_c() -> None:
    """At a terminal, Ctrl-C cancels the running command. A shell without job control starts a
    background command with SIGINT ignored (`sparkscope &` in a script, or a test runner started so),
    and Python keeps it ignored: the REPL would then have no way to cancel a long command."""
    import signal

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _report_connection_later(executor) -> None:
    import threading

    def watch() -> None:
        try:
            session = executor.wait_connected()
            from ..client.logs import swallowed
            from .commands_catalog import lost_note

            with swallowed("looking for lost queries"):  # an extra: its failure is not the user's problem
                note = lost_note(session)
                if note:
                    print(note)
        except Exception as exc:
            from .render import error_line

            print(error_line(exc), file=sys.stderr)

    threading.Thread(target=watch, daemon=True).start()


def _run_file(executor, path: str) -> bool:
    from ..client.errors import ConfigError
    from .registry import split_commands
    from .statements import script_statements

    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"Cannot read {path} ({exc.strerror})", "Check the path") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not UTF-8 text (byte {exc.start} cannot be decoded)",
                          "Save the script as UTF-8") from None
    ok = True
    for piece in script_statements(text):
        if executor.exit_requested:  # exit(), quit() or :quit end the script
            return ok
        for item in split_commands(piece) if piece.startswith(":") else [piece]:
            ok = executor.run(item) and ok
    return ok


def batch_main(args) -> int:
    from .registry import split_commands
    from .executor import Executor

    executor = Executor(fmt=args.format, interactive=False)
    executor.debug = args.debug
    executor.set_session(_opener(args)())
    ok = True
    interrupted = False
    saved_argv = sys.argv
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
