"""Build sparkscope/jars/sparkscope.jar from its source (sparkscope/jars/src/), reproducibly: `make jar`.

The jar is committed, so that installing sparkscope needs only a Java runtime (many users have no JDK); this
script is how it is made, and tests/unit/server/test_jar.py checks that the committed jar is what the source
compiles to, class by class, by their disassembly (so any JDK 17 or later can check it). It compiles for Java 17
(`--release 17`) against the Spark jars of the installed pyspark, and writes the jar with fixed entry times, so the
same JDK gives the same bytes.

    .venv/bin/python scripts/build_jar.py [OUT.jar]
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "sparkscope" / "jars" / "src"
JAR = ROOT / "sparkscope" / "jars" / "sparkscope.jar"
ENTRY_TIME = "2026-01-01T00:00:02Z"  # every entry's time: the jar's bytes depend on its source and the JDK alone
COMPILE_AGAINST = ("spark-catalyst_", "spark-connect_", "spark-core_", "spark-sql_", "spark-sql-api_", "spark-unsafe_", "spark-common-utils_",
                   "scala-library-", "kryo-shaded-",  # kryo: UnsafeRow implements its interface
                   "jackson-core-", "jackson-databind-", "jackson-annotations-")  # Control's answers as JSON


def build(out: Path) -> Path:
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    classpath = [str(jar) for jar in sorted(jars.glob("*.jar")) if jar.name.startswith(COMPILE_AGAINST)]
    javac, jar = shutil.which("javac"), shutil.which("jar")
    if not javac or not jar:
        raise SystemExit("Building sparkscope's jar needs a JDK (javac and jar): apt-get install openjdk-17-jdk-headless")
    sources = sorted(str(path) for path in SOURCE.rglob("*.java"))
    with tempfile.TemporaryDirectory() as classes:
        subprocess.run([javac, "--release", "17", "-nowarn", "-encoding", "UTF-8", "-cp", ":".join(classpath),
                        "-d", classes, *sources], check=True)
        out.parent.mkdir(parents=True, exist_ok=True)
        if out.exists():
            out.unlink()
        subprocess.run([jar, "--create", "--file", str(out), f"--date={ENTRY_TIME}", "-C", classes, "."], check=True)
    return out


if __name__ == "__main__":
    print(build(Path(sys.argv[1]) if len(sys.argv) > 1 else JAR))
