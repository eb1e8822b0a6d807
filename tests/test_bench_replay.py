"""bench/replay_structure.py through the real script: updates replayed on a history agree with
full resolutions, and the comparison names a difference when there is one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from bench_modules import import_bench

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "bench" / "replay_structure.py"


def test_replayed_updates_agree_with_full_resolutions(repo):
    for n in range(12):
        repo.write(f"pkg/m{n}.py", f"def f{n}():\n    return 0\n")
    repo.write("pkg/base.py", "class Base:\n    def check(self):\n        return 1\n")
    repo.write("use.py", "from pkg.base import Base\n\n\ndef run(b: Base):\n"
               "    return b.check()\n")
    repo.commit("layout", days_ago=5)
    repo.write("tests/test_base.py", "from pkg.base import Base\n\n\nclass TestBase(Base):\n"
               "    def test_check(self):\n        assert self.check()\n")
    repo.commit("a test class", days_ago=4)
    repo.write("README.md", "# Notes\n")
    repo.commit("no code", days_ago=3)
    repo.remove("tests/test_base.py")
    repo.commit("the test class goes", days_ago=2)
    done = subprocess.run([sys.executable, str(SCRIPT), str(repo.path), "--commits", "3",
                           "--json"], capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["steps"] == 3 and report["differing"] == []
    read = [r["files_read"] for r in report["rows"]]
    assert read == [1, 0, 0]     # the removed file is forgotten, not read
    added, _, removed = report["rows"]
    assert 0 < added["refs_resolved"] < added["refs"]
    assert removed["refs_resolved"] < removed["refs"]


def test_a_difference_is_named():
    replay = import_bench("replay_structure")[0]
    same = ({("a.py", "call", "f", None, None, None, 3): "resolved"},
            {("a.py", "call", "f", 3): {("b.py", "f", 1.0)}})
    other = (dict(same[0]), {("a.py", "call", "f", 3): {("c.py", "f", 1.0)}})
    assert replay.differences(same, same) == []
    found = replay.differences(same, other)
    assert len(found) == 1 and found[0].startswith("edges ('a.py', 'call', 'f', 3)")
