"""The plan rewrite that carries each Kafka record's timestamp to sparkscope's sink (client/queries/event_time.py),
on Spark Connect's own Relation protobufs, and the latency figures the sink reports (Progress.latency)."""

from __future__ import annotations

from pyspark.sql.connect.proto import Relation

from sparkscope import Progress
from sparkscope.client.monitoring.progress import milliseconds
from sparkscope.client.queries.event_time import EVENT_COLUMN, carry


def kafka_read(fmt: str = "kafka") -> Relation:
    relation = Relation()
    relation.read.data_source.format = fmt
    relation.read.is_streaming = True
    relation.common.plan_id = 7
    return relation


def project(child: Relation, *columns: str) -> Relation:
    relation = Relation()
    relation.project.input.CopyFrom(child)
    for column in columns:
        expression = relation.project.expressions.add()
        if column == "*":
            expression.unresolved_star.SetInParent()
        else:
            expression.unresolved_attribute.unparsed_identifier = column
    return relation


def rewritten(relation: Relation) -> Relation:
    carried = carry(relation.SerializeToString())
    assert carried.why_not is None
    out = Relation()
    out.ParseFromString(carried.plan)
    return out


def test_a_projection_that_drops_the_timestamp_passes_sparkscope_s_column_on():
    plan = rewritten(project(kafka_read(), "value"))
    names = [e.unresolved_attribute.unparsed_identifier for e in plan.project.expressions]
    assert names == ["value", f"`{EVENT_COLUMN}`"]
    below = plan.project.input.with_columns
    assert below.aliases[0].name == [EVENT_COLUMN]
    assert below.aliases[0].expr.unresolved_attribute.unparsed_identifier == "`timestamp`"
    assert below.input.common.plan_id == 7  # the read keeps its plan id: df["value"] still resolves


def test_a_projection_with_a_star_already_passes_it_on():
    plan = rewritten(project(kafka_read("sparkscope_kafka"), "*", "value"))
    assert len(plan.project.expressions) == 2


def test_a_filter_over_the_read_keeps_every_column_and_the_read_gets_the_copy():
    relation = Relation()
    relation.filter.input.CopyFrom(kafka_read())
    relation.filter.condition.expression_string.expression = "value IS NOT NULL"
    plan = rewritten(project(relation, "value"))
    assert plan.project.input.filter.input.with_columns.aliases[0].name == [EVENT_COLUMN]


def test_an_aggregation_passes_on_the_newest_timestamp_of_each_group():
    relation = Relation()
    relation.aggregate.input.CopyFrom(kafka_read())
    relation.aggregate.group_type = relation.aggregate.GROUP_TYPE_GROUPBY
    relation.aggregate.grouping_expressions.add().unresolved_attribute.unparsed_identifier = "key"
    plan = rewritten(relation)
    newest = plan.aggregate.aggregate_expressions[-1].alias
    assert (newest.name, newest.expr.unresolved_function.function_name) == ([EVENT_COLUMN], "max")


def test_a_plan_sparkscope_does_not_follow_is_left_as_it_is_and_says_why():
    union = Relation()
    union.set_op.left_input.CopyFrom(kafka_read())
    union.set_op.right_input.CopyFrom(kafka_read())
    assert carry(union.SerializeToString()).why_not == "its plan has a set op, which sparkscope does not follow"
    distinct = Relation()
    distinct.deduplicate.input.CopyFrom(kafka_read())
    distinct.deduplicate.all_columns_as_keys = True
    assert carry(distinct.SerializeToString()).why_not == (
        "dropDuplicates() over all columns would count sparkscope's column")
    rate = kafka_read("rate")
    assert carry(project(rate, "value").SerializeToString()).why_not == "it reads no Kafka topic"


def test_the_sink_s_metrics_are_the_progress_latency():
    progress = Progress.from_json({"id": "q", "batchId": 3, "sink": {"description": "x", "metrics": {
        "latencyBatch": "3", "latencyRecords": "1200", "latencyP50Ms": "41.6", "latencyP90Ms": "180",
        "latencyP99Ms": "1250", "latencyMaxMs": "1400"}}})
    assert (progress.latency.records, progress.latency.p99_ms) == (1200, 1250.0)
    assert str(progress.latency) == "p50 42 ms, p90 180 ms, p99 1.2 s"
    assert Progress.from_json({"id": "q", "batchId": 3, "sink": {"metrics": {}}}).latency is None
    assert [milliseconds(ms) for ms in (4.24, 85, 1300, 120_000)] == ["4.2 ms", "85 ms", "1.3 s", "2.0 min"]


def test_a_star_inside_an_expression_would_take_sparkscope_s_column_so_the_plan_is_left_as_it_is():
    relation = project(kafka_read(), "value")
    relation.project.expressions[0].unresolved_function.function_name = "struct"
    relation.project.expressions[0].unresolved_function.arguments.add().unresolved_star.SetInParent()
    assert "a * in struct()" in carry(relation.SerializeToString()).why_not
    text = project(kafka_read(), "value")
    text.project.expressions[0].expression_string.expression = "to_json(struct(*))"
    assert carry(text.SerializeToString()).plan is None
    product = project(kafka_read(), "value")
    product.project.expressions[0].expression_string.expression = "amount * 2"  # a product, not every column
    assert carry(product.SerializeToString()).plan is not None
    top = project(kafka_read(), "value")
    top.project.expressions[0].expression_string.expression = "*"
    assert carry(top.SerializeToString()).plan is not None
