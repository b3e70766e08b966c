"""The delete guard: what it refuses (decisions only, for the system's own folders), and what its deletes do to a
throwaway tree. HOME, the current folder and the XDG folders point into this test's tmp_path, so a guard that failed
could only ever touch the test's own tree."""

from __future__ import annotations

import ast
import os
import shutil
import sys
from pathlib import Path

import pytest

from sparkscope.client import delete_guard
from sparkscope.client.errors import FileOperationFailed, RefusedDelete

PACKAGE = Path(__file__).resolve().parents[3] / "sparkscope"


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A throwaway home with a work folder as the current folder, and sparkscope's folders inside it."""
    home = tmp_path / "home"
    (home / "work" / "data" / "sub").mkdir(parents=True)
    (home / ".profile").write_text("export A=1\n")
    (home / "work" / "data" / "sub" / "f.txt").write_text("x")
    monkeypatch.setenv("HOME", str(home))
    for variable, folder in (("XDG_STATE_HOME", ".local/state"), ("XDG_CONFIG_HOME", ".config"),
                             ("XDG_CACHE_HOME", ".cache")):
        monkeypatch.setenv(variable, str(home / folder))
    monkeypatch.chdir(home / "work")
    return home


@pytest.mark.parametrize("path, why", [
    ("/", "it is the root of the filesystem"),
    ("/etc", "it is a top-level folder of the system"),
    ("/opt", "it is a top-level folder of the system"),
    ("/etc/passwd", "it is inside a folder of the operating system (/etc)"),
    ("/var/lib/dpkg", "it is inside a folder of the operating system (/var)"),
])
def test_the_system_s_folders_are_refused_by_decision_alone(home, path, why):
    assert delete_guard.refusal(path) == why


def test_the_home_folder_its_ancestors_and_whatever_resolves_to_them_are_refused(home, tmp_path):
    (home / "work" / "to-home").symlink_to(home)
    assert delete_guard.refusal(home) == "it is your home folder"
    assert delete_guard.refusal(tmp_path) == f"it holds your home folder ({home})"
    assert delete_guard.refusal("..") == "it is your home folder"  # the current folder is home/work
    assert delete_guard.refusal(f"{home}/work/data/../..") == "it is your home folder"
    assert delete_guard.refusal(f"{home}/work/to-home/.") == "it is your home folder"  # the link's target
    assert delete_guard.refusal(home / "work" / "to-home") is None  # the link itself
    assert delete_guard.refusal(".") == "it is the current folder"
    assert delete_guard.refusal("") == "it is the current folder"


def test_sparkscope_s_own_folders_and_the_python_it_runs_in_are_refused(home):
    assert delete_guard.refusal(home / ".local" / "state" / "sparkscope") == "it is sparkscope's state folder"
    assert delete_guard.refusal(home / ".local") == f"it holds sparkscope's state folder ({home}/.local/state/sparkscope)"
    assert delete_guard.refusal(home / ".config" / "sparkscope") == "it is sparkscope's config folder"
    assert delete_guard.refusal(home / ".cache" / "sparkscope") == "it is sparkscope's cache folder"
    assert delete_guard.refusal(Path(sys.prefix) / "lib").startswith("it is inside the Python")
    # inside sparkscope's state folder is sparkscope's own: its server's files, the checkpoints it made
    assert delete_guard.refusal(home / ".local" / "state" / "sparkscope" / "server.json") is None


def test_the_home_folder_s_hidden_files_are_refused_and_the_rest_of_it_is_not(home):
    assert delete_guard.refusal(home / ".profile") == ("it is a hidden file or folder of your home folder, where "
                                                       "programs keep their settings")
    assert delete_guard.refusal(home / "work" / "data") is None
    assert delete_guard.refusal(home / "work" / "data" / ".hidden") is None
    assert delete_guard.refusal("/var/tmp/scratch") is None


def test_a_refusal_is_one_line_that_names_the_path_where_it_really_is(home):
    with pytest.raises(RefusedDelete) as refused:
        delete_guard.check("..")
    assert str(refused.value) == (f"sparkscope will not delete .. ({home}): it is your home folder. Name the file "
                                  "or folder inside it that you mean.")
    assert "\n" not in str(refused.value)


def test_removing_a_link_removes_the_link_and_never_its_target(home):
    link = home / "work" / "link"
    link.symlink_to(home)
    for given in (link, f"{link}/"):  # a trailing slash still names the link
        assert delete_guard.where(given) == link
        assert delete_guard.refusal(given) is None
    delete_guard.remove_tree(f"{link}/")
    assert not os.path.lexists(link) and (home / ".profile").exists() and (home / "work" / "data").is_dir()


def test_a_tree_is_removed_without_following_the_links_inside_it(home):
    tree = home / "work" / "data"
    (tree / "sub" / "to-home").symlink_to(home)
    removal = delete_guard.remove_tree(tree)
    assert not tree.exists() and (home / ".profile").read_text() == "export A=1\n"
    assert removal.removed == 4 and removal.left == []  # f.txt, the link, sub/, data/


def test_a_partial_delete_says_what_was_removed_and_what_was_left(home, monkeypatch):
    """As root every unlink succeeds, so the failure is the filesystem's answer for one file, stood in for."""
    tree = home / "work" / "data"
    (tree / "sub" / "g.txt").write_text("y")
    real_unlink = os.unlink

    def unlink(path, *, dir_fd=None):
        if os.path.basename(path) == "f.txt":
            raise PermissionError(13, "Permission denied", path)
        return real_unlink(path, dir_fd=dir_fd)

    monkeypatch.setattr(os, "unlink", unlink)
    with pytest.raises(FileOperationFailed) as failed:
        delete_guard.remove_tree(tree)
    assert str(failed.value) == (f"Removed 1 files and folders of {tree}, but could not remove {tree}/sub/f.txt "
                                 "(Permission denied); what was left is still there. Check the permissions of what "
                                 "was left.")
    assert (tree / "sub" / "f.txt").exists() and not (tree / "sub" / "g.txt").exists()


def test_a_new_file_in_a_folder_never_touched_is_refused_as_a_write_with_a_place_to_write_instead(home):
    with pytest.raises(RefusedDelete) as refused:
        delete_guard.write_text("/proc/sparkscope-new.csv", "x")
    assert str(refused.value) == ("sparkscope will not write /proc/sparkscope-new.csv: it is inside a folder of the "
                                  "operating system (/proc). Pick a path in a folder of yours.")


def test_overwrites_moves_and_copies_are_checked_at_both_ends(home):
    data = home / "work" / "data"
    with pytest.raises(RefusedDelete, match="will not overwrite .*/.profile"):
        delete_guard.write_text(home / ".profile", "x")
    with pytest.raises(RefusedDelete, match="will not copy onto .*/.profile"):
        delete_guard.copy_file(str(data / "sub" / "f.txt"), str(home / ".profile"))
    with pytest.raises(RefusedDelete, match="will not move .* it is your home folder"):
        delete_guard.move(home, home.parent / "elsewhere")
    with pytest.raises(FileOperationFailed, match="is a folder, not a file"):
        delete_guard.remove_file(data)
    assert (home / ".profile").read_text() == "export A=1\n" and data.is_dir() and home.is_dir()
    delete_guard.copy_tree(data, home / "work" / "copy")
    assert (home / "work" / "copy" / "sub" / "f.txt").read_text() == "x"


def test_a_write_through_a_link_is_judged_where_it_lands(home):
    """A link in the user's own tree that points at ~/.profile: a write through it would replace .profile."""
    data = home / "work" / "data"
    (data / "out.txt").symlink_to(home / ".profile")
    (data / "notes.txt").write_text("old")
    (data / "to-notes.txt").symlink_to(data / "notes.txt")
    for write in (lambda: delete_guard.write_text(data / "out.txt", "x"),
                  lambda: delete_guard.copy_file(str(data / "sub" / "f.txt"), str(data / "out.txt")),
                  lambda: delete_guard.open_file(data / "out.txt", "a"),
                  lambda: delete_guard.open_fd(data / "out.txt", os.O_WRONLY | os.O_TRUNC)):
        with pytest.raises(RefusedDelete) as refused:
            write()
        assert str(refused.value).startswith("sparkscope will not ")
        assert f"{data / 'out.txt'} ({home / '.profile'}): it is a hidden file or folder of your home" in str(
            refused.value)
    assert (home / ".profile").read_text() == "export A=1\n"
    delete_guard.write_text(data / "to-notes.txt", "new")  # a link to a file of the tree: written where it points
    assert (data / "notes.txt").read_text() == "new" and (data / "to-notes.txt").is_symlink()
    delete_guard.remove_file(data / "out.txt")  # a delete of the link removes the link, never .profile
    assert (home / ".profile").read_text() == "export A=1\n"


def test_a_write_over_a_file_with_other_names_is_refused(home):
    data = home / "work" / "data"
    os.link(home / ".profile", data / "profile-too")  # a hard link: the same file under another name
    with pytest.raises(RefusedDelete) as refused:
        delete_guard.write_text(data / "profile-too", "x")
    assert str(refused.value) == (f"sparkscope will not overwrite {data / 'profile-too'}: it has 1 other name "
                                  "(hard links), which a write over it would change too. Remove this name first, "
                                  "then write the file anew.")
    assert (home / ".profile").read_text() == "export A=1\n"


def test_a_folder_swapped_for_a_link_while_its_tree_is_removed_is_never_followed(home, monkeypatch):
    data = home / "work" / "data"
    outside = home / "work" / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    real_open = os.open

    def swapping_open(path, flags, mode=0o777, *, dir_fd=None):
        if path == "sub" and dir_fd is not None:  # between the walk's look at `sub` and its opening of it
            shutil.rmtree(data / "sub")
            (data / "sub").symlink_to(outside)
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", swapping_open)
    with pytest.raises(FileOperationFailed, match=f"could not remove {data / 'sub'}"):
        delete_guard.remove_tree(data)
    assert (outside / "keep.txt").read_text() == "keep"


# Every way Python writes over or removes a file: module functions (by module), methods (by name), and the open
# calls whose mode or flags write. delete_guard.py is where they may be called.
_MODULE_CALLS = {"os": {"remove", "unlink", "rmdir", "removedirs", "rename", "renames", "replace", "truncate"},
                 "shutil": {"rmtree", "move", "copy", "copy2", "copyfile", "copytree", "copymode", "copystat",
                            "copyfileobj"}}
_METHODS = {"unlink", "rmdir", "rename", "write_text", "write_bytes", "touch"}
_WRITE_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND"}


def _writes(node: ast.Call) -> bool:
    func = node.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "delete_guard":
        return False  # the guard's own, which check first
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in _MODULE_CALLS:
        if func.attr in _MODULE_CALLS[func.value.id]:
            return True
        if (func.value.id, func.attr) == ("os", "open"):
            path = node.args[0] if node.args else None
            devnull = isinstance(path, ast.Attribute) and path.attr == "devnull"
            flags = {name.attr for name in ast.walk(node) if isinstance(name, ast.Attribute)}
            return not devnull and bool(flags & _WRITE_FLAGS)
        return False
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name in _METHODS:
        return True
    if name == "replace":  # a path's replace(target); a text's takes two, dataclasses.replace(obj, **changes) keywords
        return isinstance(func, ast.Attribute) and len(node.args) == 1 and not node.keywords
    if name != "open":
        return False
    builtin = isinstance(func, ast.Name) or (isinstance(func.value, ast.Name) and func.value.id in ("io", "builtins"))
    at = 1 if builtin else 0  # open(path, mode, …), path.open(mode, …)
    given = node.args[at] if len(node.args) > at else next((k.value for k in node.keywords if k.arg == "mode"), None)
    if given is None:
        return False
    literal = isinstance(given, ast.Constant) and isinstance(given.value, str)
    if not literal:  # open(path, a_mode) may write; Session.open(target) is not a file's open
        return builtin or any(k.arg == "mode" for k in node.keywords)
    return bool(set(given.value) & set("wax+"))


def destructive_calls(source: str, filename: str = "<source>") -> list[str]:
    """Each place in `source` that writes over or removes a file, or imports a way to do it under another name."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Call) and _writes(node):
            found.append(f"{filename}:{node.lineno} {ast.unparse(node.func)}(…)")
        elif isinstance(node, ast.ImportFrom) and node.module in _MODULE_CALLS:
            found += [f"{filename}:{node.lineno} from {node.module} import {alias.name}" for alias in node.names
                      if alias.name in _MODULE_CALLS[node.module] | {"open", "*"}]
        elif isinstance(node, ast.Import):
            found += [f"{filename}:{node.lineno} import {alias.name} as {alias.asname}" for alias in node.names
                      if alias.name in _MODULE_CALLS and alias.asname]
    return found


@pytest.mark.parametrize("source", [
    "open(p, 'w')", "open(p, mode='a')", "open(p, 'r+')", "open(p, 'xb')", "open(p, chosen)", "io.open(p, 'w')",
    "Path(p).open('w')", "p.open(mode='wb')", "os.open(p, os.O_WRONLY | os.O_CREAT)", "os.open(p, os.O_RDWR)",
    "p.write_text('x')", "p.write_bytes(b'x')", "p.touch()", "p.unlink()", "p.rmdir()", "p.rename(q)",
    "p.replace(q)", "os.truncate(p, 0)", "os.remove(p)", "os.replace(p, q)", "shutil.copy(p, q)",
    "shutil.copy2(p, q)", "shutil.copyfile(p, q)", "shutil.copytree(p, q)", "shutil.rmtree(p)", "shutil.move(p, q)",
    "from os import remove", "from shutil import rmtree", "from os import *", "import os as system",
    "import shutil as sh",
])
def test_the_scan_finds_each_way_to_write_over_or_remove_a_file(source):
    assert len(destructive_calls(source)) == 1


@pytest.mark.parametrize("source", [
    "open(p)", "open(p, 'r')", "open(p, 'rb')", "p.open()", "text.replace('a', 'b')", "os.open(os.devnull, os.O_WRONLY)",
    "os.open(p, os.O_RDONLY)", "os.path.exists(p)", "import os", "from os import path", "Session.open(target)",
    "dataclasses.replace(record, state='lost')", "replace(record, state='lost')", "delete_guard.write_text(p, 'x')",
])
def test_the_scan_leaves_reads_alone(source):
    assert destructive_calls(source) == []


def test_every_write_and_delete_in_sparkscope_goes_through_the_guard():
    """Every way Python writes over or removes a file (the two tests above show the scan finds each): called
    nowhere in the package but in the guard."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path.name != "delete_guard.py":
            found += destructive_calls(path.read_text(), str(path.relative_to(PACKAGE.parent)))
    assert found == []
