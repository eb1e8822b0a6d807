"""The working tree's changed symbols and what the set of changes brings along (issue 14, item 3):
real repositories, the real CLI, MCP server and language server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

sys.path.insert(0, str(Path(__file__).parent))

from ls_harness import Session, plain as lsp_plain  # noqa: E402
from scripted_repo import ScriptedRepo  # noqa: E402

from cortex_core.query import working_changes as wc  # noqa: E402
from cortex_core.config import Settings  # noqa: E402
from cortex_core.query.coupling import related_to_set  # noqa: E402
from cortex_core.index.ingest import index_repository  # noqa: E402
from cortex_core.store.store import open_reader  # noqa: E402


def a_py(load: int, other: int = 0) -> str:
    return f"def load():\n    return {load}\n\n\ndef other():\n    return {other}\n"


def b_py(save: int, spare: int = 0) -> str:
    return f"def save():\n    return {save}\n\n\ndef spare():\n    return {spare}\n"


def c_py(n: int) -> str:
    return f"def convert():\n    return {n}\n"


D_PY = "def d1():\n    return 1\n\n\ndef d2():\n    return 2\n"


def build(path: Path) -> ScriptedRepo:
    """`a.load` and `b.save` always change together; `a.other` goes with `c.convert`."""
    repo = ScriptedRepo(path)
    repo.write("a.py", a_py(0))
    repo.write("b.py", b_py(0))
    repo.write("c.py", c_py(0))
    repo.write("d.py", D_PY)
    repo.commit("start", days_ago=60)
    for n in (1, 2, 3):
        repo.write("a.py", a_py(n))
        repo.write("b.py", b_py(n))
        repo.commit(f"load and save {n}", days_ago=50 - n)
    for n in (1, 2):
        repo.write("a.py", a_py(3, other=n))
        repo.write("c.py", c_py(n))
        repo.commit(f"other and convert {n}", days_ago=30 - n)
    return repo


def index(repo: ScriptedRepo) -> Path:
    db = repo.path / ".cortex" / "cortex.db"
    index_repository(repo.path, db, Settings(), model="none")
    return db


@pytest.fixture
def coupled(tmp_path: Path) -> ScriptedRepo:
    repo = build(tmp_path / "repo")
    index(repo)
    return repo


def changes(repo: ScriptedRepo) -> wc.WorkingChanges:
    return wc.working_changes(open_reader(repo.path / ".cortex" / "cortex.db"), repo.path)


def cli(repo: ScriptedRepo, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cortex_cli.cli", "related", *args,
                           "--repo", str(repo.path)], capture_output=True, text=True,
                          timeout=120)


# -- the changed symbols ---------------------------------------------------------------------


def test_an_edit_is_its_innermost_definition(coupled):
    assert changes(coupled).symbols == []
    coupled.write("a.py", a_py(7, 2))
    found = changes(coupled)
    assert found.files == ["a.py"] and found.symbols == [("a.py", "load")]
    assert found.base == coupled.head() and not found.truncated
    # Staged and unstaged both count; a reformatting alone is no change of substance.
    coupled.git("add", "a.py")
    coupled.write("b.py", b_py(3).replace("return 3", "return  3"))
    found = changes(coupled)
    assert found.symbols == [("a.py", "load")] and set(found.files) == {"a.py", "b.py"}


def test_deleted_new_and_renamed_files(coupled):
    coupled.remove("c.py")                                  # every symbol of it changed
    coupled.write("n.py", "class Fresh:\n    names = ['x', 'y']\n")   # new: no history
    coupled.git("mv", "d.py", "e.py")                       # the symbols keep their old names
    found = changes(coupled)
    assert ("c.py", "convert") in found.symbols
    assert ("d.py", "d1") in found.symbols and ("d.py", "d2") in found.symbols
    assert ("e.py", "d1") not in found.symbols
    assert found.new_symbols == [("n.py", "Fresh")]
    # A staged rename's new path is its old one: no file "without history" (it was listed so).
    assert {"c.py", "d.py", "n.py"} <= set(found.files) and "e.py" not in found.files


def test_commits_since_the_index_count_as_changes(coupled):
    coupled.write("b.py", b_py(3, spare=9))
    coupled.commit("spare alone", days_ago=1)
    found = changes(coupled)
    assert found.symbols == [("b.py", "spare")] and found.files == ["b.py"]
    assert found.base != coupled.head()


def test_hostile_working_tree_is_bounded(coupled, tmp_path):
    coupled.write("a.py", a_py(7, 2))
    coupled.write("evil\nname.py", "def f(:\n  ((((\n")          # not parseable, odd name
    coupled.write("-rf.py", "def g():\n    return 1\n")
    (coupled.path / os.fsdecode(b"bad\xff.py")).write_bytes(b"def h():\n    pass\n")
    coupled.write("bin.py", b"\x00\x01def x():\n" * 10)
    coupled.write("big.py", "def big():\n    return 1\n" + "# x\n" * 400_000)  # > 1 MB
    (coupled.path / "link.py").symlink_to("/etc/passwd")
    coupled.write("deep/dir/new.py", "def nested():\n    pass\n")
    coupled.write("pkg-lock.json", "{}")
    found = changes(coupled)
    assert ("a.py", "load") in found.symbols
    reasons = " ".join(found.skipped)
    assert "bin.py (binary)" in reasons and "big.py (too large)" in reasons
    assert "link.py (not a regular file)" in reasons
    assert ("-rf.py", "g") in found.new_symbols
    # The whole answer still comes out, and b.save leads.
    result = cli(coupled, "--json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert (out["symbols"][0]["path"], out["symbols"][0]["qualname"]) == ("b.py", "save")


def test_a_huge_change_is_cut_to_its_bounds(coupled, monkeypatch):
    for n in range(6):
        coupled.write(f"gen{n}.py", f"def g{n}():\n    return {n}\n")
    coupled.write("a.py", a_py(7, 2))
    monkeypatch.setattr(wc, "MAX_FILES", 3)
    found = changes(coupled)
    assert found.truncated and len(found.new_symbols) + len(found.symbols) <= 3
    monkeypatch.setattr(wc, "MAX_PATHS", 2)
    found = changes(coupled)
    assert found.truncated and len(found.files) == 2


def test_no_repository_is_no_changes(tmp_path, coupled):
    con = open_reader(coupled.path / ".cortex" / "cortex.db")
    found = wc.working_changes(con, tmp_path / "nowhere")
    assert found.files == [] and found.symbols == []


# -- the ranking -----------------------------------------------------------------------------


def test_set_ranks_symbols_then_files_and_keeps_the_file_ranking(coupled):
    con = open_reader(coupled.path / ".cortex" / "cortex.db")
    files_only = related_to_set(con, ["a.py"])
    both = related_to_set(con, ["a.py"], symbols=[("a.py", "load")])
    assert [(f.path, f.score, f.support) for f in both.files] == \
        [(f.path, f.score, f.support) for f in files_only.files]
    assert [f.path for f in both.files][:2] == ["b.py", "c.py"]
    assert files_only.symbols == [] and both.changed_symbols == ["a.py::load"]
    first = both.symbols[0]
    assert (first.path, first.qualname, first.support, first.weak) == ("b.py", "save", 4, False)
    # Symbols by their strongest rule: every commit of a.load changed b.save.
    assert first.shared_with == {"a.py::load": 4} and first.plain == 1.0 == first.score
    assert all(s.label != "a.py::load" for s in both.symbols)      # not already changed
    pair = related_to_set(con, ["a.py"], symbols=[("a.py", "load"), ("a.py", "other")])
    scores = {s.label: s for s in pair.symbols}
    assert scores["b.py::save"].plain == scores["c.py::convert"].plain == 1.0
    assert scores["c.py::convert"].with_changed == ["a.py::load", "a.py::other"]
    # The files' way: a commit holding both changed symbols counts double against one holding
    # one (b.save came with a.load three times alone, c.convert with a.other twice).
    shared = related_to_set(con, ["a.py"], symbols=[("a.py", "load"), ("a.py", "other")],
                            symbol_aggregate="share", half_life_days=0)
    scores = {s.label: s.score for s in shared.symbols}
    assert scores["b.py::save"] == 2.5 and scores["c.py::convert"] == 2.0
    unknown = related_to_set(con, ["zz.py"], symbols=[("zz.py", "nope")])
    assert unknown.unknown_symbols == ["zz.py::nope"] and unknown.symbols == []


def test_cli_names_b_save_first_and_explains(coupled):
    nothing = cli(coupled)
    assert nothing.returncode != 0 and "no uncommitted changes" in nothing.stderr
    coupled.write("a.py", a_py(7, 2))
    out = json.loads(cli(coupled, "--json").stdout)
    assert out["changed_symbols"] == ["a.py::load"]
    assert (out["symbols"][0]["path"], out["symbols"][0]["qualname"]) == ("b.py", "save")
    assert out["files"][0]["path"] == "b.py"
    text = cli(coupled, "--explain").stdout
    assert "1 changed symbol" in text and "symbols:" in text
    symbols = text.split("symbols:")[1].split("files:")[0]
    assert symbols.index("b.py::save") < symbols.index("c.py::convert")
    assert "decayed" in symbols and "plain 1.0000" in symbols and "shared with a.py::load 4" \
        in symbols


def test_pack_says_what_the_changes_bring_along(coupled):
    coupled.write("a.py", a_py(7, 2))
    out = subprocess.run([sys.executable, "-m", "cortex_cli.cli", "context", "--at",
                          "c.py::convert", "--repo", str(coupled.path), "--budget", "3000"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "## [b.py::save] b.py::save\nusually changes with the uncommitted changes to " \
        "a.py::load: 4 shared commits" in out.stdout


# -- MCP -------------------------------------------------------------------------------------


async def test_mcp_related_without_a_target(coupled):
    from test_mcp import ok, server, text
    coupled.write("a.py", a_py(7, 2))
    coupled.write("we`ird [x](javascript:1).py", "def w():\n    return 1\n")
    async with server("--repo", str(coupled.path)) as client:
        result = await ok(client, "related")
        sc = result.structured_content
        assert (sc["symbols"][0]["path"], sc["symbols"][0]["qualname"]) == ("b.py", "save")
        md = text(result)
        assert "2 changed files and 2 changed symbols" in md and "- `b.py::save` score" in md
        assert "we`ird" not in md and "](javascript" not in md.replace("`we'ird [x](", "")
        named = await ok(client, "related", changed=["c.py::convert"])
        sc = named.structured_content
        assert sc["changed_symbols"] == ["c.py::convert"]
        assert sc["symbols"][0]["qualname"] == "other"
        assert sc["files"][0]["path"] == "a.py"


# -- the language server ---------------------------------------------------------------------


async def test_ls_related_reads_unsaved_buffers(client: LanguageClient, tmp_path: Path):
    repo = build(tmp_path / "repo")
    lsp = Session(client)
    await lsp.start(repo.path)
    uri = lsp.open(repo.path / "a.py")
    idle = lsp_plain(await lsp.request("cortex/related", {"textDocument": {"uri": uri}}))
    assert idle["changed"] == [] and idle["files"] == [] and idle["symbols"] == []
    # An unsaved edit of load(): the working tree as the editor shows it.
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        [types.TextDocumentContentChangeWholeDocument(text=a_py(7, 2))]))
    found = lsp_plain(await lsp.request("cortex/related", {"textDocument": {"uri": uri}}))
    assert found["changed_symbols"] == ["a.py::load"]
    assert (found["symbols"][0]["path"], found["symbols"][0]["qualname"]) == ("b.py", "save")
    named = lsp_plain(await lsp.request("cortex/related", {"changed": ["a.py::other"]}))
    assert named["symbols"][0]["qualname"] == "convert"
    at = lsp_plain(await lsp.request("cortex/related", {"target": "a.py::load"}))
    assert at["symbols"][0]["qualname"] == "save"
    with pytest.raises(JsonRpcException) as caught:
        await lsp.raw_request("cortex/related", {"changed": "a.py"})
    assert caught.value.code == -32602


def test_a_deleted_file_of_many_functions_is_read_in_bounded_memory(tmp_path: Path):
    """Deleting a file of 1,500 functions that once changed with 3,000 others: the set's ranking
    used to count every candidate against every changed symbol (4.5 million counters: a traced
    peak of 531 MiB, now 5). Memory is what is asserted: a count, not a time."""
    import tracemalloc
    repo = ScriptedRepo(tmp_path / "wide")
    for name in ("x", "y", "z"):
        repo.write(f"{name}.py", "".join(f"def {name}{i}():\n    return {i}\n\n\n"
                                         for i in range(1500)))
    repo.commit("the three modules", days_ago=10)
    index(repo)
    repo.remove("x.py")
    con = open_reader(repo.path / ".cortex" / "cortex.db")
    tracemalloc.start()
    try:
        found = wc.related_to_working_tree(con, repo.path, top_k=5)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(found.changed_symbols) == 1500
    assert [p.support for p in found.symbols] == [1] * 5
    assert all(len(p.with_changed) == 1500 for p in found.symbols)   # each came with all of x
    assert peak < 32 * 2**20, f"peak {peak / 2**20:.0f} MiB"


def test_an_older_checkout_is_no_change(coupled: ScriptedRepo):
    """HEAD moved back without an edit: the commits between it and the index are not yours."""
    coupled.git("checkout", "-q", "HEAD~2")
    found = changes(coupled)
    assert found.files == [] and found.symbols == []
    (coupled.path / "c.py").write_text(c_py(9))
    found = changes(coupled)
    assert found.files == ["c.py"] and found.symbols == [("c.py", "convert")]
