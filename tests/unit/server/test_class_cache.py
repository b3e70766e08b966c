"""The server's class-data-sharing archive: recorded once per Java and pyspark, then reused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sparkscope.server.class_cache import ClassCache, archive_key, quote_option


@pytest.fixture(autouse=True)
def _state_dir_cache(monkeypatch):
    monkeypatch.delenv("SPARKSCOPE_CLASS_CACHE", raising=False)  # the tests' shared cache is not these
    monkeypatch.setenv("SPARKSCOPE_CLASS_CACHE_RECORD", "1")  # as the recording server runs (class_recording)


def _install(root: Path) -> tuple[str, Path]:
    java = root / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\n")
    (root / "jdk" / "lib").mkdir()
    (root / "jdk" / "lib" / "modules").write_bytes(b"m" * 10)
    jars = root / "pyspark" / "jars"
    jars.mkdir(parents=True)
    (jars / "spark-core_2.13-4.3.0.jar").write_bytes(b"j" * 10)
    return str(java), root / "pyspark"


def test_a_users_first_start_records_nothing_and_one_recording_server_at_a_time_is_started(tmp_path,
                                                                                          monkeypatch):
    import time

    monkeypatch.delenv("SPARKSCOPE_CLASS_CACHE_RECORD")
    java, pyspark = _install(tmp_path)
    cache = ClassCache(tmp_path / "state", java, pyspark)
    assert cache.java_options() == ("", None)  # the first start waits for no recording
    lock = cache.folder / "recorder.lock"
    lock.write_text("4242")  # a recording server runs: no second one
    assert cache.record_later(after=4243) is None and lock.read_text() == "4242"
    cache.archive.write_bytes(b"archive")
    lock.unlink()
    assert cache.record_later(after=4243) is None and not lock.exists()  # there is an archive: nothing to record
    monkeypatch.setenv("SPARKSCOPE_CLASS_CACHE_RECORD", "1")
    assert ClassCache(tmp_path / "state", java, pyspark).record_later(after=4243) is None  # the recorder records itself
    cache.archive.unlink()
    lock.write_text("4242")
    os.utime(lock, (time.time() - 3600, time.time() - 3600))  # a recorder that died an hour ago
    monkeypatch.setenv("SPARKSCOPE_CLASS_CACHE", "off")
    assert ClassCache(tmp_path / "state", java, pyspark).record_later(after=4243) is None  # off: never


def test_the_recording_server_records_the_archive_and_later_starts_use_it(tmp_path):
    java, pyspark = _install(tmp_path)
    cache = ClassCache(tmp_path / "state", java, pyspark)
    assert cache.folder == tmp_path / "state" / "class-cache"
    option, recording = cache.java_options()
    assert option == f"-XX:ArchiveClassesAtExit={recording}" and recording.parent == cache.folder
    recording.write_bytes(b"archive")  # what the JVM writes as that server exits
    cache.keep(recording, stopped_cleanly=True)
    assert cache.archive.read_bytes() == b"archive" and not recording.exists()
    assert cache.java_options() == (f"-XX:SharedArchiveFile={cache.archive} -Xshare:auto", None)
    assert oct(cache.folder.stat().st_mode & 0o777) == "0o700"


def test_a_server_killed_while_recording_leaves_no_archive(tmp_path):
    java, pyspark = _install(tmp_path)
    cache = ClassCache(tmp_path / "state", java, pyspark)
    _, recording = cache.java_options()
    recording.write_bytes(b"half an arch")
    cache.keep(recording, stopped_cleanly=False)
    assert not recording.exists() and not cache.archive.exists()
    _, other = cache.java_options()
    other.write_bytes(b"left by a crash")
    os.utime(other, (1, 1))
    _, again = cache.java_options()  # an old recording nobody will keep is removed
    assert not other.exists() and again != other


def test_a_new_pyspark_or_java_makes_a_new_archive_and_the_old_goes_after_a_week_unused(tmp_path):
    java, pyspark = _install(tmp_path)
    before = archive_key(java, pyspark)
    old = ClassCache(tmp_path / "state", java, pyspark)
    old.java_options()
    old.archive.write_bytes(b"archive")
    assert old.java_options()[1] is None
    (pyspark / "jars" / "spark-core_2.13-4.3.0.jar").rename(pyspark / "jars" / "spark-core_2.13-4.3.1.jar")
    assert archive_key(java, pyspark) != before
    new = ClassCache(tmp_path / "state", java, pyspark)
    assert new.java_options()[0].startswith("-XX:ArchiveClassesAtExit=")
    assert old.archive.exists()  # still another checkout's, perhaps
    os.utime(old.archive, (1, 1))
    new.java_options()
    assert not old.archive.exists()
    (tmp_path / "jdk" / "lib" / "modules").write_bytes(b"other java")
    os.utime(tmp_path / "jdk" / "lib" / "modules", (1, 1))
    assert archive_key(java, pyspark) != new.archive.stem.removeprefix("server-")


def test_an_archive_the_jvm_could_not_use_is_removed(tmp_path):
    java, pyspark = _install(tmp_path)
    cache = ClassCache(tmp_path / "state", java, pyspark)
    cache.java_options()
    cache.archive.write_bytes(b"archive")
    assert not cache.discard_if_unusable("25/11/22 10:00:00 INFO SparkConnectServer: Spark Connect server started\n")
    assert cache.archive.exists()
    assert cache.discard_if_unusable("started\n", pid=os.getpid())  # a JVM that silently did not map it
    cache.archive.write_bytes(b"archive")
    assert cache.discard_if_unusable("[0.012s][warning][cds] shared class paths mismatch\nstarted\n")
    assert not cache.archive.exists()
    cache.archive.write_bytes(b"truncated")
    assert cache.discard_if_unusable("#\n# A fatal error has been detected by the Java Runtime Environment:\n#  SIGBUS")
    assert not cache.archive.exists()
    assert cache.java_options()[0].startswith("-XX:ArchiveClassesAtExit=")


def test_paths_with_spaces_stay_one_option_and_the_conf_dir_is_empty(tmp_path):
    assert quote_option("-XX:SharedArchiveFile=/home/a b/x.jsa") == '"-XX:SharedArchiveFile=/home/a b/x.jsa"'
    assert quote_option("-Xshare:auto") == "-Xshare:auto"
    java, pyspark = _install(tmp_path)
    shared = tmp_path / "cache"
    first, second = ClassCache(tmp_path / "home1", java, pyspark), ClassCache(tmp_path / "home2", java, pyspark)
    assert first.conf_dir() == first.folder / "spark-conf"  # the state dir's own folder
    os.environ["SPARKSCOPE_CLASS_CACHE"] = str(shared)
    try:  # state dirs sharing the archive share the class path it was recorded with
        assert ClassCache(tmp_path / "home1", java, pyspark).conf_dir() == shared / "spark-conf"
        assert ClassCache(tmp_path / "home2", java, pyspark).conf_dir() == shared / "spark-conf"
    finally:
        del os.environ["SPARKSCOPE_CLASS_CACHE"]
    (first.conf_dir() / "spark-env.sh").write_text("export X=1\n")
    assert list(first.conf_dir().iterdir()) == []
    assert second.folder != first.folder


def test_off_records_and_maps_nothing(tmp_path, monkeypatch):
    java, pyspark = _install(tmp_path)
    monkeypatch.setenv("SPARKSCOPE_CLASS_CACHE", "off")
    cache = ClassCache(tmp_path / "state", java, pyspark)
    assert cache.java_options() == ("", None)
    assert cache.conf_dir() == tmp_path / "state" / "class-cache" / "spark-conf"
    assert oct(cache.folder.stat().st_mode & 0o777) == "0o700"  # no "made it private" notice later


def test_the_recorder_waits_while_the_users_server_is_busy_and_starts_once_it_is_idle(tmp_path, monkeypatch):
    import subprocess
    import sys
    import threading
    import time

    from sparkscope.server import class_recording

    monkeypatch.setattr(class_recording, "IDLE_WINDOW", 0.3)
    # "busy" is a spinning process, which gets less than a tenth of a core on a saturated machine (load 20
    # while a soak ran beside this test): a fiftieth still tells it from a process blocked on a read
    monkeypatch.setattr(class_recording, "IDLE_SHARE", 0.02)
    lock = tmp_path / "recorder.lock"
    lock.write_text("")
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        waiting = threading.Thread(target=class_recording.wait_until_idle, args=(busy.pid, lock))
        waiting.start()
        seen: set[int] = set()
        deadline = time.monotonic() + 30
        while len(seen) < 4 and time.monotonic() < deadline:  # three windows went by: the lock says so
            seen.add(lock.stat().st_mtime_ns)
        assert len(seen) >= 4 and waiting.is_alive()  # a busy server: still waiting
    finally:
        busy.kill()
        busy.wait()
    waiting.join(timeout=30)
    assert not waiting.is_alive()  # it stopped: nothing to wait for
    idle = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        waiting = threading.Thread(target=class_recording.wait_until_idle, args=(idle.pid, lock))
        waiting.start()
        waiting.join(timeout=30)
        assert not waiting.is_alive()  # an idle server: the recording starts after one window
    finally:
        idle.kill()
        idle.wait()
