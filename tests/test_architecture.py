"""Architecture invariants, read from the source with `ast`: no module under test is imported.

Which module is what (docs/architecture.md has the code map):

- Front ends: the command line, which still lives inside cortex_core (`cli.py`, its terminal
  renderer `render.py`, the git hooks installer `hooks.py`, `__main__.py`), and the packages
  `cortex_ls` (the language server) and `cortex_mcp` (the MCP server). They find a repository,
  call the engine and render its typed results.
- Engine: every other module of cortex_core (git reading, parsing, the store, the index passes,
  memory, analyses, composed features such as packs and briefings). It returns typed results and
  knows no front end.

The invariants:

1. No module of cortex_core imports cortex_ls or cortex_mcp. `cortex mcp` reaches the MCP server
   by module name (a front end handing over to another); such hand-overs are listed below.
2. No engine module imports a front end (the CLI, the terminal renderer, the hooks installer),
   not even for types.
3. Front ends hold no SQL: no string literal (or f-string head) that starts like a statement
   (SELECT, INSERT, UPDATE, DELETE, WITH, PRAGMA, any case). Crude, but it catches a query.
4. Front ends do not import apsw or pygit2, except the entries of `DRIVER_DEBTS`.

Every allow-list entry is a debt with one line of why; an entry that is no longer needed fails
the test too, so the lists only shrink.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("cortex_core", "cortex_ls", "cortex_mcp")
CLI_MODULES = {"cortex_core.cli", "cortex_core.render", "cortex_core.hooks", "cortex_core.__main__"}

# Front end module -> the driver it imports, and why (each one is a debt).
DRIVER_DEBTS = {
    ("cortex_core.cli", "apsw"): "phrases apsw's busy/corrupt/full errors; the engine should "
                                 "raise typed errors instead",
    ("cortex_ls.server", "apsw"): "maps apsw's busy/corrupt errors of a request to LSP errors",
    ("cortex_ls.features", "apsw"): "a damaged index (apsw.Error) shows as no hover",
    ("cortex_mcp.server", "apsw"): "maps apsw's busy/corrupt errors of a call to tool errors",
}

# Modules of cortex_core that hand over to a front end by module name (importlib), and why.
HANDOVERS = {
    ("cortex_core.cli", "cortex_mcp.server"): "`cortex mcp` runs the MCP server; the CLI is a "
                                              "front end still inside cortex_core",
}

_SQL = re.compile(r"\s*(select\s+\S|insert\s+(or\s+\w+\s+)?into\s|update\s+\w+\s+set\s"
                  r"|delete\s+from\s|with\s+(recursive\s+)?\w+\s*(\([^)]*\))?\s*as\s*\("
                  r"|pragma\s+\w)", re.IGNORECASE)


def _modules() -> dict[str, Path]:
    return {f"{package}.{path.stem}": path
            for package in PACKAGES for path in sorted((ROOT / package).glob("*.py"))}


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def imports(module: str, tree: ast.Module) -> set[str]:
    """Every module `module` imports, anywhere in it (functions, TYPE_CHECKING blocks), with
    relative imports resolved and `from a import b` counted as both `a` and `a.b`."""
    package = module.rsplit(".", 1)[0]
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
    return module in CLI_MODULES or not module.startswith("cortex_core.")


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


def handovers(tree: ast.Module) -> set[str]:
    """Module names of ours written as string constants (what importlib or runpy would load)."""
    return {node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and re.fullmatch(r"(cortex_ls|cortex_mcp)(\.\w+)*", node.value)}


def test_the_readers_see_what_they_look_for():
    """The checks below are only as good as these readers: each finds what is there."""
    modules = _modules()
    assert {"cortex_core.cli", "cortex_core.store", "cortex_ls.server",
            "cortex_mcp.server"} <= set(modules)
    assert "cortex_core.render" in imports("cortex_core.cli", _tree(modules["cortex_core.cli"]))
    assert "cortex_core.errors" in imports("cortex_core.store",
                                           _tree(modules["cortex_core.store"]))
    assert "apsw" in _top(imports("cortex_core.store", _tree(modules["cortex_core.store"])))
    assert len(sql_literals(_tree(modules["cortex_core.history"]))) >= 2
    assert sql_literals(ast.parse('q = f"with recursive up(id) as (select {x})"'))
    assert sql_literals(ast.parse('q = """\n  PRAGMA user_version"""'))
    assert not sql_literals(ast.parse('t = f"    with {n} others"; u = "update the index"'))


def test_cortex_core_imports_no_other_package_of_ours():
    bad = [f"{module} imports {name}"
           for module, path in _modules().items() if module.startswith("cortex_core.")
           for name in sorted(imports(module, _tree(path)))
           if name.split(".")[0] in ("cortex_ls", "cortex_mcp")]
    assert bad == []


def test_handovers_by_module_name_are_listed():
    found = {(module, name) for module, path in _modules().items()
             if module.startswith("cortex_core.") for name in handovers(_tree(path))}
    assert found == set(HANDOVERS), "update HANDOVERS (one line of why per entry)"


def test_no_engine_module_imports_a_front_end():
    bad = [f"{module} imports {name}"
           for module, path in _modules().items() if not is_front_end(module)
           for name in sorted(imports(module, _tree(path))) if name in CLI_MODULES]
    assert bad == []


def test_front_ends_hold_no_sql():
    bad = [f"{module}:{line}: {text!r}"
           for module, path in _modules().items() if is_front_end(module)
           for line, text in sql_literals(_tree(path))]
    assert bad == []


def test_front_ends_import_no_database_or_git_driver_but_the_listed_debts():
    found = {(module, driver)
             for module, path in _modules().items() if is_front_end(module)
             for driver in _top(imports(module, _tree(path))) & {"apsw", "pygit2"}}
    assert found - set(DRIVER_DEBTS) == set(), "a front end imports a driver"
    assert set(DRIVER_DEBTS) - found == set(), "a debt was paid: remove its entry"
