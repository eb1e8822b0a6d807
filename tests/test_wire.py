"""The wire format is a contract: the JSON of every front end's operations, held to a snapshot.

Each front end is run for real on one scripted repository: the CLI as a subprocess with `--json`,
cortex-ls over stdio with pytest-lsp's client, cortex mcp over stdio with the MCP SDK's client.
The shape of each answer (its key paths and JSON types, tests/wire_shapes.py) is compared with
tests/wire/<front end>.json. Renaming a field of an engine dataclass that a front end sends fails
here; `CORTEX_UPDATE_WIRE=1` rewrites the snapshots when a protocol is meant to change.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from pytest_lsp import LanguageClient

sys.path.insert(0, str(Path(__file__).parent))

from ls_harness import Session, plain  # noqa: E402
from scripted_repo import ScriptedRepo, sample_core, sample_use  # noqa: E402
from wire_shapes import check, shape  # noqa: E402

from cortex_core.config import Settings  # noqa: E402
from cortex_core.index.ingest import index_repository  # noqa: E402
from cortex_core.plain import plain as to_json  # noqa: E402

PROJECT = Path(__file__).resolve().parent.parent
# The indexer a server starts runs from "/" (child_process.spawn_options): this tree on its
# path, so that it is the code under test and not an installed copy.
CODE_UNDER_TEST = {"PYTHONPATH": str(Path(__file__).resolve().parent.parent)}

# Objects whose keys are data, not names: read as `*` (see wire_shapes.shape).
MAPS = frozenset({"summary.by_relation", "files[].shared_with", "symbols[].shared_with"})


def make_project(path: Path) -> ScriptedRepo:
    """A small history with something for every answer: a function that changes often, by two
    authors, its callers and a test, a rename, a document, a remote on a known host (links)."""
    repo = ScriptedRepo(path)
    repo.git("remote", "add", "origin", "git@github.com:acme/widgets.git")
    use = sample_use()
    repo.write("pkg/__init__.py", "")
    repo.write("pkg/core.py", sample_core(1))
    repo.write("pkg/use.py", use)
    repo.write("tests/test_core.py", "from pkg.core import compute\n\n\ndef test_compute():\n"
               "    assert compute(1)\n")
    repo.write("README.md", "# Widgets\n\n## Retries\n\nThe engine retries compute on failure.\n")
    repo.write("logo.png", b"\x89PNG\r\n\x1a\n\x00\x00" * 8)     # recorded at file level only
    repo.commit("add the core\n\nThe engine needs one place to compute values, so that its callers "
                "agree on one rule and the tests cover it once.", days_ago=30)   # a decision
    for n, author in ((2, "Bob <bob@example.com>"), (3, "Ann <ann@example.com>"),
                      (4, "Bob <bob@example.com>")):
        repo.write("pkg/core.py", sample_core(n))
        repo.write("pkg/use.py", use + f"\n# tuned {n}\n")
        repo.commit(f"tune compute to {n}\n\nCallers rely on compute growing by {n} now.",
                    author=author, days_ago=30 - n)
    repo.write("pkg/core.py", sample_core(5).replace("def helper", "def assist"))
    repo.commit("rename helper to assist", days_ago=5)
    # Two topics in the tiny model's vocabulary (tests/tiny_model.py): areas, vector neighbours.
    for n in range(4):
        repo.write("client.py", f"def fetch():\n    return {n}\n")
        repo.commit(["Fix timeout", "Deadline for slow requests", "Stall when latency is high",
                     "Hang on waiting"][n], days_ago=20 - n)
        repo.write("cache.py", f"def lookup():\n    return {n}\n")
        repo.commit(["Memoize lookups", "Cache eviction", "Lru caching", "Stale memo entries"][n],
                    days_ago=19.5 - n)
    # Uncommitted changes, what `related` and `what` start from without a target: an edit with
    # a new function, a new file staged, a file not tracked.
    (repo.path / "pkg" / "core.py").write_text(sample_core(6) + "\n\ndef fresh():\n    return 0\n",
                                               encoding="utf-8")
    repo.write("pkg/extra.py", "def extra():\n    return 1\n")
    (repo.path / "scratch.txt").write_text("not tracked\n", encoding="utf-8")
    return repo


def index(repo: ScriptedRepo, model: str = "none") -> None:
    index_repository(repo.path, repo.path / ".cortex" / "cortex.db", Settings(), model=model)


# -- the command line ----------------------------------------------------------------------------


def run_cortex(repo: ScriptedRepo, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cortex_cli.cli", *args], cwd=repo.path,
                          capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(PROJECT)))


def cortex(repo: ScriptedRepo, *args: str) -> str:
    proc = run_cortex(repo, *args)
    assert proc.returncode == 0, f"cortex {' '.join(args)}: {proc.stderr}"
    return proc.stdout


def cli_json(repo: ScriptedRepo, *args: str):
    return json.loads(cortex(repo, *args, "--json"))


def test_cli_json(tmp_path: Path, tiny_model: str):
    repo = make_project(tmp_path / "widgets")
    got: dict = {}
    got["index"] = cli_json(repo, "index", "--model", tiny_model, "-q")
    events = [json.loads(line) for line in cortex(repo, "index", "--progress-json").splitlines()]
    got["index --progress-json"] = events
    blocked = make_project(tmp_path / "blocked")
    (blocked.path / ".cortex" / "cortex.db-wal").mkdir(parents=True)   # in the store's way
    failed = run_cortex(blocked, "index", "--progress-json")
    assert failed.returncode == 1 and failed.stderr.startswith("cortex: cannot use")
    got["index --progress-json (failed)"] = [json.loads(line)
                                             for line in failed.stdout.splitlines()]
    got["note add"] = cli_json(repo, "note", "add", "pkg/core.py::compute", "Keep it pure.")
    got["note supersede"] = cli_json(repo, "note", "supersede", "1", "Keep it pure and fast.")
    got["note list"] = cli_json(repo, "note", "list", "--all")
    got["note export"] = json.loads(cortex(repo, "note", "export"))
    got["history"] = cli_json(repo, "history", "pkg/core.py::assist")
    got["hotspots"] = cli_json(repo, "hotspots")
    got["related"] = cli_json(repo, "related", "pkg/core.py::compute")
    got["related (working tree)"] = cli_json(repo, "related")
    got["blast"] = cli_json(repo, "blast", "pkg/core.py::compute")
    got["callers"] = cli_json(repo, "callers", "pkg/core.py::compute")
    got["callees"] = cli_json(repo, "callees", "pkg/core.py::Engine.run")
    got["status"] = cli_json(repo, "status")
    got["search"] = cli_json(repo, "search", "timeout latency")
    got["what"] = cli_json(repo, "what")
    got["related-commits"] = cli_json(repo, "related-commits", "client.py::fetch")
    got["areas"] = cli_json(repo, "areas")
    got["context"] = cli_json(repo, "context", "why compute grows", "--at",
                              "pkg/core.py::compute")
    got["context --format json"] = json.loads(cortex(
        repo, "context", "why compute grows", "--at", "pkg/core.py::compute", "--format", "json"))
    got["hooks install"] = cli_json(repo, "hooks", "install")
    got["hooks status"] = cli_json(repo, "hooks", "status")
    got["hooks uninstall"] = cli_json(repo, "hooks", "uninstall")
    check("cli", {op: shape(value, MAPS) for op, value in got.items()})


# -- the language server -------------------------------------------------------------------------


async def test_ls_custom_requests(client: LanguageClient, tmp_path: Path):
    repo = make_project(tmp_path / "widgets")
    lsp = Session(client)
    await lsp.start(repo.path, options={"indexOnStart": False}, wait_index=False)
    uri = lsp.open(repo.path / "pkg" / "core.py")
    at = {"textDocument": {"uri": uri}, "position": {"line": 4, "character": 4}}   # compute
    target = {"target": "pkg/core.py::compute"}
    got: dict = {}

    async def ask(name: str, method: str, params) -> None:
        got[name] = plain(await lsp.request(method, params))

    async def run(name: str, command: str, params) -> None:
        got[name] = plain(await lsp.command(command, params))

    await ask("cortex/status (no index yet)", "cortex/status", {})
    await run("cortex.reindex", "cortex.reindex", {})      # indexes in a child process
    await lsp.indexed()
    await run("cortex.addNote", "cortex.addNote", dict(at, text="Keep it pure."))
    await ask("cortex/symbolHistory", "cortex/symbolHistory", at)
    sha = got["cortex/symbolHistory"]["entries"][0]["commit"]["sha"]
    await ask("cortex/relatedCommits (commit)", "cortex/relatedCommits", {"commit": sha})
    await ask("cortex/blastRadius", "cortex/blastRadius", target)
    await ask("cortex/related", "cortex/related", target)
    await ask("cortex/related (changed)", "cortex/related",
              {"changed": ["pkg/core.py::compute", "pkg/use.py"]})
    await ask("cortex/related (working tree)", "cortex/related", {})
    await ask("cortex/relatedCommits", "cortex/relatedCommits", target)
    await ask("cortex/contextPack", "cortex/contextPack", dict(target, query="why compute grows"))
    await ask("cortex/search", "cortex/search", {"query": "compute values"})
    await ask("cortex/hotspots", "cortex/hotspots", {})
    await ask("cortex/status", "cortex/status", {})
    await run("cortex.exportContext", "cortex.exportContext", dict(target, budget=500))
    await run("cortex.showHistory", "cortex.showHistory", target)
    got["cortex/indexStatus"] = plain(lsp.statuses)
    got["cortex/indexUpdated"] = plain(lsp.updates)
    check("ls", {op: shape(value, MAPS) for op, value in got.items()})


# -- the MCP server ------------------------------------------------------------------------------


async def test_mcp_structured_content(tmp_path: Path):
    repo = make_project(tmp_path / "widgets")
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "cortex_core", "mcp", "--repo", str(repo.path)],
        env={"CORTEX_MODEL": "none", "PYTHONIOENCODING": "utf-8", **CODE_UNDER_TEST,
             **{k: v for k, v in os.environ.items() if k.startswith(("GIT_", "VIRTUAL_ENV"))}})
    got: dict = {}
    async with Client(params, read_timeout_seconds=60) as client:

        async def call(name: str, tool: str, **arguments) -> None:
            result = await client.call_tool(tool, arguments)
            assert not result.is_error, result.content
            got[name] = result.structured_content

        await call("status (no index yet)", "status")
        await call("sync", "sync", wait_seconds=60)     # indexes the repository
        await call("record_note", "record_note", target="pkg/core.py::compute",
                   text="Keep it pure.")
        await call("supersede_note", "supersede_note", note_id=got["record_note"]["id"],
                   text="Keep it pure and fast.")
        await call("search_memory", "search_memory", query="compute values")
        await call("symbol_history", "symbol_history", target="pkg/core.py::compute")
        await call("blast_radius", "blast_radius", target="pkg/core.py::compute")
        await call("related", "related", target="pkg/core.py::compute")
        await call("related (changed)", "related",
                   changed=["pkg/core.py::compute", "pkg/use.py"])
        await call("related (working tree)", "related")
        await call("hotspots", "hotspots")
        await call("context_pack", "context_pack", query="why compute grows",
                   focus="pkg/core.py::compute")
        await call("status", "status")
    check("mcp", {op: shape(value, MAPS) for op, value in got.items()})


# -- keeping a key when a field is renamed -------------------------------------------------------


def test_a_renamed_field_keeps_its_wire_name():
    @dataclass(frozen=True)
    class Inner:
        recency_sum: float = field(metadata={"wire": "recency_weighted"})

    @dataclass(frozen=True)
    class Outer:
        items: tuple[Inner, ...]
        by_path: dict[str, Inner]

        @property
        def label(self) -> str:
            return "outer"

    out = to_json(Outer((Inner(1.5),), {"a.py": Inner(2.0)}))
    assert out == {"items": ({"recency_weighted": 1.5},),
                   "by_path": {"a.py": {"recency_weighted": 2.0}}, "label": "outer"}
