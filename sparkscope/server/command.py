"""How the embedded Connect server is launched: its port, its UI, the environment and the spark-submit command."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from .process_tree import SERVER_MARK, mark
from .class_cache import quote_option
from ..client.paths import server_config_dir
from ..client.queries.server_jar import JAR as SPARKSCOPE_JAR
from .ports import next_free_port
from ..client.connection.remote import TOKEN_ENV
from .info import SERVER_CLASS
from .sizing import local_master
from .spark_install import connect_jar, pyspark_home, spark_home

TOKEN_CONF = "spark.connect.authenticate.token"
UI_PORT = 4040  # Spark's own first choice for the UI


def spark_submit(*, port: int, master: str, conf: dict[str, str], driver_memory: str | None,
                 class_cache_option: str, checkpoints: Path, warehouse: Path, scratch: Path,
                 crash_reports: Path) -> list[str]:
    """The spark-submit command that starts the Connect server, every setting but the token on it."""
    home = pyspark_home()
    config = server_config_dir()
    master, slot_settings = local_master(master)
    settings = {
        **slot_settings,
        "spark.scheduler.allocation.file": str(config / "fairscheduler.xml"),
        "spark.connect.grpc.binding.port": str(port),
        "spark.sql.streaming.checkpointLocation": str(checkpoints),
        "spark.sql.warehouse.dir": str(warehouse),
        "spark.local.dir": str(scratch),
        "spark.app.name": "sparkscope-connect",
    }
    settings.update(conf)
    for unset in [key for key, value in conf.items() if value == ""]:  # --conf KEY= unsets a default of ours
        settings.pop(unset)
    # sparkscope's classes (its default sink, the memory source of its tests), for every session and every executor;
    # added by the application's class loader, so the JVM's own class path (and its class archive) stays the same
    settings["spark.jars"] = ",".join(filter(None, [conf.get("spark.jars", ""), str(SPARKSCOPE_JAR)]))
    # After an OutOfMemoryError a JVM goes on with threads that died mid-update (listener bus, state
    # maintenance, gRPC handlers) and answers wrongly. Exiting makes it visible: clients say the
    # server went away, and `server start --restore` restarts the catalogued queries from their
    # checkpoints, with nothing lost or repeated.
    options = settings.get("spark.driver.extraJavaOptions", "")
    extra = []
    if "OutOfMemoryError" not in options:
        extra.append("-XX:+ExitOnOutOfMemoryError")
    if "java.io.tmpdir" not in options:
        extra.append(quote_option(f"-Djava.io.tmpdir={scratch}"))
    if "ErrorFile" not in options:  # a JVM crash report goes to the state dir, not the user's cwd
        extra.append(quote_option(f"-XX:ErrorFile={crash_reports / 'hs_err_pid%p.log'}"))
    # SPARK_CONF_DIR is empty (see class_cache): the configuration comes from files named here
    if "log4j2.configurationFile" not in options:
        extra.append(quote_option(f"-Dlog4j2.configurationFile={config / 'log4j2.properties'}"))
    if class_cache_option and not re.search(r"Xshare|SharedArchiveFile|ArchiveClassesAtExit", options):
        extra.append(class_cache_option)
    settings["spark.driver.extraJavaOptions"] = " ".join([options, *extra]).strip()
    cmd = [str(home / "bin" / "spark-submit"), "--class", SERVER_CLASS, "--master", master,
           "--properties-file", str(config / "spark-defaults.conf")]
    if driver_memory:
        cmd += ["--driver-memory", driver_memory]
    for key, value in settings.items():
        if key == TOKEN_CONF:
            continue  # never on a command line: passed through the environment instead
        cmd += ["--conf", f"{key}={value}"]
    cmd.append(str(connect_jar(home)))
    return cmd


def ui_settings(ui: bool, conf: dict[str, str]) -> int | None:
    """The Spark UI's port when it is asked for (it is off by default, in server-config: every local user
    could read it), with `conf` set to match."""
    if not (ui or conf.get("spark.ui.enabled", "").lower() == "true"):
        return None
    ui_port = int(conf.get("spark.ui.port") or next_free_port(UI_PORT))
    conf.update({"spark.ui.enabled": "true", "spark.ui.port": str(ui_port)})
    return ui_port


def submit_environment(state: Path) -> dict[str, str]:
    """spark-submit's environment: this one, with Spark's home (spark_install.spark_home: workers import the venv's
    compiled pyspark) and our Python, and never a token of ours."""
    env = dict(os.environ)
    env.update({
        "SPARK_HOME": str(spark_home(state)),
        "SPARK_CONF_DIR": str(server_config_dir()),
        # the driver, and every executor of a cluster, run Python UDFs with this interpreter
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": env.get("SPARK_LOCAL_IP", "127.0.0.1"),
        # every process this start spawns, and each the JVM starts in turn, carries it: a stop ends them all
        SERVER_MARK: mark(state),
    })
    env.pop(TOKEN_ENV, None)
    return env
