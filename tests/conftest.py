"""Shared fixtures: one real Spark Connect server per test session, started from the pyspark wheel.

Every test runs with its own XDG state/config directories, so nothing touches the user's files
and the `sparkscope` commands started by the tests find this server as "the local server".
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Each pytest process has a sandbox of its own: with `-n 2` (pytest-xdist, as `make test` runs) each worker
# has its own state dir and so its own session server. SPARKSCOPE_TEST_SANDBOX names a folder to keep
# them in instead of a new temporary one (it is then left in place).
_OWN_SANDBOX = not os.environ.get("SPARKSCOPE_TEST_SANDBOX")
_SANDBOX = (Path(os.environ["SPARKSCOPE_TEST_SANDBOX"]) / os.environ.get("PYTEST_XDIST_WORKER", "main")
            if not _OWN_SANDBOX else Path(tempfile.mkdtemp(prefix="sparkscope-tests-")))
_SANDBOX.mkdir(parents=True, exist_ok=True)
# HOME, the current folder and the XDG folders are the sandbox's: whatever a test (or sparkscope under test) does to
# ~, to the current folder or to sparkscope's folders happens inside it, never to the machine's own
os.environ["XDG_STATE_HOME"] = str(_SANDBOX / "state")
os.environ["XDG_CONFIG_HOME"] = str(_SANDBOX / "config")
os.environ["XDG_CACHE_HOME"] = str(_SANDBOX / "cache")
os.environ["HOME"] = str(_SANDBOX / "home")
(_SANDBOX / "home").mkdir(exist_ok=True)
(_SANDBOX / "work").mkdir(exist_ok=True)  # the current folder, once the tests are collected (_work_in_the_sandbox)
# SPARKSCOPE_TEST_REMOTE_URL: a server this run does not start (test_without_proc.py runs tests on its server from a
# process without /proc), its token in SPARK_CONNECT_AUTHENTICATE_TOKEN
_GIVEN_SERVER = os.environ.get("SPARKSCOPE_TEST_REMOTE_URL")
os.environ.pop("SPARK_REMOTE", None)
if not _GIVEN_SERVER:
    os.environ.pop("SPARK_CONNECT_AUTHENTICATE_TOKEN", None)
os.environ.pop("SPARKSCOPE_PROFILE", None)
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
# pexpect forks the test process, which holds gRPC channels, to start `sparkscope` in a pty. grpcio 1.81+
# then restarts its poller in the child, which dies of EBADF when pexpect closes the inherited
# descriptors before exec (grpc/grpc#43055): the REPL never started ("Epoll1Poller encountered
# epoll_wait error: Bad file descriptor", then EOF), once in four runs of the suite.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
# The servers the tests start neither record nor map a class archive (server/class_cache.py): a recording
# server's stop writes 130 MB at full CPU, which the tests beside it would feel. test_server.py's class
# archive test turns it on for its own servers.
os.environ.setdefault("SPARKSCOPE_CLASS_CACHE", "off")
# The JVMs the tests start (the servers, and the cluster tier's master, workers and executors) compile
# with C1 alone and collect with the serial collector. The suite is CPU-bound on two cores, and for JVMs
# that live seconds to minutes this halves a server's CPU to start (12 s to 6 s) and takes a third off a
# streaming query's; `make test` took 555 s instead of 805 s in back-to-back runs. Users' servers keep
# the JVM's defaults: C2 pays off in a server that runs for hours. (Recording one class archive before
# the run as well saved 20 s of tests but cost 45 s to record on a clean clone, so the tests map none.)
# Nor do they verify the bytecode of the classes they load, all from the pyspark wheel and sparkscope's
# jar: a server then needs 6.4 s of CPU to start instead of 8.0, and 11.1 s instead of 14.0 once it has
# run one query (three runs each, 2026-11-29). Users' servers verify, as the JVM does by default.
os.environ.setdefault("JDK_JAVA_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC "
                                          "-XX:+UnlockDiagnosticVMOptions -XX:-BytecodeVerificationRemote")


@pytest.fixture(scope="session", autouse=True)
def _work_in_the_sandbox():
    """The tests run in the sandbox's work/ folder (after collection, which reads the paths given to pytest)."""
    os.chdir(_SANDBOX / "work")
    yield


@pytest.fixture(scope="session")
def sandbox() -> Path:
    """This run's home: state/ and config/ are the XDG directories."""
    return _SANDBOX


@pytest.fixture(scope="session")
def server(sandbox):
    """The embedded server, as `sparkscope server start` starts it, on a free port; stopped by pid."""
    from sparkscope.client.paths import state_dir
    from sparkscope.server.ports import free_port
    from sparkscope.server.local import LocalServer

    local = LocalServer(state_dir())
    # what one user may keep, smaller than the default (an eighth of the heap) so that a test can pass it
    info = local.start(port=free_port(), conf={"spark.sql.shuffle.partitions": "2", "spark.sparkscope.limit.bytes": "64m"})
    yield info
    local.stop(grace=15)


@pytest.fixture(scope="session")
def remote_url(request) -> str:
    if _GIVEN_SERVER:
        return _GIVEN_SERVER
    return f"sc://localhost:{request.getfixturevalue('server').port}"


@pytest.fixture(scope="module")
def ss(remote_url):
    import sparkscope

    session = sparkscope.connect(remote_url)
    yield session
    session.close()


@pytest.fixture(autouse=True)
def _stop_what_the_test_left_running(request):
    """Every query a test started through the shared `ss` session is stopped after it, pass or fail,
    so a failed test cannot leave a stream running into the next one."""
    yield
    if "ss" in request.fixturenames:
        import contextlib

        with contextlib.suppress(Exception):
            request.getfixturevalue("ss").streams.stop_all()


@pytest.fixture(scope="session")
def kafka_broker(sandbox):
    """A real Kafka-compatible broker (tansu, memory storage) on a free port; stopped by pid."""
    from tests.kafka_broker import Broker

    broker = Broker(sandbox / "tansu.log")
    yield broker
    broker.stop()


@pytest.fixture
def data_dir(tmp_path) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    return path


def pytest_unconfigure(config):
    """After every fixture (the server included) has stopped: remove the sandbox this run made."""
    if _OWN_SANDBOX:
        shutil.rmtree(_SANDBOX, ignore_errors=True)
