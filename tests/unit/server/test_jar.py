"""The bounded sink's jar (sparkscope/jars/): it is what its source compiles to, and its ring keeps what it should.

Both need a JDK (javac): the jar is committed so that users need only a Java runtime, and this is the check that
it was built from the source beside it (scripts/build_jar.py, `make jar`)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.helpers import needs

ROOT = Path(__file__).resolve().parents[3]
JAR = ROOT / "sparkscope" / "jars" / "sparkscope.jar"
needs_jdk = needs(None if shutil.which("javac") and shutil.which("jar") else "needs a JDK (javac, jar)")


def _disassembly(jar: Path, classes: list[str]) -> dict[str, str]:
    """Each class's members and code as javap prints them, without the constant pool's numbering (which a JDK's
    javac orders its own way): what the class does, whichever JDK 17 or later compiled it."""
    names = [name.removesuffix(".class").replace("/", ".") for name in classes]
    out = subprocess.run(["javap", "-c", "-p", "-constants", "-cp", str(jar), *names], capture_output=True, text=True,
                         check=True).stdout
    text = re.sub(r"#\d+(,\s*\d+)?", "#", out)
    parts = re.split(r"^(?=Compiled from )", text, flags=re.M)
    return dict(zip(names, [part for part in parts if part.strip()], strict=True))


@needs_jdk
def test_the_committed_jar_is_what_its_source_compiles_to(tmp_path):
    built = tmp_path / "sink.jar"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "build_jar.py"), str(built)], check=True,
                   capture_output=True, text=True)
    with zipfile.ZipFile(JAR) as committed, zipfile.ZipFile(built) as fresh:
        classes = sorted(name for name in fresh.namelist() if name.endswith(".class"))
        assert sorted(name for name in committed.namelist() if name.endswith(".class")) == classes
    ours, theirs = _disassembly(JAR, classes), _disassembly(built, classes)
    changed = [name for name in ours if ours[name] != theirs[name]]
    assert changed == [], "the jar is older than its source: run `make jar` and commit the jar"


CHECKS = {"sparkscope.v3.sink.KeepNewestCheck": 29, "sparkscope.v3.HoldingsCheck": 20,
          "sparkscope.v3.feed.FeedsCheck": 10, "sparkscope.v3.identity.IdentityCheck": 24}  # each check's class, and how many lines of "ok" it prints


@needs_jdk
@pytest.mark.parametrize("check", sorted(CHECKS))
def test_the_jar_keeps_what_it_should_and_ends_it(check, tmp_path):
    import pyspark

    jars = str(Path(pyspark.__file__).parent / "jars" / "*")
    sources = [str(path) for path in sorted((Path(__file__).parent / "jvm").glob("*.java"))]
    classes = tmp_path / "classes"
    subprocess.run(["javac", "-nowarn", "-cp", f"{JAR}:{jars}", "-d", str(classes), *sources], check=True,
                   capture_output=True, text=True)
    scratch = tmp_path / "java-tmp"  # the JVM's temporary folder, where a ring makes its checkpoint
    scratch.mkdir()
    ran = subprocess.run(["java", f"-Djava.io.tmpdir={scratch}", "-cp", f"{classes}:{JAR}:{jars}", check],
                         capture_output=True, text=True, timeout=120)
    lines = ran.stdout.splitlines()
    assert [line for line in lines if not line.startswith("ok ")] == [] and ran.returncode == 0, ran.stderr[-2000:]
    assert len(lines) == CHECKS[check]
    assert list(scratch.iterdir()) == []  # what the checks made, they removed
