"""bench/bench_file_history.py on a scripted history, through the real script: a file whose
history equals git's, a merge that wrote lines of its own (listed by cortex alone, classified
`merged`), and a renamed file left out of the comparison."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench" / "bench_file_history.py"


def test_agreement_and_the_merges_classified(repo):
    repo.write("a.py", "def f():\n    return 1\n")
    repo.write("old.py", "x = 1\n")
    repo.commit("base", days_ago=5)
    repo.git("checkout", "-q", "-b", "side")
    repo.write("a.py", "def f():\n    return 2\n")
    repo.commit("side", days_ago=4)
    repo.git("checkout", "-q", "main")
    repo.write("a.py", "def f():\n    return 3\n")
    repo.commit("main", days_ago=3)
    # A conflict resolved by hand: the merge writes a line of neither parent.
    with pytest.raises(subprocess.CalledProcessError):
        repo.git("merge", "-q", "side")
    repo.write("a.py", "def f():\n    return 4\n")
    repo.git("add", "a.py")
    repo.git("commit", "-q", "-m", "merge side, resolved")
    repo.move("old.py", "new.py")
    repo.commit("rename", days_ago=1)
    out = subprocess.run([sys.executable, str(BENCH), str(repo.path), "--json"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["files"] == {"at_head_never_renamed": 1, "renamed_left_out": 1}
    agreement = report["agreement"]
    assert (agreement["files"], agreement["identical"]) == (1, 0)
    assert agreement["differences"] == {"merged": 1, "chmod": 0, "cortex-only": 0, "git-only": 0}
    assert report["examples"]["merged"][0]["subject"] == "merge side, resolved"
