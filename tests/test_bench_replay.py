"""bench/replay_structure.py and bench/bench_updates.py through the real scripts: updates
replayed on a history agree with full resolutions, and are timed for two versions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench_modules import import_bench
from cortex_core.store.store import open_reader

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


def indexed_two_steps_behind(repo, cortex) -> None:
    """A store at a commit with two first-parent commits after it, each changing a.py."""
    repo.write("a.py", "def f():\n    return 0\n")
    repo.commit("one", days_ago=5)
    cortex.index(model="none")
    for n in range(2):
        repo.write("a.py", f"def f():\n    return {n + 1}\n")
        repo.commit(f"step {n}", days_ago=4 - n)


@pytest.mark.parametrize("own_stores, warm", [(False, False), (True, False), (False, True)])
def test_updates_are_timed_step_by_step_for_two_versions(repo, cortex, tmp_path, own_stores,
                                                         warm):
    """bench_updates.py: a store at an older commit, then each next first-parent commit as an
    update by both versions (here this checkout twice), from the same store, or each version
    from its own (`--own-stores`); with `--warm`, B's updates by a waiting spare indexer."""
    indexed_two_steps_behind(repo, cortex)
    work = tmp_path / "work"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_updates.py"),
                           str(repo.path), "--db", str(cortex.db), str(ROOT), str(ROOT),
                           "--json", "--work", str(work), "--keep",
                           *(["--own-stores"] if own_stores else []),
                           *(["--warm"] if warm else [])],
                          capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["steps"] == 2 and [r["files"] for r in report["rows"]] == [1, 1]
    assert report["own_stores"] is own_stores and report["b_warm"] is warm
    ends = ["start-a.db", "start-b.db"] if own_stores else ["start.db"]
    assert sorted(p.name for p in work.glob("start*.db")) == ends
    for end in ends:   # each chain went through both steps
        assert open_reader(work / end).execute("select value from meta where key = 'head'").get \
            == repo.head()
    assert all(r[k]["seconds"] > 0 and r[k]["cpu"] > 0 for r in report["rows"]
               for k in (("a",) if warm else "ab"))
    # A warm update's CPU is counted from the hand-over: what loading took is left out.
    assert all(r["b"]["seconds"] > 0 and r["b"]["cpu"] >= 0 for r in report["rows"])
    assert report["wall"]["a"]["over_1s"] in (0, 1, 2)
    assert cortex.reader().execute("select value from meta where key = 'head'").get == \
        repo.git("rev-parse", "HEAD~2").strip()     # the store given is left as it was


def test_mcp_syncs_are_timed_step_by_step_for_two_versions(repo, cortex, tmp_path):
    """bench_mcp_sync.py: each version's own `cortex mcp` server, driven by the SDK's client,
    syncs each next first-parent commit; after the first, the run is a spare indexer's."""
    indexed_two_steps_behind(repo, cortex)
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_mcp_sync.py"),
                           str(repo.path), "--db", str(cortex.db), str(ROOT), str(ROOT),
                           "--commits", "2", "--pause", "0.5", "--json",
                           "--work", str(tmp_path / "work")],
                          capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert [r["commit"] for r in report["rows"]] == [repo.git("rev-parse", "HEAD~1").strip(),
                                                     repo.head()]
    for side in ("a", "b"):
        assert [r[side]["new_commits"] for r in report["rows"]] == [1, 1]
        assert all(r[side]["warm"] for r in report["rows"])   # a spare ran every one
        assert all(0 <= r[side]["indexer_seconds"] <= r[side]["seconds"]
                   for r in report["rows"])
    assert cortex.reader().execute("select value from meta where key = 'head'").get == \
        repo.git("rev-parse", "HEAD~2").strip()     # the store given is left as it was
