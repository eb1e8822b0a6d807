"""Co-change's back-off and fusion (issue 14): a symbol ranked by its file's co-change and by
the calls; a file by its folder's co-change; the half-life on the history's clock of commits."""

from __future__ import annotations

import subprocess
import sys

from cortex_core.query.blast import fused_related
from cortex_core.query.coupling import HalfLife, _history_sets, related
from cortex_core.query.targets import TargetSpec


def _module(**bodies) -> str:
    return "".join(f"def {name}():\n    return {value}\n\n\n" for name, value in bodies.items())


def test_a_symbol_backs_off_to_its_files_co_change(repo, cortex):
    """load shares one commit with save and none with n.py's functions, but n.py changes with
    m.py: use (changed in each of n.py's commits) ranks above idle (in one), both after save;
    z.py never changes with m.py and stays out."""
    repo.write("n.py", _module(use=1, idle=1))
    repo.write("z.py", _module(zed=1))
    repo.commit("n and z", days_ago=50)
    repo.write("m.py", _module(load=1, save=1))
    repo.commit("m", days_ago=45)
    for value, days in ((2, 30), (3, 20)):
        repo.write("m.py", _module(load=1, save=value))
        repo.write("n.py", _module(use=value, idle=1))
        repo.commit(f"save and use {value}", days_ago=days)
    repo.write("m.py", _module(load=4, save=3))
    repo.write("z.py", _module(zed=2))
    repo.commit("load and z", days_ago=10)
    repo.write("z.py", _module(zed=3))
    repo.commit("z alone", days_ago=5)
    cortex.index()
    con = cortex.reader()
    # load shares "load and z" with zed: co-change alone lists it, after save (newer commit).
    alone = related(con, TargetSpec("m.py", "load"), file_prior=0)
    assert [(p.qualname, p.support) for p in alone.symbols] == [("zed", 1), ("save", 1)]
    found = related(con, TargetSpec("m.py", "load"))
    ranked = [(p.path, p.qualname, p.support, p.relation) for p in found.symbols]
    assert ranked[0] == ("m.py", "save", 1, "same file")
    assert ranked.index(("n.py", "use", 0, None)) < ranked.index(("n.py", "idle", 0, None))
    by = {p.qualname: p for p in found.symbols}
    assert by["use"].prior > by["idle"].prior > 0 and by["use"].weak
    assert by["save"].score > by["use"].score
    # Asked for patterns, the back-off adds nothing: no symbol shares two commits with load.
    assert related(con, TargetSpec("m.py", "load"), min_support=2).symbols == []


def test_a_symbol_ranks_its_callers_and_callees_with_no_history(repo, cortex):
    repo.write("h.py", _module(helper=1, unrelated=1))
    repo.commit("helpers", days_ago=40)
    repo.write("m.py", "from h import helper\n\n\ndef load():\n    return helper()\n")
    repo.write("c.py", "from m import load\n\n\ndef caller():\n    return load()\n")
    repo.commit("load and its caller", days_ago=30)
    for n, days in ((2, 20), (3, 10)):
        repo.write("m.py", f"from h import helper\n\n\ndef load():\n    return helper() + {n}\n")
        repo.commit(f"load {n}", days_ago=days)
    cortex.index()
    con = cortex.reader()
    fused = fused_related(con, TargetSpec("m.py", "load"))
    by = {p.qualname: p for p in fused.symbols}
    assert by["helper"].relation == "callee" and by["helper"].support == 0
    assert by["caller"].relation == "caller" and by["caller"].support == 1
    assert by["helper"].structure == 1.0
    assert "unrelated" not in by
    # The call outranks what only its history shares: caller (1 shared commit and a call) first.
    assert fused.symbols[0].qualname == "caller"
    # Without the structure, helper is no candidate: it never changed with load.
    assert "helper" not in {p.qualname for p in related(con, TargetSpec("m.py", "load"),
                                                        file_prior=0).symbols}
    out = subprocess.run([sys.executable, "-m", "cortex_cli.cli", "related", "m.py::load",
                          "--explain", "--repo", str(repo.path), "--db", str(cortex.db)],
                         capture_output=True, text=True, timeout=120).stdout
    assert "h.py::helper  [callee]" in out and "p 0.0000, s 1.0000, t 0, no shared commit" in out


def test_a_symbol_of_the_same_name_is_a_partner_where_history_is_thin(repo, cortex):
    """parse never changed with its test or with the other parser's parse, and nothing calls
    them: the names alone rank them (t), ahead of what shares nothing at all, and less as
    parse's own history grows. A name more than five others share (run) and a special method
    (__init__) bring no one."""
    runs = "".join(f"class R{i}:\n    def run(self):\n        return {i}\n\n\n" for i in range(7))
    repo.write("runs.py", runs)
    repo.write("tests/test_lib.py", "def test_parse():\n    assert True\n\n\n"
                                    "def test_other():\n    assert True\n")
    def parser(name: str, returns: str) -> str:
        return (f"class {name}:\n    def __init__(self):\n        self.x = 1\n\n"
                f"    def parse(self, text):\n        return {returns}\n")
    repo.write("xml_lib.py", parser("XmlParser", "text"))
    repo.commit("tests, runners and the xml parser", days_ago=40)
    repo.write("lib.py", parser("Parser", "text"))
    repo.commit("lib", days_ago=30)
    cortex.index()
    con = cortex.reader()
    fused = fused_related(con, TargetSpec("lib.py", "Parser.parse"))
    by = {(p.path, p.qualname): p for p in fused.symbols}
    for twin in (("tests/test_lib.py", "test_parse"), ("xml_lib.py", "XmlParser.parse")):
        assert by[twin].relation == "same name" and by[twin].twin == 1.0
        assert by[twin].support == 0 and by[twin].score == 1.0   # 2 × 1 / (1 + 1 commit)
    assert ("tests/test_lib.py", "test_other") not in by
    # What ranks above them shares parse's commit (its class, its file's __init__).
    first_twin = min(n for n, p in enumerate(fused.symbols) if p.twin)
    assert first_twin > 0 and all(p.support == 1 for p in fused.symbols[:first_twin])
    assert "t = 1 for a symbol of the target's name" in fused.formula
    # Co-change alone does not read names; the fused ranking can be asked not to.
    assert not any(p.twin for p in related(con, TargetSpec("lib.py", "Parser.parse")).symbols)
    off = fused_related(con, TargetSpec("lib.py", "Parser.parse"), symbol_twin_weight=0)
    assert ("xml_lib.py", "XmlParser.parse") not in {(p.path, p.qualname) for p in off.symbols}
    # A name shared by seven symbols, and __init__, bring none.
    assert not any(p.twin for p in fused_related(con, TargetSpec("runs.py", "R0.run")).symbols)
    init = fused_related(con, TargetSpec("lib.py", "Parser.__init__")).symbols
    assert ("xml_lib.py", "XmlParser.__init__") not in {(p.path, p.qualname) for p in init}
    # Twice the history, half the share.
    repo.write("lib.py", parser("Parser", "text.strip()"))
    repo.commit("strip", days_ago=20)
    repo.write("lib.py", parser("Parser", "text.strip() or None"))
    repo.commit("none", days_ago=10)
    cortex.index()
    later = {(p.path, p.qualname): p for p in fused_related(
        cortex.reader(), TargetSpec("lib.py", "Parser.parse")).symbols}
    assert later[("xml_lib.py", "XmlParser.parse")].score == 0.5   # 2 × 1 / (1 + 3 commits)
    out = subprocess.run([sys.executable, "-m", "cortex_cli.cli", "related", "lib.py::Parser.parse",
                          "--explain", "--repo", str(repo.path), "--db", str(cortex.db)],
                         capture_output=True, text=True, timeout=120).stdout
    assert "xml_lib.py::XmlParser.parse  [same name]" in out and ", t 1, no shared commit" in out


def test_symbol_name_keys():
    from cortex_core.query.coupling import symbol_name_key
    for name in ("test_parse", "TestParse", "testParse", "parse_test", "ParseTest", "parse_tests"):
        assert symbol_name_key(name, in_test=True) == "parse", name
        assert symbol_name_key(name) != "parse", name     # affixes are a test's only
    assert symbol_name_key("URLTest", in_test=True) == "url"
    # Go's TestParse_Error tests a scenario of Parse as often as a method Error: left whole.
    assert symbol_name_key("TestParse_Error", in_test=True) == "parse_error"
    from cortex_core.query.coupling import _place
    assert _place("Outer.Entry.Entry(Map.Entry<K, V>)", "Entry") == "Outer.Entry"
    assert _place("P.m(String).new Runnable.run()", "run") == "P.m(String).new Runnable"
    assert _place("parse", "parse") == ""
    assert symbol_name_key("parse") == symbol_name_key("Parse") == "parse"
    assert symbol_name_key("get$Size") == "get$size"
    assert symbol_name_key("TestRule") == "testrule"     # a JUnit interface, not a test
    assert symbol_name_key("testing", in_test=True) == "testing"   # no affix
    assert symbol_name_key("Contest", in_test=True) == "contest"
    assert symbol_name_key("test_it", in_test=True) == "test_it"   # too short once stripped
    assert symbol_name_key("TestÜber", in_test=True) == "über"
    for none in ("__init__", "ab", "new Runnable", "lambda$0 x", "operator==", "~Foo"):
        assert symbol_name_key(none) is None, none


def test_java_methods_are_twins_by_name_not_by_parameters(repo, cortex):
    """A Java method's qualified name holds its parameters: the name alone makes the twin, so
    Parser.parse(String) and ParserTest.testParse() meet, and two methods taking one type do
    not (a review's case: List<String>) parameters made load and print twins)."""
    repo.write("src/Parser.java", "public class Parser {\n  public int parse(String s) {\n"
                                  "    return s.length();\n  }\n}\n")
    repo.write("test/ParserTest.java", "public class ParserTest {\n  public void testParse() {\n"
                                       "    new Parser().parse(\"x\");\n  }\n}\n")
    repo.write("src/Loader.java", "public class Loader {\n  public int load(java.util.List<String> a) {"
                                  "\n    return a.size();\n  }\n}\n")
    repo.write("src/Printer.java", "public class Printer {\n  public int print(java.util.List<String> b)"
                                   " {\n    return b.size();\n  }\n}\n")
    repo.commit("four classes", days_ago=3)
    cortex.index()
    con = cortex.reader()
    fused = fused_related(con, TargetSpec("src/Parser.java", "Parser.parse(String)"))
    twins = {(p.path, p.qualname) for p in fused.symbols if p.twin}
    assert twins == {("test/ParserTest.java", "ParserTest.testParse()")}
    loader = fused_related(con, TargetSpec("src/Loader.java", "Loader.load(java.util.List<String>)"))
    assert not any(p.twin for p in loader.symbols)
    # Six overloads are one place: the test still meets them all.
    repo.write("src/Parser.java", "public class Parser {\n" + "".join(
        f"  public int parse({t} s) {{\n    return 1;\n  }}\n"
        for t in ("String", "int", "long", "char", "byte", "short")) + "}\n")
    repo.commit("overloads", days_ago=2)
    cortex.index()
    con = cortex.reader()
    test = fused_related(con, TargetSpec("test/ParserTest.java", "ParserTest.testParse()"),
                         top_k=20)
    assert len([p for p in test.symbols if p.twin]) == 6
    # An overload's twins: its test and its siblings (overloads change together).
    overload = fused_related(con, TargetSpec("src/Parser.java", "Parser.parse(String)"))
    assert len({p.qualname for p in overload.symbols if p.twin}) == 6
    # Eleven symbols of one name are too many to mean anything: none is a twin.
    repo.write("src/Parser.java", "public class Parser {\n" + "".join(
        f"  public int parse({t} s) {{\n    return 1;\n  }}\n"
        for t in ("String", "int", "long", "char", "byte", "short", "float", "double",
                  "boolean", "Object", "Number")) + "}\n")
    repo.commit("more overloads", days_ago=1)
    cortex.index()
    crowded = fused_related(cortex.reader(), TargetSpec("test/ParserTest.java",
                                                        "ParserTest.testParse()"))
    assert not any(p.twin for p in crowded.symbols)
    con = cortex.reader()
    # A test method and its class share a name: no twin of each other.
    assert ("test/ParserTest.java", "ParserTest") not in {
        (p.path, p.qualname) for p in test.symbols if p.twin}


def test_tests_outside_the_structures_languages_and_inline_rust_tests_are_tests(repo, cortex):
    """Test affixes are dropped by the file's path, whatever its language (the structure pass
    reads none of Ruby), and in Rust's inline `mod tests`."""
    repo.write("lib/parser.rb", "class Parser\n  def parse(text)\n    text\n  end\nend\n")
    repo.write("test/parser_test.rb", "class ParserTest\n  def test_parse\n    Parser.new.parse(1)\n"
                                      "  end\nend\n")
    repo.write("src/lexer.rs", "pub fn tokenize(s: &str) -> usize {\n    s.len()\n}\n\n"
                               "#[cfg(test)]\nmod tests {\n    #[test]\n    fn test_tokenize() {\n"
                               "        assert_eq!(super::tokenize(\"ab\"), 2);\n    }\n}\n")
    repo.commit("ruby and rust", days_ago=3)
    cortex.index()
    con = cortex.reader()
    ruby = fused_related(con, TargetSpec("lib/parser.rb", "Parser.parse"))
    assert {(p.path, p.qualname) for p in ruby.symbols if p.twin} == {
        ("test/parser_test.rb", "ParserTest.test_parse")}
    rust = fused_related(con, TargetSpec("src/lexer.rs", "tokenize"))
    assert {p.qualname for p in rust.symbols if p.twin} == {"tests.test_tokenize"}


def test_a_file_backs_off_to_its_folders_co_change(repo, cortex):
    repo.write("pkg/a.py", "A = 1\n")
    repo.write("pkg/b.py", "B = 1\n")
    repo.write("other/c.py", "C = 1\n")
    repo.commit("start", days_ago=60)
    for n, days in ((2, 50), (3, 40), (4, 30)):
        repo.write("pkg/b.py", f"B = {n}\n")
        repo.write("other/c.py", f"C = {n}\n")
        repo.commit(f"b and c {n}", days_ago=days)
    repo.write("pkg/a.py", "A = 2\n")
    repo.write("docs/a.md", "a\n")
    repo.commit("a and its docs", days_ago=20)
    repo.write("pkg/a.py", "A = 3\n")
    repo.commit("a alone", days_ago=10)
    cortex.index()
    con = cortex.reader()
    # pkg/a.py shares "start" with b.py and c.py; b.py is in its folder (a share of 1), c.py's
    # folder changed in one of a.py's three commits (1/3).
    fused = fused_related(con, TargetSpec("pkg/a.py"))
    by = {f.path: f for f in fused.files}
    assert by["pkg/b.py"].folder == round(4 / 7, 4) and by["other/c.py"].folder == 0.3333
    assert [f.path for f in fused.files] == ["docs/a.md", "pkg/b.py", "other/c.py"]
    plain = fused_related(con, TargetSpec("pkg/a.py"), folder_prior=0)
    # Without the folders, b.py and c.py tie on the one commit: by name.
    assert [f.path for f in plain.files] == ["docs/a.md", "other/c.py", "pkg/b.py"]


def test_a_folder_with_no_shared_commit_brings_its_busy_files(repo, cortex):
    repo.write("pkg/a.py", "A = 1\n")
    repo.commit("a", days_ago=60)
    repo.write("pkg/busy.py", "B = 1\n")
    repo.write("pkg/quiet.py", "Q = 1\n")
    repo.commit("b and q", days_ago=50)
    for n, days in ((2, 40), (3, 30)):
        repo.write("pkg/busy.py", f"B = {n}\n")
        repo.commit(f"busy {n}", days_ago=days)
    repo.write("pkg/a.py", "A = 2\n")
    repo.commit("a again", days_ago=20)
    cortex.index()
    fused = fused_related(cortex.reader(), TargetSpec("pkg/a.py"))
    assert [(f.path, f.support) for f in fused.files] == [("pkg/busy.py", 0), ("pkg/quiet.py", 0)]
    assert fused.files[0].folder > fused.files[1].folder
    assert fused_related(cortex.reader(), TargetSpec("pkg/a.py"), min_support=2).files == []


def test_the_half_life_is_half_of_the_historys_commits(repo, cortex):
    """Age counts the commits after a shared commit: a quiet year ages nothing, a busy month
    ages a lot; the half-life is half of the commits read."""
    repo.write("a.py", "A = 1\n")
    repo.write("b.py", "B = 1\n")
    repo.commit("old pair", days_ago=3000)
    for n in range(219):   # a busy month, years later, elsewhere
        repo.write("busy.py", f"N = {n}\n")
        repo.commit(f"busy {n}", days_ago=100 - n / 10)
    repo.write("a.py", "A = 2\n")
    repo.write("c.py", "C = 1\n")
    repo.commit("new pair", days_ago=1)
    cortex.index()
    con = cortex.reader()
    h = _history_sets(con, 30)
    assert h.half_life(None) == HalfLife(commits=110)   # 221 commits read: half, rounded
    assert h.half_life(0) == HalfLife(days=0) and h.half_life(90) == HalfLife(days=90)
    found = related(con, TargetSpec("a.py"))
    assert (found.half_life_commits, found.half_life_days) == (110, None)
    weights = {p.path: p.weight for p in found.files}
    assert weights["c.py"] == 1.0   # the newest commit: age 0
    assert weights["b.py"] == round(0.5 ** (220 / 110), 4)   # 220 commits after it: 0.25
    in_days = related(con, TargetSpec("a.py"), half_life_days=365)
    assert (in_days.half_life_commits, in_days.half_life_days) == (None, 365)
    assert {p.path: p.weight for p in in_days.files}["b.py"] == round(0.5 ** (2999 / 365), 4)
    for none in (0, -1, float("nan")):   # only a positive half-life decays (the API unchecked)
        flat = related(con, TargetSpec("a.py"), half_life_days=none)
        assert {p.path: p.weight for p in flat.files} == {"b.py": 1.0, "c.py": 1.0}, none


def test_a_quiet_history_does_not_age_and_a_short_one_decays_gently(repo, cortex):
    repo.write("a.py", "A = 1\n")
    repo.write("b.py", "B = 1\n")
    repo.commit("old", days_ago=3000)
    repo.write("a.py", "A = 2\n")
    repo.write("c.py", "C = 1\n")
    repo.commit("new", days_ago=10)
    cortex.index()
    found = related(cortex.reader(), TargetSpec("a.py"))
    assert found.half_life_commits == 100   # the floor: two commits are all recent
    # Eight years apart, nothing between: one commit of age, not eight years of it.
    assert [(p.path, p.weight) for p in found.files] == [
        ("c.py", 1.0), ("b.py", round(0.5 ** (1 / 100), 4))]


def test_the_back_off_cuts_ties_among_files_by_name_not_by_id(repo, cortex):
    """32 files tie as m.py's partners (one shared commit of 33 files: `max_changeset` 40) for
    the back-off's 30 places. Ids
    follow the order in which an index run met the files (two runs of one history can differ:
    its workers deliver commits in any order); the cut must not: the first 30 by name."""
    from cortex_core.query.coupling import PRIOR_FILES
    assert PRIOR_FILES == 30
    late = [f"z{n:02}" for n in range(16)]
    early = [f"a{n:02}" for n in range(16)]
    for names in (late, early):   # the z files first: lower ids than the a files
        for name in names:
            repo.write(f"{name}.py", _module(**{f"f_{name}": 0}))
        repo.commit(f"add {names[0]}…", days_ago=40 if names is late else 35)
    repo.write("m.py", _module(load=0))
    repo.commit("m", days_ago=30)
    for name in late + early:
        repo.write(f"{name}.py", _module(**{f"f_{name}": 1}))
    repo.write("m.py", _module(load=1))
    repo.commit("all together", days_ago=20)
    cortex.index()
    con = cortex.reader()
    ids = dict(con.execute("select path, id from files"))
    assert ids["z15.py"] < ids["a00.py"]
    found = related(con, TargetSpec("m.py", "load"), top_k=100, max_changeset=40)
    backed = {p.path for p in found.symbols if p.prior > 0}
    assert backed == {f"{name}.py" for name in sorted(early + late)[:30]}
