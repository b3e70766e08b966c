"""Every delete and overwrite sparkscope makes goes through here, and nothing else in sparkscope deletes.

A path is judged where the act lands: `..` collapsed and symlinks followed first, so `~/x/..`, a relative `..` and
a link to the home folder are all the home folder. A delete of a symlink removes the link, never its target; a write
through a symlink lands on its target, and is judged there; a write over a file with other names (hard links)
changes them too, and is refused. The guard refuses, with one line that names the path and why:

- `/` and every top-level folder of the system;
- the home folder, the current folder, sparkscope's state, config and cache folders, and each of their ancestors
  (deleting one would take the user's work with it);
- anything inside the Python installation and the environment sparkscope runs in, inside the operating system's
  own folders (/etc, /usr, /boot …), and the hidden files and folders directly in the home folder (~/.profile,
  ~/.ssh, ~/.config …).

A recursive delete stays on the filesystem it started on (as `rm --one-file-system`) and never follows a link: it
walks the tree through file descriptors (as shutil.rmtree does where it can), so a folder swapped for a link while
it runs is never followed. When part of a tree cannot be removed, the error says how much was removed and what was
left.

Every write of sparkscope's own files goes through here too (write_text, open_file, open_fd): a test reads the
package and finds no other place that opens a file to write, copies onto one, truncates or removes one.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import sys
from collections.abc import Callable
from typing import IO, Any
from dataclasses import dataclass, field
from pathlib import Path

from .errors import FileOperationFailed, RefusedDelete

# The operating system's own folders: nothing inside them is sparkscope's to delete or overwrite (Linux, macOS)
SYSTEM_TREES = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/run", "/sbin",
                "/sys", "/usr", "/var", "/System", "/Library", "/Applications", "/private/etc", "/private/var")
SCRATCH_INSIDE_SYSTEM = ("/var/tmp", "/private/var/tmp", "/private/var/folders", "/dev/shm")


def _real(path: str | os.PathLike[str]) -> Path:
    """Where `path` really is: absolute, `..` collapsed and every symlink followed."""
    return Path(os.path.realpath(os.fspath(path)))


def lands(path: str | os.PathLike[str]) -> Path:
    """Where a write to `path` lands: through every symlink (a dangling one too) to the file it names."""
    return _real(os.path.join(os.getcwd(), os.fspath(path)))


def where(path: str | os.PathLike[str]) -> Path:
    """What a delete of `path` removes: the link itself for a symlink (its folder resolved), else the real path."""
    text = os.path.join(os.getcwd(), os.fspath(path))  # not normalised: `link/..` is the link's target's parent
    text = text.rstrip("/") or "/"  # `link/` names the link too: its target is never what is removed
    if os.path.islink(text):
        return Path(os.path.realpath(os.path.dirname(text))) / os.path.basename(text)
    return Path(os.path.realpath(text))


def _xdg(variable: str, default: str) -> Path:
    return Path(os.environ.get(variable) or str(Path.home() / default)) / "sparkscope"


def _folders_that_hold_work() -> list[tuple[Path, str]]:
    """The folders never deleted, nor any ancestor of theirs: each with what it is."""
    held = [(Path.home(), "your home folder"), (Path(os.environ.get("HOME") or Path.home()), "your home folder"),
            (_xdg("XDG_STATE_HOME", ".local/state"), "sparkscope's state folder"),
            (_xdg("XDG_CONFIG_HOME", ".config"), "sparkscope's config folder"),
            (_xdg("XDG_CACHE_HOME", ".cache"), "sparkscope's cache folder")]
    with contextlib.suppress(OSError):  # the current folder was deleted under us: nothing to keep there
        held.append((Path.cwd(), "the current folder"))
    return [(_real(folder), what) for folder, what in held]


def _trees_never_touched() -> list[tuple[Path, str]]:
    """The folders nothing inside of which is deleted or overwritten: each with what it is."""
    trees = [(Path(sys.prefix), "the Python environment sparkscope runs in"),
             (Path(sys.base_prefix), "the Python installation"),
             (Path(sys.exec_prefix), "the Python installation")]
    trees += [(Path(folder), "a folder of the operating system") for folder in SYSTEM_TREES]
    return [(_real(tree), what) for tree, what in trees]


INSIDE_IT = "Name the file or folder inside it that you mean"
NOT_OURS = "sparkscope leaves it alone; if it must go, remove it yourself, outside sparkscope"
ELSEWHERE = "Pick a path in a folder of yours"


def refusal(path: str | os.PathLike[str]) -> str | None:
    """Why the guard refuses to delete or overwrite `path`, in a few words; None when it may. A decision only:
    it never touches the path."""
    judged = _judge(path)
    return judged[0] if judged else None


WRITES = ("overwrite", "write", "append to", "copy onto", "touch")  # acts that land where a link points


def _judge(path: str | os.PathLike[str], action: str = "delete") -> tuple[str, str] | None:
    """(why the guard refuses to `action` `path`, what to do instead), or None when it may."""
    if action not in WRITES:
        return _judge_at(where(path))
    target = lands(path)
    judged = _judge_at(target)
    if judged is not None:
        return judged
    try:
        names = os.stat(target).st_nlink
    except OSError:  # nothing there yet: a new file has no other names
        return None
    if names > 1 and not target.is_dir():
        other = "name" if names == 2 else "names"
        return (f"it has {names - 1} other {other} (hard links), which a write over it would change too",
                "Remove this name first, then write the file anew")
    return None


def _judge_at(target: Path) -> tuple[str, str] | None:
    """The decision for a path already resolved to where the act lands."""
    if len(target.parts) == 1:
        return "it is the root of the filesystem", INSIDE_IT
    for folder, what in _folders_that_hold_work():
        if target == folder:
            return f"it is {what}", INSIDE_IT
        if target in folder.parents:
            return f"it holds {what} ({folder})", INSIDE_IT
    if len(target.parts) == 2:  # a folder directly in "/"
        return "it is a top-level folder of the system", INSIDE_IT
    home = _real(Path.home())
    if target.parent == home and target.name.startswith("."):
        return "it is a hidden file or folder of your home folder, where programs keep their settings", NOT_OURS
    for tree, what in _trees_never_touched():
        if tree in target.parents and not any(Path(scratch) == target or Path(scratch) in target.parents
                                              for scratch in SCRATCH_INSIDE_SYSTEM):
            return f"it is inside {what} ({tree})", NOT_OURS
    return None


def check(path: str | os.PathLike[str], action: str = "delete") -> Path:
    """Where `action` on `path` would act (the link itself for a delete or a move, what a write lands on for a
    write), or RefusedDelete saying why not."""
    judged = _judge(path, action)
    real = lands(path) if action in WRITES else where(path)
    if judged is not None:
        why, hint = judged
        if action in WRITES and not os.path.lexists(real):  # a new file: nothing there to leave alone
            action, hint = ("write" if action == "overwrite" else action), ELSEWHERE
        shown = os.fspath(path)
        named = shown if shown == str(real) else f"{shown} ({real})"
        raise RefusedDelete(f"sparkscope will not {action} {named}: {why}", hint, data={"path": str(real)})
    return real


@dataclass
class Removal:
    """What a recursive delete did: how many files and folders it removed, and what it had to leave."""

    removed: int = 0
    left: list[tuple[str, str]] = field(default_factory=list)  # (path, why)

    def failed(self, path: str, error: OSError | str) -> None:
        self.left.append((path, error if isinstance(error, str) else (error.strerror or str(error))))


def remove_tree(path: str | os.PathLike[str]) -> Removal:
    """Delete `path` and everything under it (a link or a file: just it). Refused as `check` refuses; a part it
    could not remove raises FileOperationFailed, saying what was removed and what was left."""
    target = check(path)
    removal = Removal()
    if target.is_symlink() or not target.is_dir():
        _unlink(target, removal)
    else:
        _remove_folder(target, removal)
    if removal.left:
        first, why = removal.left[0]
        more = f" and {len(removal.left) - 1:,} more" if len(removal.left) > 1 else ""
        raise FileOperationFailed(f"Removed {removal.removed:,} files and folders of {target}, but could not remove "
                                  f"{first} ({why}){more}; what was left is still there",
                                  "Check the permissions of what was left", data={"path": str(target)})
    return removal


_FOLDER_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)


def _remove_folder(folder: Path, removal: Removal) -> None:
    """Remove a folder's tree through file descriptors: each folder is opened without following a link, and its
    entries are removed relative to it, so a link put in place of a folder mid-walk is removed, never followed."""
    try:
        fd = os.open(folder, _FOLDER_FLAGS)
    except OSError as exc:
        removal.failed(str(folder), exc)
        return
    try:
        _empty(fd, str(folder), os.fstat(fd).st_dev, removal)
    finally:
        os.close(fd)
    try:
        os.rmdir(folder)
        removal.removed += 1
    except OSError as exc:
        if not removal.left:  # else it is not empty because of what was left: that is said already
            removal.failed(str(folder), exc)


def _empty(fd: int, shown: str, device: int, removal: Removal) -> None:
    """Remove everything in the folder open as `fd` (named `shown`), on `device` only."""
    try:
        entries = list(os.scandir(fd))
    except OSError as exc:
        removal.failed(shown, exc)
        return
    for entry in entries:
        name, path = entry.name, os.path.join(shown, entry.name)
        try:
            status = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            continue
        except OSError as exc:
            removal.failed(path, exc)
            continue
        if not stat.S_ISDIR(status.st_mode):
            _unlink_at(fd, name, path, removal)
        elif status.st_dev != device:
            removal.failed(path, "another filesystem is mounted there")
        else:
            _remove_subfolder(fd, name, path, status, removal)


def _remove_subfolder(parent: int, name: str, path: str, status: os.stat_result, removal: Removal) -> None:
    try:
        fd = os.open(name, _FOLDER_FLAGS, dir_fd=parent)
    except OSError as exc:  # a link swapped in for the folder: O_NOFOLLOW refuses it (ELOOP)
        removal.failed(path, exc)
        return
    try:
        opened = os.fstat(fd)
        if (opened.st_dev, opened.st_ino) != (status.st_dev, status.st_ino):
            removal.failed(path, "it changed while it was being removed")
            return
        _empty(fd, path, status.st_dev, removal)
    finally:
        os.close(fd)
    try:
        os.rmdir(name, dir_fd=parent)
        removal.removed += 1
    except OSError as exc:
        if not removal.left:
            removal.failed(path, exc)


def _unlink_at(fd: int, name: str, path: str, removal: Removal) -> None:
    try:
        os.unlink(name, dir_fd=fd)
        removal.removed += 1
    except FileNotFoundError:
        pass
    except OSError as exc:
        removal.failed(path, exc)


def _unlink(path: Path, removal: Removal) -> None:
    try:
        path.unlink()
        removal.removed += 1
    except FileNotFoundError:
        pass
    except OSError as exc:
        removal.failed(str(path), exc)


def remove_file(path: str | os.PathLike[str], *, missing_ok: bool = True) -> bool:
    """Delete one file (or link); True when it was there. A folder is refused: remove_tree removes those."""
    target = check(path)
    if target.is_dir() and not target.is_symlink():
        raise FileOperationFailed(f"{target} is a folder, not a file", "Remove a folder with its contents on purpose")
    try:
        target.unlink()
    except FileNotFoundError:
        if not missing_ok:
            raise
        return False
    return True


def replace(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """Move `source` onto `target`, atomically, replacing what `target` held: both are checked."""
    check(source, "move")
    check(target, "overwrite")
    os.replace(source, target)


def move(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """Move a file or folder (across filesystems too). The source's place is emptied, so it is checked as a
    delete; a target that exists is checked as an overwrite, and so is every file a folder's move replaces."""
    check(source, "move")
    destination = Path(target)
    if destination.is_dir() and not destination.is_symlink():
        destination = destination / Path(source).name
    if os.path.lexists(destination):
        check(destination, "overwrite")
    shutil.move(os.fspath(source), os.fspath(destination), copy_function=copy_file)


def copy_file(source: str, target: str) -> str:
    """Copy one file (with its times and mode) onto `target`, checked where the copy lands."""
    check(target, "copy onto")
    return shutil.copy2(source, target)


def copy_tree(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """Copy a folder into `target` (merged into it when it exists); each file it replaces is checked."""
    if os.path.lexists(target):
        check(target, "overwrite")
    shutil.copytree(source, target, dirs_exist_ok=True, copy_function=copy_file)


def write_text(path: str | os.PathLike[str], text: str, *, opener: Callable[[str, int], int] | None = None) -> None:
    """Write `text` to `path`, checked where the write lands (a link's target), replacing what it held."""
    with open_file(path, "w", opener=opener) as handle:
        handle.write(text)


def open_file(path: str | os.PathLike[str], mode: str, **options: Any) -> IO[Any]:
    """`open(path, mode, …)` for writing ("w", "a", "x", with "b" or "+"), checked where the write lands."""
    check(path, "append to" if "a" in mode else "overwrite")
    if "b" not in mode:
        options.setdefault("encoding", "utf-8")
    return open(path, mode, **options)  # noqa: SIM115 - the caller closes it


def touch(path: str | os.PathLike[str]) -> None:
    """Set `path`'s modification time to now (a lock's heartbeat), checked where it lands."""
    check(path, "touch")
    os.utime(path)


def open_fd(path: str | os.PathLike[str], flags: int, mode: int = 0o600) -> int:
    """`os.open(path, flags, mode)` for writing or creating (a lock, a log a process inherits), checked where the
    write lands."""
    check(path, "append to" if flags & os.O_APPEND else "overwrite")
    return os.open(path, flags, mode)
