"""The `sparkscope` command line: its options, the `server` and `checkpoints` subcommands, and where a script's
own arguments begin."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..client.errors import ServerError

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


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    """Where to connect: the flags the command line and a notebook's `%sparkscope` share."""
    parser.add_argument("--remote", metavar="URL", help="Spark Connect URL, sc://host:port[/;token=…]")
    parser.add_argument("--profile", metavar="NAME", help="a [profiles.NAME] entry of the config file")
    parser.add_argument("--session-id", metavar="UUID", help="reattach to an existing server session")
    parser.add_argument("--reattach", action="store_true",
                        help="rejoin your most recent session on the server whose queries still run")


class _RaisingParser(argparse.ArgumentParser):
    """A parser inside a running program (a notebook's magic): a bad flag is a UsageError, never an exit."""

    def __init__(self, usage_hint: str, **kwargs: Any):
        super().__init__(add_help=False, **kwargs)
        self.usage_hint = usage_hint

    def error(self, message: str):
        from ..client.secrets import redact
        from .commands.registry import UsageError

        raise UsageError(f"{self.prog}: {redact(message)}", self.usage_hint)


def connection_parser(prog: str, usage_hint: str) -> argparse.ArgumentParser:
    """The connection flags alone, as `prog` takes them: `%sparkscope --remote sc://…` reads them as
    `sparkscope --remote sc://…` does; a bad one raises a UsageError whose hint is `usage_hint`."""
    parser = _RaisingParser(usage_hint, prog=prog)
    add_connection_arguments(parser)
    return parser


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser for `argv`: the subcommands' parsers are built only when argv may name one (or asks for
    help), since the REPL's prompt waits for the parser."""
    parser = _Parser(
        prog="sparkscope", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="A terminal REPL and SDK for Spark Structured Streaming over Spark Connect.",
        epilog=EXAMPLES)
    add_connection_arguments(parser)
    parser.add_argument("--port", type=_port, metavar="N",
                        help="port of the embedded local server (default 15002, or the next free one)")
    parser.add_argument("-c", dest="commands", metavar="TEXT", action="append",
                        help="run these commands/Python lines (';' or newline separated) and exit; repeatable, "
                             "like psql's -c, each in order")
    parser.add_argument("-f", dest="file", metavar="FILE",
                        help="run a script of commands and Python, then exit; what follows FILE is the script's "
                             "sys.argv[1:], but sparkscope's own options right after FILE (-f job.sps --format json; "
                             "-- ends them), and sparkscope FILE.py ARGS… works too. It is compiled first: a syntax "
                             "error runs nothing. A .py script stops at its first error, as python does; a script "
                             "of commands (.sps) goes on after a failed line, as psql -f does; either exits 1")
    parser.add_argument("-i", dest="init", metavar="FILE", help="run a script, then open the prompt")
    parser.add_argument("--format", choices=("table", "json", "vertical"), default="table",
                        help="how command results are printed (default: table)")
    parser.add_argument("--no-color", action="store_true", help="no colours or highlighting")
    parser.add_argument("--detach", action="store_true",
                        help="on exit leave running queries on the server (default for -c/-f: stop them)")
    parser.add_argument("--debug", action="store_true", help="show full tracebacks")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    if argv is not None and not _may_name_subcommand(argv):
        parser.set_defaults(subcommand=None)
        return parser
    sub = parser.add_subparsers(dest="subcommand", metavar="{server,checkpoints}")
    checkpoints = sub.add_parser("checkpoints", help="list the embedded server's checkpoints; prune old ones",
                                 description="List the embedded server's checkpoints with size, age and the "
                                             "query each belongs to; 'prune --older-than 7d' deletes those no "
                                             "restartable query needs.")
    checkpoints.add_argument("action", nargs="?", choices=["list", "prune"], default="list")
    checkpoints.add_argument("--older-than", metavar="AGE", default=None, help="with prune: 30m, 12h, 7d, 2w")
    _server_parser(sub)
    return parser


def _server_parser(sub: Any) -> None:
    server = sub.add_parser("server", help="manage the embedded local Spark Connect server",
                            description="Manage the embedded local Spark Connect server (a JVM started from "
                                        "the pip-installed pyspark). Its pid, port and log live in "
                                        "$XDG_STATE_HOME/sparkscope/.")
    actions = server.add_subparsers(dest="action", required=True)
    # `server status --format json` as well as `--format json server status`
    formats = _Parser(add_help=False)
    formats.add_argument("--format", choices=("table", "json"), default=argparse.SUPPRESS,
                         help="how the result is printed (default: table)")
    _start_parser(actions, formats)
    stop = actions.add_parser("stop", help="stop the server this machine's sparkscope started", parents=[formats])
    stop.add_argument("--grace", type=_seconds, default=20.0, help="seconds before SIGKILL (default 20)")
    status = actions.add_parser("status", help="pid, port, URL, uptime, Spark version, auth and log path",
                                parents=[formats])
    for which in (stop, status):  # one server per state dir: --port says which one is meant, and is checked
        which.add_argument("--port", type=_port, default=None,
                           help="the port of the server meant (one server runs per state dir: XDG_STATE_HOME "
                                "chooses another)")
    actions.add_parser("token", help="print the server's token, for a plain pyspark client (stdout only)",
                       parents=[formats])
    check = actions.add_parser("check", parents=[formats],
                               help="what a server can run for this client (the embedded one, or --remote URL); "
                                    "exit code 0 only when everything sparkscope uses works",
                               description="Ask a Spark Connect server what sparkscope needs of it: its Spark, its "
                                           "Python (the version and the packages Connect's foreachBatch and "
                                           "sparkscope's Kafka source import), Spark's Kafka connector, a "
                                           "checkpoint root, auth and TLS. Exit code 0 when everything works, 1 "
                                           "when something is missing, 2 when the server cannot be reached.")
    check.add_argument("--remote", default=argparse.SUPPRESS, metavar="sc://HOST:PORT",
                       help="the server to check (default: SPARK_REMOTE, the profile, or the embedded server)")
    _kept_parser(actions, formats)
    _users_parser(actions, formats)
    actions.add_parser("check-java", help="check that Java 17 or newer is installed (one line either way)")
    logs = actions.add_parser("logs", help="print the server log")
    logs.add_argument("-f", "--follow", action="store_true", help="keep printing new lines")
    logs.add_argument("-n", "--lines", type=int, default=200, help="lines to show (default 200)")
    actions.metavar = "{" + ",".join(actions.choices) + "}"  # every subcommand, as they were added


def _start_parser(actions: Any, formats: argparse.ArgumentParser) -> None:
    start = actions.add_parser("start", help="start the server, or reuse the running one", parents=[formats])
    start.add_argument("--port", type=_port, default=None, help="gRPC port (default 15002)")
    start.add_argument("--master", default="local[*]", help="local[*] (default) or spark://host:7077")
    start.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                       help="extra Spark configuration; repeatable")
    start.add_argument("--timeout", type=_seconds, default=180.0,
                       help="seconds to wait for the server (default 180)")
    start.add_argument("--kafka", action="store_true",
                       help="add Spark's Kafka connector (spark-sql-kafka, downloaded from Maven Central by "
                            "spark.jars.packages); without it sparkscope's own Kafka source and sink are used")
    start.add_argument("--restore", nargs="*", metavar="NAME", default=None,
                       help="then restart, from their checkpoints, the catalogued queries that were running on it; "
                            "after it ran out of memory, those that ran then only when named (--restore NAME…)")
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


def _kept_parser(actions: Any, formats: argparse.ArgumentParser) -> None:
    kept = actions.add_parser("kept", parents=[formats],
                              help="what sparkscope keeps for you on a server (the embedded one, or --remote URL): "
                                   "the rows of your bounded queries and memory sources, with state, rows and size",
                              description="List what sparkscope keeps for your user in a Spark Connect server's "
                                          "memory: each ring (the newest rows of a query of the default sink) and "
                                          "feed (a memory source's batches), with its query, state, rows, size and "
                                          "when it ends; with the server's own token, each other user's totals too "
                                          "(never their names or sessions). Each is freed by itself a grace period "
                                          "after nothing uses it (spark.sparkscope.grace on the server, 15 minutes "
                                          "by default); --free frees yours now.")
    kept.add_argument("--remote", default=argparse.SUPPRESS, metavar="sc://HOST:PORT",
                      help="the server to ask (default: SPARK_REMOTE, the profile, or the embedded server)")
    kept.add_argument("--free", action="store_true", help="free now what your user keeps there that nothing uses")
    kept.add_argument("--every-user", action="store_true",
                      help="with --free and the server's own token: free what every user keeps that nothing uses")


def _users_parser(actions: Any, formats: argparse.ArgumentParser) -> None:
    users = actions.add_parser("users", parents=[formats], help="the users of the embedded server: a token each",
                               description="Give each user of the embedded server a token of their own. The server "
                                           "binds each token to its user's id: a token acts only as its user, so "
                                           "no user reaches another's sessions, queries or kept rows. The server "
                                           "keeps only each token's hash (the users file of its state dir, mode "
                                           "0600), and reads it again when it changes: no restart. The server's "
                                           "own token (sparkscope server token) stays its owner's.")
    users.add_argument("--file", type=Path, default=None, metavar="PATH",
                       help="a users file of your own instead of the embedded server's: the one a cluster mounts "
                            "(docker-compose.yml's sparkscope-users/users)")
    which = users.add_subparsers(dest="users_action", metavar="{add,list,remove,owner}", required=True)
    add = which.add_parser("add", parents=[formats], help="give NAME a token, shown once")
    add.add_argument("name", metavar="NAME")
    which.add_parser("list", parents=[formats], help="the users, never their tokens")
    remove = which.add_parser("remove", parents=[formats],
                              help="take NAME away: their token stops working and their sessions end")
    remove.add_argument("name", metavar="NAME")
    which.add_parser("owner", parents=[formats],
                     help="with --file: the server's own token, its owner's: SPARK_CONNECT_AUTHENTICATE_TOKEN's, "
                          "or a new one shown once (the embedded server sets its own at each start)")


# options of ours that take a value: a value is never the script
_VALUED = {"--remote", "--profile", "--session-id", "--port", "-c", "-i", "--format"}


def _may_name_subcommand(argv: list[str]) -> bool:
    """Whether argv has a word that is neither an option nor an option's value, or asks for help."""
    index = 0
    while index < len(argv):
        arg = argv[index]
        if arg in ("-h", "--help") or not arg.startswith("-"):
            return True
        index += 2 if arg in _VALUED or arg == "-f" else 1
    return False


# flags of ours that take no value
_FLAGS = {"--reattach", "--no-color", "--detach", "--debug", "--version"}


def _own_options_after(argv: list[str], start: int) -> int:
    """Where the script's arguments begin after `-f FILE`: sparkscope's own options that follow FILE directly
    (`-f pipeline.sps --format json`) are sparkscope's; the first other word, or `--`, begins the script's."""
    index = start
    while index < len(argv):
        arg = argv[index]
        name = arg.split("=", 1)[0]
        if name in _VALUED and name not in ("-c", "-i") and "=" not in arg and index + 1 < len(argv):
            index += 2
        elif name in _VALUED and "=" in arg or arg in _FLAGS:
            index += 1
        else:
            break
    return index


def split_script_args(argv: list[str]) -> tuple[list[str], list[str]]:
    """sparkscope's own arguments, and the script's: what follows `-f FILE` belongs to the script (but
    sparkscope's own options right after FILE, or before a `--`), and everything after `FILE.py`, which means
    `-f FILE.py`, as with `python FILE ARGS…`."""
    index = 0
    while index < len(argv):
        arg = argv[index]
        if arg in ("server", "checkpoints", "--"):
            break
        if arg == "-f" and index + 1 < len(argv) or arg.startswith("-f") and not arg.startswith("--") and len(arg) > 2:
            after = index + (2 if arg == "-f" else 1)
            script_at = _own_options_after(argv, after)
            rest = argv[script_at:]
            return argv[:script_at], rest[1:] if rest[:1] == ["--"] else rest
        if arg in _VALUED:
            index += 2
            continue
        if not arg.startswith("-") and arg.endswith(".py"):
            return [*argv[:index], "-f", arg], argv[index + 1:]
        index += 1
    return argv, []


def _workers(text: str) -> int:
    from ..server.sizing import check_workers

    try:
        return check_workers(text)
    except ServerError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def _port(text: str) -> int:
    from ..server.sizing import check_port

    try:
        return check_port(text)
    except ServerError as exc:
        raise argparse.ArgumentTypeError(f"{exc.message}: {exc.hint[:1].lower()}{exc.hint[1:]}") from None


def _seconds(text: str) -> float:
    import math

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of seconds: use a positive number, e.g. 30")
    return value
