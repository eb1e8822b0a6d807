"""Co-change ranking (issue 14): every path a partner, changelogs none, weak evidence, recency
ties and decay on the repository's own clock; the CLI's --explain, --half-life and --json."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cortex_core.query.blast import fused_related
from cortex_core.config import Settings
from cortex_core.query.coupling import is_changelog, related, related_to_set
from cortex_core.query.targets import TargetSpec


def _touch(repo, files, subject, days):
    for name in files:
        path = repo.path / name
        old = path.read_text() if path.exists() else ""
        repo.write(name, old + f"def f{len(old)}():\n    return {days}\n\n\n")
    return repo.commit(subject, days_ago=days)


def test_lockfiles_are_partners_and_changelogs_are_not(repo, cortex):
    for n, days in enumerate((30, 20, 10)):
        repo.write("uv.lock", f"version = {n}\n")          # recorded at file level only
        repo.write("CHANGELOG.md", f"- change {n}\n")
        repo.write("changelog.d/fragment.md", f"- {n}\n")
        _touch(repo, ["app.py"], f"bump {n}", days)
    cortex.index()
    result = related(cortex.reader(), TargetSpec("app.py"))
    assert [(p.path, p.support) for p in result.files] == [("uv.lock", 3)]
    fused = fused_related(cortex.reader(), TargetSpec("app.py"))
    assert [f.path for f in fused.files] == ["uv.lock"]
    # The lockfile as the target: its partners are found from its file-level changes.
    assert [p.path for p in related(cortex.reader(), TargetSpec("uv.lock")).files] == ["app.py"]


def test_changelog_names():
    for path in ("CHANGELOG.md", "docs/changes.rst", "HISTORY.txt", "NEWS", "changelog.d/12.md",
                 "newsfragments/3.feature", "RELEASE-NOTES.md", "whatsnew.txt",
                 "src/changes/changes.xml", "changelogs/fragments/x.yml"):
        assert is_changelog(path), path
    for path in ("changes.py", "src/history/store.py", "news_feed.py", "docs/index.md",
                 "app/changes/models.py", "templates/history.html", "templates/news.html"):
        assert not is_changelog(path), path


def test_single_shared_commit_is_weak_and_ties_go_to_the_newest(repo, cortex):
    _touch(repo, ["a.py", "old.py"], "a with old", 30)
    _touch(repo, ["a.py", "new.py"], "a with new", 20)
    _touch(repo, ["a.py", "pair.py"], "pair 1", 15)
    _touch(repo, ["a.py", "pair.py"], "pair 2", 10)
    cortex.index()
    for half_life in (0, 1825.0):
        result = related(cortex.reader(), TargetSpec("a.py"), half_life_days=half_life)
        assert [(p.path, p.support, p.weak) for p in result.files] == [
            ("pair.py", 2, False), ("new.py", 1, True), ("old.py", 1, True)], half_life
    strict = related(cortex.reader(), TargetSpec("a.py"), min_support=2)
    assert [p.path for p in strict.files] == ["pair.py"]


def test_decay_runs_on_the_repository_clock(repo, cortex):
    """Three shared commits years ago against two recent ones: with a short half-life the recent
    partner leads, without decay the older; and "recent" is measured from the newest commit, so
    the answer does not depend on the day it is asked."""
    for days in (4000, 3990, 3980):
        _touch(repo, ["a.py", "steady.py"], "steady", days)
    for days in (3010, 3000):
        _touch(repo, ["a.py", "fresh.py"], "fresh", days)
    cortex.index()
    con = cortex.reader()
    no_decay = related(con, TargetSpec("a.py"), half_life_days=0)
    assert [p.path for p in no_decay.files] == ["steady.py", "fresh.py"]
    decayed = related(con, TargetSpec("a.py"), half_life_days=180)
    assert [p.path for p in decayed.files] == ["fresh.py", "steady.py"]
    fresh = decayed.files[0]
    # Ages 10 and 0 days from the newest commit (3,000 days before today).
    assert fresh.weight == round(0.5 ** (10 / 180) + 1.0, 4)
    assert 0 < decayed.files[1].weighted_confidence < fresh.weighted_confidence <= 1


def test_cli_related_explain_half_life_and_json(repo, cortex):
    _touch(repo, ["a.py", "b.py"], "one", 30)
    _touch(repo, ["a.py", "b.py"], "two", 20)
    _touch(repo, ["a.py", "c.py"], "three", 10)
    cortex.index()

    def run(*args):
        return subprocess.run([sys.executable, "-m", "cortex_cli.cli", "related", *args,
                               "--repo", str(repo.path), "--db", str(cortex.db)],
                              capture_output=True, text=True, timeout=120)

    shown = run("a.py", "--explain")
    assert shown.returncode == 0, shown.stderr
    assert "c.py" in shown.stdout and "(1 shared commit: weak)" in shown.stdout
    # The default half-life is half of the commits read, at least 100 commits.
    assert "plain confidence" in shown.stdout
    assert "0.5^(commits since it / 100)" in shown.stdout
    default = json.loads(run("a.py", "--json").stdout)
    assert default["half_life_commits"] == 100 and default["half_life_days"] is None
    assert "0.5^(age / 1825 days)" in run("a.py", "--explain", "--half-life", "1825").stdout
    flat = run("a.py", "--half-life", "0", "--json")
    data = json.loads(flat.stdout)
    assert data["half_life_days"] == 0 and data["half_life_commits"] is None
    assert [(f["path"], f["support"], f["confidence"]) for f in data["files"]] == [
        ("b.py", 2, 0.6667), ("c.py", 1, 0.3333)]
    bad = run("a.py", "--half-life", "-3")
    assert bad.returncode == 2 and "must be 0 or a positive number" in bad.stderr


def test_history_is_read_once_per_connection_until_the_index_changes(repo, cortex):
    from cortex_core.query.coupling import _history_sets
    _touch(repo, ["a.py", "b.py"], "one", 3)
    cortex.index()
    con = cortex.reader()
    first = _history_sets(con, 30)
    assert _history_sets(con, 30) is first       # a warm server does not re-read history
    _touch(repo, ["a.py", "c.py"], "two", 2)
    cortex.index()
    assert _history_sets(con, 30) is not first   # a new commit: read again
    assert [p.path for p in related(con, TargetSpec("a.py")).files] == ["c.py", "b.py"]


def _functions(repo, n, days, names=("load", "save", "other")):
    body = "".join(f"def {name}():\n    return {n if name != 'other' else 0}\n\n\n"
                   for name in names)
    repo.write("m.py", body)
    return repo.commit(f"load and save {n}", days_ago=days)


def test_symbol_level_related_hover_and_blast(repo, cortex):
    from cortex_core.query.blast import blast
    from cortex_core.features.symbol_info import symbol_card
    from cortex_ls.render import hover
    _functions(repo, 1, 9)
    _functions(repo, 2, 8)
    _functions(repo, 3, 7)
    repo.write("m.py", repo.path.joinpath("m.py").read_text().replace("return 3\n\n\ndef save",
                                                                      "return 4\n\n\ndef save"))
    repo.commit("load alone", days_ago=6)
    cortex.index()
    con = cortex.reader()
    fused = fused_related(con, TargetSpec("m.py", "load"))
    # Symbols first: save shares 3 of load's 4 commits; `other` only the first (weak).
    assert [(p.qualname, p.support, p.weak) for p in fused.symbols] == [
        ("save", 3, False), ("other", 1, True)]
    card = symbol_card(con, repo.path, "m.py", "load")
    assert (card.coupled.qualname, card.coupled.shared, card.coupled.of) == ("save", 3, 4)
    assert "usually changes with `save` (3 of 4 commits)" in hover(card, web_base=None,
                                                                     partial=False)
    # No structural link between load and save: hidden coupling, at symbol level.
    hidden = blast(con, TargetSpec("m.py", "load")).hidden
    assert [(h.path, h.qualname, h.support) for h in hidden] == [("m.py", "save", 3)]
    # The CLI prints the symbols before the files.
    out = subprocess.run([sys.executable, "-m", "cortex_cli.cli", "related", "m.py::load",
                          "--repo", str(repo.path), "--db", str(cortex.db)],
                         capture_output=True, text=True, timeout=120).stdout
    assert out.index("symbols (co-change") < out.index("m.py::save") < out.index("files:")


def test_formatting_commits_do_not_couple_symbols(repo, cortex):
    from cortex_core.features.symbol_info import symbol_card
    _functions(repo, 1, 9)
    for n, days in ((2, 8), (3, 7)):   # load changes alone, twice
        repo.write("m.py", repo.path.joinpath("m.py").read_text().replace(
            f"return {n - 1}\n\n\ndef save", f"return {n}\n\n\ndef save"))
        repo.commit(f"load {n}", days_ago=days)
    # A commit that only reformats the whole file: not a reason to call them coupled.
    repo.write("m.py", repo.path.joinpath("m.py").read_text().replace("():\n", "( ):\n"))
    repo.commit("reformat", days_ago=5)
    cortex.index()
    con = cortex.reader()
    assert [p.support for p in related(con, TargetSpec("m.py", "load")).symbols] == [1, 1]
    assert symbol_card(con, repo.path, "m.py", "load").coupled is None


def test_related_without_target_reads_the_working_tree(repo, cortex):
    for days in (30, 20, 10):
        _touch(repo, ["a.py", "b.py", "c.py"], f"abc {days}", days)
    _touch(repo, ["b.py", "d.py"], "bd", 5)
    cortex.index()

    def run(*args):
        return subprocess.run([sys.executable, "-m", "cortex_cli.cli", "related", *args,
                               "--repo", str(repo.path), "--db", str(cortex.db), "--json"],
                              capture_output=True, text=True, timeout=120)

    nothing = run()
    assert nothing.returncode != 0 and "no uncommitted changes" in nothing.stderr
    repo.write("a.py", "def changed():\n    return 0\n")
    repo.write("new.py", "x = 1\n")                  # untracked: no history, said so
    one = json.loads(run().stdout)
    assert one["changed"] == ["a.py"] and one["unknown"] == ["new.py"]
    assert [(f["path"], f["support"]) for f in one["files"]] == [("b.py", 3), ("c.py", 3)]
    # With b.py changed too: c.py came with both three times, d.py with b.py once.
    repo.write("b.py", "def changed():\n    return 0\n")
    two = json.loads(run().stdout)
    assert [f["path"] for f in two["files"]] == ["c.py", "d.py"]
    assert two["files"][0]["with_changed"] == ["a.py", "b.py"]
    assert two["files"][0]["score"] > two["files"][1]["score"]

    # The decay line is the engine's one text, as the fused form's formula says it.
    def text(*args):
        done = subprocess.run([sys.executable, "-m", "cortex_cli.cli", "related", *args,
                               "--repo", str(repo.path), "--db", str(cortex.db)],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout
    assert "each shared commit weighted 0.5^(commits since it / 100)" in text()
    assert text("--half-life", "0").rstrip().endswith("no decay")
    assert "0.5^(age / 30 days)" in text("--half-life", "30")
    assert "0.5^(age / 30 days)" in text("a.py", "--half-life", "30", "--explain")
    assert "past the index" not in text() and two["unindexed_commits"] == 0
    # Committed but not indexed: still counted as changes, and said so.
    repo.commit("a and b, committed", days_ago=1)
    assert "(HEAD is 1 commit past the index: its changes count as yours until `cortex index` " \
           "reads them)" in text()
    assert json.loads(run().stdout)["unindexed_commits"] == 1
    # An empty answer says why: the threshold, not the history.
    assert "nothing: no other file shares 100 or more commits with the changed files" in text(
        "--min-support", "100")
    assert "no history links" not in text("--min-support", "100")


def test_a_module_and_its_tests_are_name_twins(repo, cortex):
    from cortex_core.query.coupling import name_key
    assert {name_key(p) for p in ("pkg/utils.py", "tests/test_utils.py", "utils_test.go",
                                  "UtilsTest.java", "utils.spec.ts")} == {"utils"}
    assert name_key("contest.py") == "contest" and name_key("latest.py") == "latest"
    repo.write("pkg/parser.py", "def parse():\n    return 1\n")
    repo.write("tests/test_parser.py", "def test_parse():\n    assert True\n")
    repo.commit("start", days_ago=9)
    _touch(repo, ["pkg/parser.py", "README.md"], "parser and docs", 8)
    cortex.index()
    fused = fused_related(cortex.reader(), TargetSpec("pkg/parser.py"))
    by = {f.path: f for f in fused.files}
    # One shared commit each; the test file also has the name: it leads, and says why.
    assert fused.files[0].path == "tests/test_parser.py"
    assert by["tests/test_parser.py"].relation == "same name"
    assert fused_related(cortex.reader(), TargetSpec("pkg/parser.py"),
                         twin_weight=0).files[0].path == "README.md"


def test_a_file_move_does_not_couple_its_symbols(repo, cortex):
    _functions(repo, 1, 9)
    _functions(repo, 2, 8)            # load and save change together once more
    repo.move("m.py", "pkg_m.py")
    repo.commit("move the module", days_ago=7)
    cortex.index()
    result = related(cortex.reader(), TargetSpec("pkg_m.py", "load"))
    # The two real commits count; the move, which changed no function, does not.
    assert [(p.qualname, p.support) for p in result.symbols][:1] == [("save", 2)]


def test_coupling_settings_bounds_and_changelog_target(repo, cortex):
    import pytest
    from cortex_core.config import load_settings
    from cortex_core.errors import CortexError
    config = repo.path / "settings.toml"
    config.write_text("[coupling]\nhalf_life_days = 0\n")
    assert load_settings(config).coupling.half_life_days == 0.0   # 0: no decay, as documented
    for bad in ("max_changeset = 100000000000000000000", "min_support = 0",
                "half_life_days = -1", "half_life_days = nan"):
        config.write_text(f"[coupling]\n{bad}\n")
        with pytest.raises(CortexError, match="coupling"):
            load_settings(config)
    repo.write("CHANGELOG.md", "- one\n")
    _touch(repo, ["a.py"], "one", 3)
    cortex.index()
    out = subprocess.run([sys.executable, "-m", "cortex_cli.cli", "related", "CHANGELOG.md",
                          "--repo", str(repo.path), "--db", str(cortex.db)],
                         capture_output=True, text=True, timeout=120).stdout
    assert "0 commits of the target" in out and "a changelog" in out


def test_a_reused_path_is_a_lineage_of_its_own(repo, cortex):
    """`a.py` renamed to `b.py`, then a new `a.py`: the old file's partners go with `b.py`, the
    new one's stay with `a.py` (names are reused; identity follows renames in time)."""
    _touch(repo, ["a.py", "old_partner.py"], "old a with its partner", 50)
    _touch(repo, ["a.py", "old_partner.py"], "again", 45)
    repo.move("a.py", "b.py")
    repo.commit("a.py becomes b.py", days_ago=40)
    repo.write("a.py", "def fresh():\n    return 1\n")
    repo.commit("a new a.py", days_ago=30)
    _touch(repo, ["a.py", "new_partner.py"], "new a with its partner", 20)
    _touch(repo, ["a.py", "new_partner.py"], "again", 10)
    cortex.index()
    con = cortex.reader()
    assert [(p.path, p.support) for p in related(con, TargetSpec("a.py")).files] == [
        ("new_partner.py", 2)]
    assert [(p.path, p.support) for p in related(con, TargetSpec("b.py")).files] == [
        ("old_partner.py", 2)]
    assert [p.path for p in related(con, TargetSpec("new_partner.py")).files] == ["a.py"]
    assert [p.path for p in related(con, TargetSpec("old_partner.py")).files] == ["b.py"]


def test_a_rename_cycle_ends_where_head_has_it(repo, cortex):
    """a -> b -> a: every change of the file, under either name, is `a.py`'s."""
    _touch(repo, ["a.py", "p.py"], "a with p", 50)
    repo.move("a.py", "b.py")
    repo.commit("to b", days_ago=40)
    _touch(repo, ["b.py", "q.py"], "b with q", 30)
    repo.move("b.py", "a.py")
    repo.commit("back to a", days_ago=20)
    cortex.index()
    con = cortex.reader()
    assert sorted(p.path for p in related(con, TargetSpec("a.py")).files) == ["p.py", "q.py"]
    assert [p.path for p in related(con, TargetSpec("q.py")).files] == ["a.py"]


def test_a_reused_name_deleted_again_keeps_its_own_last_life(repo, cortex):
    """`a.py` renamed to `b.py`, a new `a.py` created, then deleted: asked about `a.py`, the
    answer is the new file's partners, not `b.py`'s (its last life was its own)."""
    _touch(repo, ["a.py", "old_partner.py"], "old a with its partner", 50)
    _touch(repo, ["a.py", "old_partner.py"], "again", 45)
    repo.move("a.py", "b.py")
    repo.commit("a.py becomes b.py", days_ago=40)
    _touch(repo, ["a.py", "new_partner.py"], "new a with its partner", 30)
    _touch(repo, ["a.py", "new_partner.py"], "again", 20)
    repo.remove("a.py")
    repo.commit("drop the new a.py", days_ago=10)
    cortex.index()
    con = cortex.reader()
    gone = related(con, TargetSpec("a.py"))
    assert gone.target_commits == 3
    assert [(p.path, p.support) for p in gone.files] == [("new_partner.py", 2)]
    assert [(p.path, p.support) for p in related(con, TargetSpec("b.py")).files] == [
        ("old_partner.py", 2)]


def test_min_support_holds_for_the_structure_too(repo, cortex):
    """`--min-support 2`: a file one edge away that shared a single commit is not listed as
    sharing none; the structure only re-ranks the files with the support asked for."""
    repo.write("pkg/core.py", "def compute(x):\n    return x\n")
    repo.write("pkg/use.py", "from pkg.core import compute\n\n\ndef main():\n"
                             "    return compute(1)\n")
    repo.write("other.py", "x = 1\n")
    repo.commit("start", days_ago=50)
    for days in (40, 30):
        _touch(repo, ["pkg/core.py", "other.py"], f"core and other {days}", days)
    cortex.index()
    con = cortex.reader()
    loose = fused_related(con, TargetSpec("pkg/core.py"))
    assert {f.path: f.support for f in loose.files} == {"other.py": 3, "pkg/use.py": 1}
    assert {f.path: f.relation for f in loose.files}["pkg/use.py"] == "dependent"
    strict = fused_related(con, TargetSpec("pkg/core.py"), min_support=2)
    assert [(f.path, f.support) for f in strict.files] == [("other.py", 3)]


def test_hidden_coupling_is_not_crowded_out_by_wide_recent_commits(repo, cortex):
    """Two old commits make a pattern; two recent wide commits bring 58 single-commit partners,
    each heavier by recency (120 commits later: more than a half-life of 100 commits). Blast's
    hidden coupling (patterns only) still finds the pattern."""
    from cortex_core.query.blast import blast
    _touch(repo, ["a.py", "p.py"], "pattern 1", 3000)
    _touch(repo, ["a.py", "p.py"], "pattern 2", 2990)
    for n in range(120):
        _touch(repo, ["other.py"], f"elsewhere {n}", 2000 - n)
    _touch(repo, ["a.py"] + [f"x{i}.py" for i in range(29)], "wide 1", 20)
    _touch(repo, ["a.py"] + [f"y{i}.py" for i in range(29)], "wide 2", 10)
    cortex.index()
    con = cortex.reader()
    assert related(con, TargetSpec("a.py")).files[0].weak   # the wide commits lead `related`
    assert [(h.path, h.support) for h in blast(con, TargetSpec("a.py")).hidden] == [("p.py", 2)]


def test_mcp_and_pack_say_whose_commits_the_share_is_of(repo, cortex):
    """a.py changed ten times, b.py twice, both times with a.py: 20% of the target's commits,
    all of b.py's. The agent-facing text must not call the 20% b.py's own."""
    from cortex_core.features.context_pack import _changes_with
    from cortex_mcp.render import related as mcp_related
    for days in range(30, 22, -1):
        _touch(repo, ["a.py"], f"a alone {days}", days)
    _touch(repo, ["a.py", "b.py"], "a and b 1", 20)
    _touch(repo, ["a.py", "b.py"], "a and b 2", 10)
    cortex.index()
    con = cortex.reader()
    fused = fused_related(con, TargetSpec("a.py"))
    line = next(x for x in mcp_related(fused) if "`b.py`" in x)
    assert "(20% of the target's commits)" in line and "of its own" not in line
    item = next(i for i in _changes_with(con, TargetSpec("a.py"), Settings()) if i.title == "b.py")
    assert "(20% of the focus's commits)" in item.text


def test_a_connection_let_go_of_takes_its_history_with_it(repo, cortex):
    """The co-change cache holds no history for connections that are gone: a long-lived server
    reopening a rebuilt store, or reading many repositories, does not keep stale copies."""
    import gc
    import weakref
    from cortex_core.query.coupling import _history_sets
    _touch(repo, ["a.py", "b.py"], "one", 3)
    cortex.index()
    con = cortex.reader()
    sets = weakref.ref(_history_sets(con, 30))
    assert sets() is not None and _history_sets(con, 30) is sets()
    con.close()
    del con
    gc.collect()
    assert sets() is None


def test_the_folder_back_off_keeps_the_targets_own_folder(repo, cortex):
    """One commit across eleven folders: every folder ties with the target's own. The own folder
    is always among those read, whatever its name, so its files get their back-off."""
    from cortex_core.query.coupling import _history_sets, folder_scores
    from cortex_core.query.targets import resolve
    for path in ["zz/target.py", "zz/sibling.py"] + [f"d{i:02d}/m.py" for i in range(10)]:
        repo.write(path, "x = 1\n")
    repo.commit("start", days_ago=20)
    repo.write("zz/sibling.py", "x = 2\n")
    repo.commit("sibling alone", days_ago=10)
    cortex.index()
    con = cortex.reader()
    scores = folder_scores(con, _history_sets(con, 30), resolve(con, TargetSpec("zz/target.py")))
    assert abs(scores["zz/sibling.py"] - 2 / 3) < 1e-9   # 2 of the folder's 3 commits
    assert len(scores) == 10   # the own folder and the nine that change with it most


def test_related_counts_side_branches_that_history_leaves_out(repo, cortex):
    """A side branch changes a.py with b.py; its merge keeps main's a.py (`-s ours`). `history`
    leaves the side commit out as `git log -- a.py` does; co-change counts it, as association
    rules over every non-merge commit do, and the header says what it counts."""
    _touch(repo, ["a.py"], "base", 5)
    _touch(repo, ["b.py"], "b", 5)
    repo.git("checkout", "-q", "-b", "side")
    _touch(repo, ["a.py", "b.py"], "side: a and b", 4)
    repo.git("checkout", "-q", "main")
    _touch(repo, ["a.py"], "main: a", 3)
    repo.git("merge", "-q", "-s", "ours", "-m", "merge side", "side")
    cortex.index()
    from cortex_core.query.history import history
    assert history(cortex.reader(), TargetSpec("a.py")).total == 2
    fused = fused_related(cortex.reader(), TargetSpec("a.py"))
    assert fused.target_commits == 3
    assert [(f.path, f.support) for f in fused.files] == [("b.py", 1)]
    out = subprocess.run([sys.executable, "-m", "cortex_cli.cli", "related", "a.py",
                          "--repo", str(repo.path), "--db", str(cortex.db)],
                         capture_output=True, text=True, timeout=120).stdout
    assert ("3 commits of the target, side branches' included, none of over 30 files"
            in out.splitlines()[0])


def test_hidden_coupling_leaves_out_callees_bases_and_containers(repo, cortex):
    """A review found blast listing as "no structural link" the functions a method calls, its
    class's base class and its own class: only dependents (callers) were left out."""
    from cortex_core.query.blast import blast
    for n, days in enumerate((9, 8, 7)):
        repo.write("m.py", f"class Base:\n    x = {n}\n\n\nclass Shop(Base):\n    y = {n}\n\n"
                           f"    def send(self):\n        return helper() + {n}\n\n\n"
                           f"def helper():\n    return {n}\n\n\ndef unrelated():\n    return {n}\n")
        repo.commit(f"all {n}", days_ago=days)
    cortex.index()
    con = cortex.reader()
    assert [p.qualname for p in related(con, TargetSpec("m.py", "Shop.send")).symbols
            if not p.weak] == ["Base", "Shop", "helper", "unrelated"]
    hidden = blast(con, TargetSpec("m.py", "Shop.send")).hidden
    assert [h.qualname for h in hidden if h.qualname] == ["Base", "unrelated"]
    # The class's members count as the class: its method calls helper.
    hidden = blast(con, TargetSpec("m.py", "Shop")).hidden
    assert [h.qualname for h in hidden if h.qualname] == ["unrelated"]


def test_the_hovers_coupled_counts_agree_with_its_count_of_changes(repo, cortex):
    """requests' Request.__init__ said "97 changes" and "(6 of 14 commits)": co-change gave the
    commits before a rename to the renamed-away name (deleted since), history keeps them. The
    line now counts over the two histories the hover shows."""
    from cortex_core.features.symbol_info import symbol_card
    from cortex_core.query.coupling import strongest_symbol
    from cortex_core.query.history import symbol_history
    from cortex_core.query.targets import resolve
    from cortex_ls.render import hover

    def write(n: int, old: str | None, load: str | None) -> None:
        repo.write("m.py", (f"def old_load():\n    {old}\n\n\n" if old else "")
                   + (f"def load():\n    {load}\n\n\n" if load else "")
                   + f"def save():\n    return {n}\n")
    for n in range(4):
        write(n, None, f"return {n} + 0")
        repo.commit(f"load and save {n}", days_ago=20 - n)
    write(4, "return 3 + 0", None)
    repo.commit("load renamed old_load", days_ago=12)
    write(5, "return 3 + 0", "return [x for x in range(9)]")
    repo.commit("a new load", days_ago=11)
    write(5, None, "return [x for x in range(9)]")
    repo.commit("old_load is gone", days_ago=10)
    for n in range(6, 8):
        write(n, None, f"return [x for x in range({n})]")
        repo.commit(f"load and save {n}", days_ago=9 - n)
    cortex.index()
    con = cortex.reader()
    load = resolve(con, TargetSpec("m.py", "load"))
    mine = {e.commit.sha for e in symbol_history(con, load.symbol_id) if e.substantive}
    save = resolve(con, TargetSpec("m.py", "save"))
    theirs = {e.commit.sha for e in symbol_history(con, save.symbol_id) if e.substantive}
    assert len(mine) == 8   # its whole lineage: history follows no rename into a dead name
    assert strongest_symbol(con, load).of < 8   # co-change counts from the rename only
    card = symbol_card(con, repo.path, "m.py", "load")
    assert (card.changes, card.coupled.qualname) == (8, "save")
    assert (card.coupled.shared, card.coupled.of) == (len(mine & theirs), card.changes)
    assert f"({len(mine & theirs)} of 8 commits)" in hover(card, web_base=None, partial=False)


def test_a_function_split_in_two_changes_with_its_half_only_after_the_split(repo, cortex):
    """A review: requests' get_environ_proxies said "(13 of 14 commits)" with the
    should_bypass_proxies split out of it, 8 of them its own changes from before the split,
    which both histories hold. Those are one function's changes, not changes together."""
    from cortex_core.features.symbol_info import symbol_card
    from cortex_core.query.history import symbol_history, symbol_history_commits
    body = "".join(f"    if key == {i}:\n        return table[{i}] + offset\n" for i in range(12))

    def write(n: int, split: bool) -> None:
        code = body.replace("offset", f"offset * {n}")
        repo.write("m.py", ("def load(key, table, offset):\n    return parse(key, table, offset)\n"
                            f"\n\ndef parse(key, table, offset):\n{code}    return {n}\n")
                   if split else f"def load(key, table, offset):\n{code}    return {n}\n")
    for n in range(3):
        write(n, False)
        repo.commit(f"load {n}", days_ago=20 - n)
    write(3, True)
    repo.commit("split parse out of load", days_ago=10)
    for n in range(4, 6):
        write(n, True)
        repo.write("m.py", repo.path.joinpath("m.py").read_text().replace(
            "return parse(key, table, offset)", f"return parse(key, table, offset) or {n}"))
        repo.commit(f"load and parse {n}", days_ago=10 - n)
    cortex.index()
    con = cortex.reader()
    card = symbol_card(con, repo.path, "m.py", "load")
    parse = [e.commit.subject for e in symbol_history(con, card.coupled.symbol_id)]
    assert parse[-3:] == ["load 2", "load 1", "load 0"]   # it continues load's history
    assert (card.changes, card.coupled.qualname) == (6, "parse")
    assert (card.coupled.shared, card.coupled.of) == (3, 6)   # the split and the two after it
    # The partner's commits are read grouped: the same set as its history's entries.
    for (ident,) in con.execute("select id from symbols"):
        assert symbol_history_commits(con, ident) == {
            e.commit.sha: (e.path, e.name) for e in symbol_history(con, ident) if e.substantive}


def test_the_hover_never_names_the_targets_own_members_or_holder(repo, cortex):
    """A review found requests' Session hover saying it usually changes with Session.__init__,
    its own method: members and the class holding a method are left out of that one line."""
    from cortex_core.query.coupling import strongest_symbol
    from cortex_core.query.targets import resolve
    for n, days in enumerate((9, 8, 7)):
        init = min(n, 1)   # __init__ changes in two of the three commits only
        repo.write("m.py", f"class Shop:\n    limit = {n}\n\n    def __init__(self):\n"
                           f"        self.n = {init}\n\n    def run(self):\n"
                           f"        def step():\n            return {n}\n"
                           f"        return step() + {n}\n\n\ndef audit():\n    return {n}\n")
        repo.commit(f"all {n}", days_ago=days)
    cortex.index()
    con = cortex.reader()

    def coupled(qualname: str) -> str | None:
        found = strongest_symbol(con, resolve(con, TargetSpec("m.py", qualname)))
        return found.qualname if found else None
    assert "Shop.run" in [p.qualname for p in related(   # related still lists its members
        con, TargetSpec("m.py", "Shop")).symbols if not p.weak]
    assert coupled("Shop") == "audit"                     # not Shop.run, nor Shop.__init__
    assert coupled("Shop.run") == "audit"                 # not Shop, nor its nested step
    assert coupled("Shop.__init__") not in ("Shop", None)   # a sibling may be named


def test_hidden_coupling_leaves_out_the_targets_other_overloads(repo, cortex):
    """A review: blast on a Java overload listed its sibling overload as hidden coupling, which
    the structure counts as the same node; likewise a Python property and its setter."""
    from cortex_core.query.blast import blast
    for n, days in enumerate((9, 8, 7)):
        repo.write("m.py", f"class Box:\n    @property\n    def size(self):\n"
                           f"        return self._s + {n}\n\n    @size.setter\n"
                           f"    def size(self, v):\n        self._s = v - {n}\n\n\n"
                           f"def other():\n    return {n}\n")
        repo.commit(f"all {n}", days_ago=days)
    cortex.index()
    con = cortex.reader()
    assert "Box.size[setter]" in [p.qualname for p in related(
        con, TargetSpec("m.py", "Box.size")).symbols if not p.weak]
    assert [h.qualname for h in blast(con, TargetSpec("m.py", "Box.size")).hidden
            if h.qualname] == ["other"]


def test_a_moved_functions_old_file_is_not_its_partner_for_its_life_there(repo, cortex):
    """A function moved out of a file changed that file in every commit of its life there: the
    file changed because the function was in it. Only the commits after the move, where the
    file changed beside it, make the old file a partner (urfave/cli's `Command.run` had its old
    `command.go` first, 143 shared commits, 129 of them its own life there)."""
    body = "def parse(text):\n    words = text.split()\n    return [w.strip() for w in words if w]\n"
    other = "def other():\n    return {}\n"
    repo.write("old.py", body.replace("if w]", "if w] # 0") + "\n\n" + other)
    repo.commit("add parse", days_ago=30)
    for i in range(1, 5):
        repo.write("old.py", body.replace("if w]", f"if w] # {i}") + "\n\n" + other)
        repo.commit(f"tune parse {i}", days_ago=30 - i)
    repo.write("old.py", other)
    repo.write("new.py", body.replace("if w]", "if w] # 4"))
    repo.commit("move parse to new.py", days_ago=20)
    repo.write("new.py", body.replace("if w]", "if w] # 5"))
    repo.write("old.py", other.replace("{}", "{'k': 1}"))
    repo.commit("parse and other, together", days_ago=10)
    cortex.index()
    moved = related(cortex.reader(), TargetSpec("new.py", "parse"))
    assert moved.target_commits == 7        # its whole lineage, the life in old.py included
    assert [(p.path, p.support) for p in moved.files] == [("old.py", 1)]
    fused = fused_related(cortex.reader(), TargetSpec("new.py", "parse"))
    assert {p.path: p.support for p in fused.files}.get("old.py") == 1
    whole = related(cortex.reader(), TargetSpec("new.py"))   # a file target: as before
    assert [(p.path, p.support) for p in whole.files] == [("old.py", 2)]


def test_looking_up_a_symbols_homes_leaves_the_cached_history_as_it_was(repo, cortex):
    """A query must not change what the next one reads: `Lineage.last_seen` decides where a
    reused name's changes go, and the homes' look-up reads rows the cached history left out
    (the reformatting of a reused name, in one of the target's commits)."""
    from cortex_core.query.coupling import _history_sets
    helper = "def helper(items):\n    return [i * 2 for i in items if i]\n"
    doubled = helper.replace("def helper", "def doubled")
    again = "def helper(text):\n    return text.strip().lower()\n"
    repo.write("h.py", helper)
    repo.write("t.py", "def target(x):\n    return x + 1\n")
    repo.commit("add", days_ago=30)
    repo.write("h.py", doubled)
    repo.commit("rename helper", days_ago=25)
    repo.write("h.py", doubled + "\n\n" + again)               # the name used again
    repo.commit("a new helper", days_ago=20)
    repo.write("h.py", doubled + "\n\n" + again.replace("text.strip()", "text.strip( )"))
    repo.write("t.py", "def target(x):\n    return x + 2\n")
    repo.commit("target, and a reformat of the new helper", days_ago=10)
    cortex.index()
    con = cortex.reader()
    h = _history_sets(con, 30)
    seen = (dict(h.symbol_canon.last_seen), dict(h.file_canon.last_seen))
    related(con, TargetSpec("t.py", "target"))
    assert (h.symbol_canon.last_seen, h.file_canon.last_seen) == seen


def test_a_function_that_lived_on_as_a_wrapper_keeps_its_past_in_co_change(repo, cortex):
    """ky's `Ky.#retry` became a wrapper of a new `#retryFromError`, which took its code: its
    history goes on with all 29 commits, but `related` counted 1, its own past given to the new
    half only, so every partner was "1 shared commit: weak". Both halves hold the past now, as
    their histories do, and are not each other's partner in it: that was one function."""
    from cortex_core.query.history import history
    body = "".join(f"    const v{i} = n * {i} + {i * 7} - (n >> {i % 3});\n" for i in range(12))

    def write(n: int, split: bool) -> None:
        code = body + f"    return v0 + {n} + v11;\n"
        repo.write("k.ts", "export class K {\n" + (
            f"  run(n: number): number {{\n    return this.#inner(n, {n});\n  }}\n\n"
            f"  #inner(n: number, extra: number): number {{\n    if (extra) {{\n"
            f"      return 0;\n    }}\n{code}  }}\n}}\n"
            if split else f"  run(n: number): number {{\n{code}  }}\n}}\n"))
    for n in range(3):
        write(n, False)
        repo.write("notes.ts", f"export const seen = {n};\n")
        repo.commit(f"run and notes {n}", days_ago=30 - n)
    write(3, True)
    repo.commit("split inner out of run", days_ago=20)
    write(4, True)
    repo.write("notes.ts", "export const seen = 4;\n")
    repo.commit("run and notes 4", days_ago=10)
    cortex.index()
    con = cortex.reader()
    run = related(con, TargetSpec("k.ts", "K.run"))
    shown = [e.commit.subject for e in history(con, TargetSpec("k.ts", "K.run")).entries]
    assert run.target_commits == len(shown) == 5
    assert [(p.path, p.support) for p in run.files] == [("notes.ts", 4)]
    inner = related(con, TargetSpec("k.ts", "K.#inner"))
    assert inner.target_commits == 5     # the split, the one after, and run's three before
    # The halves changed together in the split and after it, not in run's own past.
    assert [(p.qualname, p.support) for p in run.symbols if p.qualname == "K.#inner"] == [
        ("K.#inner", 2)]
    assert [(p.qualname, p.support) for p in inner.symbols if p.qualname == "K.run"] == [
        ("K.run", 2)]


_WORK_BODY = "".join(f"    x{i} = {i} * 7 + (a >> {i % 3}) - b\n" for i in range(12))


def _write_work(repo, n: int, split: bool, name: str = "work") -> None:
    """a.py: `work` (the wrapper `name` of `_work_impl` once split) and `other`, version n."""
    code = _WORK_BODY + f"    return a + b + {n}\n"
    work = (f"def {name}(a, b):\n    log('x')\n    return _work_impl(a, b)\n\n\n"
            f"def _work_impl(a, b):\n{code}" if split else f"def {name}(a, b):\n{code}")
    repo.write("a.py", f"{work}\n\ndef other():\n    return {n}\n")


def _split_work(repo) -> None:
    """Four commits changing `work` and `other`, then `_work_impl` split out of `work`."""
    for n in range(4):
        _write_work(repo, n, False)
        repo.commit(f"work and other {n}", days_ago=30 - n)
    _write_work(repo, 4, True)
    repo.commit("split _work_impl out of work", days_ago=20)


@pytest.mark.parametrize("aggregate", ["max", "share"])
def test_a_split_half_leaves_only_its_own_rule_in_a_set(repo, cortex, aggregate):
    """A review: with `work` (a wrapper of `_work_impl` since a split) in a set beside `other`,
    `_work_impl` lost the commits it shares with `other` from before the split (7 → 3): the
    split halves' shared past was dropped from every item's rule, not from `work`'s alone."""
    _split_work(repo)
    for n in (5, 6):
        _write_work(repo, n, True)
        repo.commit(f"work and other {n}", days_ago=20 - n)
    cortex.index()
    con = cortex.reader()

    def support(symbols):
        found = related_to_set(con, ["a.py"], symbols=symbols, symbol_aggregate=aggregate)
        return {s.qualname: s.support for s in found.symbols}
    alone = support([("a.py", "other")])
    assert alone["_work_impl"] == 7                     # its past is work's, all with other
    both = support([("a.py", "other"), ("a.py", "work")])
    assert both["_work_impl"] == 7                      # other's rule keeps all 7


def test_a_wrapper_renamed_after_its_split_keeps_its_past(repo, cortex):
    """A second review: a wrapper renamed after the split (work -> work2) is dead under its old
    identity, and the split was dropped with it: `other`'s partner work2 had 1 shared commit
    where its history shows 5."""
    _split_work(repo)
    _write_work(repo, 5, True)
    repo.commit("work and other 5", days_ago=15)
    _write_work(repo, 5, True, "work2")
    repo.commit("rename work", days_ago=10)
    cortex.index()
    con = cortex.reader()
    found = {p.qualname: p.support for p in related(con, TargetSpec("a.py", "other")).symbols}
    assert found["work2"] == 5 and found["_work_impl"] == 6   # the wrapper: w0-w3, the split
