"""C repositories, read as a reviewer on cJSON did: headers, blast radius without structure,
test files by their names."""

from __future__ import annotations

from cortex_core.query.history import history
from cortex_core.query.targets import TargetSpec

HEADER = """\
#ifndef UTIL_H
#define UTIL_H
#ifdef __cplusplus
extern "C" {
#endif

typedef struct cfg {
    int level;
} cfg;

int compute(int a, int b);

#define CLAMP(v, lo, hi) ((v) < (lo) ? (lo) : (v) > (hi) ? (hi) : (v))

#ifdef __cplusplus
}
#endif
#endif
"""


def subjects(con, path, symbol=None):
    return [(e.commit.subject, e.change) for e in history(con, TargetSpec(path, symbol)).entries]


def test_a_header_open_to_cplusplus_keeps_its_definitions(repo, cortex):
    # `extern "C" {` behind `#ifdef __cplusplus` wraps the whole header: cJSON.h had no
    # definitions at all, its struct cJSON and its function-like macros no history.
    repo.write("util.h", HEADER)
    repo.commit("add util.h", days_ago=3)
    repo.write("util.h", HEADER.replace("    int level;\n", "    int level;\n    int verbose;\n"))
    repo.commit("cfg: verbose", days_ago=2)
    cortex.index()
    con = cortex.reader()
    assert subjects(con, "util.h", "cfg") == [("cfg: verbose", "body"), ("add util.h", "added")]
    assert subjects(con, "util.h", "CLAMP") == [("add util.h", "added")]
    target = history(con, TargetSpec("util.h", line=8))
    assert (target.target.qualname, target.target.start_line) == ("cfg", 7)
