"""docker-compose.yml cannot run here (no Docker engine): check that it agrees with the project."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _compose():
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def _pinned_pyspark() -> str:
    text = (ROOT / "pyproject.toml").read_text()
    return text.split('"pyspark[connect]==', 1)[1].split('"', 1)[0]


def test_every_service_uses_the_image_of_the_pinned_spark_version():
    services = _compose()["services"]
    assert set(services) == {"spark-master", "spark-worker-1", "spark-worker-2", "spark-connect"}
    for service in services.values():
        assert service["image"] == f"apache/spark:{_pinned_pyspark()}"
        mounts = service["volumes"]
        assert "./sparkscope/server-config/spark-defaults.conf:/opt/spark/conf/spark-defaults.conf:ro" in mounts
        for mount in mounts:
            assert (ROOT / mount.split(":")[0]).is_file()


def test_connect_server_runs_in_the_foreground_against_the_master():
    connect = _compose()["services"]["spark-connect"]
    command = connect["command"]
    assert command[0] == "/opt/spark/sbin/start-connect-server.sh"
    assert command[command.index("--master") + 1] == "spark://spark-master:7077"
    assert connect["environment"]["SPARK_NO_DAEMONIZE"] == "true"
    assert "SPARK_CONNECT_AUTHENTICATE_TOKEN" in connect["environment"]
    workers = [s for name, s in _compose()["services"].items() if name.startswith("spark-worker")]
    assert all("spark://spark-master:7077" in w["command"] for w in workers)


def test_only_the_connect_port_is_published_and_only_on_loopback():
    services = _compose()["services"]
    published = {name: s.get("ports", []) for name, s in services.items()}
    assert published.pop("spark-connect") == ["127.0.0.1:15002:15002"]
    assert all(not ports for ports in published.values())


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
