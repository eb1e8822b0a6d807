"""bench/bench_read_profile.py on a scripted history, through the real script: every component
timed, the parses counted, git's baseline run on the same commits, and the parse-skip estimate
counting exactly the versions edited inside function bodies only."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench" / "bench_read_profile.py"

_BODY = "def f(x):\n    y = x + 1\n    z = y * {n}\n    return z\n\n\ndef g():\n    return 0\n"


def _run(repo, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCH), str(repo.path), *extra],
                          capture_output=True, text=True, timeout=300)


def test_components_and_the_parse_skip_estimate(repo):
    repo.write("m.py", _BODY.format(n=1))
    repo.commit("add m")
    for n in (2, 3):          # inside f's body: neither its first nor its last line
        repo.write("m.py", _BODY.format(n=n))
        repo.commit(f"body {n}")
    repo.write("m.py", _BODY.format(n=3).replace("def g():", "def h():"))   # a header: no
    repo.commit("rename g")
    out = _run(repo, "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["commits"] == 4
    assert report["git_log_p_seconds"] > 0 and report["over_git_log_p"] > 0
    parts = report["parts_seconds"]
    assert set(parts) >= {"full parse", "incremental parse", "definition walk",
                          "symbol matching", "words of changed lines"}
    # The rest is what no wrapper timed: negative if two components were counted twice.
    assert parts["the rest (diffs, blobs, patches, bookkeeping)"] >= 0
    assert report["config"]["budget_mb"] > 0            # a worker's caches by default
    counts = report["counts"]
    assert counts["full parse"] == 1            # the first version; the others incrementally
    assert counts["incremental parse"] == 3
    skip = report["parse_skip"]
    assert skip["new versions parsed"] == 3
    assert skip["edited inside bodies only"] == 2


def test_a_slice_and_an_empty_slice(repo):
    for n in range(3):
        repo.write("m.py", _BODY.format(n=n))
        repo.commit(f"c{n}")
    out = _run(repo, "--start", "1", "--commits", "1")
    assert out.returncode == 0, out.stderr
    assert "1 commits read in one process" in out.stdout
    # The old side of the one commit read was parsed first: its symbols are at hand.
    assert "parse skip: 1 of 1 new versions" in out.stdout
    out = _run(repo, "--start", "5")
    assert out.returncode == 2
    assert "no commits in the slice: the history has 3 non-merge commits" in out.stderr


def test_the_default_caches_and_a_repository_without_commits(repo, tmp_path):
    repo.write("m.py", _BODY.format(n=1))
    repo.commit("c")
    out = _run(repo, "--budget-mb", "0")
    assert out.returncode == 0, out.stderr
    assert "parser caches: the default (as --jobs 1 reads)" in out.stdout
    empty = tmp_path / "empty"
    subprocess.run(["git", "init", "-q", str(empty)], check=True)
    out = subprocess.run([sys.executable, str(BENCH), str(empty)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 2 and "HEAD has no commit yet" in out.stderr


def test_ranges_start_cold(repo):
    for n in range(4):
        repo.write("m.py", _BODY.format(n=n))
        repo.commit(f"c{n}")
    one = json.loads(_run(repo, "--json").stdout)
    two = json.loads(_run(repo, "--json", "--ranges", "2").stdout)
    # One reader parses the first version in full and the rest incrementally; a second reader
    # starts cold: its first commit parses both versions of the file in full.
    assert one["counts"]["full parse"] == 1
    assert two["counts"]["full parse"] == 2
    assert two["commits"] == one["commits"] == 4
    out = _run(repo, "--ranges", "0")
    assert out.returncode == 2 and "--ranges must be >= 1" in out.stderr


def test_versions_whose_tree_is_gone_are_read_by_regions_and_verified(repo):
    """A file over the worker's tree cache (at least 250 KB of text) keeps no tree: its next
    versions are read by regions, and --verify finds them equal to full parses."""
    functions = {i: f"def handler_{i}(value):\n    return value * {i}\n\n\n" for i in range(6000)}
    repo.write("big.py", "".join(functions.values()))
    repo.commit("big")
    for n in (10, 2000, 5999):
        functions[n] = f"def handler_{n}(value):\n    value += 1\n    return value\n\n\n"
        repo.write("big.py", "".join(functions.values()))
        repo.commit(f"edit {n}")
    report = json.loads(_run(repo, "--json", "--budget-mb", "1", "--verify").stdout)
    counts = report["counts"]
    assert counts["full parse"] == 1 and counts.get("incremental parse", 0) == 0
    assert counts["read by regions"] == 3
    assert counts.get("read by regions, different from a full parse", 0) == 0
    assert report["parts_seconds"]["reading by regions"] > 0
    out = _run(repo, "--budget-mb", "1", "--verify")
    assert "read by regions: 3 new versions" in out.stdout
    assert "0 different from a full parse (--verify)" in out.stdout
