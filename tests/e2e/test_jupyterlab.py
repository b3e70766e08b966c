"""JupyterLab in a real browser: Chromium, driven by Playwright, opens a notebook on a JupyterLab server of this test
(localhost, a token of its own), runs `%load_ext sparkscope`, and displays a stream. The test reads the page as a
person does: the output changes batch by batch; the kernel's interrupt (I, I) stops the updates and the output says
so; `%queries` in the next cell still lists the stream as active.

Chromium comes from the OS packages (CI installs it as it installs nginx); without one this test skips, in one line.
With SPARKSCOPE_NOTEBOOK_PICTURE=path.png it also saves what the page shows mid-stream (docs/notebooks.md's picture).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import urllib.request

import pytest

from sparkscope.server.ports import free_port
from tests.helpers import needs, wait_for

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
LAB_START = 120  # seconds for JupyterLab to answer its first request


def _notebook(url: str) -> dict:
    cells = ["%load_ext sparkscope\n" f"%sparkscope --remote {url}",
             "ticks = spark.readStream.format('rate').option('rowsPerSecond', 10).load()\n"
             "display(ticks.selectExpr('value', 'value % 3 AS bucket'), streamName='live')",
             "%queries", "%stop --all"]
    return {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                       "source": source} for source in cells],
            "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
            "nbformat": 4, "nbformat_minor": 5}


@pytest.fixture
def lab(tmp_path, remote_url):
    """JupyterLab on 127.0.0.1 with a token of its own (in its environment, never its arguments), serving tmp_path."""
    (tmp_path / "live.ipynb").write_text(json.dumps(_notebook(remote_url)))
    labconfig = tmp_path / "jupyter-config" / "labconfig"  # no "official Jupyter news?" toast over the cells
    labconfig.mkdir(parents=True)
    (labconfig / "page_config.json").write_text(json.dumps(
        {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
    port, token = free_port(), secrets.token_hex(16)
    log = (tmp_path / "lab.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
         f"--ServerApp.root_dir={tmp_path}", "--ServerApp.port_retries=0",
         *(["--allow-root"] if os.geteuid() == 0 else [])],  # CI runs as root
        env={**os.environ, "JUPYTER_TOKEN": token, "JUPYTER_CONFIG_DIR": str(tmp_path / "jupyter-config"),
             "JUPYTER_DATA_DIR": str(tmp_path / "jupyter-data"), "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")},
        stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)
    base = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        assert process.poll() is None, (tmp_path / "lab.log").read_text()[-3000:]
        try:
            with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5) as response:
                return response.status == 200
        except OSError:
            return False

    try:
        wait_for(answers, LAB_START, every=0.5, what="JupyterLab to answer")
        yield f"{base}/lab/tree/live.ipynb?token={token}"
    finally:
        process.terminate()  # ours: it shuts its kernels down on SIGTERM
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
        log.close()


@needs("no Chromium here (CI installs the OS package chromium)" if CHROMIUM is None else None)
def test_jupyterlab_in_chromium_shows_a_stream_updating_in_its_cell_until_the_interrupt(lab, tmp_path):
    from playwright.sync_api import sync_playwright

    failed_picture = tmp_path / "failed.png"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(lab)
            cells = page.locator(".jp-Notebook .jp-Cell")
            status = page.locator("#jp-main-statusbar")
            wait_for(lambda: cells.count() == 4 and status.count() == 1 and "Idle" in status.inner_text(),
                     LAB_START, every=0.5, what="the notebook's four cells and its kernel, idle")

            def run_cell(index: int) -> None:
                cells.nth(index).locator(".jp-InputArea-editor").click()
                page.keyboard.press("Shift+Enter")

            def output(index: int) -> str:
                return cells.nth(index).locator(".jp-OutputArea").inner_text()

            run_cell(0)
            wait_for(lambda: "Connected to" in output(0), 180, every=0.5, what="the session to open")
            assert "sparkscope is loaded" in output(0), output(0)

            run_cell(1)
            seen: list[int] = []

            def a_newer_batch() -> bool:
                found = re.search(r"Batch: (\d+) \(live", output(1))
                if found and (not seen or int(found.group(1)) > seen[-1]):
                    seen.append(int(found.group(1)))
                return len(seen) >= 3

            wait_for(a_newer_batch, 180, every=0.2, what="the stream's output to change twice")
            shown = cells.nth(1).locator(".jp-OutputArea table")
            assert shown.count() >= 1 and "value" in shown.first.inner_text(), output(1)
            picture = os.environ.get("SPARKSCOPE_NOTEBOOK_PICTURE")
            if picture:
                page.screenshot(path=picture)

            page.keyboard.press("Escape")  # command mode, then I, I: JupyterLab's interrupt
            page.keyboard.press("i")
            page.keyboard.press("i")
            wait_for(lambda: "Stopped updating: the kernel was interrupted" in output(1), 60, every=0.5,
                     what="the output to say the updates stopped")
            assert "live keeps running (%stop live ends it)" in output(1), output(1)
            assert "Traceback" not in output(1), output(1)

            run_cell(2)
            wait_for(lambda: "live" in output(2), 60, every=0.5, what="%queries")
            assert re.search(r"live\s+[0-9a-f]{8}\s+active", output(2)), output(2)
            run_cell(3)  # a notebook's queries outlive its kernel, and the test server is shared
            wait_for(lambda: "Stopped" in output(3), 60, every=0.5, what="%stop --all")
        except BaseException:
            page.screenshot(path=str(failed_picture))  # what the page showed when the test failed
            raise
        finally:
            browser.close()
