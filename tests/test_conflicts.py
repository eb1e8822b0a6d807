"""Files holding git's conflict markers: read as one side, every byte in its place."""

from __future__ import annotations

from cortex_core.lang.conflicts import conflict_sides
from cortex_core.lang.structure_extract import extract_structure
from cortex_core.lang.symbols import SymbolParser, extract_symbols
from cortex_core.query.history import history
from cortex_core.query.targets import TargetSpec

GO_BEFORE = """package p

type T int

func (t T) A() int {
	if t > 0 {
		return 1
	}
	return 0
}

func (t T) Get() int { return int(t) }

func (t T) String() string { return "" }
"""

# Committed mid-rebase (as urfave/cli 876fa0f0 did): the block starts inside A, which only the
# "ours" side goes on with; the text after the block closes whichever side was kept.
GO_CONFLICTED = """package p

type T int

<<<<<<< HEAD
func (t T) A() int {
	if t > 0 {
		return 1
=======
func (t T) B() int {
	for t > 0 {
		t--
>>>>>>> topic
	}
	return 0
}

func (t T) Get() int { return int(t) }

func (t T) String() string { return "" }
"""

GO_RESOLVED = GO_CONFLICTED.replace(
    "<<<<<<< HEAD\nfunc (t T) A() int {\n\tif t > 0 {\n\t\treturn 1\n=======\n", "").replace(
    ">>>>>>> topic\n", "")


def test_each_side_keeps_its_lines_and_every_byte_its_place():
    text = b"a\n<<<<<<< HEAD\nours\r\n||||||| base\nold\n=======\ntheirs\n>>>>>>> x\nz\n"
    ours, theirs = conflict_sides(text)
    assert len(ours) == len(theirs) == len(text)
    assert ours.splitlines() == [b"a", b" " * 12, b"ours", b" " * 12, b"   ", b" " * 7,
                                 b"      ", b" " * 9, b"z"]
    assert theirs.splitlines()[6] == b"theirs" and theirs.splitlines()[2] == b"    "
    assert ours.count(b"\r\n") == 1     # line breaks are kept as they were


def test_text_that_only_looks_like_markers_is_read_as_it_is():
    assert conflict_sides(b"Title\n=======\n\ntext\n") is None          # a heading, no block
    assert conflict_sides(b"<<<<<<< HEAD\na\n=======\nb\n") is None       # left open
    assert conflict_sides(b"x = '<<<<<<< HEAD'\n=======\n>>>>>>> t\n") is None   # not at a line's start
    assert conflict_sides(b"<<<<<<<< eight\na\n========\nb\n>>>>>>>> e\n") is None
    nested = b"<<<<<<< a\n<<<<<<< b\nx\n=======\ny\n>>>>>>> b\n=======\nz\n>>>>>>> a\n"
    assert conflict_sides(nested) is None
    # A lone separator or closing line outside any block is text, and the block is still read.
    ours, _ = conflict_sides(b"=======\n<<<<<<< H\na\n=======\nb\n>>>>>>> t\n>>>>>>> q\n")
    assert ours.splitlines()[0] == b"=======" and ours.splitlines()[-1] == b">>>>>>> q"


def test_a_conflicted_go_file_keeps_the_definitions_after_the_block():
    names = [s.qualname for s in extract_symbols("go", GO_CONFLICTED.encode())]
    assert names == ["T", "T.A", "T.Get", "T.String"]
    get = next(s for s in extract_symbols("go", GO_CONFLICTED.encode()) if s.qualname == "T.Get")
    assert GO_CONFLICTED.encode()[get.start_byte:get.end_byte].startswith(b"func (t T) Get()")


def test_of_two_sides_that_parse_the_one_closer_to_the_version_before_is_read():
    text = b"def a():\n    return 1\n<<<<<<< HEAD\ndef b():\n    return 2\n=======\n" \
           b"def c():\n    return 3\n>>>>>>> t\n"
    assert [s.qualname for s in extract_symbols("python", text)] == ["a", "b"]     # ours
    parser = SymbolParser()
    parser.symbols("python", "old", b"def a():\n    return 1\n\n\ndef c():\n    return 0\n")
    read = parser.symbols("python", "new", text, ("old", []))
    assert [s.qualname for s in read] == ["a", "c"]


def test_a_conflict_inside_a_call_keeps_the_call():
    text = (b'import os\ndef f(x):\n    return os.path.join(\n<<<<<<< HEAD\n        x, "a",\n'
            b'=======\n        x, "b",\n>>>>>>> t\n    )\ndef g():\n    return helper()\n')
    read = extract_structure("python", text)
    assert read.error_nodes == 0
    assert [(r.qualifier, r.name, r.line) for r in read.refs] == [("os.path", "join", 3),
                                                                   (None, "helper", 11)]


def test_a_committed_conflict_does_not_break_the_histories_it_leaves_alone(repo, cortex):
    repo.write("t.go", GO_BEFORE)
    repo.commit("add T", days_ago=5)
    repo.write("t.go", GO_CONFLICTED)
    repo.commit("Rebase", days_ago=4)
    repo.write("t.go", GO_RESOLVED)
    repo.commit("resolve", days_ago=3)
    cortex.index()
    con = cortex.reader()
    for name in ("T.Get", "T.String"):
        entries = history(con, TargetSpec("t.go", name)).entries
        assert [(e.commit.subject, e.change) for e in entries] == [("add T", "added")], name
