"""One question, three front ends, one answer: the command line, the language server and the MCP
server resolve settings the same way (cortex_core/config.py: defaults, then the repository's
`.cortex/config.toml`, then what the front end was told), so they rank alike.

The repository's config sets recency half-lives far from the defaults; the hotspot and search
scores of all three must be the same, and not those of the defaults."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

sys.path.insert(0, str(Path(__file__).parent))

from ls_harness import Session, plain  # noqa: E402
from scripted_repo import ScriptedRepo, sample_core, sample_use  # noqa: E402

from cortex_core.config import Settings, repository_settings  # noqa: E402
from cortex_core.errors import CortexError  # noqa: E402
from cortex_core.index.ingest import index_repository  # noqa: E402

SETTINGS = "[hotspots]\nhalf_life_days = 7.0\n\n[search]\nhalf_life_days = 3.0\n"
QUERY = "tune compute"


@pytest.fixture
def project(tmp_path: Path) -> ScriptedRepo:
    """compute tuned at 300, 200, 100 and 10 days ago: recency decides the order of the hits."""
    repo = ScriptedRepo(tmp_path / "proj")
    repo.write("pkg/__init__.py", "")
    repo.write("pkg/core.py", sample_core(1))
    repo.write("pkg/use.py", sample_use())
    repo.commit("add the core", days_ago=400)
    for n, days in ((2, 300), (3, 200), (4, 100), (5, 10)):
        repo.write("pkg/core.py", sample_core(n))
        repo.commit(f"tune compute to {n}", days_ago=days)
    index_repository(repo.path, repo.path / ".cortex" / "cortex.db", Settings(), model="none")
    return repo


def cli(repo: ScriptedRepo, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "cortex_core", *args, "--json"], cwd=repo.path,
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, CORTEX_MODEL="none"))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


async def mcp(repo: ScriptedRepo, tool: str, **arguments) -> dict:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "cortex_core", "mcp", "--repo", str(repo.path)],
        env={"CORTEX_MODEL": "none", "PYTHONIOENCODING": "utf-8",
             **{k: v for k, v in os.environ.items() if k.startswith(("GIT_", "VIRTUAL_ENV"))}})
    async with Client(params, read_timeout_seconds=60) as client:
        result = await client.call_tool(tool, arguments)
        assert not result.is_error, result.content
        return result.structured_content


def hot_scores(answer: dict) -> list[tuple[str, float]]:
    return [(s["qualname"], round(s["score"], 6)) for s in answer["symbols"]]


def hit_scores(answer: dict) -> list[tuple[str, float]]:
    return [(h["title"], round(h["why"]["score"], 6)) for h in answer["hits"]]


async def test_the_three_front_ends_read_the_repositorys_settings(lsp: Session,
                                                                   project: ScriptedRepo):
    defaults = (hot_scores(cli(project, "hotspots")),
                hit_scores(cli(project, "search", QUERY, "--explain")))
    (project.path / ".cortex" / "config.toml").write_text(SETTINGS)
    by_cli = (hot_scores(cli(project, "hotspots")),
              hit_scores(cli(project, "search", QUERY, "--explain")))
    by_mcp = (hot_scores(await mcp(project, "hotspots")),
              hit_scores(await mcp(project, "search_memory", query=QUERY, top_k=10)))
    await lsp.start(project.path, wait_index=False)
    by_ls = (hot_scores(plain(await lsp.request("cortex/hotspots", {}))),
             hit_scores(plain(await lsp.request("cortex/search", {"query": QUERY}))))
    assert by_cli[0] and by_cli[1]
    assert by_cli[0] != defaults[0] and by_cli[1] != defaults[1]   # the file was read
    assert by_ls == by_cli
    assert by_mcp == by_cli


async def test_an_editor_setting_goes_over_the_file_and_a_broken_file_is_told(
        lsp: Session, project: ScriptedRepo):
    config = project.path / ".cortex" / "config.toml"
    config.write_text("[search]\nhalf_life_days = 60.0\n")
    sixty = hit_scores(cli(project, "search", QUERY, "--explain"))
    config.write_text(SETTINGS)
    assert hit_scores(cli(project, "search", QUERY, "--explain")) != sixty
    # No polling: only the fix of the file, below, may start an index run.
    await lsp.start(project.path, options={"recencyHalfLifeDays": 60, "pollInterval": 0})
    over = hit_scores(plain(await lsp.request("cortex/search", {"query": QUERY})))
    assert over == sixty
    # A typo in the file: answers fall back to the defaults, and the user is told once.
    config.write_text("[search]\nhalf_lfe_days = 3\n")
    await lsp.request("cortex/hotspots", {})
    await lsp.request("cortex/hotspots", {})
    told = [m.message for m in lsp.client.messages if "half_lfe_days" in m.message]
    assert len(told) == 1 and "unknown key search.half_lfe_days" in told[0]
    assert told[0].endswith("indexing waits until the file is fixed")
    # The editor's 60 days still hold over the defaults.
    assert hit_scores(plain(await lsp.request("cortex/search", {"query": QUERY}))) == sixty
    # Fixing the file indexes at once (the indexer had refused it), not at the next commit.
    before = len(lsp.updates)
    config.write_text(SETTINGS)
    await lsp.request("cortex/hotspots", {})
    await lsp.until(lambda: len(lsp.updates) > before, "an index run once the file is fixed")


async def test_a_dirty_tree_ranks_alike_in_the_three(lsp: Session, project: ScriptedRepo):
    """The working tree's changes lift what touches them, in MCP as on the command line."""
    clean = hit_scores(cli(project, "search", QUERY, "--explain"))
    (project.path / "pkg" / "core.py").write_text(sample_core(6))   # not committed
    by_cli = hit_scores(cli(project, "search", QUERY, "--explain"))
    assert by_cli != clean
    assert hit_scores(await mcp(project, "search_memory", query=QUERY, top_k=10)) == by_cli
    await lsp.start(project.path, wait_index=False)
    assert hit_scores(plain(await lsp.request("cortex/search", {"query": QUERY}))) == by_cli


def test_a_pack_reads_the_repositorys_coupling_settings(tmp_path: Path):
    """`[coupling] min_support` holds for the pack's "changes with" as for `cortex related`."""
    repo = ScriptedRepo(tmp_path / "pair")
    repo.write("a.py", "A = 0\n")
    repo.write("b.py", "B = 0\n")
    repo.commit("a and b once", days_ago=30)
    for n in (1, 2):
        repo.write("a.py", f"A = {n}\n")
        repo.write("c.py", f"C = {n}\n")
        repo.commit(f"a and c {n}", days_ago=20 - n)
    for n in range(12):   # the pack's history: its 12 commits cite none of the shared ones
        repo.write("a.py", f"A = {n + 10}\n")
        repo.commit(f"a alone {n}", days_ago=15 - n)
    index_repository(repo.path, repo.path / ".cortex" / "cortex.db", Settings(), model="none")

    def partners() -> tuple[set[str], set[str]]:
        pack = cli(repo, "context", "--at", "a.py", "--format", "json")
        related = cli(repo, "related", "a.py")
        return ({i["title"] for i in pack["items"] if i["section"] == "changes-with"},
                {f["path"] for f in related["files"]})

    assert partners() == ({"b.py", "c.py"}, {"b.py", "c.py"})
    (repo.path / ".cortex" / "config.toml").write_text("[coupling]\nmin_support = 2\n")
    assert partners() == ({"c.py"}, {"c.py"})


@pytest.mark.parametrize("make, says", [
    (lambda p: p.mkdir(), "is not a regular file"),
    (lambda p: p.symlink_to(p.parent / "nowhere.toml"), "is not a regular file"),
    (lambda p: os.mkfifo(p), "is not a regular file"),     # a read would block for ever
    (lambda p: p.write_text("hotspots = 5\n"), "[hotspots] must be a table"),
    (lambda p: p.write_text("[search]\nhalf_lfe_days = 3\n"), "unknown key search.half_lfe_days"),
    (lambda p: p.write_text("[index]\nmemory_mb = 0\n"), "index.memory_mb must be a whole number"),
    (lambda p: p.write_text("[index]\nworker_memory_mb = -5\n"), "must be a whole number"),
])
def test_a_config_that_cannot_be_used_is_an_error_not_the_defaults(tmp_path: Path, make, says):
    (tmp_path / ".cortex").mkdir()
    make(tmp_path / ".cortex" / "config.toml")
    with pytest.raises(CortexError, match=re.escape(says)):
        repository_settings(tmp_path)


def test_a_default_of_zero_can_be_written_out(tmp_path: Path):
    """docs/settings.md shows `worker_memory_mb = 0` (derived from memory_mb): it must load."""
    (tmp_path / ".cortex").mkdir()
    (tmp_path / ".cortex" / "config.toml").write_text("[index]\nworker_memory_mb = 0\n")
    assert repository_settings(tmp_path).index.worker_memory_mb == 0


def test_a_byte_order_mark_is_not_a_toml_error(tmp_path: Path):
    (tmp_path / ".cortex").mkdir()
    (tmp_path / ".cortex" / "config.toml").write_bytes(b"\xef\xbb\xbf[search]\nhalf_life_days = 9\n")
    assert repository_settings(tmp_path).search.half_life_days == 9


def _paired(tmp_path: Path) -> ScriptedRepo:
    """load and save change together in three commits of three files, load alone in a fourth."""
    repo = ScriptedRepo(tmp_path / "paired")
    for n in (1, 2, 3):
        repo.write("m.py", f"def load():\n    return {n}\n\n\ndef save():\n    return {n}\n")
        repo.write("x.py", f"X = {n}\n")
        repo.write("y.py", f"Y = {n}\n")
        repo.commit(f"load and save {n}", days_ago=10 - n)
    repo.write("m.py", "def load():\n    return 4\n\n\ndef save():\n    return 3\n")
    repo.commit("load alone", days_ago=5)
    index_repository(repo.path, repo.path / ".cortex" / "cortex.db", Settings(), model="none")
    return repo


@pytest.mark.parametrize("setting", ["min_support = 4", "max_changeset = 2"])
async def test_the_hover_and_blast_read_the_coupling_settings_related_reads(
        lsp: Session, tmp_path: Path, setting: str):
    """`[coupling]` reaches blast's hidden coupling and the hover's "usually changes with" as it
    reaches `cortex related`: asking for 4 shared commits, or leaving out commits of 3 files,
    takes `save` out of all three (it shares 3 such commits with `load`)."""
    repo = _paired(tmp_path)

    def partners() -> tuple[set, set]:
        related = cli(repo, "related", "m.py::load")
        blast = cli(repo, "blast", "m.py::load")
        return ({(p["path"], p.get("qualname"), p["support"])
                 for p in related["symbols"] + related["files"] if p["support"]},
                {(h["path"], h["qualname"], h["support"]) for h in blast["hidden"]})

    shared = {("m.py", "save", 3), ("x.py", None, 3), ("y.py", None, 3)}
    assert partners() == (shared, shared)
    (repo.path / ".cortex" / "config.toml").write_text(f"[coupling]\n{setting}\n")
    assert partners() == (set(), set())
    await lsp.start(repo.path)
    uri = lsp.open(repo.path / "m.py")
    text = await lsp.hover(uri, 0, 5)
    assert text is not None and text.startswith("**`load`**") and "4 changes" in text
    assert "changes with" not in text
    (repo.path / ".cortex" / "config.toml").write_text("")
    text = await lsp.hover(uri, 0, 5)
    assert "usually changes with `save` (3 of 4 commits)" in text
