"""The delete guard: what it refuses (decisions only, for the system's own folders), and what its deletes do to a
throwaway tree. HOME, the current folder and the XDG folders point into this test's tmp_path, so a guard that failed
could only ever touch the test's own tree."""

from __future__ import annotations

import ast
import os
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
    real_unlink = Path.unlink

    def unlink(self, missing_ok=False):
        if self.name == "f.txt":
            raise PermissionError(13, "Permission denied", str(self))
        return real_unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", unlink)
    with pytest.raises(FileOperationFailed) as failed:
        delete_guard.remove_tree(tree)
    assert str(failed.value) == (f"Removed 1 files and folders of {tree}, but could not remove {tree}/sub/f.txt "
                                 "(Permission denied); what was left is still there. Check the permissions of what "
                                 "was left.")
    assert (tree / "sub" / "f.txt").exists() and not (tree / "sub" / "g.txt").exists()


def test_overwrites_moves_and_copies_are_checked_at_both_ends(home):
    data = home / "work" / "data"
    with pytest.raises(RefusedDelete, match="will not overwrite .*/.profile"):
        delete_guard.write_text(home / ".profile", "x")
    with pytest.raises(RefusedDelete, match="will not overwrite .*/.profile"):
        delete_guard.copy_file(str(data / "sub" / "f.txt"), str(home / ".profile"))
    with pytest.raises(RefusedDelete, match="will not move .* it is your home folder"):
        delete_guard.move(home, home.parent / "elsewhere")
    with pytest.raises(FileOperationFailed, match="is a folder, not a file"):
        delete_guard.remove_file(data)
    assert (home / ".profile").read_text() == "export A=1\n" and data.is_dir() and home.is_dir()
    delete_guard.copy_tree(data, home / "work" / "copy")
    assert (home / "work" / "copy" / "sub" / "f.txt").read_text() == "x"


def test_every_delete_in_sparkscope_goes_through_the_guard():
    """os's and shutil's deletes, moves and renames, and a path's unlink, rmdir, rename and replace: called nowhere in
    the package but in the guard (a text's replace(old, new) takes two arguments, a path's one)."""
    module_calls = {"os": {"remove", "unlink", "rmdir", "removedirs", "rename", "renames", "replace"},
                    "shutil": {"rmtree", "move"}}
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "delete_guard.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            owner, name = node.func.value, node.func.attr
            module = owner.id if isinstance(owner, ast.Name) and owner.id in module_calls else None
            if module is not None:
                deletes = name in module_calls[module]
            else:
                deletes = name in ("unlink", "rmdir", "rename") or (name == "replace" and len(node.args) == 1)
            if deletes:
                found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {ast.unparse(node.func)}(…)")
    assert found == []
