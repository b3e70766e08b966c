"""The Spark and Java this machine runs: the pip-installed pyspark (its spark-submit and Connect jar) and the java
spark-submit starts."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from ..client import delete_guard
from ..client.errors import ServerError

MIN_JAVA = 17


def pyspark_home() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.origin:
        raise ServerError("pyspark is not installed", "Install sparkscope with pip (it depends on pyspark[connect])")
    return Path(spec.origin).parent


def spark_home(state: Path) -> Path:
    """The SPARK_HOME the embedded server and its cluster run with: pyspark's folder without its `python/` zips.

    Spark puts $SPARK_HOME/python/lib/pyspark.zip first on every Python worker's path, and Python keeps no compiled
    bytecode for modules imported from a zip: each worker compiles what it imports. Connect's foreachBatch worker
    (the bounded sink) then took 1.5 s of CPU to import instead of 0.7 s, and Spark gives a new worker 10 s to
    connect back. With two other busy processes on 2 cores, 8 of 8 bounded-sink starts made at once failed. This
    folder links everything else of pyspark's, so the workers import the venv's own pyspark, compiled once."""
    source = pyspark_home()
    home = state / "spark-home"
    marker = home / ".pyspark"
    try:
        if marker.read_text() == str(source):
            return home
    except OSError:
        pass
    building = state / f".spark-home.{os.getpid()}"
    if os.path.lexists(building):
        delete_guard.remove_tree(building)
    building.mkdir(parents=True)
    for entry in source.iterdir():
        if entry.name != "python":
            (building / entry.name).symlink_to(entry)
    delete_guard.write_text(building / ".pyspark", str(source))
    if os.path.lexists(home):  # links only, or an earlier pyspark's
        delete_guard.remove_tree(home)
    try:
        delete_guard.replace(building, home)
    except OSError:  # another start built it at the same moment: use theirs
        delete_guard.remove_tree(building)
    return home


def connect_jar(home: Path | None = None) -> Path:
    home = home or pyspark_home()
    jars = sorted((home / "jars").glob("spark-connect_*.jar"))
    if not jars:
        raise ServerError(f"No spark-connect jar in {home / 'jars'}", "Reinstall pyspark[connect] 4.x")
    return jars[-1]


def spark_build(home: Path | None = None) -> tuple[str, str]:
    """(Spark version, Scala version) of the pyspark wheel's server, from its connect jar's name."""
    name = connect_jar(home).stem  # spark-connect_2.13-4.3.0
    scala, _, version = name.removeprefix("spark-connect_").partition("-")
    return version, scala


def java_path() -> str | None:
    """The java spark-submit runs: JAVA_HOME's, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    return str(Path(home) / "bin" / "java") if home else shutil.which("java")


def java_version(java: str | None = None) -> int:
    """The major version of the java on PATH (or JAVA_HOME); ServerError with an install hint if unusable."""
    hint = "Install Java 17 or newer, e.g. apt-get install openjdk-17-jre-headless, or set JAVA_HOME"
    java = java or java_path()
    if not java or not Path(java).exists():
        raise ServerError("Java is not installed (no 'java' on PATH)", hint)
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ServerError(f"Cannot run {java} ({exc})", hint) from None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not match:
        raise ServerError(f"Cannot tell the version of {java}", hint)
    major = int(match.group(1))
    if major == 1 and match.group(2):
        major = int(match.group(2))
    if major < MIN_JAVA:
        raise ServerError(f"Java {major} is too old: Spark 4 needs Java {MIN_JAVA} or newer", hint)
    return major
