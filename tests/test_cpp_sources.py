"""C++ repositories, read as a hostile reviewer on cxxopts and robin-map did: headers named `.h`,
annotation and export macros."""

from __future__ import annotations

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
