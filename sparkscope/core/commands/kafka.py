"""The colon commands that explore Kafka: its topics, and test records sent to them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...client.kafka import broker
from ...client.kafka.connector import recorded_bootstraps
from .streams import float_option
from .registry import Arg, Options, Runs, UsageError, command, valued
from ..rendering.results import Message, Result, Table

if TYPE_CHECKING:  # pragma: no cover
    from ..context import CommandContext


def _bootstrap(ctx: CommandContext, opts: Options) -> str:
    """--bootstrap, the profile's kafka_bootstrap, this session's Kafka queries, or the catalog's."""
    given = opts.text("bootstrap")
    if given:
        return given
    session = ctx.session
    return session.server.kafka.bootstrap(None, recorded_bootstraps(session.streams.catalog_records(), session.session_id))


def _offsets(info: broker.TopicInfo) -> str:
    return " ".join(f"{p.partition}:{p.latest:,}" for p in info.partitions)


@command("topics", "List the topics of a Kafka cluster with their partitions and latest offsets",
         args=(Arg("PATTERN", optional=True),), options=(valued("bootstrap", "HOST:PORT"),), needs_session=False)
def topics(ctx: CommandContext, args: list[str], opts: Options) -> Result:
    bootstrap = opts.text("bootstrap") or _bootstrap(ctx, opts)
    found = broker.topics(bootstrap, args[0] if args else None)
    rows = [[t.name, len(t.partitions), f"{t.records:,}", _offsets(t)] for t in found]
    footer = (f"({len(rows)} topic{'s' if len(rows) != 1 else ''} at {bootstrap})" if rows else
              f"(no topics at {bootstrap}{' matching ' + args[0] if args else ''})")
    return Table(["topic", "partitions", "records", "latest offsets"], rows, footer=footer,
                 droppable=("latest offsets",))


@command("produce", "Send test records to a Kafka topic: each VALUE, or each line of --file (JSON lines), "
         "at most --rate a second", args=(Arg("TOPIC"), Arg("VALUE", optional=True, repeat=True)),
         options=(valued("key", "K"), valued("file", "F.jsonl"), valued("rate", "N/s"),
                  valued("bootstrap", "HOST:PORT")), runs=Runs.WAITS, needs_session=False)
def produce(ctx: CommandContext, args: list[str], opts: Options) -> Result:
    topic, values = broker.check_topic_name(args[0]), args[1:]
    path = opts.text("file")
    if bool(values) == bool(path):
        raise UsageError(":produce needs the records: VALUE… or --file F.jsonl (not both)",
                         f"Usage: {produce.usage}")
    rate = None
    if "rate" in opts:
        rate = float_option(str(opts.text("rate")).removesuffix("/s"), "records a second")
        if rate <= 0:
            raise UsageError(f"--rate must be more than 0, not {opts.text('rate')}", "Give a rate above 0, e.g. --rate 10/s")
    key = opts.text("key")
    records = list(broker.records_from_file(path)) if path else [(key, value) for value in values]
    bootstrap = _bootstrap(ctx, opts)
    sent = broker.Producer(bootstrap).send(topic, records, rate, stop=ctx.cancelled.is_set)
    stopped = " (Ctrl-C stopped it)" if sent < len(records) else ""
    return Message(f"Sent {sent} record{'s' if sent != 1 else ''} to {topic} at {bootstrap}{stopped}",
                   {"topic": topic, "sent": sent, "bootstrap": bootstrap})
