"""The Kafka tier: Spark's own Kafka connector, as `sparkscope server start --kafka` gets it, on a Spark 4.2 server
(Maven Central here serves Spark's artifacts up to 4.2.0), from a venv of its own (`make test` builds
.venv-servers/spark-4.2: pyspark[connect] 4.2.0 and this checkout's sparkscope), against a real broker (tansu).

The server starts once, in this run's sandbox: its state dir is the sandbox's (so the tests' sparkscope finds it as
"the local server", token and all), its cache dir the sandbox's (Spark's Ivy fetches the connector into it, never
into ~/.ivy2), and its HOME a folder whose ~/.m2 holds a POM without its jar, as an interrupted `mvn` leaves one:
the trap that stopped every `--kafka` start of Spark's own Ivy settings."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".venv-servers" / "spark-4.2"
BROKEN_POM = Path(".m2/repository/at/yawk/lz4/lz4-java/1.11.0/lz4-java-1.11.0.pom")


@dataclass
class ConnectorServer:
    port: int
    token: str
    env: dict[str, str]
    cache: Path
    started: dict

    @property
    def url(self) -> str:
        return f"sc://localhost:{self.port}"


def sparkscope_42(*args: str, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    """The 4.2 venv's own `sparkscope` command."""
    return subprocess.run([str(VENV / "bin" / "sparkscope"), *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


@pytest.fixture(scope="session")
def connector_server(sandbox):
    from sparkscope.server.ports import free_port
    from tests.helpers import skip_or_fail

    if not (VENV / ".installed").exists():
        skip_or_fail(f"{VENV} is missing: make test builds it")
    home = sandbox / "kafka-home"
    (home / BROKEN_POM).parent.mkdir(parents=True, exist_ok=True)
    (home / BROKEN_POM).write_text("<project><modelVersion>4.0.0</modelVersion><groupId>at.yawk.lz4</groupId>"
                                   "<artifactId>lz4-java</artifactId><version>1.11.0</version></project>")
    env = {key: value for key, value in os.environ.items() if key not in ("SPARK_CONNECT_AUTHENTICATE_TOKEN",
                                                                        "VIRTUAL_ENV", "PYTHONPATH")}
    env.update(HOME=str(home), XDG_STATE_HOME=str(sandbox / "state"), XDG_CACHE_HOME=str(sandbox / "cache"))
    port = free_port()
    started = sparkscope_42("server", "start", "--kafka", "--port", str(port), "--format", "json", env=env)
    assert started.returncode == 0, started.stdout + started.stderr
    token = (sandbox / "state" / "sparkscope" / "token").read_text().strip()
    yield ConnectorServer(port, token, env, sandbox / "cache" / "sparkscope" / "ivy", json.loads(started.stdout))
    sparkscope_42("server", "stop", env=env, timeout=120)


@pytest.fixture(scope="session")
def remote_url(connector_server) -> str:
    return connector_server.url


@pytest.fixture(scope="module")
def ss(connector_server):
    import sparkscope

    session = sparkscope.connect(connector_server.url, token=connector_server.token)
    yield session
    session.streams.stop_all()
    session.close()


@pytest.fixture
def topic(kafka_broker):
    return f"t_{uuid.uuid4().hex[:8]}"
