"""What a server can run for this client (client/connection/capabilities.py), and the one line for each way Python code
fails on a server (client/errors.py): pure logic, no server. The tier in tests/servers checks the same against
real servers that are not ours."""

from __future__ import annotations

import os
import stat

import pytest

from sparkscope.client.connection.capabilities import (CLIENT_PYTHON, CONNECT_PACKAGES, KAFKA_PACKAGES, Capabilities,
                                            KnownServers, ServerPython, minor, python_failure)
from sparkscope.client.errors import QueryFailed, SparkscopeError, UnsupportedOperation
from sparkscope.client.error_reading import translate
from sparkscope.client.kafka.connector import admission_control

EVERYTHING = {name: "1.0" for name in (*CONNECT_PACKAGES, *KAFKA_PACKAGES)}


def caps(python: ServerPython, *, connector: bool = False, root: str | None = "/ckpt",
         identity: str = "local-1") -> Capabilities:
    return Capabilities(url="sc://spark:15002", spark_version="4.3.0", identity=identity, python=python,
                        kafka_connector=connector, checkpoint_root=root, auth=True, tls=True, probe_seconds=0.4)


def full_python(**packages: str | None) -> ServerPython:
    return ServerPython(version=CLIENT_PYTHON, executable="/usr/bin/python3", packages={**EVERYTHING, **packages})


def test_a_server_with_everything_is_ok_and_every_feature_runs():
    found = caps(full_python())
    assert found.ok and found.foreach_batch_problem() is None and found.kafka_problem() is None
    assert [(c.capability, c.ok) for c in found.checks()] == [
        ("spark", True), ("python", True), ("bounded sink", True), ("foreachBatch", True), ("kafka", True),
        ("checkpoints", True), ("auth", None), ("users", None), ("limits", None), ("tls", None)]


def test_the_official_images_python_lacks_what_foreach_batch_and_our_kafka_import():
    bare = caps(ServerPython(version=CLIENT_PYTHON, executable="/usr/bin/python3",
                             packages={name: None for name in EVERYTHING}, connect_error="PySparkImportError: …"))
    assert not bare.ok
    assert bare.foreach_batch_problem() == ("the server's Python lacks pandas, pyarrow, grpcio, grpcio-status, "
                                            "googleapis-common-protos, zstandard, which Connect's foreachBatch worker "
                                            "imports")
    assert bare.kafka_problem() == ("the server has no spark-sql-kafka connector, and the server's Python lacks "
                                    "pyarrow, confluent-kafka")
    rows = {c.capability: c for c in bare.checks()}
    assert rows["foreachBatch"].found.startswith("missing pandas, pyarrow")
    assert "server-config/requirements.txt" in rows["foreachBatch"].fix
    # Spark's own connector needs no Python: Kafka works, foreachBatch still does not
    assert caps(bare.python, connector=True).kafka_problem() is None


def test_one_missing_package_is_named_alone():
    failed = ServerPython(version=CLIENT_PYTHON, packages={**EVERYTHING, "zstandard": None}, pyspark="4.3.0",
                          connect_error="PySparkImportError: [PACKAGE_NOT_INSTALLED] zstandard >= 0.25.0 must be installed")
    assert caps(failed).foreach_batch_problem() == (
        "the server's Python lacks zstandard, which Connect's foreachBatch worker imports")


def test_what_foreach_batch_needs_is_judged_by_the_server_s_own_pyspark():
    """pyspark 4.0's check_dependencies imports no zstandard: a 4.0.5 server without it runs foreachBatch."""
    old = ServerPython(version=CLIENT_PYTHON, packages={**EVERYTHING, "zstandard": None}, pyspark="4.0.5")
    assert caps(old).foreach_batch_problem() is None
    assert {c.capability: c.ok for c in caps(old).checks()}["foreachBatch"] is True
    lacking = ServerPython(version=CLIENT_PYTHON, packages={name: None for name in EVERYTHING}, pyspark="4.0.5",
                           connect_error="PySparkImportError: [PACKAGE_NOT_INSTALLED] Pandas >= 2.0.0 must be installed")
    assert caps(lacking).foreach_batch_problem() == (
        "the server's Python lacks pandas, pyarrow, grpcio, grpcio-status, googleapis-common-protos, which Connect's "
        "foreachBatch worker imports")
    # the server's import is the verdict: what worked there works, whatever the package list says
    assert caps(full_python(zstandard=None)).foreach_batch_problem() is None
    assert caps(full_python(**{"confluent-kafka": None})).own_kafka_problem() == (
        "the server's Python lacks confluent-kafka")


def test_another_python_minor_version_rules_out_all_python_code_and_says_which_to_use():
    other = "3.99"
    found = caps(python_failure(f"[PYTHON_VERSION_MISMATCH] Python in worker has different version: {other} "
                                f"than that in driver: {minor(CLIENT_PYTHON)}, PySpark cannot run with different "
                                "minor versions."))
    assert found.python.version == other
    assert found.python_problem() == (f"the server's Python is {other} and this client's is {minor(CLIENT_PYTHON)}: "
                                      "Python code sent to the server needs the same minor version on both sides")
    assert found.foreach_batch_problem() == found.python_problem()
    python = next(c for c in found.checks() if c.capability == "python")
    assert python.ok is False and python.found == f"{other}; this client: {CLIENT_PYTHON}"
    assert python.fix.startswith(f"use Python {other} for this client, or a server image with Python "
                                 f"{minor(CLIENT_PYTHON)}")


@pytest.mark.parametrize("text, failure", [
    ("java.io.IOException: Cannot run program \"/opt/nope/python3\": error=2, No such file or directory",
     "no Python at /opt/nope/python3"),
    ("org.apache.spark.SparkException: Python worker failed to connect back.",
     "its Python worker did not start in time: the server may be overloaded, or PYSPARK_PYTHON is wrong"),
])
def test_a_probe_that_could_not_run_python_says_why(text, failure):
    found = caps(python_failure(text))
    assert found.python.failure == failure and found.python.version is None
    assert found.python_problem() == f"the server could not run Python code ({failure})"


def test_no_checkpoint_root_is_missing_with_its_fix():
    found = caps(full_python(), root=None)
    assert not found.ok
    row = next(c for c in found.checks() if c.capability == "checkpoints")
    assert row.found == "no spark.sql.streaming.checkpointLocation" and "give each query a checkpoint" in row.fix


def test_known_servers_keep_capabilities_by_url_and_server_run_in_a_private_file(tmp_path):
    known = KnownServers(tmp_path / "servers.json")
    first = caps(full_python(pandas=None), identity="local-1")
    known.put(first)
    assert stat.S_IMODE(os.stat(tmp_path / "servers.json").st_mode) == 0o600
    assert known.get("sc://spark:15002", "local-1") == first
    assert known.get("sc://spark:15002", "local-2") is None  # the server started again: asked again
    assert known.get("sc://other:15002", "local-1") is None
    (tmp_path / "servers.json").write_text("{not json")
    assert known.get("sc://spark:15002", "local-1") is None  # a broken file is a cache miss, not an error


def test_python_sources_get_admission_control_from_spark_4_3():
    assert not admission_control("4.0.5") and not admission_control("4.2.1")
    assert admission_control("4.3.0") and admission_control("5.0.0") and admission_control(None)


def _python_exception(text: str) -> Exception:
    from pyspark.errors.exceptions.connect import PythonException

    return PythonException(message=text)


def test_python_code_on_another_python_is_one_line_naming_both_versions():
    error = translate(_python_exception(
        "[PYTHON_VERSION_MISMATCH] Python in worker has different version: 3.10 than that in driver: 3.11, "
        "PySpark cannot run with different minor versions.\nTraceback (most recent call last): …"))
    assert isinstance(error, UnsupportedOperation) and error.code == "python_mismatch"
    assert str(error) == ("The server's Python is 3.10 and this client's is 3.11: Python code sent to the server "
                          "(UDFs, foreachBatch, Python data sources) needs the same minor version on both sides. "
                          "Run this client with Python 3.10, or use a server whose Python is 3.11 (docs/clusters.md).")


def test_a_module_the_servers_python_lacks_is_one_line_naming_it():
    error = translate(_python_exception("An exception was thrown from the Python worker. Traceback (most recent "
                                        "call last):\n  File …\nModuleNotFoundError: No module named 'sklearn'\n"))
    assert error.code == "server_lacks_module" and error.data == {"module": "sklearn"}
    assert error.message == "The server's Python has no module 'sklearn', which Python code sent to it imports"
    arrow = translate(_python_exception("ModuleNotFoundError: No module named 'pyarrow'"))
    assert "spark.sql.execution.pythonUDF.arrow.enabled" in arrow.hint


def test_a_worker_that_never_connected_back_is_one_line_pointing_at_server_check():
    from pyspark.errors.exceptions.connect import SparkConnectGrpcException

    error = translate(SparkConnectGrpcException(message="Python worker failed to connect back.",
                                                errorClass=None))
    assert error.code == "python_worker_failed"
    assert str(error) == ("The server could not start a Python worker for this: it did not connect back in time. "
                          "The server's Python may lack a package the code imports, or the server was too busy; "
                          "ss.server.facts.get().checks() says what the server's Python lacks.")
    from pyspark.errors.exceptions.connect import StreamingQueryException

    failed = translate(StreamingQueryException(message="Python worker failed to connect back."))
    assert isinstance(failed, QueryFailed) and failed.code == "python_worker_failed"


def test_the_same_words_from_this_clients_own_python_are_not_the_servers():
    error = translate(ModuleNotFoundError("No module named 'sklearn'"))
    assert type(error) is SparkscopeError and "server" not in error.message


def test_a_server_newer_than_this_client_is_said_in_its_row():
    from dataclasses import replace

    found = replace(caps(full_python()), spark_version="4.3.0", client_pyspark="4.1.4")
    row = found.checks()[0]
    assert (row.capability, row.ok) == ("spark", False)
    assert row.found == "4.3.0 at sc://spark:15002; this client's pyspark: 4.1.4"
    assert row.fix == ("the server runs Spark 4.3.0 and this client pyspark 4.1.4: a client works against servers of "
                       "its own version and older ones; install pyspark[connect]==4.3.* here")
    assert replace(found, spark_version="4.0.5").newer_server() is None  # an older server: fine
    assert replace(found, spark_version="4.1.0").newer_server() is None  # the same line
