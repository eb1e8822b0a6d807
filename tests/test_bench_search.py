"""bench/bench_search.py on histories it cannot measure: it says why and exits, no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench" / "bench_search.py"


def _run(repo, cortex) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCH), str(repo.path), "--db", str(cortex.db)],
                          capture_output=True, text=True, timeout=300)


def test_a_history_without_a_changelog_says_so(repo, cortex):
    repo.write("m.py", "def f():\n    return 1\n")
    repo.commit("start")
    cortex.index()
    out = _run(repo, cortex)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines()[-1].startswith("no changelog citing issue numbers")


def test_a_changelog_citing_no_commit_of_the_history_says_so(repo, cortex):
    repo.write("CHANGES.md", "# Changes\n\n## 1.0\n\n- Fixed the parser on empty input (#12)\n")
    repo.commit("start")
    cortex.index()
    out = _run(repo, cortex)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines()[-1] == (
        "no queries: no entry of CHANGES.md cites a commit of this history (dropped: "
        "refs_without_commit 1)")
