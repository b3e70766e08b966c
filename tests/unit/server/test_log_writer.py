"""The server log's writer: tokens masked, the log rotated."""

from __future__ import annotations


def test_the_server_log_writer_masks_each_token_in_every_line(tmp_path):
    import io
    import subprocess
    import sys

    from sparkscope.server import log_writer

    lines = (b"starting\nworker is starting with url sc://localhost:1/;token=tok-123 and sessionId x\ntok-123tok-123\n"
             b"a worker's url sc://localhost:1/;user_id=ana;token=work-456\n")
    copied = tmp_path / "copied.log"
    log_writer.copy(io.BytesIO(lines), str(copied), [b"tok-123", b"work-456"])
    assert copied.read_bytes() == (b"starting\nworker is starting with url sc://localhost:1/;token=*** and "
                                   b"sessionId x\n******\na worker's url sc://localhost:1/;user_id=ana;token=***\n")
    log = tmp_path / "server.log"  # as the server runs it: a file of its own, the token in its environment
    done = subprocess.run([sys.executable, "-I", log_writer.__file__, str(log)], input=lines,
                          env={log_writer.TOKEN_ENV: "tok-123\nwork-456"}, timeout=30)
    assert done.returncode == 0 and b"tok-123" not in log.read_bytes() and b"work-456" not in log.read_bytes()
    assert log.read_bytes().count(b"***") == 4


def test_the_server_log_is_rotated_so_a_server_running_for_days_cannot_fill_the_disk(tmp_path):
    import io

    from sparkscope.server import log_writer

    log = tmp_path / "server.log"
    log.write_bytes(b"== an earlier start\n")
    lines = b"".join(b"line %03d of a chatty server\n" % i for i in range(100))  # 27 bytes each
    log_writer.copy(io.BytesIO(lines), str(log), [], max_bytes=1000)
    kept, previous = log.read_bytes(), (tmp_path / "server.log.1").read_bytes()
    assert len(kept) <= 1000 and len(previous) <= 1000
    numbers = [int(line[5:8]) for line in (previous + kept).splitlines() if line.startswith(b"line")]
    assert numbers == list(range(numbers[0], 100))  # the newest lines, none lost between the two files
    assert oct(log.stat().st_mode & 0o777) == "0o600"
