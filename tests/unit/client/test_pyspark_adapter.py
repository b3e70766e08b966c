"""Fails loudly when a pyspark upgrade removes an internal that client/_pyspark/ relies on."""

from __future__ import annotations

import importlib
import inspect

import pytest

from sparkscope.client import _pyspark


def _owner(dotted: str):
    """The module attribute named by `dotted`, nested classes (SparkSession.Builder) included."""
    parts = dotted.split(".")
    for split in range(len(parts) - 1, 0, -1):
        try:
            owner = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for name in parts[split:]:
            owner = getattr(owner, name)
        return owner
    raise ImportError(dotted)


@pytest.mark.parametrize("where,attribute", _pyspark.INTERNALS, ids=[f"{w.rsplit('.', 1)[1]}.{a}"
                                                                      for w, a in _pyspark.INTERNALS])
def test_each_internal_the_adapter_uses_still_exists(where, attribute):
    owner = _owner(where)
    # set in __init__ (instance attributes) or defined on the class
    defined = hasattr(owner, attribute) or any(
        f"self.{attribute}" in inspect.getsource(cls.__init__) for cls in inspect.getmro(owner)
        if "__init__" in vars(cls) and cls is not object)
    import pyspark

    assert defined, (f"pyspark {pyspark.__version__} has no {where}.{attribute}; sparkscope was checked against "
                     f"{_pyspark.CHECKED_AGAINST}. Update sparkscope/client/_pyspark/.")


def test_the_public_names_the_adapter_relies_on_exist():
    from pyspark.sql.connect.proto import StreamingQueryCommand, base_pb2, base_pb2_grpc
    from pyspark.sql.connect.session import SparkSession

    assert isinstance(SparkSession.session_id, property)
    assert "release_session_on_close" in inspect.getsource(SparkSession.__init__)
    assert hasattr(base_pb2_grpc, "SparkConnectServiceStub") and hasattr(base_pb2, "AnalyzePlanRequest")
    assert "explain" in StreamingQueryCommand.DESCRIPTOR.fields_by_name


def test_every_private_name_in_the_adapter_is_listed():
    """A new private access must join INTERNALS, so the check above covers it."""
    import ast

    tree = ast.parse(inspect.getsource(_pyspark))
    used = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
            and node.attr.startswith("_") and not node.attr.startswith("__")
            and ast.unparse(node.value) not in ("self",)}
    listed = {attribute for _, attribute in _pyspark.INTERNALS}
    assert used - listed == set()


def test_the_fields_of_a_plan_include_a_read_s_options_a_protobuf_map():
    """A read's options are a map in the Relation: under protobuf 7 they were skipped, and :feed could not find the
    query of a memory source before its first batch."""
    from pyspark.sql.connect.proto import Relation

    from sparkscope.client._pyspark import plan_fields

    relation = Relation()
    relation.read.data_source.format = "sparkscope.v2.feed.FeedSource"
    relation.read.data_source.options["feed"] = "sparkscope_feed_1"
    fields = plan_fields(relation.SerializeToString())
    assert ("key", "feed") in fields and ("value", "sparkscope_feed_1") in fields
