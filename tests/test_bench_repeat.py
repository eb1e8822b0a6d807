"""bench/repeat_answers.py through the real script: two index runs of one history answer alike,
and a store that answers otherwise is caught and named."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import apsw

from scripted_repo import sample_core, sample_use

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "bench" / "repeat_answers.py"


def _history(repo) -> None:
    repo.write("pkg/__init__.py", "")
    repo.write("pkg/core.py", sample_core(1))
    repo.write("pkg/use.py", sample_use())
    repo.commit("add the core", days_ago=30)
    for n in range(2, 8):
        repo.write("pkg/core.py", sample_core(n))
        if n % 2:
            repo.write("pkg/use.py", sample_use() + f"\n\nX = {n}\n")
        repo.commit(f"tune compute to {n}", days_ago=30 - n)


def _run(repo, *args: str) -> tuple[int, dict]:
    done = subprocess.run([sys.executable, str(SCRIPT), str(repo.path), *args, "--json"],
                          capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    return done.returncode, json.loads(done.stdout)


def test_two_runs_of_one_history_answer_alike(repo):
    _history(repo)
    code, report = _run(repo, "--jobs", "2", "--every", "1", "--packs", "3", "--queries", "4")
    assert code == 0 and report["same"], report["examples"]
    compared = report["compared"]
    assert compared["symbol history"] >= 4 and compared["file history"] == 3
    for kind in ("hover card", "hover, rendered", "related (symbol)", "blast (symbol)",
                 "callers", "callees", "related commits (symbol)"):
        assert compared[kind] == compared["symbol history"], kind
    assert compared["context pack"] == compared["briefing"] == 3
    assert compared["related (set of files)"] == 40 and compared["what"] == 1
    assert compared["search (lexical)"] == 4 and report["modes"] == ["lexical"]
    assert all(n == 0 for n in report["differ"].values())


def _against_altered(repo, cortex, tmp_path: Path, statements: list[str],
                     *args: str) -> tuple[int, dict]:
    """The script on the history's store and on a copy of it altered by `statements`."""
    _history(repo)
    cortex.index()
    other = tmp_path / "other.db"
    shutil.copy(cortex.db, other)
    con = apsw.Connection(str(other))
    for sql in statements:
        con.execute(sql)
    con.close()
    return _run(repo, "--db", str(cortex.db), "--db", str(other), "--packs", "1",
                "--queries", "1", *args)


def test_a_store_that_answers_otherwise_is_named(repo, cortex, tmp_path: Path):
    code, report = _against_altered(repo, cortex, tmp_path, [
        "delete from symbol_changes where commit_id = (select id from commits"
        " where subject = 'tune compute to 4')",
        "update refs set line = line + 7"],   # blast's chains name the lines of calls
        "--every", "1")
    assert code == 1 and not report["same"]
    assert report["differ"]["symbol history"] >= 1
    assert any("compute" in e for e in report["examples"]["symbol history"])
    assert report["differ"]["blast (symbol)"] >= 1
    assert any(".line: " in e for e in report["examples"]["blast (symbol)"])


def test_a_name_one_store_lacks_is_a_difference_not_a_crash(repo, cortex, tmp_path: Path):
    code, report = _against_altered(repo, cortex, tmp_path, [
        "update symbols set qualname = 'helper2', name = 'helper2' where qualname = 'helper'"])
    assert code == 1
    assert report["differ"]["live symbols"] == 1
    assert "helper" in report["examples"]["live symbols"][0]
