"""The seed notebooks this project grew from (tests/corpus/), read as their cells, with the data each needs made
under a test's own folder and its paths changed to it: the REPL pastes them (e2e/test_corpus.py) and nbclient runs
them as notebooks (e2e/test_seed_notebooks.py), from the same cells and the same data."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

CORPUS = Path(__file__).resolve().parent / "corpus"
_PROSE = re.compile(r"^[A-Z][^=.\"'#]*$")  # a one-line title between cells: "Output (Terminal)", "Action + WaterMark"
_OUTPUT = re.compile(r"^(\w+(,\w+)+|\d+|Out\[\d+\]:.*)$")  # printed output: a CSV header, a number, Out[N]


def notebook_cells(text: str) -> list[tuple[str, str]]:
    """(number, source) of each `In [N]:` cell: its paragraphs while they parse as Python, up to the output."""
    cells, lines, index = [], text.splitlines(), 0
    while index < len(lines):
        match = re.match(r"^In \[(\d*|None)\]:\s*$", lines[index])
        index += 1
        if not match:
            continue
        paragraphs: list[list[str]] = [[]]
        while index < len(lines) and not re.match(r"^In \[(\d*|None)\]:", lines[index]):
            if lines[index].strip():
                paragraphs[-1].append(lines[index])
            elif paragraphs[-1]:
                paragraphs.append([])
            index += 1
        code: list[str] = []
        first = next(filter(None, paragraphs), [""])
        if first[0].startswith("%"):  # a notebook magic: its line, as typed
            cells.append((match.group(1), first[0]))
            continue
        for paragraph in filter(None, paragraphs):
            if code and (len(paragraph) == 1 and _PROSE.match(paragraph[0]) or _OUTPUT.match(paragraph[0])):
                break
            candidate = code + [""] + paragraph if code else paragraph
            try:
                ast.parse("\n".join(candidate))
            except SyntaxError:
                break
            code = candidate
        cells.append((match.group(1), "\n".join(code)))
    return cells


def rows(folder: Path, name: str, rows: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps(row) + "\n" for row in rows))


def sensor_files(folder: Path) -> None:
    """Seed 003's sensor stream: three JSON-lines files, one a trigger (maxFilesPerTrigger=1)."""
    folder.mkdir(parents=True)
    for index in range(1, 4):
        rows = [{"timestamp": f"2018-12-18 10:00:{second:02d}", "deviceId": device, "deviceType": f"SensorType{kind}",
                 "signalStrength": 0.1 * device} for second in range(0, 10, 2 + index)
                for device, kind in ((1, "A"), (2, "D"))]
        tmp = folder / f".streaming-sensor_file-{index}.json"
        tmp.write_text("".join(json.dumps(row) + "\n" for row in rows))
        tmp.rename(folder / f"streaming-sensor_file-{index}.json")


def _changed(cells: list[tuple[str, str]], paths: dict[str, str]) -> list[tuple[str, str]]:
    for old, new in paths.items():
        cells = [(number, source.replace(old, new)) for number, source in cells]
    return cells


def seed000(tmp: Path) -> tuple[list[tuple[str, str]], Path]:
    """Seed 000 (Databricks: %fs, dbutils, display() among the pyspark cells), with 50 events in five files, the
    IoT device rows, and the folders its %fs ls cells list; its cells, and the folder its parquet query writes."""
    events = tmp / "events"
    times = [f"2016-07-26 0{2 + i // 30}:{i % 30 * 2:02d}:00" for i in range(50)]
    actions = ["Open" if i % 3 else "Close" for i in range(50)]
    for start in range(0, 50, 10):
        rows(events, f"file-{start // 10}.json", [{"time": t, "action": a} for t, a in
                                                  zip(times[start:start + 10], actions[start:start + 10], strict=True)])
    rows(tmp / "iot" / "data-device", "part-0.json", [
        {"id": i, "user_id": 1, "device_id": 1, "num_steps": 100, "miles_walked": 0.1, "calories_burnt": 1.0,
         "timestamp": f"2018-07-20 10:{i:02d}:00", "value": "{}"} for i in range(20)])
    for folder in ("output/streaming-steps", "checkpoints/live-exercise"):  # what the notebook's %fs ls cells list
        (tmp / folder).mkdir(parents=True)
    cells = _changed(notebook_cells((CORPUS / "seed000_events.txt").read_text()), {
        "/databricks-datasets/structured-streaming/events/": f"{events}/",
        "dbfs:/databricks-datasets/iot-stream/": f"{tmp / 'iot'}/",
        "/output/streaming-steps": f"{tmp}/output/streaming-steps",
        "/checkpoints/": f"{tmp}/checkpoints/"})
    return cells, tmp / "output" / "streaming-steps" / "hourly.parquet"


def seed001(port: int) -> list[tuple[str, str]]:
    """Seed 001 (Spark's programming guide, copied into a notebook): the socket word count of localhost:9999 (here
    `port`), then the guide's fragments, never run there (`df`, `...` stand for what the reader has)."""
    return _changed(notebook_cells((CORPUS / "seed001_guide.txt").read_text()), {"9999": str(port)})


def seed002(tmp: Path) -> list[tuple[str, str]]:
    """Seed 002 (windows, sliding windows, a memory sink read with SQL, a watermark) with its three input folders;
    the relative paths made absolute (the server resolves relative paths from its own directory)."""
    mobile = [{"id": "0", "action": "open", "ts": "2018-03-02T10:02:00"},
              {"id": "1", "action": "open", "ts": "2018-03-02T10:05:00"},
              {"id": "2", "action": "close", "ts": "2018-03-02T10:12:00"}]
    rows(tmp / "input", "1.json", mobile)
    rows(tmp / "watermarking", "1.json", mobile)
    rows(tmp / "temperatureRacks", "1.json", [
        {"rack": "rack1", "temperature": 99.5, "ts": "2018-03-02T10:02:00"},
        {"rack": "rack1", "temperature": 100.5, "ts": "2018-03-02T10:03:00"},
        {"rack": "rack2", "temperature": 80.0, "ts": "2018-03-02T10:07:00"}])
    return _changed(notebook_cells((CORPUS / "seed002_windows.txt").read_text()),
                    {f'"{folder}"': f'"{tmp / folder.strip("./")}/"'
                     for folder in ("./input/", "./temperatureRacks/", "watermarking/")})


def seed003(tmp: Path) -> tuple[list[tuple[str, str]], Path]:
    """Seed 003 (an ETL of sensor files to parquet, read back as a stream, display() aggregations), with its three
    sensor files; its cells, and the folder its ETL query writes. Cell 39 is a Scala comment, which the cell reader
    (Python only) leaves out: it is pasted as written."""
    sensor_files(tmp / "mnt" / "Streaming" / "continuous_streaming" / "streaming_sensor")
    cells = _changed(notebook_cells((CORPUS / "seed003_sensors.txt").read_text()),
                     {"/tmp/pydata/": f"{tmp}/pydata/", "/mnt/jules-pydata/": f"{tmp}/mnt/"})
    cells = [(number, "// --- SHOW DASHBOARD ---" if number == "39" else source) for number, source in cells]
    return cells, tmp / "pydata" / "Streaming" / "continuous_streaming" / "out" / "iot-stream"
