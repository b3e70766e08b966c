"""A deprecation warning names the user's line, not sparkscope's: by counting sparkscope's frames on Python 3.10 and
3.11, by Python's own skip_file_prefixes on 3.12+ (run here under pyenv's 3.12 when the machine has it)."""

from __future__ import annotations

import os
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def test_an_old_keyword_warns_at_the_callers_line():
    from sparkscope.client.deprecation import renamed_arguments

    @renamed_arguments(old="new")
    def takes(new: int = 0) -> int:
        return new

    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        assert takes(old=3) == 3
    assert [(str(w.message), w.filename) for w in said] == [("takes(old=…) is deprecated: use new=…", __file__)]


def _python312() -> str | None:
    import pwd

    pyenv = os.environ.get("PYENV_ROOT") or os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".pyenv")  # HOME is a sandbox
    installed = sorted(Path(pyenv, "versions").glob("3.12*/bin/python3.12"))
    return str(installed[-1]) if installed else shutil.which("python3.12")


def test_on_python_3_12_python_itself_skips_sparkscope_s_frames(tmp_path):
    python = _python312()
    if python is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI needs a Python 3.12 (pyenv's) for the skip_file_prefixes branch")
        pytest.skip("no Python 3.12 here")
    script = tmp_path / "user_script.py"
    script.write_text(
        "import importlib.util, warnings\n"
        f"spec = importlib.util.spec_from_file_location('deprecation', {str(ROOT / 'sparkscope/client/deprecation.py')!r})\n"
        "module = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(module)\n"
        "@module.renamed_arguments(old='new')\n"
        "def takes(new=0):\n"
        "    return new\n"
        "with warnings.catch_warnings(record=True) as said:\n"
        "    warnings.simplefilter('always')\n"
        "    takes(old=1)\n"
        "print(said[0].filename, said[0].lineno)\n")
    ran = subprocess.run([python, str(script)], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == [str(script), "10"]
