"""Architecture invariants, read from the source with `ast`: no module under test is imported.

Which module is what (docs/architecture.md has the code map):

- Front ends: the packages `cortex_cli` (the command line: `cli.py`, its terminal renderer
  `render.py`, the git hooks installer `hooks.py`), `cortex_ls` (the language server) and
  `cortex_mcp` (the MCP server). They hold an engine (`cortex_core.engine.Engine`), run its
  operations and render its typed results. `cortex_core/__main__.py` counts as a front end too:
  it is the command line's entry point that installed hooks run (`python -P -m cortex_core
  index ...`).
- Engine: every other module of cortex_core, in its layer folders (git/, lang/, store/, index/,
  memory/, query/, features/, text/) and the shared ground at its top (config, errors, ...). It
  returns typed results and knows no front end.

The invariants:

1. No module of cortex_core imports a front end (cortex_cli, cortex_ls, cortex_mcp), not even for
   types, except the entries of `ENTRY_POINTS`.
2. No module of cortex_core names a front end's module in a string (what importlib or runpy
   would load), except the entries of `HANDOVERS`.
3. Front ends hold no SQL: no string literal (or f-string head) that starts like a statement
   (SELECT, INSERT, UPDATE, DELETE, WITH, PRAGMA, any case). Crude, but it catches a query.
4. Front ends do not import apsw or pygit2, except the entries of `DRIVER_DEBTS`.
7. Front ends import of the engine only its facade: the modules of `FACADE` (the engine object,
   its vocabulary, and the modules that read no repository and no store), for types too.
5. In the engine, SQL only in the store, index, memory and query layers (the folders of
   `SQL_LAYERS`), except the entries of `SQL_DEBTS`.
6. In the engine, pygit2 only in git reading and the index passes (`PYGIT2_LAYERS`), except the
   entries of `PYGIT2_DEBTS`.
8. Engine text names no front end's flag or command: no string literal of an engine module
   (docstrings aside) holds a command-line flag (`--db`) or a `cortex ...` command, except the
   entries of `FRONT_END_WORDS` and a whole flag given as a child process's argument. What fixes
   an error is a `Hint`, which each front end phrases in its own words.

Every allow-list entry is a debt with one line of why; an entry that is no longer needed fails
the test too, so the lists only shrink.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("cortex_core", "cortex_cli", "cortex_ls", "cortex_mcp")
FRONT_ENDS = ("cortex_cli", "cortex_ls", "cortex_mcp")
MAIN = "cortex_core.__main__"

# Front end module -> the driver it imports, and why (each one is a debt).
DRIVER_DEBTS: dict[tuple[str, str], str] = {}

# The modules of cortex_core a front end may import (docs/architecture.md, API boundaries), and
# why each one: the facade, and modules that are pure functions of what they are given.
FACADE = {
    "cortex_core": "the package: its version",
    "cortex_core.engine": "the facade: Engine (one per repository) and Snapshot (a consistent "
                          "read), a method per operation",
    "cortex_core.api": "the facade's vocabulary: typed errors and hints, the operations' "
                       "requests, result types, parameter vocabularies (encodings, clocks)",
    "cortex_core.text.sanitize": "text made inert for where it is shown (pure)",
    "cortex_core.dates": "dates in words, shared with the packs the engine writes (pure)",
    "cortex_core.plain": "typed results as JSON-ready values (pure)",
    "cortex_core.child_process": "the indexer's command line, run by each front end's policy",
}

# Modules of cortex_core that import a front end (module -> what it imports), and why.
ENTRY_POINTS = {
    (MAIN, "cortex_cli.cli"): "`python -P -m cortex_core ...` is what installed git hooks run; "
                              "it hands over to the command line",
    (MAIN, "cortex_cli.leave"): "and ends the process as the command line's own script does",
    (MAIN, "cortex_cli.spare"): "`python -P -m cortex_core --spare`: a spare indexer, which a "
                                "server starts ahead of its next run",
}

# Modules of cortex_core that hand over to a front end by module name (importlib), and why.
HANDOVERS: dict[tuple[str, str], str] = {}

# The layers (folders of cortex_core) where SQL and pygit2 belong.
SQL_LAYERS = {"store", "index", "memory", "query"}
PYGIT2_LAYERS = {"git", "index"}

# Engine modules outside SQL_LAYERS that hold SQL, and why (each one is a debt).
SQL_DEBTS = {
    "cortex_core.clock": "the repository clock is the indexed HEAD's commit time, read from the "
                         "store",
    "cortex_core.git.git_reads": "indexed_head_blob looks the blob's id up in the store",
}

# Engine modules outside PYGIT2_LAYERS that import pygit2, and why (each one is a debt).
PYGIT2_DEBTS = {
    "cortex_core.store.store": "whether the repository tracks .cortex/ (its git index)",
    "cortex_core.memory.notes": "the default author of a note (git's default signature)",
    "cortex_core.query.blame": "the diff of an edited buffer against the indexed blob",
    "cortex_core.query.working_changes": "the diffs of the working tree against the indexed HEAD",
}

# Engine modules whose text names a front end's command, and why (each one is a debt).
FRONT_END_WORDS = {
    "cortex_core.memory.embeddings": "`cortex model pull` is the one way to download a model, "
                                     "whatever the front end; status lines quote it",
}

# A flag (`--db`, `--jobs 1`) or a command (`cortex index`) in words a user reads.
_FRONT_END_WORD = re.compile(r"(?<![\w-])--[a-z][a-z-]+|`cortex [a-z{]|\brun cortex [a-z{]")
_ARGUMENT = re.compile(r"--[a-z][a-z-]*(=\S*)?")       # a whole argv element: a command line

_SQL = re.compile(r"\s*(select\s+\S|insert\s+(or\s+\w+\s+)?into\s|update\s+\w+\s+set\s"
                  r"|delete\s+from\s|with\s+(recursive\s+)?\w+\s*(\([^)]*\))?\s*as\s*\("
                  r"|pragma\s+\w)", re.IGNORECASE)


def _modules() -> dict[str, Path]:
    """Every module of our packages, by dotted name (a package's `__init__.py` by its own)."""
    out = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = (package, *path.relative_to(ROOT / package).with_suffix("").parts)
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def imports(module: str, tree: ast.Module, is_package: bool = False) -> set[str]:
    """Every module `module` imports, anywhere in it (functions, TYPE_CHECKING blocks), with
    relative imports resolved and `from a import b` counted as both `a` and `a.b`."""
    package = module if is_package else module.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                source = f"{base}.{node.module}" if node.module else base
            else:
                source = node.module or ""
            out.add(source)
            out.update(f"{source}.{alias.name}" for alias in node.names)
    return out


def _top(names: set[str]) -> set[str]:
    return {name.split(".")[0] for name in names}


def is_front_end(module: str) -> bool:
    return module == MAIN or module.split(".")[0] in FRONT_ENDS


def layer(module: str) -> str | None:
    """The layer folder of an engine module (`cortex_core.query.history` -> `query`); None for
    the shared ground at the top of cortex_core and for the front ends."""
    parts = module.split(".")
    return parts[1] if parts[0] == "cortex_core" and len(parts) > 2 else None


def _imports_of(module: str, path: Path) -> set[str]:
    return imports(module, _tree(path), path.name == "__init__.py")


def sql_literals(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, text) of every string literal, or f-string's literal head, that reads as SQL."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            head = node.values[0] if node.values else None
            text = head.value if isinstance(head, ast.Constant) else ""
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        else:
            continue
        if _SQL.match(text):
            found.append((node.lineno, text.strip()[:60]))
    return found


def front_end_words(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, text) of every string literal, docstrings aside, that names a front end's flag or
    command; a literal that is one whole flag is an argument of a command line, not words."""
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                       ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):     # an f-string reads as its text around the holes
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in docstrings:
            text = node.value
        else:
            continue
        if not _ARGUMENT.fullmatch(text) and _FRONT_END_WORD.search(text):
            found.append((node.lineno, text[:60]))
    return found


def handovers(tree: ast.Module) -> set[str]:
    """Module names of ours written as string constants (what importlib or runpy would load)."""
    return {node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and re.fullmatch(r"(cortex_cli|cortex_ls|cortex_mcp)(\.\w+)*", node.value)}


def test_the_readers_see_what_they_look_for():
    """The checks below are only as good as these readers: each finds what is there."""
    modules = _modules()
    assert {"cortex_cli.cli", "cortex_core.store.store", "cortex_ls.server",
            "cortex_mcp.server"} <= set(modules)
    assert "cortex_cli.render" in imports("cortex_cli.cli", _tree(modules["cortex_cli.cli"]))
    assert "cortex_core.errors" in imports("cortex_core.store.store",
                                           _tree(modules["cortex_core.store.store"]))
    assert "apsw" in _top(imports("cortex_core.store.store",
                                  _tree(modules["cortex_core.store.store"])))
    assert len(sql_literals(_tree(modules["cortex_core.query.history"]))) >= 2
    assert {layer(m) for m in modules} >= SQL_LAYERS | PYGIT2_LAYERS | {"lang", "features"}
    assert "cortex_core.store.store" in imports("cortex_core.index.ingest",
                                                ast.parse("from ..store.store import x"))
    assert "cortex_core.store.store" in imports("cortex_core.store",
                                                ast.parse("from .store import x"), True)
    assert sql_literals(ast.parse('q = f"with recursive up(id) as (select {x})"'))
    assert sql_literals(ast.parse('q = """\n  PRAGMA user_version"""'))
    assert not sql_literals(ast.parse('t = f"    with {n} others"; u = "update the index"'))
    assert front_end_words(ast.parse('e = f"waited {n}s (use --wait to wait longer)"'))
    assert front_end_words(ast.parse('e = "run `cortex index` first"'))
    assert front_end_words(ast.parse('e = f"run `cortex {command}` first"'))
    assert front_end_words(ast.parse('e = "run cortex index first"'))
    assert not front_end_words(ast.parse('"""Run `cortex index --db F`."""\nargs = ["--db", "-"]'
                                         '\nm = "--model=x"; t = "a -- b, x--y"'))
    assert _name_in("cortex_core.api.TargetSpec") and _name_in("cortex_core.__version__")
    assert not _name_in("cortex_core.query") and not _name_in("cortex_core.query.targets.find")


def _front_end_imports() -> set[tuple[str, str]]:
    """(module of cortex_core, front end module it imports), `from a import b` counted once."""
    found = set()
    for module, path in _modules().items():
        if module.split(".")[0] != "cortex_core":
            continue
        names = {name for name in _imports_of(module, path) if name.split(".")[0] in FRONT_ENDS}
        found.update((module, name) for name in names
                     if not any(name.startswith(other + ".") for other in names))
    return found


def test_cortex_core_imports_no_front_end_but_the_listed_entry_points():
    found = _front_end_imports()
    assert found - set(ENTRY_POINTS) == set(), "an engine module imports a front end"
    assert set(ENTRY_POINTS) - found == set(), "an entry point is gone: remove its entry"


def test_handovers_by_module_name_are_listed():
    found = {(module, name) for module, path in _modules().items()
             if module.split(".")[0] == "cortex_core" for name in handovers(_tree(path))}
    assert found == set(HANDOVERS), "update HANDOVERS (one line of why per entry)"


def test_front_ends_hold_no_sql():
    bad = [f"{module}:{line}: {text!r}"
           for module, path in _modules().items() if is_front_end(module)
           for line, text in sql_literals(_tree(path))]
    assert bad == []


def test_front_ends_import_no_database_or_git_driver_but_the_listed_debts():
    found = {(module, driver)
             for module, path in _modules().items() if is_front_end(module)
             for driver in _top(_imports_of(module, path)) & {"apsw", "pygit2"}}
    assert found - set(DRIVER_DEBTS) == set(), "a front end imports a driver"
    assert set(DRIVER_DEBTS) - found == set(), "a debt was paid: remove its entry"


def test_sql_only_in_the_store_index_memory_and_query_layers_but_the_listed_debts():
    found = {module for module, path in _modules().items()
             if not is_front_end(module) and layer(module) not in SQL_LAYERS
             and sql_literals(_tree(path))}
    assert found - set(SQL_DEBTS) == set(), "SQL outside the store, index, memory and query"
    assert set(SQL_DEBTS) - found == set(), "a debt was paid: remove its entry"


def _is_module(name: str) -> bool:
    path = ROOT / name.replace(".", "/")
    return path.is_dir() or path.with_suffix(".py").is_file()


def _name_in(name: str) -> bool:
    """`from cortex_core.api import X` also reads as `cortex_core.api.X`: a name (not a module)
    of an allowed module counts as that module."""
    parent = name.rsplit(".", 1)[0]
    return parent in FACADE and not _is_module(name)


def test_front_ends_import_only_the_facade_of_the_engine():
    found = {}
    for module, path in _modules().items():
        if not is_front_end(module) or module == MAIN:
            continue
        names = {name for name in _imports_of(module, path) if name.split(".")[0] == "cortex_core"}
        outside = {name for name in names if name not in FACADE and not _name_in(name)}
        if outside:
            found[module] = sorted(outside)
    assert found == {}, "a front end imports the engine past its facade (see FACADE)"
    for name in FACADE:     # a stale entry fails too
        assert _is_module(name), name


def test_pygit2_only_in_git_reading_and_the_index_passes_but_the_listed_debts():
    found = {module for module, path in _modules().items()
             if not is_front_end(module) and layer(module) not in PYGIT2_LAYERS
             and "pygit2" in _top(_imports_of(module, path))}
    assert found - set(PYGIT2_DEBTS) == set(), "pygit2 outside git reading and the index passes"
    assert set(PYGIT2_DEBTS) - found == set(), "a debt was paid: remove its entry"


def test_engine_text_names_no_front_end_flag_or_command_but_the_listed_debts():
    found = {module: words for module, path in _modules().items()
             if not is_front_end(module) and (words := front_end_words(_tree(path)))}
    assert set(found) - set(FRONT_END_WORDS) == set(), \
        f"engine text names a front end's flag or command (give the error a Hint): {found}"
    assert set(FRONT_END_WORDS) - set(found) == set(), "a debt was paid: remove its entry"
