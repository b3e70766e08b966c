"""Every colon command of the REPL, listed once: the registry is filled from this list, not by imports."""

from __future__ import annotations

from . import catalog, feed, kafka, live, session, state, streams
from .registry import Registry

REGISTRY = Registry([
    # queries
    streams.start, streams.queries, streams.progress, streams.peek, streams.status, streams.explain,
    streams.exception, streams.await_, streams.stop, streams.schema,
    # state
    state.state, state.late, feed.feed,
    # the catalog
    catalog.restart, catalog.forget, catalog.checkpoints,
    # Kafka
    kafka.topics, kafka.produce,
    # following queries as they run
    live.watch, live.tail, live.alerts,
    # the session and the REPL
    session.sql, session.conf, session.connect, session.session_,
    session.server, session.kept,
    session.set_, session.help_, session.trace, session.quit_,
])
