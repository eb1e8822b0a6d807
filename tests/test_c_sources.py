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


UTIL = "int helper(int x)\n{\n    return x + 1;\n}\n\nint compute(int a)\n{\n    return helper(a);\n}\n"


def test_blast_in_a_repository_of_c_says_its_dependents_are_not_known(repo, cortex):
    # C has history but no structure: blast said "no structure indexed yet (an index run
    # builds it)" right after an index run, then "0 dependents", "none found" and "hidden
    # coupling ... no structural link" for helper, which compute calls.
    from cortex_cli import render
    from cortex_core.query.blast import blast, callers
    repo.write("util.c", UTIL)
    repo.commit("add util", days_ago=3)
    repo.write("util.c", UTIL.replace("x + 1", "x + 2").replace("helper(a)", "helper(a) * 2"))
    repo.commit("tune both", days_ago=2)
    cortex.index()
    con = cortex.reader()
    result = blast(con, TargetSpec("util.c", "helper"))
    assert result.note == "structure not read for c files: history and co-change only"
    assert not result.dependents_known and not result.dependents
    assert [h.qualname for h in result.hidden] == ["compute"]
    text = render.blast(result)
    assert "dependents not known" in text and "0 dependents" not in text
    assert "none found" not in text and "no structural link" not in text
    near = callers(con, TargetSpec("util.c", "helper"))
    assert not near.known and "callers of util.c::helper: not known" in render.neighbours(
        near, "callers")


def test_a_c_test_file_by_its_name_gives_its_tests_their_functions_names(repo, cortex):
    # test_parser.c at the root is a test file (Check, CUnit; GoogleTest's parser_test.cc):
    # its test_parse_value is parse_value's twin, as in test_parser.py. Only tests/ counted.
    from cortex_core.query.blast import fused_related
    repo.write("src/parser.c", "int parse_value(const char *s)\n{\n    return s[0];\n}\n\n"
                               "int other(void)\n{\n    return 0;\n}\n")
    repo.write("test_parser.c", "void test_parse_value(void)\n{\n    parse_value(\"x\");\n}\n\n"
                                "void test_other(void)\n{\n    other();\n}\n")
    repo.commit("parser and its tests", days_ago=3)
    cortex.index()
    con = cortex.reader()
    found = fused_related(con, TargetSpec("src/parser.c", "parse_value")).symbols
    assert [(p.qualname, p.relation) for p in found][:1] == [("test_parse_value", "same name")]
