"""Seed 001: CSV and JSON file sources with schemas, separators and the three parse modes.

    .venv/bin/python examples/03_file_sources.py
"""

from __future__ import annotations

from _common import example, show

with example(__doc__) as (ss, scratch, _):
    people_dir, raw_dir = scratch / "people", scratch / "raw"
    people_dir.mkdir()
    raw_dir.mkdir()
    (people_dir / "people.csv").write_text("name;age\nann;31\nbob;27\ncid;45\n")
    (raw_dir / "events.json").write_text('{"id": 1, "v": "x"}\nnot json\n{"id": 2, "v": "y"}\n')

    people = ss.source.files("csv", str(people_dir), schema="name STRING, age INT", sep=";", header=True)
    adults = ss.start(people.where("age > 28"), "adults")
    adults.process_all_available()
    show("CSV with sep=';' and a header: people over 28", ss.peek("adults", order_by="name"))

    clean = ss.source.files("json", str(raw_dir), schema="id INT, v STRING", mode="DROPMALFORMED")
    kept = ss.start(clean, "clean")
    kept.process_all_available()
    show("JSON, mode DROPMALFORMED: the bad line is gone", ss.peek("clean", order_by="id"))

    raw = ss.source.files("json", str(raw_dir), schema="id INT, v STRING, _corrupt_record STRING",
                          mode="PERMISSIVE")
    permissive = ss.start(raw, "raw")
    permissive.process_all_available()
    show("JSON, mode PERMISSIVE: the bad line lands in _corrupt_record",
         ss.peek("raw", where="_corrupt_record IS NOT NULL"))
    ss.streams.stop_all()
