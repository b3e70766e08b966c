"""docker-compose.yml cannot run here (no Docker engine): check that it agrees with the project."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _compose():
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def _pinned_pyspark() -> str:
    """The pyspark the Makefile installs (pyproject.toml allows a range: 4.0 to 4.3)."""
    text = (ROOT / "Makefile").read_text()
    return text.split("PYSPARK_PIN := ", 1)[1].split("\n", 1)[0].strip()


def _spark_services() -> dict:
    return {name: s for name, s in _compose()["services"].items() if name != "spark-connect-tls"}


def test_every_service_uses_the_image_of_the_pinned_spark_version():
    services = _spark_services()
    assert set(services) == {"spark-master", "spark-worker-1", "spark-worker-2", "spark-connect"}
    for service in services.values():
        # built from the official image of that version, with what sparkscope needs in its Python
        assert service["image"] == f"sparkscope-spark:{_pinned_pyspark()}"
        assert service["build"] == {"context": "./server-config", "args": {
            "SPARK_VERSION": _pinned_pyspark(), "PYTHON_VERSION": "${SPARKSCOPE_PYTHON:-}"}}
        mounts = service["volumes"]
        assert "./sparkscope/server-config/spark-defaults.conf:/opt/spark/conf/spark-defaults.conf:ro" in mounts
        for mount in mounts:  # each a file of the project, but the users' folder, which its owner makes
            assert mount == "./sparkscope-users:/opt/sparkscope/users:ro" or (ROOT / mount.split(":")[0]).is_file()


def test_connect_server_runs_in_the_foreground_against_the_master():
    connect = _compose()["services"]["spark-connect"]
    command = connect["command"]
    assert command[0] == "/opt/spark/sbin/start-connect-server.sh"
    assert command[command.index("--master") + 1] == "spark://spark-master:7077"
    assert connect["environment"]["SPARK_NO_DAEMONIZE"] == "true"
    workers = [s for name, s in _compose()["services"].items() if name.startswith("spark-worker")]
    assert all("spark://spark-master:7077" in w["command"] for w in workers)


def test_only_the_connect_port_is_published_and_only_on_loopback():
    services = _compose()["services"]
    published = {name: s.get("ports", []) for name, s in services.items()}
    assert published.pop("spark-connect") == ["127.0.0.1:15002:15002"]
    assert published.pop("spark-connect-tls") == ["${SPARKSCOPE_TLS_BIND:-127.0.0.1}:15443:443"]
    assert all(not ports for ports in published.values())


def test_the_optional_tls_proxy_passes_grpc_over_http2_to_the_connect_server():
    tls = _compose()["services"]["spark-connect-tls"]
    assert tls["image"].startswith("nginx:") and tls["profiles"] == ["tls"]  # official image, opt-in
    assert tls["depends_on"] == ["spark-connect"]
    conf_mount = next(m for m in tls["volumes"] if m.endswith(":/etc/nginx/nginx.conf:ro"))
    conf = (ROOT / conf_mount.split(":")[0]).read_text()
    assert "listen 443 ssl;" in conf and "http2 on;" in conf  # gRPC clients insist on ALPN h2
    connect = _compose()["services"]["spark-connect"]["command"]
    port = connect[connect.index("--conf", connect.index("spark.connect.grpc.binding.address=0.0.0.0") - 1) + 3]
    assert port == "spark.connect.grpc.binding.port=15002"
    assert "grpc_pass grpc://spark-connect:15002;" in conf
    assert "ssl_certificate     /etc/nginx/certs/server.crt;" in conf
    assert "./certs:/etc/nginx/certs:ro" in tls["volumes"]


def test_server_config_binds_loopback_and_keeps_sessions_and_state_for_streaming():
    conf = dict(line.split(None, 1) for line in (ROOT / "sparkscope/server-config/spark-defaults.conf").read_text().splitlines()
                if line.strip() and not line.startswith("#"))
    assert conf["spark.connect.grpc.binding.address"].strip() == "127.0.0.1"
    assert int(conf["spark.sql.shuffle.partitions"]) <= 8
    assert "RocksDBStateStoreProvider" in conf["spark.sql.streaming.stateStore.providerClass"]
    assert conf["spark.connect.session.manager.defaultSessionTimeout"].strip() == "24h"


def test_the_server_config_is_a_real_folder_inside_the_package():
    """A symlink is lost when a wheel is built from a checkout without symlinks."""
    from sparkscope.client.paths import server_config_dir

    folder = ROOT / "sparkscope" / "server-config"
    assert not folder.is_symlink() and server_config_dir() == folder.resolve()
    assert '"server-config/*"' in (ROOT / "pyproject.toml").read_text()


def test_the_kafka_connector_is_the_one_server_start_kafka_adds():
    from sparkscope.cli.server import with_kafka_connector

    package = f"org.apache.spark:spark-sql-kafka-0-10_2.13:{_pinned_pyspark()}"
    assert with_kafka_connector({}) == {"spark.jars.packages": package}
    assert with_kafka_connector({"spark.jars.packages": "a:b:1"}) == {"spark.jars.packages": f"a:b:1,{package}"}
    assert with_kafka_connector({"spark.jars.packages": package}) == {"spark.jars.packages": package}
    command = _compose()["services"]["spark-connect"]["command"]
    assert "spark.jars.packages=${SPARKSCOPE_KAFKA:-}" in command
    assert f"SPARKSCOPE_KAFKA={package} docker compose up -d" in (ROOT / "docker-compose.yml").read_text()


def _requirements() -> dict[str, str]:
    lines = (ROOT / "server-config" / "requirements.txt").read_text().splitlines()
    pins = [line.split("#")[0].strip() for line in lines if line.split("#")[0].strip()]
    assert all("==" in pin for pin in pins), pins  # every package pinned, so every image gets the same
    return dict(pin.split("==") for pin in pins)


def test_the_dockerfile_builds_on_the_official_image_and_installs_the_requirements_file():
    dockerfile = (ROOT / "server-config" / "Dockerfile").read_text()
    assert f"ARG SPARK_VERSION={_pinned_pyspark()}\nFROM apache/spark:${{SPARK_VERSION}}" in dockerfile
    assert "COPY requirements.txt /opt/sparkscope/requirements.txt" in dockerfile
    assert "pip install --no-cache-dir -r /opt/sparkscope/requirements.txt" in dockerfile
    assert "ENV PYSPARK_PYTHON=/opt/sparkscope/python/bin/python" in dockerfile
    assert dockerfile.rstrip().endswith("USER spark")  # the image's own unprivileged user runs Spark


def test_the_requirements_file_holds_what_the_server_imports_at_versions_the_client_allows():
    from importlib.metadata import requires

    from packaging.requirements import Requirement

    from sparkscope.client.connection.capabilities import CONNECT_PACKAGES, KAFKA_PACKAGES

    pins = _requirements()
    assert set(CONNECT_PACKAGES) | set(KAFKA_PACKAGES) <= set(pins)  # what the probe checks is what it installs
    project = (ROOT / "pyproject.toml").read_text()
    constraints = [Requirement(r) for r in requires("pyspark") if 'extra == "connect"' in r]
    constraints += [Requirement(line.strip().strip('",').split("#")[0].strip().strip('",'))
                    for line in project.splitlines() if line.strip().startswith(('"pandas', '"grpcio',
                                                                                  '"confluent-kafka'))]
    for requirement in constraints:
        if requirement.name in pins:
            assert requirement.specifier.contains(pins[requirement.name]), (requirement, pins[requirement.name])


def test_the_connect_server_checks_each_user_s_token_as_sparkscope_s_own_servers_do():
    """The interceptor the embedded server runs (server/local.py), with the jar and a users file the owner writes
    with `sparkscope server users --file`; and no Spark token of its own, whose check would refuse every user's."""
    from sparkscope.server.access.users import INTERCEPTOR, INTERCEPTOR_CONF, USERS_CONF

    connect = _compose()["services"]["spark-connect"]
    command = connect["command"]
    assert "SPARK_CONNECT_AUTHENTICATE_TOKEN" not in connect["environment"]
    assert command[command.index("--jars") + 1] == "/opt/sparkscope/sparkscope.jar"
    assert f"{INTERCEPTOR_CONF}={INTERCEPTOR}" in command
    assert f"{USERS_CONF}=/opt/sparkscope/users/users" in command
    assert "./sparkscope/jars/sparkscope.jar:/opt/sparkscope/sparkscope.jar:ro" in connect["volumes"]
    assert "./sparkscope-users:/opt/sparkscope/users:ro" in connect["volumes"]
    text = (ROOT / "docker-compose.yml").read_text()
    assert "sparkscope server users --file sparkscope-users/users owner" in text
    assert "sparkscope server users --file sparkscope-users/users add ana" in text
