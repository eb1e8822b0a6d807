"""Symbol and file histories on scripted repositories: the precomputed `git log -L`."""

from __future__ import annotations

import pytest

from pathlib import Path

from cortex_core.errors import NotFound
from cortex_core.query.history import history, symbol_history
from cortex_core.query.targets import TargetSpec, parse_target, resolve


def changes(con, path, symbol=None, line=None):
    """[(subject, change, added, deleted, name)] newest first."""
    result = history(con, TargetSpec(path, symbol, line))
    return [(e.commit.subject, e.change, e.added, e.deleted, e.name) for e in result.entries]


def test_function_history_is_per_function_not_per_file(repo, cortex):
    repo.write("app.py", "def a():\n    return 1\n\n\ndef b():\n    return 2\n")
    repo.commit("add a and b", days_ago=5)
    repo.write("app.py", "def a():\n    x = 1\n    return x\n\n\ndef b():\n    return 2\n")
    repo.commit("change a", days_ago=4)
    repo.write("app.py", "def a():\n    x = 1\n    return x\n\n\ndef b():\n    return 3\n")
    repo.commit("change b", days_ago=3)
    cortex.index()
    con = cortex.reader()
    assert changes(con, "app.py", "a") == [
        ("change a", "body", 2, 1, "a"),
        ("add a and b", "added", 2, 0, "a"),
    ]
    assert changes(con, "app.py", "b") == [
        ("change b", "body", 1, 1, "b"),
        ("add a and b", "added", 2, 0, "b"),
    ]
    assert [c[0] for c in changes(con, "app.py")] == ["change b", "change a", "add a and b"]


def test_method_credits_innermost_and_class_rolls_up(repo, cortex):
    repo.write("m.py", "class C:\n    def f(self):\n        return 1\n\n    def g(self):\n        return 2\n")
    repo.commit("add C")
    repo.write("m.py", "class C:\n    def f(self):\n        return 10\n\n    def g(self):\n        return 2\n")
    repo.commit("tune f")
    cortex.index()
    con = cortex.reader()
    assert changes(con, "m.py", "C.f") == [("tune f", "body", 1, 1, "C.f"),
                                          ("add C", "added", 2, 0, "C.f")]
    assert changes(con, "m.py", "C.g") == [("add C", "added", 2, 0, "C.g")]
    rolled = history(con, TargetSpec("m.py", "C")).entries
    assert [(e.commit.subject, e.change, e.members) for e in rolled] == [
        ("tune f", "body", ("f",)),
        ("add C", "added", ("f", "g")),
    ]
    # A short name resolves when it is unambiguous.
    assert changes(con, "m.py", "f") == changes(con, "m.py", "C.f")


def test_file_rename_keeps_the_history(repo, cortex):
    repo.write("old.py", "def keep():\n    a = 1\n    return a\n")
    repo.commit("create")
    repo.move("old.py", "new.py")
    repo.commit("rename file")
    repo.write("new.py", "def keep():\n    a = 2\n    return a\n")
    repo.commit("edit after rename")
    cortex.index()
    con = cortex.reader()
    assert changes(con, "new.py", "keep") == [
        ("edit after rename", "body", 1, 1, "keep"),
        ("rename file", "moved", 0, 0, "keep"),
        ("create", "added", 3, 0, "keep"),
    ]
    file_entries = history(con, TargetSpec("new.py")).entries
    assert [(e.commit.subject, e.change, e.path) for e in file_entries] == [
        ("edit after rename", "modified", "new.py"),
        ("rename file", "renamed", "new.py"),
        ("create", "added", "old.py"),
    ]

    # The old path's history: gone at HEAD, where it went, and the commit that took it there
    # (it listed neither, and said the file was alive).
    old = history(con, TargetSpec("old.py"))
    assert not old.target.alive and (old.moved_to, old.moved_in.subject) == ("new.py",
                                                                             "rename file")
    assert [(e.commit.subject, e.change, e.path) for e in old.entries] == [
        ("rename file", "renamed away", "new.py"), ("create", "added", "old.py")]
    assert history(con, TargetSpec("new.py")).target.alive
    line = history(con, TargetSpec("old.py", line=2))
    assert line.note.startswith("old.py is not at the indexed HEAD (deleted or renamed away), "
                                "so line 2 names no code there")


BODY = "    total = 0\n    for item in items:\n        total += item.price * item.count\n    return total\n"


def test_function_moved_between_files(repo, cortex):
    repo.write("a.py", "def stay():\n    return 0\n\n\ndef price(items):\n" + BODY)
    repo.write("b.py", "def other():\n    return 1\n")
    repo.commit("start")
    repo.write("a.py", "def stay():\n    return 0\n\n\ndef price(items):\n" + BODY.replace("0", "0.0"))
    repo.commit("float total")
    repo.write("a.py", "def stay():\n    return 0\n")
    repo.write("b.py", "def other():\n    return 1\n\n\ndef price(items):\n" + BODY.replace("0", "0.0"))
    repo.commit("move price to b")
    cortex.index()
    con = cortex.reader()
    entries = history(con, TargetSpec("b.py", "price")).entries
    assert [(e.commit.subject, e.change, e.path) for e in entries] == [
        ("move price to b", "moved", "b.py"),
        ("float total", "body", "a.py"),
        ("start", "added", "a.py"),
    ]
    # The old identity's history ends with the move, not with a deletion, and says where its
    # code went (a review: "moved" never named the file).
    assert changes(con, "a.py", "price")[0][:2] == ("move price to b", "moved")
    gone = history(con, TargetSpec("a.py", "price"))
    assert (gone.moved_to, gone.moved_in.subject) == ("b.py::price", "move price to b")
    assert history(con, TargetSpec("b.py", "price")).moved_to is None   # alive: nothing to say
    repo.write("b.py", "def other():\n    return 1\n\n\ndef cost(items):\n"
               + BODY.replace("0", "0.0"))
    repo.commit("rename price to cost")
    cortex.index()
    twice = history(cortex.reader(), TargetSpec("a.py", "price"))
    assert (twice.moved_to, twice.moved_in.subject) == ("b.py::cost", "move price to b")
    repo.remove("b.py")
    repo.commit("drop b")
    cortex.index()
    assert history(cortex.reader(), TargetSpec("a.py", "price")).moved_to is None


def test_method_whose_class_is_renamed(repo, cortex):
    repo.write("shop.py", "class Cart:\n    def total(self, items):\n" +
               BODY.replace("    ", "        ", 1).replace("\n    ", "\n        "))
    repo.commit("cart")
    text = (repo.path / "shop.py").read_text()
    repo.write("shop.py", text.replace("class Cart:", "class Basket:"))
    repo.commit("rename Cart to Basket")
    text = (repo.path / "shop.py").read_text()
    repo.write("shop.py", text.replace("return total", "return round(total, 2)"))
    repo.commit("round the total")
    cortex.index()
    con = cortex.reader()
    assert [(s, c, n) for s, c, _, _, n in changes(con, "shop.py", "Basket.total")] == [
        ("round the total", "body", "Basket.total"),
        # Its own code did not change: a waypoint of its lineage, left out of substantive history.
        ("rename Cart to Basket", "rescoped", "Basket.total"),
        ("cart", "added", "Cart.total"),
    ]
    assert [(s, c) for s, c, *_ in changes(con, "shop.py", "Basket")] == [
        ("round the total", "body"), ("rename Cart to Basket", "renamed"), ("cart", "added")]
    found = history(con, TargetSpec("shop.py", "Basket.total"), substantive=True)
    assert [e.commit.subject for e in found.entries] == ["round the total", "cart"]


def test_function_renamed_in_place(repo, cortex):
    repo.write("r.py", "def compute(items):\n" + BODY)
    repo.commit("compute")
    repo.write("r.py", "def subtotal(items):\n" + BODY)
    repo.commit("rename compute to subtotal")
    cortex.index()
    con = cortex.reader()
    assert changes(con, "r.py", "subtotal") == [
        ("rename compute to subtotal", "renamed", 1, 1, "subtotal"),
        ("compute", "added", 5, 0, "compute"),
    ]


def test_deletion_and_recreation_share_one_identity(repo, cortex):
    repo.write("d.py", "def f():\n    return 1\n\n\ndef g():\n    return 2\n")
    repo.commit("both")
    repo.write("d.py", "def g():\n    return 2\n")
    repo.commit("drop f")
    repo.write("d.py", "def g():\n    return 2\n\n\ndef f():\n    return 3\n")
    repo.commit("bring f back")
    cortex.index()
    con = cortex.reader()
    assert changes(con, "d.py", "f") == [
        ("bring f back", "added", 2, 0, "f"),
        ("drop f", "deleted", 0, 2, "f"),
        ("both", "added", 2, 0, "f"),
    ]


def test_a_name_renamed_away_and_used_again_is_a_new_life(repo, cortex):
    """A function renamed and its name used again later, and a path renamed away and created
    anew, are two lives each: the old life's commits are its successor's (as co-change counts
    them), not the new one's too. A function whose code moved into a new one in a commit that
    kept it as a wrapper lives on (both histories go on, by design)."""
    repo.write("a.py", "def f():\n    return 1\n")
    repo.commit("f one")
    repo.write("a.py", "def f():\n    return 2\n")
    repo.commit("f two")
    repo.write("a.py", "def g():\n    return 2\n")
    repo.commit("rename f to g")
    repo.write("a.py", "def g():\n    return 2\n\n\ndef f():\n    return 'new'\n")
    repo.commit("a new f")
    repo.write("s.py", "def old(x):\n    a = x\n    b = a + 1\n    c = b * 2\n    return c\n")
    repo.commit("old")
    repo.write("s.py", "def split(x):\n    a = x\n    b = a + 1\n    c = b * 2\n    return c\n"
                       "\n\ndef old(x):\n    return split(x) + 0\n")
    repo.commit("split old, keeping its name for a wrapper")
    repo.move("a.py", "b.py")
    repo.commit("a to b")
    repo.write("a.py", "def h():\n    return 0\n")
    repo.commit("a new a.py")
    cortex.index()
    con = cortex.reader()
    assert [c[0] for c in changes(con, "b.py", "f")] == ["a to b", "a new f"]
    assert [c[0] for c in changes(con, "b.py", "g")] == ["a to b", "rename f to g", "f two",
                                                         "f one"]
    assert [c[0] for c in changes(con, "s.py", "split")] == [
        "split old, keeping its name for a wrapper", "old"]
    assert [c[0] for c in changes(con, "s.py", "old")] == [
        "split old, keeping its name for a wrapper", "old"]
    assert [c[0] for c in changes(con, "a.py")] == ["a new a.py"]
    assert [c[0] for c in changes(con, "b.py")] == ["a to b", "a new f", "rename f to g",
                                                    "f two", "f one"]


def test_a_name_deleted_then_taken_by_a_rename_starts_a_new_life(repo, cortex):
    """requests' tests/test_requests.py was deleted in 2012, and in 2016 test_requests.py was
    moved there: its history listed the dead file's commits too (`git log --follow` does not).
    A name deleted and created anew keeps one history, as `git log -- PATH` shows it."""
    repo.write("c.py", "def f():\n    return 1\n")
    repo.commit("dead c", days_ago=9)
    repo.write("c.py", "def f():\n    return 2\n")
    repo.commit("dead c's edit", days_ago=8)
    repo.remove("c.py")
    repo.commit("remove c", days_ago=7)
    repo.write("d.py", "def h():\n    return 1\n")
    repo.commit("d", days_ago=6)
    repo.move("d.py", "c.py")
    repo.commit("d becomes c", days_ago=5)
    repo.write("e.py", "def k():\n    return 1\n")
    repo.commit("e", days_ago=4)
    repo.remove("e.py")
    repo.commit("remove e", days_ago=3)
    repo.write("e.py", "def k():\n    return 2\n")
    repo.commit("e again", days_ago=2)
    cortex.index()
    con = cortex.reader()
    assert [c[0] for c in changes(con, "c.py")] == ["d becomes c", "d"]
    assert [c[0] for c in changes(con, "c.py", "h")] == ["d becomes c", "d"]
    assert [c[0] for c in changes(con, "e.py")] == ["e again", "remove e", "e"]


def test_merge_commits_contribute_no_changes(repo, cortex):
    repo.write("x.py", "def f():\n    return 1\n\n\ndef g():\n    return 1\n")
    repo.commit("base", days_ago=9)
    repo.git("checkout", "-q", "-b", "topic")
    repo.write("x.py", "def f():\n    return 2\n\n\ndef g():\n    return 1\n")
    repo.commit("topic changes f", days_ago=8)
    repo.git("checkout", "-q", "main")
    repo.write("x.py", "def f():\n    return 1\n\n\ndef g():\n    return 3\n")
    repo.commit("main changes g", days_ago=7)
    repo.git("merge", "-q", "--no-ff", "-m", "merge topic", "topic",
             env={"GIT_AUTHOR_DATE": f"{repo.now - 6 * 86400} +0000",
                  "GIT_COMMITTER_DATE": f"{repo.now - 6 * 86400} +0000"})
    cortex.index()
    con = cortex.reader()
    assert [c[0] for c in changes(con, "x.py", "f")] == ["topic changes f", "base"]
    assert [c[0] for c in changes(con, "x.py", "g")] == ["main changes g", "base"]
    assert "merge topic" not in [c[0] for c in changes(con, "x.py")]
    assert con.execute("select count(*) from commits where is_merge = 1").get == 1


def test_line_maps_to_innermost_symbol_at_head(repo, cortex):
    repo.write("l.py", "import os\n\n\nclass K:\n    def m(self):\n        return os.sep\n")
    repo.commit("k")
    cortex.index()
    con = cortex.reader()
    result = history(con, TargetSpec("l.py", line=6))
    assert (result.target.qualname, result.target.start_line, result.target.end_line) == ("K.m", 5, 6)
    outside = history(con, TargetSpec("l.py", line=1))
    assert outside.target.qualname is None and "no symbol encloses line 1" in outside.note
    assert [e.commit.subject for e in outside.entries] == ["k"]


def test_unknown_symbol_suggests_close_matches(repo, cortex):
    repo.write("s.py", "class Session:\n    def request(self):\n        pass\n")
    repo.commit("s")
    cortex.index()
    con = cortex.reader()
    with pytest.raises(NotFound, match=r"did you mean: s.py::Session.request"):
        history(con, TargetSpec("s.py", "Session.requets"))
    with pytest.raises(NotFound, match=r"no file 'src/s.py'.*did you mean: s.py"):
        history(con, TargetSpec("src/s.py", "Session"))


def test_a_suggested_name_with_a_line_break_stays_on_one_line(repo, cortex):
    repo.write("new\nline.txt", "x\n")
    repo.commit("a name with a line break")
    cortex.index()
    with pytest.raises(NotFound) as raised:
        history(cortex.reader(), TargetSpec("new line.txt"))
    assert "\n" not in str(raised.value)
    assert str(raised.value).endswith("did you mean: 'new\\nline.txt'")


def test_a_read_only_store_says_it_cannot_be_written(repo, cortex):
    import apsw
    from cortex_core.engine import typed_errors
    from cortex_core.errors import StoreError
    repo.write("a.py", "x = 1\n")
    repo.commit("a")
    cortex.index()
    con = apsw.Connection(str(cortex.db), flags=apsw.SQLITE_OPEN_READONLY)
    with pytest.raises(StoreError, match="the index cannot be written: .*readonly"):
        with typed_errors():
            con.execute("insert into meta(key, value) values ('x', 'y')")


def test_typescript_class_method_history(repo, cortex):
    repo.write("src/api.ts", "export class Client {\n  get(url: string): string {\n    return url;\n  }\n}\n")
    repo.commit("client")
    repo.write("src/api.ts", "export class Client {\n  get(url: string): string {\n    return url.trim();\n  }\n}\n")
    repo.commit("trim urls")
    cortex.index()
    con = cortex.reader()
    assert [(s, c) for s, c, *_ in changes(con, "src/api.ts", "Client.get")] == [
        ("trim urls", "body"), ("client", "added")]


def test_javascript_private_members_are_named_with_their_hash(repo, cortex):
    """`Class#method` is another tool's way to write `Class.method`, but a `#` that starts a name
    is the name's own: `Ky.#retry` (a JavaScript private member) was read as `Ky..retry` and
    never found, though the error offered `Ky.#retry` as the name to use."""
    repo.write("src/ky.ts", "export class Ky {\n  #retry(n: number) {\n    return n;\n  }\n\n"
               "  run() {\n    return this.#retry(1);\n  }\n}\n")
    repo.commit("ky")
    repo.write("src/ky.ts", "export class Ky {\n  #retry(n: number) {\n    return n + 1;\n  }\n\n"
               "  run() {\n    return this.#retry(1);\n  }\n}\n")
    repo.commit("retry once more")
    cortex.index()
    con = cortex.reader()
    expected = [("retry once more", "body"), ("ky", "added")]
    for written in ("Ky.#retry", "#retry", "Ky##retry", "Ky::#retry"):
        target = resolve(con, parse_target(f"src/ky.ts::{written}"))
        assert target.qualname == "Ky.#retry", written
        assert [(s, c) for s, c, *_ in changes(con, "src/ky.ts", target.qualname)] == expected
    # The other tools' separator still reads as one.
    assert resolve(con, parse_target("src/ky.ts::Ky#run")).qualname == "Ky.run"


def test_an_arrow_functions_expression_body_changes_its_body(repo, cortex):
    """ky's `const timeout = (promise, ms) => ...`: with no `{` after its `=>`, the whole text
    was its header, and each of its ten edits since 2018 was called a signature change."""
    repo.write("src/math.ts", "export const mul = (a: number, b: number): number => a * b;\n")
    repo.commit("mul")
    repo.write("src/math.ts", "export const mul = (a: number, b: number): number => a * b * 1;\n")
    repo.commit("times one")
    repo.write("src/math.ts", "export const mul = (a: number, b = 2): number => a * b * 1;\n")
    repo.commit("b defaults to 2")
    cortex.index()
    con = cortex.reader()
    assert [(s, c) for s, c, *_ in changes(con, "src/math.ts", "mul")] == [
        ("b defaults to 2", "signature"), ("times one", "body"), ("mul", "added")]


def test_blank_lines_between_methods_do_not_change_the_class(repo, cortex):
    repo.write("k.py", "class K:\n    def a(self):\n        return 1\n")
    repo.commit("K with a")
    repo.write("k.py", "class K:\n    def a(self):\n        return 1\n\n    def b(self):\n        return 2\n")
    repo.commit("add b")
    cortex.index()
    con = cortex.reader()
    own = con.execute("select c.subject, sc.change from symbol_changes sc join symbols s on"
                      " s.id = sc.symbol_id join commits c on c.id = sc.commit_id"
                      " where s.qualname = 'K'").fetchall()
    assert own == [("K with a", "added")]
    assert [(e.commit.subject, e.members) for e in history(con, TargetSpec("k.py", "K")).entries] \
        == [("add b", ("b",)), ("K with a", ("a",))]


def test_rename_with_edits_continues_the_history(repo, cortex):
    old = ("class T:\n    def test_send_nonstring(self, files):\n        r = post(files)\n"
           "        assert r.status == 200\n        assert r.body\n        assert r.headers\n")
    repo.write("t.py", old)
    repo.commit("first")
    new = old.replace("test_send_nonstring(self, files)", "test_send_objects(self, files)") \
        .replace("assert r.body\n", "assert r.body is not None\n")
    repo.write("t.py", new)
    repo.commit("rename and tighten")
    cortex.index()
    con = cortex.reader()
    assert [(s, c, n) for s, c, _, _, n in changes(con, "t.py", "T.test_send_objects")] == [
        ("rename and tighten", "renamed", "T.test_send_objects"),
        ("first", "added", "T.test_send_nonstring"),
    ]


def test_unrelated_replacement_is_not_a_rename(repo, cortex):
    repo.write("u.py", "def parse(text):\n    items = text.split(',')\n    return [i.strip() for i in items]\n")
    repo.commit("parse")
    repo.write("u.py", "def render(rows):\n    out = io.StringIO()\n    csv.writer(out).writerows(rows)\n    return out.getvalue()\n")
    repo.commit("replace parse by render")
    cortex.index()
    con = cortex.reader()
    assert [(s, c) for s, c, *_ in changes(con, "u.py", "render")] == [("replace parse by render", "added")]
    assert [(s, c) for s, c, *_ in changes(con, "u.py", "parse")][0] == ("replace parse by render", "deleted")


def test_rename_with_edits_in_a_renamed_file(repo, cortex):
    old = ("def test_send_nonstring(files):\n    r = post(files)\n    assert r.status == 200\n"
           "    assert r.body\n    assert r.headers\n")
    repo.write("test_api.py", old)
    repo.commit("first")
    repo.move("test_api.py", "tests/test_api.py")
    repo.write("tests/test_api.py", old.replace("test_send_nonstring", "test_send_objects")
               .replace("assert r.body\n", "assert r.body is not None\n"))
    repo.commit("move tests, rename and tighten")
    cortex.index()
    con = cortex.reader()
    assert [(s, c) for s, c, *_ in changes(con, "tests/test_api.py", "test_send_objects")] == [
        ("move tests, rename and tighten", "moved"), ("first", "added")]
    entries = history(con, TargetSpec("tests/test_api.py", "test_send_objects")).entries
    assert [(e.path, e.name) for e in entries] == [
        ("tests/test_api.py", "test_send_objects"), ("test_api.py", "test_send_nonstring")]


def test_blank_lines_inside_a_function_with_a_nested_function_count(repo, cortex):
    repo.write("n.py", "def outer():\n    def inner():\n        return 1\n    return inner\n")
    repo.commit("outer")
    repo.write("n.py", "def outer():\n    def inner():\n        return 1\n\n    return inner\n")
    repo.commit("breathe")
    cortex.index()
    assert [(s, c, a) for s, c, a, _, _ in changes(cortex.reader(), "n.py", "outer")] == [
        ("breathe", "reformatted", 1), ("outer", "added", 4)]  # inner rolls up into outer


def test_a_diff_sliding_onto_an_identical_decorator_changes_nothing(repo, cortex):
    head = "class R:\n    @property\n    def a(self):\n        return 1\n\n"
    tail = "    @property\n    def b(self):\n        return 2\n"
    repo.write("s.py", head + tail)
    repo.commit("two properties")
    # libgit2 (no indent heuristic) reports this insertion as starting at `@property` of a's
    # neighbour, one line up from where git diff puts it.
    inserted = "    @property\n    def c(self):\n        return 3\n\n"
    repo.write("s.py", head + inserted + tail)
    repo.commit("add c")
    cortex.index()
    con = cortex.reader()
    assert [s for s, *_ in changes(con, "s.py", "R.b")] == ["two properties"]
    assert [s for s, *_ in changes(con, "s.py", "R.c")] == ["add c"]


def test_a_property_setter_has_a_history_of_its_own(repo, cortex):
    base = ("class P:\n    @property\n    def x(self):\n        return self._x\n\n"
            "    @x.setter\n    def x(self, value):\n        self._x = value\n")
    repo.write("p.py", base)
    repo.commit("property")
    repo.write("p.py", base.replace("self._x = value", "self._x = int(value)"))
    repo.commit("setter casts")
    cortex.index()
    assert [(s, c) for s, c, *_ in changes(cortex.reader(), "p.py", "P.x[setter]")] == [
        ("setter casts", "body"), ("property", "added")]
    assert [(s, c) for s, c, *_ in changes(cortex.reader(), "p.py", "P.x")] == [
        ("property", "added")]


def test_a_change_over_a_limit_is_named_in_file_and_symbol_history(repo, cortex):
    from cortex_core.config import IndexSettings, Settings
    body = "".join(f"    x{i} = {i}\n" for i in range(8))
    repo.write("m.py", f"def f():\n{body}    return 0\n")
    repo.commit("add f", days_ago=3)
    repo.write("m.py", "def f():\n" + body.replace(" = ", " = -") + "    return 1\n")
    big = repo.commit("rewrite f", days_ago=2)
    cortex.index(Settings(index=IndexSettings(max_diff_lines=5)))
    con = cortex.reader()
    entries = history(con, TargetSpec("m.py")).entries
    assert entries[0].commit.sha == big
    assert entries[0].skipped.startswith("diff too large (over 5 changed lines; raise [index] "
                                         "max_diff_lines")
    assert entries[1].skipped is None
    own = history(con, TargetSpec("m.py", "f"))
    assert [e.change for e in own.entries] == ["added"]   # the rewrite is not in it ...
    assert own.note.startswith(f"1 commit of its file was not read for symbols, the newest "
                               f"{big[:10]}: diff too large")   # ... and that is said


def test_a_rename_that_heads_nowhere_ends_no_life(repo, cortex):
    """A review's cases: a side branch renames a.py to b.py and its merge drops the rename
    (`-s ours`); main then edits, deletes and re-creates a.py. The rename leads to no file at
    HEAD, so it ends no life: a.py keeps one history, as `git log -- a.py` shows it. And a
    function kept as a wrapper when its code moved into a new one, later deleted and re-added,
    keeps one history too."""
    body = "def {n}(x):\n    a = x + {v}\n    b = a * 2\n    c = b - 3\n    return c\n"
    repo.write("a.py", body.format(n="f", v=1))
    repo.commit("create a", days_ago=9)
    repo.git("checkout", "-q", "-b", "side")
    repo.move("a.py", "b.py")
    repo.commit("side: a to b", days_ago=8)
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "-s", "ours", "-m", "merge side", "side")
    repo.write("a.py", body.format(n="f", v=2))
    repo.commit("edit a", days_ago=7)
    repo.remove("a.py")
    repo.commit("delete a", days_ago=6)
    repo.write("a.py", body.format(n="f", v=3))
    repo.commit("a again", days_ago=5)
    repo.write("w.py", body.format(n="f", v=1))
    repo.commit("w", days_ago=4)
    repo.write("w.py", body.format(n="g", v=1) + "\n\ndef f(x):\n    return g(x)\n")
    repo.commit("f's body into g, f a wrapper", days_ago=3)
    repo.write("w.py", body.format(n="g", v=1))
    repo.commit("drop f", days_ago=2)
    repo.write("w.py", body.format(n="g", v=1) + "\n\ndef f(x):\n    return 0\n")
    repo.commit("f again", days_ago=1)
    cortex.index()
    con = cortex.reader()
    shown = repo.git("log", "--no-merges", "--format=%s", "--", "a.py").split("\n")
    assert [c[0] for c in changes(con, "a.py")] == shown == [
        "a again", "delete a", "edit a", "create a"]
    assert [c[0] for c in changes(con, "w.py", "f")] == [
        "f again", "drop f", "f's body into g, f a wrapper", "w"]


def _renumbered_symbols(db: Path, copy: Path) -> None:
    """`db` copied to `copy` with its symbols' ids in reverse order: what another index run, its
    workers delivering commits in another order, could have given them."""
    import shutil
    import apsw
    shutil.copy(db, copy)
    con = apsw.Connection(str(copy))
    top = con.execute("select max(id) from symbols").get + 1
    with con:
        for table, column in (("symbols", "id"), ("symbol_spans", "symbol_id"),
                              ("symbol_changes", "symbol_id"),
                              ("symbol_changes", "from_symbol_id"),
                              ("item_symbols", "symbol_id")):
            # Through negatives: a row at a time, the new id would meet an old one.
            con.execute(f"update {table} set {column} = -{column} where {column} is not null")
            con.execute(f"update {table} set {column} = {top} + {column}"
                        f" where {column} is not null")
    con.close()


def test_a_name_the_lineage_comes_back_to_reads_alike_whatever_the_ids(repo, cortex, tmp_path):
    """Item.get became DictItem.get (its class renamed, a new Item subclassing it), then Item.get
    again (DictItem removed): the commits the lineage's segments share are told under one name,
    whatever the order of the identities' ids."""
    from cortex_core.query.history import symbol_history_commits
    method = "    def get(self, key):\n        return self.data[key]\n"
    repo.write("item.py", f"class Item:\n{method}")
    repo.commit("item", days_ago=40)
    repo.write("item.py", f"class Item:\n{method.replace('key]', 'key] or None')}")
    repo.commit("item again", days_ago=35)
    repo.write("item.py", f"class DictItem:\n{method.replace('key]', 'key] or None')}\n\n"
                          "class Item(DictItem):\n    pass\n")
    repo.commit("added DjangoItem item class", days_ago=30)
    repo.write("item.py", f"class DictItem:\n{method.replace('key]', 'key, None)')}\n\n"
                          "class Item(DictItem):\n    pass\n")
    repo.commit("dict item get", days_ago=20)
    repo.write("item.py", f"class Item:\n{method.replace('key]', 'key, None)')}")
    repo.commit("Remove deprecated DictItem class", days_ago=10)
    cortex.index()
    other = tmp_path / "renumbered.db"
    _renumbered_symbols(cortex.db, other)

    def told(db: Path) -> tuple[list, dict]:
        from cortex_core.store.store import open_reader
        con = open_reader(db)
        target = resolve(con, TargetSpec("item.py", "Item.get"))
        return ([(e.commit.subject, e.change, e.name)
                 for e in symbol_history(con, target.symbol_id)],
                symbol_history_commits(con, target.symbol_id))
    mine, theirs = told(cortex.db), told(other)
    assert [s for s, _, _ in mine[0]] == ["Remove deprecated DictItem class", "dict item get",
                                       "added DjangoItem item class", "item again", "item"]
    assert mine == theirs



def test_a_rename_made_on_two_branches_is_told_once(repo, cortex):
    """A method renamed on two branches (a fix cherry-picked), both kept by the merge: the old
    name's life ends at the later rename, so the earlier one lies in both names' lives. Each
    rename is one entry, under the new name, its lines and its nested function counted once
    (scrapy's `test_spider_errback_downloader_error_exception` listed `eb` twice)."""
    source = ("class T:\n    def {n}(self):\n        def eb(f):\n            return f\n\n"
              "        x = 1\n        return eb({v})\n\n\ndef other():\n    return {w}\n")
    repo.write("t.py", source.format(n="test_a", v=1, w=0))
    repo.commit("add test_a", days_ago=9)
    repo.git("checkout", "-q", "-b", "side")
    repo.write("t.py", source.format(n="test_b", v=2, w=0))
    repo.commit("side: rename test_a to test_b", days_ago=5)
    repo.git("checkout", "-q", "main")
    repo.write("t.py", source.format(n="test_b", v=1, w=1))
    repo.commit("rename test_a to test_b", days_ago=7)
    repo.git("merge", "-q", "--no-ff", "-m", "merge side", "side")
    merged = (repo.path / "t.py").read_text()
    assert "test_b" in merged and "eb(2)" in merged and "return 1" in merged
    cortex.index()
    con = cortex.reader()
    assert [(e.commit.subject, e.change, e.added, e.deleted, e.name, e.members)
            for e in history(con, TargetSpec("t.py", "T.test_b")).entries] == [
        ("side: rename test_a to test_b", "renamed", 2, 2, "T.test_b", ("eb",)),
        ("rename test_a to test_b", "renamed", 1, 1, "T.test_b", ("eb",)),
        ("add test_a", "added", 6, 0, "T.test_a", ("eb",))]


def test_a_signature_that_comes_back_is_told_by_the_one_it_gave(repo, cortex):
    """Java's parameters are part of a method's name: m(String) → m(Integer) → m(String) is a
    lineage that comes back to a name, whose first life holds the middle commit too. That
    commit is told once, under the name it gave, its changed line counted once (the departing
    name's row is the same line)."""
    java = "public class P {{\n  public int m({t} s) {{\n    return s.hashCode();\n  }}\n}}\n"
    for t, subject, days in (("String", "add m(String)", 9), ("Integer", "m takes an Integer", 8),
                             ("String", "m takes a String again", 7)):
        repo.write("P.java", java.format(t=t))
        repo.commit(subject, days_ago=days)
    cortex.index()
    con = cortex.reader()
    assert changes(con, "P.java", "P.m(String)") == [
        ("m takes a String again", "signature", 1, 1, "P.m(String)"),
        ("m takes an Integer", "signature", 1, 1, "P.m(Integer)"),
        ("add m(String)", "added", 3, 0, "P.m(String)")]


def test_a_newer_lives_member_changes_are_kept_beside_an_older_lives_own(repo, cortex):
    """A rename on two branches; between them, main keeps the old name as an alias class and
    changes the renamed class's method. In those commits the old name's life changes itself
    (the alias) and the new one's member changes: the member's change stays in the class's
    history (a review's case: a first fix told the commit by one life and lost `m`). The entry
    is still named after the alias, `A`: lives are told apart by time (limits.md)."""
    def source(cls="A", v=1, w=0, alias=""):
        return (f"def other():\n    return {w}\n\n\nX1 = 1\nX2 = 2\nX3 = 3\nX4 = 4\n\n\n"
                f"class {cls}:\n    def m(self):\n        return {v}\n{alias}")
    repo.write("t.py", source())
    repo.commit("add A", days_ago=9)
    repo.git("checkout", "-q", "-b", "side")
    repo.write("t.py", source("B", w=2))
    repo.commit("side: rename A to B", days_ago=3)
    repo.git("checkout", "-q", "main")
    repo.write("t.py", source("B"))
    repo.commit("main: rename A to B", days_ago=7)
    repo.write("t.py", source("B", v=5, alias="\n\nclass A(B):\n    pass\n"))
    repo.commit("main: keep A as an alias", days_ago=6)
    repo.write("t.py", source("B", v=6, alias="\n\nclass A( B ):\n    pass\n"))
    repo.commit("main: change B.m, respace the alias", days_ago=5)
    repo.git("merge", "-q", "--no-ff", "-m", "merge side", "side")
    cortex.index()
    con = cortex.reader()
    told = {e.commit.subject: e for e in history(con, TargetSpec("t.py", "B")).entries}
    assert told["main: change B.m, respace the alias"].change == "body"
    assert told["main: change B.m, respace the alias"].members == ("m",)
    assert len(history(con, TargetSpec("t.py", "B"), substantive=True).entries) == 5


def test_a_member_renamed_in_its_class_counts_once_and_a_wrapper_keeps_its_change(repo, cortex):
    """A method renamed inside its class: the class's entry has git's lines (+1 -1) and the new
    name only; the old name's row, which only deletes what the new one counts, is left out. A
    method that gives its code to a new one and lives on as a wrapper changed itself: both stay
    (werkzeug's `Client.open` and `_open`)."""
    body = "        a = x + 1\n        b = a * 2\n        return b - 3\n"
    repo.write("k.py", f"class K:\n    def old_name(self, x):\n{body}\n    def keep(self, x):\n{body}")
    repo.commit("add K", days_ago=9)
    repo.write("k.py", f"class K:\n    def new_name(self, x):\n{body}\n    def keep(self, x):\n{body}")
    repo.commit("rename old_name", days_ago=8)
    wrapper = "    def keep(self, x):\n        return self._keep(x)\n\n"
    repo.write("k.py", f"class K:\n    def new_name(self, x):\n{body}\n{wrapper}"
                       f"    def _keep(self, x):\n{body}")
    repo.commit("keep becomes a wrapper", days_ago=7)
    long = ("        total = sum(v * 2 + w - b for v, w, b in x if v > 100 and w < 5 and b != 0)\n"
            "        return self.store(total, x, self.flags, self.extra, self.more, self.limits)\n")
    head = f"class K:\n    def new_name(self, x):\n{body}\n{wrapper}    def _keep(self, x):\n{body}"
    tail = "\n    def tail(self):\n        return 0\n"
    repo.write("k.py", f"{head}\n    def donor(self, x):\n{long}        return 1\n{tail}")
    repo.commit("add donor", days_ago=6)
    repo.write("k.py", f"{head}\n    def donor(self, x):\n        return 1\n{tail}"
                       f"\n    def taken(self, x):\n{long}")
    repo.commit("donor gives its lines away", days_ago=5)
    assert repo.git("show", "--numstat", "--format=", "HEAD").split()[:2] == ["4", "2"]
    assert repo.git("show", "--numstat", "--format=", "HEAD~3").split()[:2] == ["1", "1"]
    cortex.index()
    con = cortex.reader()
    told = {e.commit.subject: e for e in history(con, TargetSpec("k.py", "K")).entries}
    renamed = told["rename old_name"]
    assert (renamed.added, renamed.deleted, renamed.members) == (1, 1, ("new_name",))
    assert set(told["keep becomes a wrapper"].members) == {"_keep", "keep"}
    assert changes(con, "k.py", "K.keep")[0][0] == "keep becomes a wrapper"
    # A method whose lines went to a new one (paired with it) and that only lost them changed
    # too: its deletions are the class's.
    given = told["donor gives its lines away"]
    assert (given.added, given.deleted, given.members) == (3, 2, ("donor", "taken"))


def test_where_a_gone_symbol_went_follows_its_own_life_only(repo, cortex):
    """A review's cases: the name `a` renamed to `b`, then used again for other code that was
    deleted: that last life went nowhere. A hop to `b` must not take an older life of `b`'s
    rename. And a rename on a branch HEAD never merged gives way to the one HEAD has."""
    one = "def {0}(items):\n    return [i * 2 for i in items if i > {1}]\n"
    other = "def {0}(text):\n    return text.strip().lower().split()[{1}]\n"
    repo.write("m.py", one.format("a", 0))
    repo.commit("add a", days_ago=30)
    repo.write("m.py", one.format("b", 0))
    repo.commit("rename a to b", days_ago=28)
    repo.write("m.py", one.format("b", 0) + "\n\n" + other.format("a", 1))
    repo.commit("a new a", days_ago=26)
    repo.write("m.py", one.format("b", 0))
    repo.commit("delete the new a", days_ago=24)
    cortex.index()
    assert history(cortex.reader(), TargetSpec("m.py", "a")).moved_to is None
    # b's code still lives: the first a's history still says so, through its rename.
    assert resolve(cortex.reader(), TargetSpec("m.py", "b")).alive


def test_a_hop_takes_the_life_it_reaches_not_an_older_one(repo, cortex):
    one = "def {0}(items):\n    return [i * 2 for i in items if i > 0]\n"
    other = "def {0}(text):\n    return text.strip().lower().split()[1]\n"
    repo.write("m.py", one.format("b"))
    repo.commit("add b", days_ago=30)
    repo.write("m.py", one.format("x"))
    repo.commit("rename b to x", days_ago=28)
    repo.write("m.py", one.format("x") + "\n\n" + other.format("a"))
    repo.commit("add a", days_ago=26)
    repo.write("m.py", one.format("x") + "\n\n" + other.format("b"))
    repo.commit("rename a to b", days_ago=24)
    repo.write("m.py", one.format("x"))
    repo.commit("delete b", days_ago=22)
    cortex.index()
    con = cortex.reader()
    assert history(con, TargetSpec("m.py", "a")).moved_to is None   # its code was deleted
    assert history(con, TargetSpec("m.py", "b")).moved_to is None   # its last life's too


def test_a_branch_rename_head_does_not_have_gives_way(repo, cortex):
    one = "def {0}(items):\n    return [i * 2 for i in items if i > 0]\n"
    repo.write("m.py", one.format("a"))
    repo.commit("add a", days_ago=30)
    repo.git("checkout", "-q", "-b", "side")
    repo.write("m.py", one.format("d"))
    repo.commit("side: rename a to d", days_ago=20)
    repo.git("checkout", "-q", "main")
    repo.write("m.py", one.format("c"))
    repo.commit("main: rename a to c", days_ago=25)
    cortex.index(all_branches=True)
    gone = history(cortex.reader(), TargetSpec("m.py", "a"))
    assert (gone.moved_to, gone.moved_in.subject) == ("m.py::c", "main: rename a to c")


def test_a_wrapper_deleted_later_went_nowhere(repo, cortex):
    """A function whose code moved into a new one while it lived on as its wrapper, then was
    deleted: its code was deleted, not moved (tenacity's `Retrying.call`, said to have moved to
    `__call__` in the commit that made it a wrapper)."""
    body = "".join(f"    total = total + items[{i}] * {i} - offset\n" for i in range(12))
    long = "def {0}(items, offset):\n    total = 0\n" + body + "    return total\n"
    wrapper = "\n\ndef call(items, offset):\n    return run(items, offset{0})\n"
    repo.write("m.py", long.format("call"))
    repo.commit("add call", days_ago=30)
    repo.write("m.py", long.format("run") + wrapper.format(""))
    repo.commit("call wraps run", days_ago=28)
    repo.write("m.py", long.format("run") + wrapper.format(" or 0"))
    repo.commit("call edited", days_ago=26)
    repo.write("m.py", long.format("run"))
    repo.commit("drop call", days_ago=24)
    cortex.index()
    gone = history(cortex.reader(), TargetSpec("m.py", "call"))
    assert [e.change for e in gone.entries] == ["deleted", "body", "body", "added"]
    assert gone.moved_to is None and gone.moved_in is None


@pytest.mark.parametrize("octopus", [False, True])
def test_a_merge_follows_a_parent_whose_version_is_another_parents(repo, cortex, octopus):
    """A merge that changed a file against every parent, two of whose parents have the same
    version of it made by two commits (the same change made twice, a cherry-pick): git log
    follows every parent of such a merge, so both commits are in the file's history. Cortex
    once diffed the second parent's version not at all (git blame gives its lines to the
    first) and left out what only it leads to. Blame is git's either way."""
    from test_blame import git_blame, our_blame
    base = "def f0(x):\n    return x + 0\n\n\ndef f1(x):\n    return x + 1\n\n\ndef f2(x):\n" \
           "    return x + 2\n"
    repo.write("a.py", base)
    repo.commit("initial", days_ago=9)
    repo.git("checkout", "-q", "-b", "b1")
    repo.write("a.py", base.replace("x + 0", "x + 7"))
    repo.commit("b1: f0", days_ago=8)
    repo.git("checkout", "-q", "-b", "b2", "main")
    repo.write("a.py", base.replace("x + 0", "x + 7"))
    repo.commit("b2: the same f0", days_ago=7)
    stamp = f"{int(repo.now - 5 * 86400)} +0000"
    env = {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
    if octopus:   # each side branch's version is taken whole by none: a.py is all three's
        repo.git("checkout", "-q", "-b", "b3", "main")
        repo.write("a.py", base.replace("x + 2", "x + 9"))
        repo.commit("b3: f2", days_ago=6)
        repo.git("checkout", "-q", "main")
        repo.git("merge", "-q", "--no-ff", "-m", "octopus", "b1", "b2", "b3", env=env)
    else:         # main holds b2's version; the merge edits f1 too
        repo.git("checkout", "-q", "main")
        repo.git("merge", "-q", "--ff-only", "b2")
        repo.git("merge", "-q", "--no-ff", "--no-commit", "b1", env=env)
        repo.write("a.py", base.replace("x + 0", "x + 7").replace("x + 1", "x + 5"))
        repo.git("add", "a.py")
        repo.git("commit", "-q", "-m", "merge b1, editing f1", env=env)
    cortex.index(model="none")
    con = cortex.reader()
    merges = set(repo.git("rev-list", "--merges", "HEAD").split())
    shown = [e.commit.subject for e in history(con, TargetSpec("a.py")).entries
             if e.commit.sha not in merges]
    assert shown == repo.git("log", "--no-merges", "--format=%s", "--", "a.py").split("\n")
    assert {"b1: f0", "b2: the same f0"} <= set(shown)
    assert our_blame(con, "a.py", 10) == git_blame(repo, "a.py")
