"""C++ repositories, read as a hostile reviewer on cxxopts and robin-map did: headers named `.h`,
annotation and export macros."""

from __future__ import annotations

from cortex_core.lang.c_text import dialect, macro_spans
from cortex_core.lang.symbols import extract_symbols
from cortex_core.query.history import history
from cortex_core.query.targets import TargetSpec


def subjects(con, path, symbol=None):
    return [(e.commit.subject, e.change) for e in history(con, TargetSpec(path, symbol)).entries]


MAP_H = """\
#pragma once
#include <vector>

namespace tsl {
namespace detail {
template <class T>
class robin_map {
 public:
  void insert(const T& v) { m.push_back(v); }
  bool empty() const noexcept { return m.empty(); }

 private:
  std::vector<T> m;
};
}  // namespace detail
}  // namespace tsl
"""


def test_a_cplusplus_header_named_h_has_its_classes_and_methods(repo, cortex):
    # robin-map's headers are `.h`: read by the C grammar, robin_map.h was one function `tsl`
    # (the namespace) holding the whole file, and no class or method had a history.
    repo.write("include/tsl/robin_map.h", MAP_H)
    repo.commit("add robin_map", days_ago=3)
    repo.write("include/tsl/robin_map.h", MAP_H.replace("return m.empty();", "return !m.size();"))
    repo.commit("empty: by size", days_ago=2)
    cortex.index()
    con = cortex.reader()
    method = "tsl.detail.robin_map.empty() const"
    assert subjects(con, "include/tsl/robin_map.h", method) == [
        ("empty: by size", "body"), ("add robin_map", "added")]
    target = history(con, TargetSpec("include/tsl/robin_map.h", line=9)).target
    assert (target.qualname, target.kind) == ("tsl.detail.robin_map.insert(const T&)", "method")


def test_a_c_header_stays_c():
    # The C reading names C functions without their parameter types: a C header must not turn
    # C++ for `extern "C"`, `struct x {`, `class` in a comment or a header included with `.h`.
    header = (b'#include <stdio.h>\n#ifdef __cplusplus\nextern "C" {\n#endif\n'
              b"/* the class of a value */\nstruct value { int public_; };\n"
              b"static inline int get(struct value *v) { return v->public_; }\n"
              b"#ifdef __cplusplus\n}\n#endif\n")
    assert [s.qualname for s in extract_symbols("c", header)] == ["value", "get"]
    # A review: `#include <cstddef>` in the usual `#ifdef __cplusplus` guard, or `template <`
    # in a comment, turned a C header C++, and every function's identity with it (`get` became
    # `get(struct value*)`); a string holding `/*` hides nothing.
    guarded = (b"struct value { int x; };\nint get(struct value *v) { return v->x; }\n"
               b"#ifdef __cplusplus\n#include <cstddef>\n#else\n#include <stddef.h>\n#endif\n"
               b"/*\n   template <int N> works only in C++\n*/\n")
    assert dialect("c", guarded) == "c"
    assert [s.qualname for s in extract_symbols("c", guarded)] == ["value", "get"]
    # A fourth review: a C++ API in a C header's `#ifdef __cplusplus` section (mimalloc's STL
    # allocators) is C++ to its readers; read as C it was garbage. So are `std::` and a
    # standard header without `.h` outside such a section.
    api = (b"int c_api(int x);\n#ifdef __cplusplus\nnamespace api {\nclass W {\npublic:\n"
           b"  int call(int x) const { return x; }\n};\n}\n#endif\n")
    assert [s.qualname for s in extract_symbols("c", api)] == [
        "api", "api.W", "api.W.call(int) const"]
    assert dialect("c", b'static const char *glob = "src/*";\nnamespace foo {\n}\n/* end */\n') \
        == "cpp"
    assert dialect("c", b"#include <string>\nstruct Item {\n  int size() const { return 1; }\n};\n") \
        == "cpp"


OPTIONS = """\
namespace cxxopts {
class KeyValue {
 public:
  const std::string&
  key() const
  {
    return m_key;
  }

 private:
  std::string m_key;
};

MACRO_POP

namespace exceptions {
class exception : public std::exception {
 public:
  const char* what() const noexcept override { return m.c_str(); }
};
}  // namespace exceptions
}  // namespace cxxopts
"""


def test_a_macro_alone_on_its_line_does_not_rename_or_hide_what_follows(repo, cortex):
    # cxxopts: `CXXOPTS_NODISCARD` above `const std::string&` made KeyValue's key() a method
    # named `std`, "renamed" from key() const in the commit that added it; a namespace after
    # `CXXOPTS_DIAGNOSTIC_POP` read as a function holding every exception class.
    repo.write("cxxopts.hpp", OPTIONS)
    repo.commit("add options", days_ago=3)
    repo.write("cxxopts.hpp", OPTIONS.replace(
        "  const std::string&\n  key() const\n  {\n    return m_key;",
        "  NODISCARD\n  const std::string&\n  key() const\n  {\n    return this->m_key;"))
    repo.commit("use nodiscard", days_ago=2)
    cortex.index()
    con = cortex.reader()
    assert subjects(con, "cxxopts.hpp", "cxxopts.KeyValue.key() const") == [
        ("use nodiscard", "body"), ("add options", "added")]
    what = history(con, TargetSpec("cxxopts.hpp", line=20)).target
    assert (what.qualname, what.kind) == (
        "cxxopts.exceptions.exception.what() const", "method")
    names = [s.qualname for s in extract_symbols("cpp", repo.path.joinpath(
        "cxxopts.hpp").read_bytes())]
    assert "cxxopts.KeyValue.std" not in names and "cxxopts.exceptions" in names


def test_export_macros_and_q_object_leave_classes_and_methods_whole():
    # `class EXPORT Foo final : public Base {` read as a function named `Base`, its methods
    # gone; Q_OBJECT made `public:` a method and hid the one after it.
    source = (b"namespace n {\nclass DLL_EXPORT Foo final : public Base {\n  void m() {}\n};\n"
              b"class W : public QObject {\n  Q_OBJECT\npublic:\n  void run() {}\n};\n}\n")
    assert [(s.qualname, s.kind) for s in extract_symbols("cpp", source)] == [
        ("n", "namespace"), ("n.Foo", "class"), ("n.Foo.m()", "method"),
        ("n.W", "class"), ("n.W.run()", "method")]


def test_a_return_type_on_its_own_line_stays_the_functions():
    # GNU style puts the return type on a line of its own: `BOOL` there is no annotation.
    source = b"BOOL\nready(void)\n{\n    return TRUE;\n}\n"
    assert [(s.qualname, s.start_line) for s in extract_symbols("c", source)] == [("ready", 1)]


def test_a_return_type_and_calling_convention_words_stay_the_functions():
    """A review: `DWORD` above `WINAPI worker(`, `EFI_STATUS` and `EFIAPI` above `Entry (`
    (Windows, EDK2) were blanked as macros, so a changed return type was no change of the
    function and its line no line of it."""
    source = (b"DWORD\nWINAPI worker(void *p)\n{\n    return 0;\n}\n\n"
              b"EFI_STATUS\nEFIAPI\nEntry (\n  VOID\n  )\n{\n  return 0;\n}\n")
    assert macro_spans("c", source) == [(source.index(b"VOID"), source.index(b"VOID") + 4)]
    assert [(s.start_line, s.end_line) for s in extract_symbols("c", source)] == [
        (1, 5), (7, 14)]


def test_an_incremental_parse_reads_a_macro_line_as_a_full_parse_does():
    # An edit of the line after `EXPORTED` decides whether that untouched line is a macro
    # (blanked) or a return type: the old tree's reading of it must not be reused.
    from cortex_core.lang.symbols import SymbolParser
    old = b"int a() { return 1; }\nEXPORTED\nint b(int x) { return x; }\n"
    new = b"int a() { return 1; }\nEXPORTED\nb(int x) { return x; }\n"
    parser = SymbolParser()
    parser.symbols("cpp", "old", old)
    got = parser.symbols("cpp", "new", new, base=("old", [(3, 1, 3, 1)]))
    assert [(s.qualname, s.start_line) for s in got] == [
        (s.qualname, s.start_line) for s in extract_symbols("cpp", new)]


def test_a_method_declared_in_a_header_suggests_its_definition_in_the_source(repo, cortex):
    # The header declares Shape::area, shape.cpp defines it: `shape.h::Shape.area` said
    # "no symbol 'Shape.area' in shape.h" and suggested the header's other names only, though
    # the docs promise a prototype's definition elsewhere (a C function's was found: its
    # qualname is its name; a C++ method's holds its namespace, class and parameters).
    import pytest

    from cortex_core.errors import NotFound
    repo.write("shape.h", "namespace geo {\nclass Shape {\n public:\n  double area() const;\n"
                          "  int sides() const { return 0; }\n};\n}\n")
    repo.write("shape.cpp", '#include "shape.h"\nnamespace geo {\n'
                            "double Shape::area() const {\n  return 1.0;\n}\n}\n")
    repo.commit("add shapes", days_ago=3)
    cortex.index()
    con = cortex.reader()
    for name in ("Shape.area", "area", "geo::Shape::area"):
        with pytest.raises(NotFound, match=r"did you mean: .*shape\.cpp::geo\.Shape\.area\(\) "
                                           r"const"):
            history(con, TargetSpec("shape.h", name.replace("::", ".")))


def test_what_a_function_added_after_the_last_one_does_not_touch_it(repo, cortex):
    # Appending `brand_new()` after the file's last function: `cortex what` listed that
    # function (and its namespace) as hot spots being touched. git puts the insertion after
    # its closing line, which a brace language's definition never reaches past; a Python
    # body's new last line is the only insertion after a definition's last line inside it.
    from cortex_core.features.what import what
    source = "namespace v1 {\nint old(int x) {\n  return x;\n}\n}\nint last() {\n  return 1;\n}\n"
    for n in range(3):
        repo.write("lib.cpp", source.replace("return x;", f"return x + {n};")
                   .replace("return 1;", f"return {n};"))
        repo.commit(f"change {n}", days_ago=3 - n)
    cortex.index()
    (repo.path / "lib.cpp").write_text(source.replace("return x;", "return x + 9;")
                                       .replace("return 1;", "return 2;")
                                       + "int brand_new() {\n  return 5;\n}\n")
    found = what(cortex.reader(), repo.path)
    assert {(h.path, h.qualname) for h in found.hotspots} == {
        ("lib.cpp", None), ("lib.cpp", "v1"), ("lib.cpp", "v1.old(int)")}


def test_a_c_header_gaining_a_cplusplus_section_keeps_its_functions_histories(repo, cortex):
    """Read as C++ from the commit that adds a C++ API to its `#ifdef __cplusplus` section, a C
    header's `get` becomes `get(struct value*)`: the name as typed answers with the function
    alive at HEAD, whose history holds its C past (a review found it answered with the gone
    identity)."""
    head = "struct value { int x; };\nint get(struct value *v) {\n  return v->x;\n}\n"
    repo.write("v.h", head)
    repo.commit("add v.h", days_ago=5)
    repo.write("v.h", head.replace("v->x", "v->x + 1"))
    repo.commit("get: plus one", days_ago=4)
    api = "#ifdef __cplusplus\nnamespace v {\nclass W {\npublic:\n  int n() const { return 1; }\n};\n}\n#endif\n"
    repo.write("v.h", head.replace("v->x", "v->x + 1") + api)
    repo.commit("C++ wrapper", days_ago=3)
    repo.write("v.h", head.replace("v->x", "v->x + 2") + api)
    repo.commit("get: plus two", days_ago=2)
    cortex.index()
    found = history(cortex.reader(), TargetSpec("v.h", "get"))
    assert found.target.qualname == "get(struct value*)" and found.target.alive
    subjects = [e.commit.subject for e in found.entries]
    assert subjects[0] == "get: plus two" and subjects[-1] == "add v.h" and "get: plus one" in subjects
