"""The cluster tier: `sparkscope server start --workers 2` (a standalone master and two workers from the
wheel, plus the Connect server on them), the seed pipelines with their exact results on real executors,
Python on the workers with this interpreter, `server status`, and every process gone after `server stop`.

It runs in its own pytest invocation (`make test` runs it after the rest), so no other Spark runs
beside it. Everything binds to 127.0.0.1.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from pyspark.sql import functions as F

import sparkscope
from sparkscope.server.ports import free_port
from sparkscope.server.local import LocalServer
from tests.helpers import run_sparkscope, wait_for
from tests.other_user import gets_as_nobody, listening_ports, needs_root
from tests.integration.test_seeds import (  # noqa: F401 - collected here, run against the cluster
    test_seed000_windowed_event_counts,
    test_seed001_drop_duplicates_with_watermark,
    test_seed001_stream_static_join,
    test_seed001_stream_stream_join_with_watermarks,
    test_seed002_mobile_watermark_update_mode_drops_the_late_event,
    test_seed002_rack_state_machine_with_apply_in_pandas_with_state,
    test_seed002_sliding_windows_into_iot_and_iot_rack,
    test_seed003_foreach_batch_writes_each_micro_batch,
    test_seed003_sensor_etl_to_parquet_with_checkpoint_and_trigger_then_read_back,
)



@pytest.fixture(scope="module")
def cluster_home(tmp_path_factory):
    return tmp_path_factory.mktemp("cluster-state")


@pytest.fixture(scope="module")
def server(cluster_home):
    """Started the way a user starts it; stopped by the last test (or here, if that one did not run)."""
    out = run_sparkscope("server", "start", "--workers", "2", "--worker-cores", "1", "--worker-memory", "1536m",
              "--port", str(free_port()), "--conf", "spark.sql.shuffle.partitions=2",
              "--conf", "spark.connect.session.manager.defaultSessionTimeout=5min", home=cluster_home)
    assert out.returncode == 0, out.stderr
    local = LocalServer(cluster_home / "sparkscope")
    info = local.running()
    assert info is not None and info.cluster is not None
    yield info
    local.stop(grace=15)


@pytest.fixture(scope="module")
def ss(server):
    session = sparkscope.connect(f"sc://localhost:{server.port}", token=server.token)
    yield session
    session.close()


def test_status_lists_the_master_and_each_workers_cores_and_memory(server, cluster_home):
    out = run_sparkscope("server", "status", home=cluster_home)
    assert out.returncode == 0, out.stderr
    fields = dict(line.split(None, 1) for line in out.stdout.strip().splitlines())
    assert fields["master"].startswith(f"{server.cluster.master_url} (pid {server.cluster.master.pid}, UI http://127.0.0.1:")
    for index, member in enumerate(server.cluster.workers, start=1):
        assert fields[f"worker{index}"] == f"pid {member.pid}, alive, 1 cores (1 used), 1.5 GiB (1.0 used)"
    assert fields["spark"] == "4.3.0"


def test_every_process_listens_on_loopback_only(server):
    pids = {server.pid, *(member.pid for member in server.cluster.members)}
    listening = _listening_addresses(pids)
    assert listening, "found no listening sockets"
    assert all(address == "127.0.0.1" for address in listening), listening


@needs_root
def test_no_ui_of_the_cluster_is_readable_by_another_user(server):
    """The master's and workers' UIs cannot be turned off: they refuse requests not signed with the key in
    our state dir (the status above reads the master with it). The Connect server's own UI is off."""
    uis = [f"http://127.0.0.1:{member.webui_port}{path}" for member in server.cluster.members
           for path in ("/", "/json/", "/logPage/?appId=x&executorId=0&logType=stdout")]
    seen = gets_as_nobody(uis)
    assert all(answer == "403 refused" for answer in seen.values()), seen
    driver = gets_as_nobody([f"http://127.0.0.1:{port}/api/v1/applications" for port in listening_ports(server.pid)])
    assert not [url for url, answer in driver.items() if answer.startswith("200")], driver


def test_python_udfs_run_on_the_workers_with_this_interpreter(ss):
    @F.udf("string")
    def where(value):
        import os
        import sys
        from pathlib import Path

        pid, chain = os.getpid(), []
        for _ in range(8):  # this Python worker's ancestors: an executor JVM of a worker, or the driver
            try:
                chain.append(Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"))
                pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                break
        role = "executor" if any("CoarseGrainedExecutorBackend" in line for line in chain) else "driver"
        return f"{role} {os.path.realpath(sys.executable)}"

    df = ss.source.rate(rows_per_second=20).select(where(F.col("value")).alias("ran")).groupBy("ran").count()
    query = ss.start(df, "where_udfs_ran", mode="complete")
    wait_for(lambda: ss.peek("where_udfs_ran").rows, timeout=180, what="the first batch on the executors")
    ran = {row[0] for row in ss.peek("where_udfs_ran").rows}
    query.stop()
    assert ran == {f"executor {os.path.realpath(sys.executable)}"}


def test_leaving_queries_running_says_when_the_server_will_stop_them(server, cluster_home):
    out = run_sparkscope("--remote", f"sc://localhost:{server.port}", "--detach",
              "-c", "df = spark.readStream.format('rate').load()", "-c", ":start df", home=cluster_home)
    assert out.returncode == 0, out.stderr
    lines = out.stderr.strip().splitlines()
    assert lines[0].startswith("Left 1 query running on the server. Reattach with: ")
    assert lines[1] == ("warning: the server stops them once the session has had no client for 5m. Reattach "
                        "before then, keep a sparkscope attached, or raise "
                        "spark.connect.session.manager.defaultSessionTimeout on the server.")


def test_server_stop_ends_every_process(server, cluster_home):
    pids = {server.pid, *(member.pid for member in server.cluster.members)}
    executors = _descendants([member.pid for member in server.cluster.workers])
    assert executors, "the workers have no executor processes"
    out = run_sparkscope("server", "stop", home=cluster_home)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[1].startswith("Stopped its cluster: the master and 2 workers (pids ")
    alive = [pid for pid in pids | executors if _alive(pid)]
    assert alive == []
    from sparkscope.server.process_tree import spawned_by  # nothing whose environment names this server's state dir

    wait_for(lambda: spawned_by(cluster_home / "sparkscope") == [], 30, what="no process of the cluster left")
    assert run_sparkscope("server", "status", home=cluster_home).returncode == 3


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][:1]
    except OSError:
        return False
    return state != "Z"


def _descendants(roots: list[int]) -> set[int]:
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(") ", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    found, frontier = set(), set(roots)
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _listening_addresses(pids: set[int]) -> set[str]:
    inodes = set()
    for pid in pids:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    addresses = set()
    for table, size in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        for line in Path(table).read_text().splitlines()[1:]:
            cols = line.split()
            if cols[3] == "0A" and cols[9] in inodes:
                addresses.add(_address(cols[1].split(":")[0], size))
    return addresses


def _address(hex_address: str, size: int) -> str:
    import ipaddress

    raw = bytes.fromhex(hex_address)
    if size == 8:
        return str(ipaddress.IPv4Address(raw[::-1]))
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
    address = ipaddress.IPv6Address(words)
    return str(address.ipv4_mapped or address)
