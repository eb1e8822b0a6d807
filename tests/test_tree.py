"""What the repository tracks: the layout's folders and files, nothing left over from a session.

A profile dump and a 3 MB py-spy wheel once rode along with a feature commit (27b31f6) and sat at
the top of every checkout for a day. These checks read `git ls-files` of this checkout; from a
copy that is not a git checkout (an sdist), they skip and say why.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# The top of the tree: the layout README.md describes, and the files every project has.
TOP = frozenset({
    ".ci", ".gitignore", "README.md", "pyproject.toml",
    "bench", "cortex_cli", "cortex_core", "cortex_ls", "cortex_mcp", "docs", "editors", "tests",
})
# Larger than this is a build product, a data file or a mistake: none of them belongs here.
MAX_BYTES = 512 * 1024


def _tracked() -> list[str]:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True,
                             check=True, timeout=60).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"not a git checkout ({exc}): nothing to check")
    return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]


def test_the_top_of_the_tree_holds_only_the_layout():
    top = {path.split("/", 1)[0] for path in _tracked()}
    assert top - TOP == set(), "tracked at the top but not part of the layout"


def test_no_tracked_file_is_large():
    large = {path: size for path in _tracked()
             if (ROOT / path).is_file() and (size := (ROOT / path).stat().st_size) > MAX_BYTES}
    assert large == {}
