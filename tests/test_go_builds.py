"""Go as a Go developer reads it: build constraints decide which definition a call can reach,
and targets written as Go writes a method (`(*T).M`, `List[T].Push`). Real repositories, real
stores (junegunn/fzf, found by a tester)."""

from __future__ import annotations

from cortex_core.query.blast import callers, callees
from cortex_core.query.targets import TargetSpec, parse_target

READ_UNIX = "//go:build !windows\n\npackage util\n\nfunc Read() int {\n\treturn 1\n}\n"
READ_WINDOWS = "//go:build windows\n\npackage util\n\nfunc Read() int {\n\treturn 2\n}\n"


def _platform_project(repo):
    repo.write("go.mod", "module example.com/g\n\ngo 1.22\n")
    repo.write("util/read_unix.go", READ_UNIX)
    repo.write("util/read_windows.go", READ_WINDOWS)
    repo.write("util/helper.go", "package util\n\nfunc Helper() int {\n\treturn 3\n}\n")
    repo.write("tui/light_unix.go", '//go:build !windows\n\npackage tui\n\nimport "example.com'
               '/g/util"\n\nfunc getch() int {\n\treturn util.Read()\n}\n')
    # Constrained by its name alone, as `go build` reads `_windows.go`.
    repo.write("tui/light_windows.go", 'package tui\n\nimport "example.com/g/util"\n\n'
               "func setup() int {\n\treturn util.Read()\n}\n")
    repo.write("tui/term_linux_amd64.go", '// +build linux,amd64\n\npackage tui\n\n'
               'import "example.com/g/util"\n\nfunc term() int {\n\treturn util.Read()\n}\n')
    repo.write("tui/any.go", 'package tui\n\nimport "example.com/g/util"\n\n'
               "func anywhere() int {\n\treturn util.Read()\n}\n")
    repo.write("tui/dot.go", 'package tui\n\nimport . "example.com/g/util"\n\n'
               "func useDot() int {\n\treturn Helper() + Read()\n}\n")
    repo.commit("platforms", days_ago=3)


def test_a_go_call_reaches_only_the_definitions_built_beside_it(repo, cortex):
    """`util.Read()` in a file built only off Windows is `read_unix.go`'s `Read`, never
    `read_windows.go`'s (fzf: `light_unix.go` was a caller of `util_windows.go::Read` at 1.0);
    a file built everywhere may reach both; a dot import binds every file's definition."""
    _platform_project(repo)
    cortex.index(model="none")
    con = cortex.reader()

    def who(path):
        return sorted((c.path, c.qualname) for c in callers(con, TargetSpec(path, "Read")).items)
    assert who("util/read_unix.go") == [
        ("tui/any.go", "anywhere"), ("tui/dot.go", "useDot"), ("tui/light_unix.go", "getch"),
        ("tui/term_linux_amd64.go", "term")]
    assert who("util/read_windows.go") == [
        ("tui/any.go", "anywhere"), ("tui/dot.go", "useDot"),
        ("tui/light_windows.go", "setup")]
    assert [(c.path, c.confidence) for c in callees(con, TargetSpec(
        "tui/light_unix.go", "getch")).items] == [("util/read_unix.go", 1.0)]


def test_a_go_build_constraint_changed_in_the_working_tree_is_read(repo, cortex):
    """The constraint is read with the file's structure: a file made Windows-only in the
    working tree stops reaching the other platforms' definitions at the next run."""
    _platform_project(repo)
    cortex.index(model="none")
    repo.write("tui/any.go", '//go:build windows\n\npackage tui\n\nimport "example.com/g/util"'
               "\n\nfunc anywhere() int {\n\treturn util.Read()\n}\n")
    cortex.index(model="none")
    con = cortex.reader()
    assert [c.path for c in callees(con, TargetSpec("tui/any.go", "anywhere")).items] == [
        "util/read_windows.go"]


def test_go_build_constraints_as_go_build_reads_them():
    from cortex_core.lang.go_build import compatible, constraint
    assert constraint("util/util_windows.go", b"//go:build windows\n\npackage util\n") == \
        "windows"
    assert constraint("x_linux_amd64_test.go", b"package x\n") == "linux && amd64"
    assert constraint("windows.go", b"package x\n") is None   # no `_` before it
    assert constraint("a.go", b"// Copyright\n\n// +build linux,cgo darwin\n\npackage a\n") == \
        "(linux && cgo) || (darwin)"
    assert constraint("a.go", b"package a\n\n//go:build windows\n") is None   # after package
    assert constraint("a.go", b"//go:build (windows\n\npackage a\n") is None   # unreadable
    assert not compatible("windows", "!windows")
    assert not compatible("unix", "windows")
    assert not compatible("linux && amd64", "arm64")
    assert not compatible("pprof", "!pprof")
    assert compatible("!windows", "linux && amd64")
    assert compatible("unix && !linux", "darwin")
    assert compatible("linux", "android")         # android builds linux's files
    assert compatible("tcell || windows", "!windows")
    assert compatible(None, "windows") and compatible("(", "windows")


def test_a_go_method_target_written_as_go_writes_it(repo, cortex):
    """`(*Executor).Become` (a method expression, as gopls and pprof print it), with a stack
    trace's package before it (`util.(*Executor).Become`), and a generic type's parameters
    (`(*List[T]).Push`, `Pair[K, V].Key`) name the method `Executor.Become`: the first was
    "bad target: expected PATH::SYMBOL", the last "no symbol" (fzf's `ConcurrentSet[T].Add`)."""
    from cortex_core.query.targets import resolve
    repo.write("go.mod", "module example.com/g\n\ngo 1.22\n")
    repo.write("util/x.go", "package util\n\ntype Executor struct{}\n\n"
               "func (x *Executor) Become() {}\n\ntype List[T any] struct{ items []T }\n\n"
               "func (l *List[T]) Push(v T) { l.items = append(l.items, v) }\n\n"
               "type Pair[K comparable, V any] struct{ k K }\n\n"
               "func (p Pair[K, V]) Key() K { return p.k }\n")
    repo.commit("methods", days_ago=3)
    cortex.index(model="none")
    con = cortex.reader()
    for written, meant in [("(*Executor).Become", "Executor.Become"),
                           ("(Executor).Become", "Executor.Become"),
                           ("util.(*Executor).Become", "Executor.Become"),
                           ("example.com/g/util.(*Executor).Become", "Executor.Become"),
                           ("(*List[T]).Push", "List.Push"), ("List[T].Push", "List.Push"),
                           ("Pair[K, V].Key", "Pair.Key"), ("(Pair[K,V]).Key", "Pair.Key")]:
        spec = parse_target(f"util/x.go::{written}")
        assert resolve(con, spec).qualname == meant, written
