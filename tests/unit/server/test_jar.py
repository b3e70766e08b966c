"""The bounded sink's jar (sparkscope/jars/): it is what its source compiles to, and its ring keeps what it should.

Both need a JDK (javac): the jar is committed so that users need only a Java runtime, and this is the check that
it was built from the source beside it (scripts/build_jar.py, `make jar`)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
JAR = ROOT / "sparkscope" / "jars" / "sparkscope.jar"
needs_jdk = pytest.mark.skipif(not (shutil.which("javac") and shutil.which("jar")), reason="needs a JDK (javac, jar)")


def _jdk() -> str:
    return subprocess.run(["javac", "-version"], capture_output=True, text=True).stdout.split()[-1]


@needs_jdk
def test_the_committed_jar_is_what_its_source_compiles_to(tmp_path):
    built = tmp_path / "sink.jar"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "build_jar.py"), str(built)], check=True,
                   capture_output=True, text=True)
    with zipfile.ZipFile(JAR) as committed, zipfile.ZipFile(built) as fresh:
        made_by = committed.read("META-INF/MANIFEST.MF").decode()
        if f"Created-By: {_jdk()}" not in made_by:
            pytest.skip(f"the jar was built by another JDK ({made_by.split('Created-By: ')[-1].strip()}); "
                        "`make jar` rebuilds it with this one")
        classes = sorted(name for name in fresh.namelist() if name.endswith(".class"))
        assert sorted(name for name in committed.namelist() if name.endswith(".class")) == classes
        changed = [name for name in classes if committed.read(name) != fresh.read(name)]
    assert changed == [], "the jar is older than its source: run `make jar` and commit the jar"


@needs_jdk
def test_the_ring_keeps_the_newest_rows_by_batch_time_and_partition(tmp_path):
    import pyspark

    jars = str(Path(pyspark.__file__).parent / "jars" / "*")
    source = Path(__file__).parent / "jvm" / "KeepNewestCheck.java"
    classes = tmp_path / "classes"
    subprocess.run(["javac", "-nowarn", "-cp", f"{JAR}:{jars}", "-d", str(classes), str(source)], check=True,
                   capture_output=True, text=True)
    scratch = tmp_path / "java-tmp"  # the JVM's temporary folder, where a ring makes its checkpoint
    scratch.mkdir()
    ran = subprocess.run(["java", f"-Djava.io.tmpdir={scratch}", "-cp", f"{classes}:{JAR}:{jars}",
                          "sparkscope.sink.KeepNewestCheck"],
                         capture_output=True, text=True, timeout=120)
    lines = ran.stdout.splitlines()
    assert [line for line in lines if not line.startswith("ok ")] == [] and ran.returncode == 0, ran.stderr[-2000:]
    assert len(lines) == 15
    assert list(scratch.iterdir()) == []  # what the checks made, they removed
