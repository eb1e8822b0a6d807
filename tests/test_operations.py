"""One table of operations (cortex_core/operations.py), from which every front end is wired: the
command line's commands, the MCP server's tools, resources and prompts, and the language server's
custom requests and commands each name the engine operations they run, only operations the table
lists, and every operation the table lists is offered by some front end. Each front end still
chooses its own names and shapes (tests/test_wire.py holds those)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from cortex_cli.cli import COMMANDS, OPERATIONS_OF
from cortex_core.operations import OPERATIONS
from cortex_ls.features import REQUESTS
from cortex_mcp.server import TOOLS

ROOT = Path(__file__).resolve().parent.parent


def _mcp_registered() -> set[str]:
    """Names of the tools (function names), resources (URIs) and prompts (names) that
    cortex_mcp/server.py registers, read from its decorators."""
    tree = ast.parse((ROOT / "cortex_mcp" / "server.py").read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for deco in node.decorator_list:
            call = deco if isinstance(deco, ast.Call) else None
            func = call.func if call is not None else deco
            if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                    and func.value.id == "mcp"):
                continue
            if func.attr == "tool":
                found.add(node.name)
            elif func.attr in ("resource", "prompt") and call is not None and call.args:
                found.add(call.args[0].value)
    return found


def _ls_registered() -> set[str]:
    text = (ROOT / "cortex_ls" / "features.py").read_text(encoding="utf-8")
    return set(re.findall(r'@server\.(?:feature|command)\("(cortex[/.]\w+)"', text))


def test_each_front_end_names_every_entry_it_registers():
    assert set(OPERATIONS_OF) == set(COMMANDS)
    assert set(TOOLS) == _mcp_registered()
    assert set(REQUESTS) == _ls_registered()


def test_front_ends_run_only_the_listed_operations_and_every_one_is_offered():
    offered = set()
    for front_end in (OPERATIONS_OF, TOOLS, REQUESTS):
        for entry, operations in front_end.items():
            assert set(operations) <= set(OPERATIONS), entry
            offered.update(operations)
    assert offered == set(OPERATIONS)


def test_the_readers_of_the_front_ends_find_what_is_there():
    assert {"search_memory", "sync", "cortex://status", "before-edit"} <= _mcp_registered()
    assert {"cortex/search", "cortex.addNote"} <= _ls_registered()
