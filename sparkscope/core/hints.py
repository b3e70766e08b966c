"""The REPL's hints for the client's errors: the same situation (the error's code), told in colon
commands instead of the SDK's Python."""

from __future__ import annotations

from ..client.errors import SparkscopeError

REPL_HINTS = {
    "query_exists": "Stop it first (:stop {name}) or pick another name",
    "query_running": "Stop it first: :stop {name}",
    "nothing_to_reattach": "Run :connect to open a new session",
    "session_in_use": "Join it anyway with --session-id {session_id} (its queries are then both of yours)",
    "not_in_catalog": "See what it holds with :queries --all",
    "not_restartable": "Build the DataFrame again and :start it",
    "no_query_or_table": "List them with :queries, or start one with :start",
    "session_lost": "Run :connect to open a new session",
    "session_closed": "Run :connect to open a new session",
    "session_changed": "Run :connect to open a new session; :restart --lost brings back the queries sparkscope "
                       "started from their checkpoints",
    "server_restarted": "Run :connect to open a session on it with its new token, then :restart --lost",
    "session_unknown": "Connect without --session-id to open a new session",
    "bad_session_id": "A session id is a UUID, as printed by :session",
    "sql_is_streaming": "Start it with :start NAME spark.sql(\"…\")",
    "needs_path": "Pass --path P",
    "sink_not_tailable": "Start it with the default sink: :start {name}",
    "keep_needs_bounded": "Leave out --sink (the default sink keeps what --keep says), or --keep",
    "grace_needs_bounded": "Leave out --sink (the default sink keeps its rows --grace after the query), or --grace",
    "continuous_bounded": "Leave out --keep (Spark's memory sink is used), or use a trigger like 1s",
    "query_in_other_session_only": ":peek {name} reads its rows here; :connect {url} --session-id {session_id} joins "
                                   "the session it runs in",
    "table_not_found": "Check the name with :sql SHOW TABLES, or start the query that creates it",
    "unresolved_column": "Check the column names with :schema",
    "stateless": "Its rows are in its sink: :peek {name} shows them",
    "checkpoint_gone": "Its state went with it; :forget {name} removes the record",
    "server_not_found": "Check the URL and that the server is running (sparkscope server status)",
    "server_unreachable": "Check that it is running (sparkscope server status) and the URL is right",
    "python_worker_failed": "The server's Python may lack a package the code imports, or the server was too busy; "
                            ":server says what it lacks",
    "server_unknown": "Its log says more (sparkscope server logs, for the embedded server); a server that ran out "
                      "of memory ends calls this way",
    "server_out_of_memory": ":kept lists what sparkscope keeps in the server's memory, and a query of --sink memory "
                            "keeps every row; a command that collects a large result needs it all at once. Stop what "
                            "holds most, or give the server more memory: sparkscope server start --driver-memory 8g",
}


def repl_hint(error: SparkscopeError) -> str:
    """The hint to show in the REPL: its own wording for the error's code, else the error's hint."""
    template = REPL_HINTS.get(error.code)
    if template is None:
        return error.hint
    try:
        return template.format(**error.data)
    except (KeyError, IndexError):  # a code raised without the data its template needs
        return error.hint


def repl_text(error: SparkscopeError) -> str:
    return error.text(repl_hint(error))
