"""Every colon command of the REPL, listed once: the registry is filled from this list, not by imports."""

from __future__ import annotations

from . import commands, commands_catalog, commands_kafka, commands_live, commands_session, commands_state
from .registry import Registry

REGISTRY = Registry([
    # queries
    commands.start, commands.queries, commands.progress, commands.peek, commands.status, commands.explain,
    commands.exception, commands.await_, commands.stop, commands.schema,
    # state
    commands_state.state, commands_state.late,
    # the catalog
    commands_catalog.restart, commands_catalog.forget, commands_catalog.checkpoints,
    # Kafka
    commands_kafka.topics, commands_kafka.produce,
    # following queries as they run
    commands_live.watch, commands_live.tail, commands_live.alerts,
    # the session and the REPL
    commands_session.sql, commands_session.conf, commands_session.connect, commands_session.session_,
    commands_session.server,
    commands_session.set_, commands_session.help_, commands_session.trace, commands_session.quit_,
])
