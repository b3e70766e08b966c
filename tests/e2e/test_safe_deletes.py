"""Deletes that would lose a machine, typed as a new user types them, each refused in one line; and scripts run as
`python FILE` runs them.

Every case runs with HOME and the current folder inside a throwaway tree of this test's (tmp_path/home, and its
work/ folder): were the guard to fail, `~`, HOME, `..` and the link would all name that tree, never the machine's.
`rm('/')` is never run as a delete: the guard's decision on it is tested in tests/unit/client/test_delete_guard.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.e2e.conftest import Repl, spawn
from tests.helpers import run_sparkscope


@pytest.fixture
def home(tmp_path) -> Path:
    """A throwaway home: a .profile, some data, a work folder (the current folder) holding a link back home."""
    home = tmp_path / "home"
    (home / "work").mkdir(parents=True)
    (home / "data" / "dir with space").mkdir(parents=True)
    (home / "data" / "dir with space" / "notes.txt").write_text("first line\n")
    (home / ".profile").write_text("export KEEP=1\n")
    (home / "work" / "to-home").symlink_to(home)
    return home


def tree(home: Path) -> list[str]:
    """Every path in the throwaway home, links not followed: what must be the same before and after."""
    return sorted(str(path.relative_to(home)) for path in home.rglob("*"))


# the REPL's note of lost queries (core/commands/catalog.py's lost_note): it comes from the connection's background
# check, whenever that ends, and so may follow a command's output (another test of the worker can leave some)
CONNECTION_NOTES = ("Lost since the server restarted or their session ended: ", "Nothing was restarted. ")


def last(shell: Repl, line: str) -> str:
    """The last line the command itself said."""
    return [said for said in shell.run(line).strip().splitlines() if not said.startswith(CONNECTION_NOTES)][-1]


def test_deletes_of_home_its_parent_and_its_hidden_files_are_refused_in_one_line(remote_url, home):
    before = tree(home)
    shell = Repl(spawn("--remote", remote_url, env={"HOME": str(home)}, cwd=str(home / "work")))
    try:
        shell.prompt()
        refused = {
            "dbutils.fs.rm('~', True)": "error: dbutils.fs does not expand ~ in ~ (on Databricks it names a folder "
                                        "called ~, not your home folder). Write the whole path, e.g. /home/you/data.",
            f"dbutils.fs.rm('{home}', True)": f"error: sparkscope will not delete {home}: it is your home folder. "
                                              "Name the file or folder inside it that you mean.",
            "dbutils.fs.rm('..', True)": f"error: sparkscope will not delete {home}/work/.. ({home}): it is your home "
                                         "folder. Name the file or folder inside it that you mean.",
            "%fs rm -r ~": "error: dbutils.fs does not expand ~ in ~ (on Databricks it names a folder called ~, not "
                           "your home folder). Write the whole path, e.g. /home/you/data.",
            f"dbutils.fs.mv('{home}', '{home.parent}/moved', True)": f"error: sparkscope will not move {home}: it is "
                                                                     "your home folder. Name the file or folder inside "
                                                                     "it that you mean.",
            f"dbutils.fs.put('{home}/.profile', 'x', True)": f"error: sparkscope will not overwrite {home}/.profile: it "
                                                             "is a hidden file or folder of your home folder, where "
                                                             "programs keep their settings. sparkscope leaves it "
                                                             "alone; if it must go, remove it yourself, outside "
                                                             "sparkscope.",
        }
        for line, said in refused.items():
            assert last(shell, line) == said, line
        assert tree(home) == before and (home / ".profile").read_text() == "export KEEP=1\n"
        # a link to home is removed as a link: home stays whole
        assert last(shell, "dbutils.fs.rm('to-home/', True)") == "True"
        assert not os.path.lexists(home / "work" / "to-home")
        assert tree(home) == [entry for entry in before if entry != "work/to-home"]
        # %fs reads its arguments as a shell does, with Databricks' flags
        listed = shell.run(f'%fs ls "{home}/data/dir with space"')
        assert "| notes.txt " in listed, listed
        assert last(shell, f"%fs head --maxBytes=5 '{home}/data/dir with space/notes.txt'") == "first"
        assert last(shell, f"%fs head --bytes=5 {home}/.profile") == (
            "error: %fs head has no flag --bytes=5 (its flags: --maxBytes). Use %fs ls|head|mkdirs|rm PATH, %fs "
            "cp|mv FROM TO or %fs put PATH TEXT; flags: -r (--recurse) for rm, cp and mv, --maxBytes=N for head, -f "
            "(--overwrite) for put; quote a path with spaces.")
        notes = f"{home}/data/dir with space/notes.txt"
        assert last(shell, f"dbutils.fs.cp('{notes}', '{notes}')") == (
            f"error: file:{notes} and file:{notes} are the same file. Copy it to another path.")
        assert last(shell, "dbutils.fs.ls('/nowhere/at/all')") == (
            "error: File file:/nowhere/at/all does not exist. Check the path with dbutils.fs.ls.")
        assert last(shell, "1 + 1") == "2"  # the REPL goes on
    finally:
        shell.child.sendcontrol("d")
        shell.child.expect(["Stop", "\\$", r"\Z"], timeout=30)


def test_a_script_that_tries_it_stops_non_zero_with_the_tree_intact(remote_url, home):
    before = tree(home)
    script = home / "work" / "cleanup.py"
    script.write_text("import os\nbase = os.environ['HOME']  # meant: a project folder\nprint('cleaning')\n"
                      "dbutils.fs.rm(base, True)\nprint('not reached')\n")
    done = run_sparkscope("--remote", remote_url, str(script), env={"HOME": str(home)}, cwd=str(home / "work"))
    assert done.returncode == 1 and done.stdout == "cleaning\n", (done.stdout, done.stderr)
    assert done.stderr.splitlines()[-1] == (f"error: sparkscope will not delete {home}: it is your home folder. Name "
                                            "the file or folder inside it that you mean.")
    assert tree(home) == sorted([*before, "work/cleanup.py"])


def test_scripts_run_as_python_runs_them(remote_url, tmp_path):
    """sys.path[0] is the script's folder (so a module beside it imports), '' for -c; a byte-order mark and a
    coding line are read as Python reads them; exit() ends the script where it is called."""
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "helper.py").write_text("ANSWER = 42\n")
    (folder / "main.py").write_text("import sys, helper\nprint(helper.ANSWER, sys.path[0])\nexit(3)\nprint('after')\n")
    (folder / "bom.py").write_bytes(b"\xef\xbb\xbfprint('bom read')\n")
    (folder / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\nprint('caf\xe9')\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ran = run_sparkscope("--remote", remote_url, str(folder / "main.py"), cwd=str(elsewhere))
    assert (ran.returncode, ran.stdout, ran.stderr) == (3, f"42 {folder}\n", "")
    for name, said in (("bom.py", "bom read\n"), ("latin.py", "café\n")):
        ran = run_sparkscope("--remote", remote_url, str(folder / name))
        assert (ran.returncode, ran.stdout, ran.stderr) == (0, said, ""), name
    ran = run_sparkscope("--remote", remote_url, "-c", "import sys; print(repr(sys.path[0]))")
    assert (ran.returncode, ran.stdout) == (0, "''\n"), ran.stderr


def test_a_write_through_a_link_is_judged_where_it_lands(remote_url, home):
    """A link in the work folder that points at ~/.profile: each write through it would have replaced .profile (a
    direct write to .profile was already refused). Exports are judged the same way, and never replace a file
    without --force."""
    work = home / "work"
    (work / "out.txt").symlink_to(home / ".profile")
    (work / "a.txt").write_text("a\n")
    (work / "ex").mkdir()
    (work / "ex" / "link.csv").symlink_to(home / ".profile")
    (work / "kept.csv").write_text("mine\n")
    shell = Repl(spawn("--remote", remote_url, env={"HOME": str(home)}, cwd=str(work)))
    lands = (f"{work}/out.txt ({home}/.profile): it is a hidden file or folder of your home folder, where programs "
             "keep their settings. sparkscope leaves it alone; if it must go, remove it yourself, outside sparkscope.")
    try:
        shell.prompt()
        assert last(shell, "dbutils.fs.put('out.txt', 'x', True)") == f"error: sparkscope will not overwrite {lands}"
        assert last(shell, "dbutils.fs.cp('a.txt', 'out.txt', True)") == f"error: sparkscope will not copy onto {lands}"
        assert last(shell, "%fs put -f out.txt replaced") == f"error: sparkscope will not overwrite {lands}"
        assert "Started q" in shell.run(":start q ss.source.rate(5)")
        shell.run(":await q --timeout 3")
        assert last(shell, ":peek q --export ex/link.csv --force") == (
            f"error: sparkscope will not overwrite ex/link.csv ({home}/.profile): it is a hidden file or folder "
            "of your home folder, where programs keep their settings. sparkscope leaves it alone; if it must go, "
            "remove it yourself, outside sparkscope.")
        assert last(shell, f":progress q --export {home}/.hidden.jsonl") == (  # a new file: a write, not an overwrite
            f"error: sparkscope will not write {home}/.hidden.jsonl: it is a hidden file or folder of your home "
            "folder, where programs keep their settings. Pick a path in a folder of yours.")
        shell.child.send(":peek q --export kept.csv\r")
        shell.child.expect(r"kept\.csv exists\. Write over it\? \[y/N\]", timeout=60)
        shell.child.send("n\r")
        assert shell.prompt().strip().splitlines()[-1] == (
            "error: kept.csv exists. Add --force to write over it, or pick another name.")
        assert (work / "kept.csv").read_text() == "mine\n"
        assert last(shell, ":peek q 3 --export kept.csv --force") == "Wrote 3 rows to kept.csv"
        assert (work / "kept.csv").read_text().startswith("timestamp,value\n")
        shell.run(":stop q")
    finally:
        shell.child.sendcontrol("d")
        shell.child.expect(["Stop", "\\$", r"\Z"], timeout=30)
    assert (home / ".profile").read_text() == "export KEEP=1\n" and not (home / ".hidden.jsonl").exists()


def test_a_script_s_export_never_replaces_a_file_without_force(remote_url, home):
    work = home / "work"
    (work / "kept.jsonl").write_text("mine\n")
    script = work / "export.sps"
    script.write_text("spark.range(3).createOrReplaceTempView('three')\n:sql SELECT * FROM three\n"
                      ":start r ss.source.rate(5)\n:await r --timeout 3\n:peek r 2 --export kept.jsonl\n")
    done = run_sparkscope("--remote", remote_url, "-f", str(script), env={"HOME": str(home)}, cwd=str(work))
    assert done.returncode == 1
    assert done.stderr.splitlines()[-2:] == ["error: kept.jsonl exists. Add --force to write over it, or pick another "
                                             "name.", "Stopped r."]  # the script's end stops what it started
    assert (work / "kept.jsonl").read_text() == "mine\n"
