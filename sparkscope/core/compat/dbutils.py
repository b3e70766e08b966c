"""Databricks' `dbutils` in the REPL. `dbutils.fs` works where its files are this machine's: on a server that
sparkscope started here (embedded, or its --workers cluster), every path a query reads or writes is a path of
this machine, so ls, head, mkdirs, rm, cp, mv and put do what Databricks documents, with its return values.
Elsewhere (a remote server, a dbfs:/ path), and for widgets and secrets, one line says what to use instead."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...client import delete_guard
from ...client.errors import FileOperationFailed, SparkscopeError
from ..commands.registry import UsageError

if TYPE_CHECKING:  # pragma: no cover
    from ...client.session import Session

CHECK_PATH = "Check the path with dbutils.fs.ls"
HEAD_BYTES = 65536  # Databricks' default maxBytes for dbutils.fs.head
ELSEWHERE = ("Use Python here: os, shutil and pathlib for files (dbutils.fs), input() or sys.argv for widgets, "
             "os.environ for secrets")


@dataclass(frozen=True)
class FileInfo:
    """What dbutils.fs.ls returns for each entry (a folder's path and name end with '/')."""

    path: str
    name: str
    size: int
    modificationTime: int  # noqa: N815 - Databricks' name: milliseconds since the epoch


class LocalFiles:
    """dbutils.fs over the files of this machine (`file:` and plain paths)."""

    def __init__(self, usable: Callable[[], str | None]):
        self._usable = usable  # None when the files are this machine's, else why not

    def __repr__(self) -> str:
        return "dbutils.fs: ls, head, mkdirs, rm, cp, mv, put over this machine's files (help() lists them)"

    def help(self) -> None:  # noqa: A003 - Databricks' name
        print("dbutils.fs, over the files of this machine (the server runs here):\n"
              "  ls(dir), head(file, maxBytes=65536), mkdirs(dir), rm(path, recurse=False),\n"
              "  cp(from, to, recurse=False), mv(from, to, recurse=False), put(file, contents, overwrite=False)")

    def _path(self, given: str) -> Path:
        why = self._usable()
        if why is not None:
            raise UsageError(f"dbutils.fs works on the files of a server sparkscope runs on this machine; {why}",
                             ELSEWHERE)
        text = str(given)
        if text.startswith("dbfs:"):
            raise UsageError(f"{text} is a path of Databricks' DBFS, which this machine does not have",
                             "Give a plain or file: path; " + ELSEWHERE)
        if "://" in text:
            raise UsageError(f"{text} is not a path of this machine", "Read it with Spark, or its own tools")
        text = text.removeprefix("file:")
        if text.startswith("~"):  # Databricks reads it as a file or folder named ~, never as the home folder
            raise UsageError(f"dbutils.fs does not expand ~ in {given} (on Databricks it names a folder called ~, "
                             "not your home folder)", "Write the whole path, e.g. /home/you/data")
        return Path(text).absolute()

    def ls(self, dir: str) -> list[FileInfo]:  # noqa: A002 - Databricks' name
        path = self._path(dir)
        with _one_line(f"list file:{path}"):
            if not path.exists():
                raise FileOperationFailed(f"File file:{path} does not exist", CHECK_PATH)
            entries = sorted(path.iterdir()) if path.is_dir() else [path]
            return [_info(entry) for entry in entries]

    def head(self, file: str, maxBytes: int = HEAD_BYTES) -> str:  # noqa: N803 - Databricks' name
        path = self._path(file)
        with _one_line(f"read file:{path}"):
            if path.is_dir():
                raise FileOperationFailed(f"file:{path} is a directory", "Give a file")
            with open(path, "rb") as handle:
                return handle.read(maxBytes).decode("utf-8", errors="replace")

    def mkdirs(self, dir: str) -> bool:  # noqa: A002 - Databricks' name
        path = self._path(dir)
        with _one_line(f"make the folder file:{path}"):
            path.mkdir(parents=True, exist_ok=True)
        return True

    def rm(self, dir: str, recurse: bool = False) -> bool:  # noqa: A002 - Databricks' name
        path = self._path(dir)
        delete_guard.check(path)  # before anything else: even whether it exists is not its business
        if not path.exists() and not path.is_symlink():
            return False
        with _one_line(f"remove file:{path}"):
            if path.is_dir() and not path.is_symlink() and any(path.iterdir()) and not recurse:
                raise FileOperationFailed(f"file:{path} is a non-empty directory",
                                          "rm(path, recurse=True) removes it with its contents")
            delete_guard.remove_tree(path)
        return True

    def cp(self, from_: str, to: str, recurse: bool = False) -> bool:
        source, target = self._path(from_), self._path(to)
        with _one_line(f"copy file:{source} to file:{target}"):
            if source.is_dir():
                if not recurse:
                    raise FileOperationFailed(f"file:{source} is a directory",
                                              "cp(from, to, recurse=True) copies it with its contents")
                delete_guard.copy_tree(source, target)
            else:
                destination = target / source.name if target.is_dir() else target
                if destination.exists() and destination.samefile(source):
                    raise FileOperationFailed(f"file:{source} and file:{destination} are the same file",
                                              "Copy it to another path")
                delete_guard.copy_file(str(source), str(destination))
        return True

    def mv(self, from_: str, to: str, recurse: bool = False) -> bool:
        source, target = self._path(from_), self._path(to)
        delete_guard.check(source, "move")  # its place is emptied: judged as a delete, before anything else
        with _one_line(f"move file:{source} to file:{target}"):
            if source.is_dir() and not recurse:
                raise FileOperationFailed(f"file:{source} is a directory",
                                          "mv(from, to, recurse=True) moves it with its contents")
            if not source.exists() and not source.is_symlink():
                raise FileOperationFailed(f"File file:{source} does not exist", CHECK_PATH)
            delete_guard.move(source, target)
        return True

    def put(self, file: str, contents: str, overwrite: bool = False) -> bool:
        path = self._path(file)
        with _one_line(f"write file:{path}"):
            if path.exists() and not overwrite:
                raise FileOperationFailed(f"File file:{path} already exists",
                                          "put(file, contents, overwrite=True) replaces it")
            path.parent.mkdir(parents=True, exist_ok=True)
            delete_guard.write_text(path, contents)
        return True


@contextmanager
def _one_line(doing: str) -> Iterator[None]:
    """A filesystem error as one line that says what could not be done and why (the guard's own errors pass)."""
    try:
        yield
    except SparkscopeError:
        raise
    except OSError as exc:
        why = exc.strerror or str(exc) or type(exc).__name__
        raise FileOperationFailed(f"Could not {doing}: {why}", CHECK_PATH) from None


def _info(path: Path) -> FileInfo:
    stat = path.stat()
    folder = path.is_dir()
    return FileInfo(path=f"file:{path}{'/' if folder else ''}", name=path.name + ("/" if folder else ""),
                    size=0 if folder else stat.st_size, modificationTime=int(stat.st_mtime * 1000))


class OnlyOnDatabricks:
    """A part of dbutils with nothing like it here: any use says what to use instead, in one line."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        raise UsageError(f"{self._name}.{attribute} exists only on Databricks", ELSEWHERE)

    def __repr__(self) -> str:
        return f"{self._name} exists only on Databricks. {ELSEWHERE}"


class DbUtils:
    """`dbutils` in the REPL's namespace: fs over this machine's files, the rest one line each."""

    def __init__(self, session: Callable[[], Session]):
        self.fs = LocalFiles(lambda: _not_here(session()))
        self.widgets = OnlyOnDatabricks("dbutils.widgets")
        self.secrets = OnlyOnDatabricks("dbutils.secrets")
        self.notebook = OnlyOnDatabricks("dbutils.notebook")
        self.library = OnlyOnDatabricks("dbutils.library")

    def __repr__(self) -> str:
        return "dbutils: fs works on this machine's files; widgets, secrets and notebook exist only on Databricks"

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        raise UsageError(f"dbutils.{attribute} exists only on Databricks", ELSEWHERE)


def _not_here(session: Session) -> str | None:
    """None when the session's server is one sparkscope started on this machine, else why dbutils.fs is off."""
    if not session.server.embedded():
        return f"{session.url} is not one"
    return None

