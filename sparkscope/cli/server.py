"""`sparkscope server …` and `sparkscope checkpoints`: the embedded server from the shell. Every result goes
through render.py, so `--format json` gives one JSON object, as it does for colon commands."""

from __future__ import annotations

import argparse
import re
import sys
import time
from typing import Any

from ..client.errors import ConfigError, ServerError, SparkscopeError
from ..server.local import UI_READERS, LocalServer
from ..server.info import ServerInfo
from ..core.rendering.render import age, busy_tasks, show, uptime
from ..core.rendering.results import Block, Message, Result, Table

NOT_RUNNING = ConfigError("No local server is running", "Start one with: sparkscope server start", code="no_server")


def server_main(args: argparse.Namespace) -> int:
    if args.action == "check-java":
        from ..server.spark_install import java_version

        return _emit(args, Message(f"Java {java_version()} found"))
    server = LocalServer()
    if args.action in ("check", "kept"):
        return _check(args) if args.action == "check" else _kept(args)
    actions = {"start": _start, "token": _token, "stop": _stop, "status": _status, "logs": _logs, "users": _users}
    if getattr(args, "port", None) is not None and args.action in ("stop", "status"):
        running = server.running()
        if running is not None and running.port != args.port:
            return _fail(args, ConfigError(
                f"The local server of this state dir runs on port {running.port}, not {args.port}",
                f"One server runs per state dir ({server.home}): leave out --port, or choose another state dir with "
                "XDG_STATE_HOME", code="other_port"), 1)
    return actions[args.action](args, server)


def _emit(args: argparse.Namespace, result: Result, code: int = 0) -> int:
    text = show(f"server {args.action}" if args.subcommand == "server" else args.subcommand, result, args.format,
                ok=code == 0)  # JSON's "ok" agrees with the exit code (server check exits 1 when something lacks)
    if text:
        print(text, flush=True)
    return code


def with_kafka_connector(conf: dict[str, str]) -> dict[str, str]:
    """`conf` with Spark's Kafka connector for this pyspark's Spark and Scala versions in spark.jars.packages."""
    from ..client.kafka.connector import connector_package
    from ..server.spark_install import spark_build

    package = connector_package(*spark_build())
    given = [p for p in conf.get("spark.jars.packages", "").split(",") if p.strip()]
    return {**conf, "spark.jars.packages": ",".join([*given, package] if package not in given else given)}


def _connector_missing(failed: ServerError) -> ServerError:
    """Why --kafka's connector could not be had, in one line: a version Maven Central does not publish (with the
    versions it does), or the download's own failure."""
    from ..client.kafka.connector import CONNECTOR
    from ..server.maven.packages import maven_settings, published_versions
    from ..server.spark_install import spark_build

    spark_version, scala = spark_build()
    group, artifact = f"{CONNECTOR}_{scala}".split(":")
    repository = maven_settings().repository
    versions = published_versions(group, artifact, repository=repository)
    if versions and spark_version not in versions:
        releases = sorted((version for version in versions if re.fullmatch(r"\d+\.\d+\.\d+", version)),
                          key=lambda version: tuple(int(part) for part in version.split(".")))
        lines = [version for version in releases if version.startswith("4.")] or releases or versions
        return ServerError(f"--kafka: Spark's Kafka connector for Spark {spark_version} is not published at "
                           f"{repository} (it has {', '.join(lines[-6:])})",
                           "Start without --kafka (sparkscope's own Kafka source and sink need no download), or use "
                           f"pyspark {lines[-1]} (a venv of its own), whose connector is there",
                           code="kafka_connector_unpublished", data={"versions": ", ".join(lines)})
    detail = failed.message.split("unresolved dependency: ")[-1].rstrip("]").rsplit(": ", 1)[-1]
    return ServerError(f"--kafka: Spark's Kafka connector {CONNECTOR}_{scala}:{spark_version} could not be "
                       f"downloaded from {repository} ({detail})",
                       "Start without --kafka: sparkscope's own Kafka source and sink need no download",
                       code="kafka_download_failed")


def _start(args: argparse.Namespace, server: LocalServer) -> int:
    from ..core.commands.registry import key_values

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
    conf = key_values(args.conf, "--conf spark.some.key=value")
    if args.kafka:
        conf = with_kafka_connector(conf)
    died = server.out_of_memory_exit() if args.restore is not None else None  # read before the start's new marker
    suspects = [record.name for record in server.ran_when_it_died()] if died else []
    try:
        started = server.start(port=args.port, master=args.master, conf=conf, timeout=args.timeout,
                               on_wait=waiting, require_token=not args.no_token, workers=args.workers,
                               worker_cores=args.worker_cores, worker_memory=args.worker_memory,
                               driver_memory=args.driver_memory, ui=args.ui)
    except ServerError as exc:
        if args.kafka and "unresolved dependency" in exc.message:
            raise _connector_missing(exc) from exc
        raise
    if tty:
        sys.stderr.write("\r" + " " * 70 + "\r")
    auth = "token required" if started.auth else "no token"
    if started.reused:
        lines = [f"Spark Connect server already running: {started.url} (pid {started.pid}, "
                 f"Spark {started.version}, {auth})"]
    else:
        lines = [f"Spark Connect server started in {started.startup_seconds:.1f}s: {started.url} "
                 f"(pid {started.pid}, Spark {started.version}, {auth})", f"log: {started.log}"]
    if started.ui_url:
        lines.append(f"Spark UI: {started.ui_url}: {UI_READERS}")
    elif args.ui:
        print("warning: --ui is ignored: the server was already running without its UI "
              "(sparkscope server stop, then start it with --ui)", file=sys.stderr)
    if started.cluster is not None:
        lines.append(f"cluster: {started.cluster.master_url} with {len(started.cluster.workers)} workers "
                     f"(master UI {started.cluster.webui}, readable only with this user's key)")
    _emit(args, Message("\n".join(lines), {"url": started.url, "pid": started.pid, "version": started.version,
                                           "reused": started.reused, "auth": started.auth,
                                           "log": str(started.log), "ui": started.ui_url}))
    return _restore(args, started, suspects) if args.restore is not None else 0


def _restore(args: argparse.Namespace, info: ServerInfo, suspects: list[str]) -> int:
    """Restart the catalogued queries that were running on this server when it stopped or died, in a
    session left open on the server (they keep running after this command ends). After an out-of-memory exit,
    those that ran then (`suspects`: one of them may have caused it) only when named."""
    from ..server.connecting import open_session
    from ..core.terminal import command_name

    skipped = [name for name in suspects if name not in args.restore]
    session = open_session(info.target(None), keepalive=0)
    try:
        results = session.restart_lost(skip=skipped)
    finally:
        session.close(stop_queries=False)
    if skipped:
        print(f"note: not restored, as they ran when the server ran out of memory: {', '.join(skipped)}. Restore "
              f"one by name once it cannot take the server down again: {command_name()} server start --restore "
              f"{skipped[0]}", file=sys.stderr)
    from ..core.commands.catalog import restarted

    restored = [outcome.name for _, outcome in results if not isinstance(outcome, SparkscopeError)]
    failed = [f"{record.name}: {outcome}" for record, outcome in results if isinstance(outcome, SparkscopeError)]
    if restored:  # each says where it resumed: a checkpoint found empty starts over from batch 0, and says so
        text = "\n".join([*(restarted(outcome).text for _, outcome in results if not isinstance(outcome,
                                                                                                 SparkscopeError)),
                          f"In session {session.session_id}. Reattach with: {command_name()} --reattach"])
    else:
        text = "No queries to restore: none of the catalogued queries was running on this server."
    _emit(args, Message(text, {"restored": restored, "session_id": session.session_id}))
    for line in failed:
        print(f"error: could not restore {line}", file=sys.stderr)
    return 1 if failed else 0


def _check(args: argparse.Namespace) -> int:
    """Like `databricks-connect test`: what the server can run for this client; 0 only when everything works."""
    from ..client.errors import ConnectionFailed
    from ..server.connecting import open_session, resolve_target
    from ..core.commands.session import capability_table

    try:
        session = open_session(resolve_target(getattr(args, "remote", None), profile=args.profile,
                                              start_server=False), keepalive=0, activate=False)
    except ConnectionFailed as exc:
        return _fail(args, exc, 2)
    try:
        caps = session.server.facts.get(refresh=True)
        kept = session.kept() if caps.sink_problem is None else None
    finally:
        session.close()
    return _emit(args, capability_table(caps, kept), 0 if caps.ok else 1)


def _kept(args: argparse.Namespace) -> int:
    """What sparkscope keeps on a server (the embedded one, or --remote URL); --free frees this user's unused."""
    from ..client.errors import ConnectionFailed
    from ..server.connecting import open_session, resolve_target
    from ..core.commands.session import kept_table

    try:
        session = open_session(resolve_target(getattr(args, "remote", None), profile=args.profile,
                                              start_server=False), keepalive=0, activate=False)
    except ConnectionFailed as exc:
        return _fail(args, exc, 2)
    try:
        if args.free:
            table = kept_table(session.free_kept(every_user=args.every_user), freed=True)
        else:
            table = kept_table(session.kept(), others=session.kept_by_others())
    finally:
        session.close()
    return _emit(args, table)


def _users(args: argparse.Namespace, server: LocalServer) -> int:
    """`server users add NAME | list | remove NAME | owner`: the users file of this state dir's server, or --file's
    (server/access/users.py)."""
    from ..server.access.users import Users

    users = Users(args.file) if args.file else server.users
    info = None if args.file else server.running()
    if info is not None and not info.auth:
        return _fail(args, ConfigError("The local server runs without a token (started with --no-token), so it "
                                       "checks no user's token", "Stop it and start it with a token: sparkscope "
                                       "server stop; sparkscope server start"), 1)
    if args.users_action == "owner":
        return _users_owner(args, users)
    if args.users_action == "add":
        try:
            token = users.add(args.name)
        except ConfigError as exc:
            return _fail(args, exc, 1)
        running = "" if info is not None or args.file else " It works once the server runs (sparkscope server start)."
        return _emit(args, Message(f"{token}\nThe token of user {args.name}, shown this once: give it to them. "
                                   f"They connect with ;token=… or SPARK_CONNECT_AUTHENTICATE_TOKEN, and act as "
                                   f"{args.name} only.{running}", {"user": args.name, "token": token}))
    if args.users_action == "remove":
        if not users.remove(args.name):
            return _fail(args, ConfigError(f"'{args.name}' is not a user of this server",
                                           "sparkscope server users list shows them"), 1)
        return _emit(args, Message(f"Removed user {args.name}: their token no longer works"
                                   + (", and the server ended their sessions." if info is not None else "."),
                                   {"removed": args.name}))
    return _emit(args, _users_table(users))


def _users_owner(args: argparse.Namespace, users: Any) -> int:
    """The server's own token in a users file of the user's (`--file`): SPARK_CONNECT_AUTHENTICATE_TOKEN's, never
    shown, or a new one, shown once."""
    import os
    import secrets

    from ..client.connection.remote import TOKEN_ENV
    from ..client.secrets import remember_secret

    if not args.file:
        return _fail(args, ConfigError("The embedded server sets its own token at each start",
                                       "sparkscope server token prints it; --file names a cluster's users file"), 1)
    given = os.environ.get(TOKEN_ENV)
    token = given or secrets.token_urlsafe(32)
    remember_secret(token)
    users.set_admin(token)
    if given:
        return _emit(args, Message(f"The server's own token is {TOKEN_ENV}'s, in {args.file}.", {"file": str(args.file)}))
    return _emit(args, Message(f"{token}\nThe server's own token (its owner's), shown this once, in {args.file}.",
                               {"token": token, "file": str(args.file)}))


def _users_table(users: Any) -> Table:
    listed = users.list()
    footer = (f"{len(listed)} user{'s' * (len(listed) != 1)}, each with a token of their own (only its hash is kept). "
              "The server's own token is its owner's" if listed else
              "No users yet: sparkscope server users add NAME gives one a token")
    if not users.owner_set():
        footer += ". This file names no server's own token: sparkscope server users --file PATH owner"
    return Table(["user", "added"], [[user.name, f"{age(time.time() - user.added)} ago"] for user in listed],
                 footer=footer)


def _token(args: argparse.Namespace, server: LocalServer) -> int:
    info = server.running()
    if info is None:
        return _fail(args, NOT_RUNNING, 3)
    if not info.token:
        return _fail(args, ConfigError("The local server runs without a token (started with --no-token)"), 1)
    return _emit(args, Block(info.token, data={"token": info.token}))


def _stop(args: argparse.Namespace, server: LocalServer) -> int:
    from ..server.process_tree import describe

    info = server.stop(grace=args.grace)
    if info is None:
        left = server.end_leftovers()
        if left:
            return _emit(args, Message(f"No local server is running. Ended what the last one left running when it "
                                       f"ended without a stop: {describe(left)}.",
                                       {"stopped": False, "ended": [p.pid for p in left]}))
        return _emit(args, Message("No local server is running.", {"stopped": False, "ended": []}))
    # Spark Connect lists only the caller's own session's queries, so name what ended in general terms
    lines = [f"Stopped the Spark Connect server (pid {info.pid}): the streaming queries of every session on it "
             "have ended."]
    if info.cluster is not None:
        pids = ", ".join(str(member.pid) for member in info.cluster.members)
        lines.append(f"Stopped its cluster: the master and {len(info.cluster.workers)} workers (pids {pids}).")
    workers = [p for p in info.ended if p.kind != "log writer"]
    if workers:
        lines.append(f"Ended the processes it had started: {describe(workers)}.")
    return _emit(args, Message("\n".join(lines), {"stopped": True, "pid": info.pid,
                                                  "ended": [p.pid for p in info.ended]}))


def _status(args: argparse.Namespace, server: LocalServer) -> int:
    from ..server.process_tree import describe
    from ..server.sizing import local_master

    info = server.status()
    died = server.out_of_memory_exit() if info is None else None
    if died is not None:
        return _emit(args, Message(f"No local server is running: {died.message[:1].lower()}{died.message[1:]}. "
                                   f"{died.hint}", {"running": False, "out_of_memory": died.data}), 3)
    if info is None:
        left = server.processes()
        if left:
            return _emit(args, Message(f"No local server is running, but the last one left processes running: "
                                       f"{describe(left)}. sparkscope server stop ends them",
                                       {"running": False, "left": [p.pid for p in left]}), 3)
        return _emit(args, Message("No local server is running. Start one with: sparkscope server start",
                                   {"running": False}), 3)
    auth = (f"token required ({server.token_path}, mode 0600; sparkscope server token prints it)"
            if info.auth else "off: any local user can connect (started with --no-token)")
    resident = info.memory_bytes
    memory = (f"driver heap {info.driver_memory or 'Spark default (1g)'}"
              + (f", resident {resident / 2**30:.1f} GiB" if resident else "")
              + " (sparkscope server start --driver-memory SIZE)")
    rows: list[tuple[str, object]] = [
        ("pid", info.pid), ("port", info.port), ("url", info.url), ("uptime", uptime(info.uptime)),
        ("spark", info.version or "not answering"), ("auth", auth), ("memory", memory),
        ("ui", f"{info.ui_url}: {UI_READERS}" if info.ui_url else "off (sparkscope server start --ui)"),
        ("log", info.log)]
    rows.append(("holds", describe(server.processes(info))))
    tasks = busy_tasks(server.busy_tasks(window=0.5))
    if tasks is not None:
        rows.append(("tasks", tasks))
    rows += _cluster_rows(info.cluster) if info.cluster is not None else [("master", local_master("local[*]")[0])]
    text = "\n".join(f"{key:<7} {value}" for key, value in rows)
    return _emit(args, Block(text, data={"running": True, **{key: value for key, value in rows}}))


def _logs(args: argparse.Namespace, server: LocalServer) -> int:
    try:
        for line in server.log_lines(follow=args.follow, last=args.lines):
            _emit(args, Message(line))
    except KeyboardInterrupt:
        pass
    return 0


def _fail(args: argparse.Namespace, error: SparkscopeError, code: int) -> int:
    from ..core.hints import repl_hint
    from ..core.rendering.render import error_json, error_line

    print(error_json(error.message, repl_hint(error)) if args.format == "json" else error_line(error),
          file=sys.stderr)
    return code


def _cluster_rows(cluster: Any) -> list[tuple[str, object]]:
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


def checkpoints_main(args: argparse.Namespace) -> int:
    from ..client.catalog.records import Catalog
    from ..core.commands.catalog import checkpoint_report

    if args.action == "prune" and not args.older_than:
        raise ConfigError("prune needs --older-than AGE", "e.g. sparkscope checkpoints prune --older-than 7d")
    server = LocalServer()
    table = checkpoint_report(server.checkpoint_root, Catalog.in_home(server.home).records(),
                              args.older_than if args.action == "prune" else None,
                              prune_command="sparkscope checkpoints prune --older-than AGE")
    return _emit(args, table)
