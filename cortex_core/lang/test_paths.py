"""Which files are tests, by their path: the structure pass marks their definitions as tests,
and co-change drops test affixes from the names of their symbols (coupling.symbol_name_key)."""

from __future__ import annotations

import fnmatch
import posixpath

TEST_PATHS = ("test_*.py", "*_test.py", "tests.py", "conftest.py", "*_test.go", "*.test.js",
              "*.test.jsx", "*.test.ts", "*.test.tsx", "*.spec.js", "*.spec.ts", "*.spec.tsx",
              "*.spec.jsx", "*Test.java", "*Tests.java", "*IT.java",
              # PHPUnit's default suffix: in tests/, or beside the class (league/csv's src/).
              "?*Test.php",   # a class named Test is no test
              # C and C++ have no one convention; these are the common ones (GoogleTest's
              # foo_test.cc and foo_unittest.cc, Check's and CUnit's test_foo.c).
              *(f"{affix}.{suffix}" for suffix in ("c", "cc", "cpp", "cxx")
                for affix in ("test_*", "*_test", "*_tests", "*_unittest")))
TEST_DIRS = ("test/", "tests/", "__tests__/", "spec/", "testing/")


def is_test_path(path: str) -> bool:
    name = posixpath.basename(path)
    if any(fnmatch.fnmatchcase(name, p) for p in TEST_PATHS):
        return True
    padded = "/" + path
    return any("/" + d in padded for d in TEST_DIRS)
