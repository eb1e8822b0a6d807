"""The `cortex` command line, run as a real process."""

from __future__ import annotations

import json
import re
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent


def cortex(*args: str, cwd: Path, env: dict[str, str] | None = None
           ) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cortex_cli.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300,
                          env=dict(env or os.environ, PYTHONPATH=str(PROJECT)))


def assert_clean_error(proc: subprocess.CompletedProcess, fragment: str) -> None:
    assert proc.returncode == 1, proc
    assert proc.stderr.startswith("cortex: ") and fragment in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1


@pytest.fixture
def shop(repo):
    repo.write("shop/cart.py", "class Cart:\n    def total(self):\n        return 0\n")
    repo.write("shop/pay.py", "def pay(cart):\n    return cart.total()\n")
    repo.commit("feat: cart and payment", author="Ann <ann@example.com>", days_ago=3)
    repo.write("shop/cart.py", "class Cart:\n    def total(self):\n        return 1\n")
    repo.write("shop/pay.py", "def pay(cart):\n    return cart.total() + 1\n")
    repo.commit("fix: totals are off by one", author="Bob <bob@example.com>", days_ago=1)
    return repo


def test_index_then_query_everything(shop):
    out = cortex("index", cwd=shop.path)
    assert out.returncode == 0, out.stderr
    assert "indexed 2 new commits" in out.stdout and "store: .cortex/cortex.db" in out.stdout

    text = cortex("history", "shop/cart.py::Cart.total", cwd=shop.path)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0].startswith("shop/cart.py::Cart.total  (method, lines 2-3)  —  2 commits")
    assert "fix: totals are off by one" in lines[1] and "+1 -1" in lines[1] and "Bob" in lines[1]
    assert "feat: cart and payment" in lines[2] and "added" in lines[2]

    data = json.loads(cortex("history", "shop/cart.py:3", "--json", cwd=shop.path).stdout)
    assert data["target"]["qualname"] == "Cart.total"
    assert [e["commit"]["subject"] for e in data["entries"]] == [
        "fix: totals are off by one", "feat: cart and payment"]
    assert data["entries"][0]["commit"]["kind"] == "fix"

    # A path relative to the current directory works from a subfolder.
    sub = cortex("history", "cart.py", "--json", cwd=shop.path / "shop")
    assert [e["change"] for e in json.loads(sub.stdout)["entries"]] == ["modified", "added"]

    hot = json.loads(cortex("hotspots", "--json", cwd=shop.path).stdout)
    assert {h["qualname"]: h["changes"] for h in hot["symbols"]} == {
        "Cart.total": 2, "pay": 2, "Cart": 1}  # the class line itself changed once: when added
    assert "score = R × (1 + ln A)" in cortex("hotspots", cwd=shop.path).stdout

    rel = json.loads(cortex("related", "shop/cart.py", "--json", cwd=shop.path).stdout)
    assert [(p["path"], p["support"]) for p in rel["files"]] == [("shop/pay.py", 2)]

    status = cortex("status", cwd=shop.path)
    assert "commits: 2" in status.stdout and "python" in status.stdout
    assert "by 2 authors; 0 merges" in status.stdout
    assert re.search(r"commits: 2 from \d{4}-\d\d-\d\d to \d{4}-\d\d-\d\d \(UTC\)", status.stdout)
    data = json.loads(cortex("status", "--json", cwd=shop.path).stdout)
    assert data["symbols_alive"] == 3 and data["working_head"] == data["head"]
    assert "note: HEAD" not in status.stdout
    shop.write("shop/later.py", "x = 1\n")
    later = shop.commit("later, not indexed", days_ago=0.1)
    behind = cortex("status", cwd=shop.path).stdout      # it said nothing of HEAD's move
    assert f"note: HEAD ({later[:10]}) is not the last indexed commit" in behind
    data = json.loads(cortex("status", "--json", cwd=shop.path).stdout)   # it said nothing
    assert data["working_head"] == later and data["head"] != later


def test_user_errors_are_one_line(shop, tmp_path):
    assert_clean_error(cortex("history", "shop/cart.py::Cart.total", cwd=shop.path),
                       "no index at")
    cortex("index", cwd=shop.path)
    assert_clean_error(cortex("history", "shop/cart.py::Cart.totl", cwd=shop.path),
                       "did you mean: shop/cart.py::Cart.total")
    assert_clean_error(cortex("history", "nope.py", cwd=shop.path), "no file 'nope.py'")
    outside = tmp_path / "plain"
    outside.mkdir()
    assert_clean_error(cortex("status", cwd=outside), "is not inside a git repository")
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(shop.path), str(bare)], check=True)
    for where in (bare, bare / "refs"):
        assert_clean_error(cortex("index", "--repo", str(where), cwd=outside),
                           f"{bare} is a bare repository; Cortex indexes a working copy")
    assert_clean_error(cortex("status", "--repo", str(tmp_path / "missing"), cwd=outside),
                       "does not exist")
    # A working copy's own git folder names the working copy.
    for where in (shop.path / ".git", shop.path / ".git" / "refs"):
        named = cortex("status", "--repo", str(where), cwd=outside)
        assert named.returncode == 0 and "commits: " in named.stdout, named.stderr
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"garbage" * 200)
    assert_clean_error(cortex("status", "--db", str(bad), cwd=shop.path), "not a readable")
    usage = cortex("hotspots", "--top-k", "0", cwd=shop.path)
    assert usage.returncode == 2 and "must be at least 1" in usage.stderr
    # blast goes 10 edges at most: more is refused, not quietly cut to 10.
    deep = cortex("blast", "shop/cart.py", "--depth", "11", cwd=shop.path)
    assert deep.returncode == 2 and "must be at most 10" in deep.stderr


def test_paths_from_a_subfolder_stay_in_the_repository(shop, tmp_path):
    # A tracked symlink is its own file; from a subfolder, ".." or a link may lead outside.
    os.symlink("cart.py", shop.path / "shop" / "alias.py")
    os.symlink(str(tmp_path), shop.path / "shop" / "away")
    shop.git("add", "shop/alias.py", "shop/away")
    shop.commit("an alias of the cart", days_ago=0)
    cortex("index", cwd=shop.path)
    (tmp_path / "x.py").write_text("secret = 1\n")
    sub = shop.path / "shop"
    for outside in ("../..", "away/x.py", "../../elsewhere.py", str(tmp_path / "x.py")):
        for command in (["history", outside], ["related", outside],
                        ["search", "x", "--path", outside]):
            assert_clean_error(cortex(*command, cwd=sub), "is outside the repository")
    alias = cortex("history", "alias.py", "--json", cwd=sub)
    assert alias.returncode == 0, alias.stderr
    assert json.loads(alias.stdout)["target"]["path"] == "shop/alias.py"
    real = cortex("history", "cart.py", "--json", cwd=sub)
    assert json.loads(real.stdout)["target"]["path"] == "shop/cart.py"
    link = cortex("history", "away", "--json", cwd=sub)   # the link itself is a tracked file
    assert json.loads(link.stdout)["target"]["path"] == "shop/away"


def test_a_path_out_of_the_root_and_back_in_is_inside(shop):
    # From the root, `../repo/shop/cart.py` was "outside the repository": only a subfolder's
    # paths were read from where they lead.
    cortex("index", cwd=shop.path)
    back = cortex("history", f"../{shop.path.name}/shop/cart.py::Cart.total", "--json",
                  cwd=shop.path)
    assert back.returncode == 0, back.stderr
    assert json.loads(back.stdout)["target"]["qualname"] == "Cart.total"
    assert_clean_error(cortex("history", "../elsewhere/shop/cart.py", cwd=shop.path),
                       "is outside the repository")


def test_another_programs_database_is_left_alone(shop, tmp_path):
    import sqlite3
    foreign = tmp_path / "app.db"
    with sqlite3.connect(foreign) as con:
        con.execute("create table files(path text)")
        con.execute("insert into files values ('keep me')")
    con.close()
    before = foreign.read_bytes()
    for command in ("status", "index", "history"):
        args = [command, "--db", str(foreign)] + (["shop/cart.py"] if command == "history" else [])
        assert_clean_error(cortex(*args, cwd=shop.path),
                           f"{foreign} is not a Cortex index: it is another database (tables "
                           "files)")
    assert foreign.read_bytes() == before   # no table, no journal mode, nothing written
    assert not Path(f"{foreign}-wal").exists()


def test_related_at_a_line_outside_any_symbol_says_it_answers_for_the_file(shop):
    cortex("index", cwd=shop.path)
    text = cortex("related", "shop/cart.py:999", cwd=shop.path)
    assert text.returncode == 0, text.stderr
    assert "(no symbol encloses line 999 at HEAD; showing the file's partners)" in text.stdout
    inside = json.loads(cortex("related", "shop/cart.py:3", "--json", cwd=shop.path).stdout)
    assert inside["note"] is None and inside["target"]["qualname"] == "Cart.total"


def test_empty_repository(repo):
    assert_clean_error(cortex("index", cwd=repo.path), "has no commits yet")


def test_help_lists_every_command():
    out = cortex("--help", cwd=PROJECT)
    for command in ("index", "history", "hotspots", "related", "status"):
        assert command in out.stdout
    assert "PATH::SYMBOL" in cortex("history", "--help", cwd=PROJECT).stdout


def test_indexes_this_project(tmp_path):
    """End to end on a real repository: this one."""
    if not (PROJECT / ".git").exists():
        pytest.skip("not a git checkout")
    db = tmp_path / "self.db"
    out = cortex("index", "--repo", str(PROJECT), "--db", str(db), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    data = json.loads(cortex("history", "cortex_cli/cli.py::main", "--repo", str(PROJECT),
                             "--db", str(db), "--json", cwd=tmp_path).stdout)
    assert data["target"]["kind"] == "function" and data["entries"]
    assert data["entries"][-1]["change"] == "added"
    status = json.loads(cortex("status", "--repo", str(PROJECT), "--db", str(db), "--json",
                               cwd=tmp_path).stdout)
    assert status["commits"] >= 1 and "python" in [lang["language"] for lang in status["languages"]]


def test_history_limit_says_how_many_there_are(shop):
    cortex("index", cwd=shop.path)
    out = cortex("history", "shop/pay.py::pay", "-n", "1", cwd=shop.path).stdout.splitlines()
    assert out[0].endswith("—  2 commits, newest 1 shown") and len(out) == 2


# -- memory commands ------------------------------------------------------------------------------


def test_memory_commands_end_to_end(shop, tiny_model):
    out = cortex("index", "--model", tiny_model, cwd=shop.path)
    assert out.returncode == 0, out.stderr
    assert f"semantic search on: {tiny_model}" in out.stdout

    found = cortex("search", "totals off", "--explain", cwd=shop.path)
    assert found.returncode == 0, found.stderr
    assert "fix: totals are off by one" in found.stdout.splitlines()[1]
    assert "lexical #1" in found.stdout and "priors: recency" in found.stdout
    data = json.loads(cortex("search", "totals", "--json", "--kind", "commit", cwd=shop.path).stdout)
    assert data["hits"][0]["sha"] and data["hits"][0]["why"]["lexical_rank"] == 1

    added = cortex("note", "add", "shop/cart.py::Cart.total", "Totals include tax.",
                   "--author", "Ann", cwd=shop.path)
    assert added.returncode == 0, added.stderr
    assert added.stdout.startswith("added #1 shop/cart.py::Cart.total")
    listed = json.loads(cortex("note", "list", "--json", cwd=shop.path).stdout)
    assert [(n["id"], n["text"], n["author"]) for n in listed] == [(1, "Totals include tax.", "Ann")]
    sup = cortex("note", "supersede", "1", "Totals exclude tax.", cwd=shop.path)
    assert sup.returncode == 0 and sup.stdout.startswith("#1 superseded by #2")
    exported = cortex("note", "export", cwd=shop.path)
    assert len(json.loads(exported.stdout)["notes"]) == 2
    (shop.path / "notes.json").write_text(exported.stdout)
    again = cortex("note", "import", "notes.json", cwd=shop.path)
    assert again.stdout.strip() == "imported 0 notes"
    assert_clean_error(cortex("note", "supersede", "1", "x", cwd=shop.path), "already superseded")
    assert_clean_error(cortex("note", "add", "shop/nope.py", "x", cwd=shop.path), "no file")
    (shop.path / "bad.json").write_text("{not json")
    assert_clean_error(cortex("note", "import", "bad.json", cwd=shop.path), "cannot read notes")

    pack = cortex("context", "--at", "shop/cart.py::Cart.total", "--budget", "400", cwd=shop.path)
    assert pack.returncode == 0, pack.stderr
    assert pack.stdout.startswith("# Context: shop/cart.py::Cart.total")
    assert "[note #2]" in pack.stdout and "Totals exclude tax." in pack.stdout
    assert "Totals include tax." not in pack.stdout

    related = cortex("related-commits", "shop/pay.py::pay", cwd=shop.path)
    assert related.returncode == 0 and "touching it:" in related.stdout
    assert cortex("areas", cwd=shop.path).returncode == 0

    status = cortex("status", cwd=shop.path)
    assert "memory: 2 commit segments" in status.stdout
    assert f"semantic search on: {tiny_model}" in status.stdout


def test_what_reads_the_working_tree(shop):
    assert cortex("index", "--model", "none", cwd=shop.path).returncode == 0
    (shop.path / "shop" / "pay.py").write_text("def pay(cart):\n    return 0\n")
    out = cortex("what", cwd=shop.path)
    assert out.returncode == 0, out.stderr
    assert "branch: main; 1 changed file" in out.stdout
    about = out.stdout.split("about your changes:")[1].split("recent decisions:")[0]
    assert "fix: totals are off by one" in about and "(shop/pay.py)" in about
    hot = out.stdout.split("hot spots you are touching (on this repository's clock")[1]
    assert "shop/pay.py::pay" in hot
    data = json.loads(cortex("what", "--json", cwd=shop.path).stdout)
    assert data["changed"] == ["shop/pay.py"]
    # An orphan branch has no commit yet: it is that branch, not a detached HEAD.
    shop.git("checkout", "-q", "--orphan", "fresh")
    out = cortex("what", cwd=shop.path)
    assert out.returncode == 0 and out.stdout.startswith("branch: fresh (no commits yet); ")
    assert json.loads(cortex("what", "--json", cwd=shop.path).stdout)["unborn"] == "fresh"


def test_what_says_when_git_cannot_read_the_working_copy(shop, tmp_path):
    """A `git status` that fails (a damaged index, a FIFO git stalls on, a wrapper that
    breaks) left `what` saying "no changes": the changes are unknown, and it now says why."""
    assert cortex("index", "--model", "none", cwd=shop.path).returncode == 0
    (shop.path / "shop" / "pay.py").write_text("def pay(cart):\n    return 0\n")
    real = shutil.which("git")
    wrappers = tmp_path / "bin"
    wrappers.mkdir()
    (wrappers / "git").write_text(
        f'#!/bin/sh\nfor a in "$@"; do [ "$a" = status ] && exit 3; done\nexec {real} "$@"\n')
    (wrappers / "git").chmod(0o755)
    env = {**os.environ, "PATH": f"{wrappers}:{os.environ['PATH']}"}
    out = cortex("what", cwd=shop.path, env=env)
    assert out.returncode == 0, out.stderr
    about = out.stdout.split("about your changes:")[1].split("recent decisions:")[0]
    assert "the working copy could not be read: git status failed (exit status 3)" in about
    assert out.stdout.startswith("branch: not known; changed files not known\n")
    assert "no changes" not in about
    data = json.loads(cortex("what", "--json", cwd=shop.path, env=env).stdout)
    assert data["unread"] == "git status failed (exit status 3)" and data["changed"] == []
    assert json.loads(cortex("what", "--json", cwd=shop.path).stdout)["unread"] is None


def test_search_without_a_model_says_so(shop):
    assert cortex("index", "--model", "none", cwd=shop.path).returncode == 0
    out = cortex("search", "totals", cwd=shop.path)
    assert out.returncode == 0 and "note: semantic search off" in out.stdout
    assert_clean_error(cortex("search", "totals", "--mode", "vector", cwd=shop.path),
                       "semantic search off")
    assert_clean_error(cortex("search", "?!", cwd=shop.path), "no words")
    bad = cortex("search", "x", "--since", "last week", cwd=shop.path)
    assert bad.returncode == 2 and "not a date" in bad.stderr
    assert "semantic search off: turned off" in cortex("status", cwd=shop.path).stdout


def test_a_symbol_history_names_the_file_of_its_older_commits(repo):
    repo.write("a.py", "def f():\n    return 1\n")
    repo.commit("add f", days_ago=3)
    repo.move("a.py", "b.py")
    repo.commit("move", days_ago=2)
    repo.write("b.py", "def f():\n    return 2\n")
    repo.commit("edit", days_ago=1)
    cortex("index", "--model", "none", cwd=repo.path)
    lines = cortex("history", "b.py::f", cwd=repo.path).stdout.splitlines()
    assert lines[1].endswith("body") and lines[2].endswith("moved")
    assert lines[3].endswith("added  [in a.py]")


def test_unquoted_words_and_git_revisions_are_understood(shop):
    """`cortex search totals are off` took `are` for an unknown argument, and `related-commits
    HEAD~1` looked for a file named `HEAD~1`."""
    assert cortex("index", "--model", "none", cwd=shop.path).returncode == 0
    words = cortex("search", "totals", "are", "off", "--top-k", "1", cwd=shop.path)
    assert words.returncode == 0, words.stderr
    assert "result for 'totals are off'" in words.stdout and "fix: totals" in words.stdout
    mixed = cortex("search", "totals", "--top-k", "1", "off", cwd=shop.path)
    assert "result for 'totals off'" in mixed.stdout, mixed
    for empty in ("", "   "):   # "" became no query at all, and a traceback
        assert_clean_error(cortex("search", empty, cwd=shop.path), "the query has no words")
    bad = cortex("search", "totals", "--bogus", cwd=shop.path)
    assert bad.returncode == 2 and "unrecognized arguments: --bogus" in bad.stderr
    after = cortex("search", "totals", "--top-k", "1", "--", "-off", "1", cwd=shop.path)
    assert "result for 'totals -off 1'" in after.stdout, after
    first = shop.git("rev-parse", "HEAD~1")
    for revision in ("HEAD~1", "main~1", first[:12]):
        out = cortex("related-commits", revision, cwd=shop.path)
        assert out.returncode == 0 and f"commits related to {first[:10]}" in out.stdout, out
    assert_clean_error(cortex("related-commits", "nope~3", cwd=shop.path), "nope~3")
    pack = cortex("context", "totals", "off", "--budget", "300", cwd=shop.path)
    assert pack.returncode == 0 and pack.stdout.startswith("# Context: totals off")


def test_a_line_of_an_edited_file_is_read_where_the_working_tree_has_it(shop):
    """`PATH:LINE` comes from the file as the user sees it. With 40 lines added above
    `Cart.total`, line 43 is `total` in the working tree; it was read at HEAD's numbering, past
    the end of the file. Lines the working tree added keep their number."""
    assert cortex("index", "--model", "none", cwd=shop.path).returncode == 0
    at_head = cortex("history", "shop/cart.py:3", cwd=shop.path)
    assert at_head.stdout.startswith("shop/cart.py::Cart.total"), at_head
    cart = shop.path / "shop" / "cart.py"
    cart.write_text("".join(f"# note {i}\n" for i in range(40)) + cart.read_text())
    moved = cortex("history", "shop/cart.py:43", cwd=shop.path)
    assert moved.returncode == 0 and moved.stdout.startswith("shop/cart.py::Cart.total"), moved
    added = cortex("history", "shop/cart.py:2", cwd=shop.path)   # a new comment: as given
    assert added.stdout.startswith("shop/cart.py::Cart"), added


def test_a_line_in_a_function_the_working_tree_added_is_not_its_neighbours(shop):
    """A new function inserted between two: its lines were taken where the insertion sits at
    HEAD, so history, blast and context answered for the function above (and context for
    another one). The line is read in the working tree's own definitions."""
    assert cortex("index", "--model", "none", cwd=shop.path).returncode == 0
    pay = shop.path / "shop" / "pay.py"
    pay.write_text(pay.read_text() + "\n\ndef refund(cart):\n    return -cart.total()\n")
    for command in (("history", "shop/pay.py:6"), ("blast", "shop/pay.py:6"),
                    ("context", "--at", "shop/pay.py:6", "--budget", "300")):
        out = cortex(*command, cwd=shop.path)
        assert_clean_error(out, "line 6 of shop/pay.py is in refund, which is not in the index")
    # By its name, before an index run (a hostile test found a bare "no symbol"), and after.
    for command in (("history", "shop/pay.py::refund"), ("blast", "shop/pay.py::refund"),
                    ("context", "--at", "shop/pay.py::refund")):
        out = cortex(*command, cwd=shop.path)
        assert_clean_error(out, "the working tree's version of the file defines it, but no commit")
    assert cortex("index", "--model", "none", cwd=shop.path).returncode == 0
    named = cortex("history", "shop/pay.py::refund", cwd=shop.path)
    assert_clean_error(named, "the working tree's version of the file defines it, but no commit")
    above = cortex("history", "shop/pay.py:2", "--json", cwd=shop.path)
    assert json.loads(above.stdout)["target"]["qualname"] == "pay"
    pack = cortex("context", "--at", "shop/pay.py:2", "--budget", "300", cwd=shop.path)
    assert pack.stdout.startswith("# Context: shop/pay.py::pay"), pack


def test_an_ambiguous_short_name_is_still_said_to_be_ambiguous(repo):
    """Two classes' `run`, both committed and indexed: `PATH::run` names both, as before the
    working tree's own definitions were looked at, not "no commit has it yet"."""
    repo.write("m.py", "class A:\n    def run(self):\n        return 1\n\n\n"
                       "class B:\n    def run(self):\n        return 2\n")
    repo.commit("two runs", days_ago=1)
    assert cortex("index", "--model", "none", cwd=repo.path).returncode == 0
    for command in ("history", "callers", "blast"):
        out = cortex(command, "m.py::run", cwd=repo.path)
        assert_clean_error(out, "m.py::run names 2 symbols: A.run (line 2); B.run (line 7)")


def test_a_symbol_of_a_file_kept_at_file_level_says_why(repo):
    """A committed file over `max_file_bytes` has no symbols in the index: asked for one of
    them, the answer is that limit and its setting, as before the working tree's own
    definitions were looked at, not "no commit has it yet"."""
    (repo.path / ".cortex").mkdir()
    (repo.path / ".cortex" / "config.toml").write_text("[index]\nmax_file_bytes = 1000\n")
    repo.write("big.py", "".join(f"def f{i}():\n    return {i}\n\n\n" for i in range(100)))
    repo.commit("a big file", days_ago=1)
    assert cortex("index", "--model", "none", cwd=repo.path).returncode == 0
    out = cortex("history", "big.py::f5", cwd=repo.path)
    assert_clean_error(out, "the file is recorded at file level only, too large (over 1 kB;")


def test_a_symbol_committed_since_the_index_run_is_not_said_uncommitted(shop):
    """A function committed after the last index run: HEAD has it, the index does not yet. The
    answer said no commit had it; it says an index run reads it."""
    assert cortex("index", "--model", "none", cwd=shop.path).returncode == 0
    shop.write("shop/pay.py", "def pay(cart):\n    return cart.total() + 1\n\n\n"
                              "def refund(cart):\n    return -cart.total()\n")
    shop.commit("feat: refunds", days_ago=0)
    out = cortex("history", "shop/pay.py::refund", cwd=shop.path)
    assert_clean_error(out, "committed since the last index run (an index run reads it)")


def test_a_line_of_an_edited_definition_is_still_that_definition(shop):
    """A review's cases, each answered before the working tree's definitions were read and
    refused after ("added since the indexed HEAD"): a function renamed in the working tree, a
    helper nested in a known function, a file kept at file level only."""
    shop.write("shop/gen.py", "# Code generated by protoc. DO NOT EDIT.\n\n\n"
               "def gen_one():\n    return 2\n")
    shop.commit("generated", days_ago=0.5)
    assert cortex("index", "--model", "none", cwd=shop.path).returncode == 0
    pay = shop.path / "shop" / "pay.py"
    pay.write_text(pay.read_text().replace("def pay(", "def pay_all("))
    for line in ("1", "2"):
        out = json.loads(cortex("history", f"shop/pay.py:{line}", "--json", cwd=shop.path).stdout)
        assert out["target"]["qualname"] == "pay", line
    cart = shop.path / "shop" / "cart.py"
    cart.write_text(cart.read_text().replace(
        "        return 1\n", "        def twice(n):\n            return 2 * n\n        return 1\n"))
    nested = json.loads(cortex("history", "shop/cart.py:4", "--json", cwd=shop.path).stdout)
    assert nested["target"]["qualname"] == "Cart.total"
    gen = shop.path / "shop" / "gen.py"
    gen.write_text(gen.read_text().replace("return 2", "return 3"))
    whole = json.loads(cortex("history", "shop/gen.py:5", "--json", cwd=shop.path).stdout)
    assert whole["target"]["qualname"] is None and whole["note"].startswith(
        "recorded at file level only")


def test_an_edited_method_is_itself_not_its_class(shop):
    """A second review: a method whose signature changed answered for its class, and a renamed
    one-line function was refused as "added"."""
    shop.write("shop/Box.java", "class Box {\n  int size;\n\n  void put(String s) {\n"
               "    size++;\n  }\n}\n")
    shop.write("shop/short.go", "package shop\n\nfunc Short() int { return 1 }\n")
    shop.commit("box and short", days_ago=0.5)
    assert cortex("index", "--model", "none", cwd=shop.path).returncode == 0
    box = shop.path / "shop" / "Box.java"
    box.write_text(box.read_text().replace("put(String s)", "put(CharSequence s)"))
    short = shop.path / "shop" / "short.go"
    short.write_text(short.read_text().replace("Short()", "Shorter()"))
    for target, qualname in (("shop/Box.java:5", "Box.put(String)"), ("shop/Box.java:4",
                             "Box.put(String)"), ("shop/short.go:3", "Short")):
        out = cortex("history", target, "--json", cwd=shop.path)
        assert json.loads(out.stdout)["target"]["qualname"] == qualname, (target, out)


def test_a_staged_rename_reads_on_in_the_old_paths_history(shop):
    """After `git mv` (not yet committed) the new path is what the user types; the index knows
    the old one. Its history, lines (edited ones too) and `what` read through the rename."""
    assert cortex("index", "--model", "none", cwd=shop.path).returncode == 0
    shop.move("shop/cart.py", "shop/basket.py")
    basket = shop.path / "shop" / "basket.py"
    basket.write_text("".join(f"# note {i}\n" for i in range(5)) + basket.read_text())
    for target in ("shop/basket.py::Cart.total", "shop/basket.py:8"):
        out = cortex("history", target, "--json", cwd=shop.path)
        data = json.loads(out.stdout)
        assert data["target"]["path"] == "shop/cart.py", out
        assert data["target"]["qualname"] == "Cart.total" and len(data["entries"]) == 2
    whole = cortex("history", "shop/basket.py", cwd=shop.path)
    assert whole.returncode == 0 and whole.stdout.startswith("shop/cart.py  —  2 commits"), whole
    what = cortex("what", cwd=shop.path)
    assert "not in the index" not in what.stdout and "(shop/cart.py)" in what.stdout, what
    unknown = cortex("history", "shop/nowhere.py", cwd=shop.path)   # no rename: as before
    assert_clean_error(unknown, "no file 'shop/nowhere.py' in the index")


def test_hotspots_under_a_path_that_holds_no_file_say_so(shop):
    assert cortex("index", "--model", "none", cwd=shop.path).returncode == 0
    none = cortex("hotspots", "--path", "nope/", cwd=shop.path)
    assert "note: no file under 'nope' at the indexed HEAD" in none.stdout, none
    some = cortex("hotspots", "--path", "shop", cwd=shop.path)
    assert "note:" not in some.stdout and "shop/cart.py" in some.stdout


def test_a_line_changed_below_a_shift_is_read_where_its_change_sits_at_head(shop):
    """With lines added above and a line of `Cart.total` edited, the edited line is `total`'s
    in the working tree; kept at its own number it fell in another symbol at HEAD."""
    assert cortex("index", "--model", "none", cwd=shop.path).returncode == 0
    cart = shop.path / "shop" / "cart.py"
    text = cart.read_text().replace("return 1", "return 2")   # line 3 of HEAD
    cart.write_text("".join(f"# note {i}\n" for i in range(40)) + text)
    edited = cortex("history", "shop/cart.py:43", cwd=shop.path)
    assert edited.returncode == 0 and edited.stdout.startswith("shop/cart.py::Cart.total"), edited


def test_a_committed_link_to_a_device_is_not_read_to_map_a_line(shop):
    """A repository may commit a link to /dev/zero: mapping `z.py:1` read it until the kernel
    killed the process. A link (or any file that is not a regular one) keeps its line."""
    (shop.path / "z.py").symlink_to("/dev/zero")
    shop.git("add", "z.py")
    shop.commit("a link", days_ago=0.5)
    assert cortex("index", "--model", "none", cwd=shop.path).returncode == 0
    import resource

    def bounded() -> None:   # should the fault come back: a MemoryError, not the OOM killer
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    out = subprocess.run([sys.executable, "-m", "cortex_cli.cli", "history", "z.py:1"],
                         cwd=shop.path, capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=str(PROJECT)), preexec_fn=bounded)
    assert out.returncode == 0 and out.stdout.startswith("z.py"), out
