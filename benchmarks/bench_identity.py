"""What the check of each user's token costs a request (issue 61): the same requests to the embedded server, which
runs sparkscope's interceptor (every request's token hashed and looked up, its user checked and, where the token
decides it, rewritten), and to the same Spark started by plain spark-submit with Spark's own single-token check
(PreSharedKeyAuthenticationInterceptor), in one run.

Each round starts one server (one Spark JVM at a time), warms it up, then times CALLS of each request kind; the
rounds alternate between the two servers, and each figure is the median over ROUNDS rounds of the per-call mean.
Request kinds: a config read (unary ConfigRequest, the cheapest call there is) and spark.range(1).collect() (an
ExecutePlan: the call every query makes). On the embedded server they run with a user's token (`server users
add`), the path every team member takes.
Run: make bench  (or .venv/bin/python benchmarks/bench_identity.py)
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from common import private_server_info

ROUNDS = 3
CALLS = 300
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


@contextlib.contextmanager
def spark_own_token_server() -> Iterator[tuple[int, str]]:
    """The pyspark wheel's Spark Connect server, started by spark-submit as a cluster's admin would, with Spark's own
    token check (SPARK_CONNECT_AUTHENTICATE_TOKEN in its environment): (port, token)."""
    import pyspark

    from sparkscope.client.connection.probe import try_probe
    from sparkscope.client.connection.remote import local_target
    from sparkscope.client.paths import server_config_dir
    from sparkscope.server.ports import free_port

    home = Path(pyspark.__file__).parent
    port, token = free_port(), secrets.token_urlsafe(32)
    with tempfile.TemporaryDirectory(prefix="sparkscope-bench-identity-") as work:
        command = [str(home / "bin" / "spark-submit"), "--class", SERVER_CLASS, "--properties-file",
                   str(server_config_dir() / "spark-defaults.conf"), "--conf",
                   f"spark.connect.grpc.binding.port={port}", "--conf", "spark.sql.shuffle.partitions=2",
                   "--conf", f"spark.scheduler.allocation.file={server_config_dir() / 'fairscheduler.xml'}",
                   "spark-internal"]
        env = {**os.environ, "SPARK_HOME": str(home), "SPARK_CONNECT_AUTHENTICATE_TOKEN": token}
        with open(Path(work) / "server.log", "wb") as log:
            process = subprocess.Popen(command, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT,
                                       start_new_session=True)
        try:
            deadline = time.monotonic() + 240
            while try_probe(local_target(port, token), timeout=2) is None:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the plain server did not start: " + (Path(work) / "server.log").read_text())
                time.sleep(0.5)
            yield port, token
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)


def per_call(port: int, token: str) -> dict[str, float]:
    """Mean seconds per call of each request kind, through a plain pyspark client with `token`, after a warm-up."""
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.remote(f"sc://localhost:{port}/;token={token}").create()
    try:
        kinds = {"config": lambda: spark.conf.get("spark.sql.shuffle.partitions"),
                 "collect": lambda: spark.range(1).collect()}
        for call in kinds.values():
            for _ in range(CALLS // 3):
                call()
        means = {}
        for name, call in kinds.items():
            started = time.perf_counter()
            for _ in range(CALLS):
                call()
            means[name] = (time.perf_counter() - started) / CALLS
        return means
    finally:
        spark.stop()


def main() -> None:
    from sparkscope.server.access.users import Users

    ours: list[dict[str, float]] = []
    theirs: list[dict[str, float]] = []
    for round_ in range(ROUNDS):
        order = ["spark", "ours"] if round_ % 2 == 0 else ["ours", "spark"]
        for which in order:
            if which == "spark":
                with spark_own_token_server() as (port, token):
                    theirs.append(per_call(port, token))
            else:
                with private_server_info() as info:
                    token = Users(Path(info.log).parent / "users").add("bench_user")
                    ours.append(per_call(info.port, token))
    print(f"{CALLS} calls of each kind per round, {ROUNDS} rounds (medians of the per-call means):")
    for kind in ("config", "collect"):
        with_users = statistics.median(sample[kind] for sample in ours)
        one_token = statistics.median(sample[kind] for sample in theirs)
        print(f"{kind:8}: a user's token through sparkscope's interceptor {with_users * 1000:6.2f} ms, "
              f"Spark's own one-token check {one_token * 1000:6.2f} ms: {with_users / one_token:.2f}x")


if __name__ == "__main__":
    main()
