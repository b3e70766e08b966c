"""The layering rules, read from the source of every module, in every subfolder: the front ends (cli, repl, notebook)
stand side by side on the core (commands, rendering, the executor) and import nothing from each other; the core uses
server and client, server uses client, client uses pyspark and starts or signals no process; only the adapter
(client/_pyspark/) reaches into pyspark's private names; no folder holds more than 15 modules."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "sparkscope"
ADAPTER = PACKAGE / "client" / "_pyspark"


def _modules(folder: str) -> list[Path]:
    return sorted((PACKAGE / folder).rglob("*.py"))


# which of sparkscope's packages each may import (the top-level sparkscope/__init__ ties them together, and
# sparkscope/__main__, the `sparkscope` command, hands the command line to a front end)
FRONT_ENDS = ("cli", "repl", "notebook")
MAY_IMPORT = {"client": set(), "server": {"client"}, "core": {"client", "server"}, "testing": {"client", "server"},
              **{front: {"core", "client", "server"} for front in FRONT_ENDS}}


def _imported_packages(path: Path, package: Path = PACKAGE) -> set[tuple[int, str]]:
    """(line, package of sparkscope) for each import of one of sparkscope's packages in `path`."""
    package_parts = path.relative_to(package).parts[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(package_parts[:len(package_parts) - (node.level - 1)])
                target = [*base, *(node.module or "").split(".")] if node.module else base
                if not node.module:  # from .. import x: x may be a package
                    target = [*base, node.names[0].name]
            else:
                parts = (node.module or "").split(".")
                if parts[0] != "sparkscope":
                    continue
                target = parts[1:]
            if target and target[0]:
                found.add((node.lineno, target[0]))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "sparkscope" and len(parts) > 1:
                    found.add((node.lineno, parts[1]))
    return found


def _private_accesses(path: Path) -> list[tuple[int, str, str]]:
    """(line, owner expression, attribute) for every `x._name` where x is not self or cls."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            owner = ast.unparse(node.value)
            if owner not in ("self", "cls"):
                found.append((node.lineno, owner, node.attr))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "hasattr", "setattr") and len(node.args) >= 2
              and isinstance(node.args[1], ast.Constant) and str(node.args[1].value).startswith("_")
              and not str(node.args[1].value).startswith("__")):
            found.append((node.lineno, ast.unparse(node.args[0]), str(node.args[1].value)))
    return found


def _outside_their_class(source: str, name: str) -> list[str]:
    """Each `x._name` (and getattr(x, "_name")) of `source` that is not self's or cls's, nor inside a class that
    defines that name: another object's private name, pyspark's among them."""
    tree = ast.parse(source)
    allowed = _enclosing_definitions(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pyspark"):
            found += [f"{name}:{node.lineno} imports {a.name}" for a in node.names if a.name.startswith("_")]
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            if ast.unparse(node.value) not in ("self", "cls") and node.attr not in allowed[id(node)]:
                found.append(f"{name}:{node.lineno} {ast.unparse(node)}")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "setattr")
              and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
              and str(node.args[1].value).startswith("_") and not str(node.args[1].value).startswith("__")
              and str(node.args[1].value) not in allowed[id(node)]):
            found.append(f"{name}:{node.lineno} {ast.unparse(node.func)}({ast.unparse(node.args[0])}, "
                         f"{node.args[1].value!r})")
    return found


def test_only_the_adapter_touches_pyspark_private_names():
    offenders = [found for path in PACKAGE.rglob("*.py") if ADAPTER not in path.parents
                 for found in _outside_their_class(path.read_text(), path.name)]
    assert offenders == [], "pyspark internals belong in client/_pyspark/:\n" + "\n".join(offenders)


def test_a_private_name_of_pyspark_is_caught_even_when_sparkscope_uses_the_same_name():
    """sparkscope's own classes define _session, _spark, _options, _lock…; pyspark's objects have privates of the
    same names. Outside the class that defines it, the name is another object's, whoever else defines it."""
    source = ("class Holder:\n    def __init__(self, spark):\n        self._session = spark\n\n"
              "    def same(self, other):\n        return other._session\n\n"
              "def elsewhere(df):\n    return df._session, getattr(df, '_plan')\n")
    assert _outside_their_class(source, "m.py") == ["m.py:9 df._session", "m.py:9 getattr(df, '_plan')"]


def test_the_front_ends_and_the_core_touch_no_private_name_of_another_object():
    offenders = [f"{path.relative_to(PACKAGE)}:{line} {owner}.{attr}"
                 for folder in ("core", *FRONT_ENDS) for path in _modules(folder)
                 for line, owner, attr in _private_accesses(path)]
    assert offenders == [], "give the client (or the executor) a public method instead:\n" + "\n".join(offenders)


def _layering_offenders(package: Path) -> list[str]:
    offenders = []
    for folder, allowed in MAY_IMPORT.items():
        for path in sorted((package / folder).rglob("*.py")):
            for line, imported in _imported_packages(path, package):
                if imported in MAY_IMPORT and imported != folder and imported not in allowed:
                    offenders.append(f"{path.relative_to(package)}:{line} imports {imported}")
    return offenders


def test_each_package_imports_only_the_ones_below_it():
    offenders = _layering_offenders(PACKAGE)
    assert offenders == [], "front ends → core → server → client, never back or sideways:\n" + "\n".join(offenders)


def test_a_front_end_that_imports_another_is_caught(tmp_path):
    """The notebook once stood on the REPL (38 imports): each such import fails the rule, as one of the core
    importing a front end does."""
    for folder, source in {"notebook": "from ..repl.shell import run_shell\n",
                           "repl": "import sparkscope.notebook.magics\n",
                           "cli": "from ..notebook import kernel\n",
                           "core": "from ..repl import app\n"}.items():
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "borrowing.py").write_text(source)
    assert sorted(_layering_offenders(tmp_path)) == ["cli/borrowing.py:1 imports notebook",
                                                     "core/borrowing.py:1 imports repl",
                                                     "notebook/borrowing.py:1 imports repl",
                                                     "repl/borrowing.py:1 imports notebook"]


def test_the_sdk_starts_and_signals_no_process():
    """Starting and stopping JVMs is sparkscope.server's; the SDK only talks to a server."""
    offenders = []
    for path in _modules("client"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{path.relative_to(PACKAGE)}:{node.lineno} imports {name}" for name in names
                          if name.split(".")[0] in ("subprocess", "signal", "multiprocessing")]
            if isinstance(node, ast.Attribute) and ast.unparse(node) in ("os.kill", "os.killpg", "os.fork", "os.spawnv",
                                                                         "os.system", "os.execv", "os.popen"):
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {ast.unparse(node)}")
    assert offenders == [], "\n".join(offenders)


def test_no_folder_holds_more_than_15_modules():
    folders = {path.parent for path in PACKAGE.rglob("*.py")}
    crowded = {str(folder.relative_to(PACKAGE.parent)): count for folder in folders
               if (count := len([p for p in folder.glob("*.py") if p.name != "__init__.py"])) > 15}
    assert crowded == {}, crowded


def test_the_sdk_quotes_no_repl_command():
    """The SDK's messages and hints speak Python; the REPL's wording lives in core/hints.py."""
    import re

    from sparkscope.core.commands.listing import REGISTRY

    assert len(REGISTRY.names()) > 20
    names = "|".join(sorted(REGISTRY.names(), key=len, reverse=True))
    colon_command = re.compile(rf"(^|[\s(]):({names})\b")
    offenders = []
    for path in _modules("client"):
        tree = ast.parse(path.read_text())
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)) and node.body
                      and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
                    and colon_command.search(node.value)):
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.value!r}")
    assert offenders == []


def _defined_privately(cls: ast.ClassDef) -> set[str]:
    """The private names a class defines: its methods and the attributes its methods set on self."""
    names = {node.name for node in cls.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    names |= {target.id for node in cls.body if isinstance(node, (ast.Assign, ast.AnnAssign))
              for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
              if isinstance(target, ast.Name)}
    for node in ast.walk(cls):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and ast.unparse(node.value) == "self":
            names.add(node.attr)
    return {name for name in names if name.startswith("_")}


def _enclosing_definitions(tree: ast.AST) -> dict[int, set[str]]:
    """For each node (by id): the private names the classes around it define."""
    allowed: dict[int, set[str]] = {}
    pending: list[tuple[ast.AST, set[str]]] = [(tree, set())]
    while pending:
        node, defined = pending.pop()
        if isinstance(node, ast.ClassDef):
            defined = defined | _defined_privately(node)
        allowed[id(node)] = defined
        pending.extend((child, defined) for child in ast.iter_child_nodes(node))
    return allowed


def test_no_object_of_sparkscope_reaches_into_another_s_private_state():
    """Each part owns its state: a private name is used through self, or inside the class that defines it (a
    classmethod making one, a listener nested in its monitor); pyspark's private names are the adapter's alone."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if ADAPTER in path.parents:
            continue
        tree = ast.parse(path.read_text(), str(path))
        allowed = _enclosing_definitions(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                    and ast.unparse(node.value) not in ("self", "cls") and node.attr not in allowed[id(node)]):
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {ast.unparse(node)}")
    assert offenders == [], "ask the owner through a public method:\n" + "\n".join(offenders)


# The folders of the SDK, lowest first: a module imports only from its own folder or a lower one. The modules at
# the top of client/ are the base (errors, logs, paths, rows …), below everything; session.py is the top.
CLIENT_LAYERS = {"(base)": 0, "_pyspark": 1, "connection": 2, "kafka": 3, "catalog": 4, "state": 5, "monitoring": 5,
                 "queries": 6, "(session)": 7}


def _client_layer(path: Path) -> str:
    parts = path.relative_to(PACKAGE / "client").parts
    if len(parts) > 1:
        return parts[0]
    return "(session)" if parts[0] in ("session.py", "session_server.py", "__init__.py") else "(base)"


def _client_target(path: Path, node: ast.ImportFrom) -> Path | None:
    """The module or folder of client/ that a relative (or sparkscope.client…) import names, else None."""
    if node.level:
        base = path.parent
        for _ in range(node.level - 1):
            base = base.parent
        target = base.joinpath(*(node.module or "").split(".")) if node.module else base / node.names[0].name
    elif (node.module or "").startswith("sparkscope.client"):
        target = PACKAGE.parent.joinpath(*(node.module or "").split("."))
    else:
        return None
    client = PACKAGE / "client"
    if client != target and client not in target.parents:
        return None
    return target if target.is_dir() else target.with_suffix(".py")


def test_the_sdk_s_folders_import_only_the_ones_below_them():
    offenders = []
    for path in (PACKAGE / "client").rglob("*.py"):
        mine = _client_layer(path)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ImportFrom):
                continue
            target = _client_target(path, node)
            if target is None or target == PACKAGE / "client":
                continue
            theirs = _client_layer(target if target.suffix else target / "__init__.py")
            if theirs != mine and CLIENT_LAYERS[theirs] >= CLIENT_LAYERS[mine]:
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno} ({mine}) imports {theirs}")
    assert offenders == [], ("connection → kafka → catalog → state, monitoring → queries → session, never back:\n"
                             + "\n".join(offenders))


def test_the_folder_rule_sees_an_import_that_runs_back_up(tmp_path):
    """The rule above is not vacuous: an import of queries from catalog is what it finds."""
    module = PACKAGE / "client" / "catalog" / "records.py"
    node = ast.parse("from ..queries.query import Query").body[0]
    assert isinstance(node, ast.ImportFrom)
    target = _client_target(module, node)
    assert target is not None and _client_layer(target) == "queries"
    assert CLIENT_LAYERS["queries"] > CLIENT_LAYERS[_client_layer(module)]
