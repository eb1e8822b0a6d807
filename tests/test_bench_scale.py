"""bench/bench_scale.py on a scripted history, through the real script: the cut at the middle of
the first-parent line, the full index against git log -p, the process tree's memory, the store,
hover and code lens against git blame and git log -L, the one-commit update and the first hover
of a real language server opening the clone with no index."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench" / "bench_scale.py"


def _module(step: int) -> str:
    body = "".join(f"def f{i}(x):\n    y = x + {i}\n    return y * {step if i == step % 3 else 1}"
                   "\n\n\n" for i in range(3))
    return "import os\n\n\n" + body


def _history(repo, commits: int) -> None:
    for step in range(commits):
        repo.write("pkg/mod.py", _module(step))
        repo.write("pkg/other.py", f"X = 1\n\n\ndef g():\n    return {step}\n")
        repo.commit(f"step {step}", days_ago=commits - step)


def _run(repo, *extra: str) -> dict:
    out = subprocess.run([sys.executable, str(BENCH), str(repo.path), "--functions", "4",
                          "--log-l", "2", "--git-runs", "1", "--update-runs", "2", "--poll",
                          "0.2", "--json", *extra], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_first_half_cuts_the_history_and_every_step_reports(repo):
    _history(repo, 10)
    report = _run(repo, "--first-half")
    setup = report["setup"]
    # 10 first-parent commits: the cut is the middle one, HEAD~5 (step 4); the clone is then
    # checked out at the cut's parent, the cut being the one-commit update.
    assert setup["cut_commit"] == repo.git("rev-parse", "HEAD~5")
    assert setup["tip"] == setup["cut_commit"]
    assert setup["base"] == repo.git("rev-parse", "HEAD~6")
    assert setup["commits"] == 4 and setup["original_commits"] == 10

    full = report["full_index"]
    assert full["summary"]["new_commits"] == 4
    assert full["seconds"] > 0 and full["over_git_log_p"] > 0
    peak = full["memory"]["peak"]
    assert peak["total_kib"] > 0 and peak["main_kib"] > 0
    assert any(p["role"] == "main" and "index" in p["cmdline"]
               for p in full["memory"]["processes"])
    assert report["store"]["bytes"] > 0

    q = report["queries"]
    assert q["hover"]["n"] == 4 and q["blame"]["n"] == 4
    assert q["log_l"]["n"] == 2
    assert q["hover_kinds"].get("symbol", 0) >= 1       # a function's card, from the index
    assert q["lenses"] >= 0 and q["lens"]["n"] == q["files"]

    update = report["update"]
    assert update["new_commits"] == 1 and len(update["seconds_all"]) == 2

    first = report["first_hover"]
    # A function line the update's commit changed: f0's return (its multiplier went back to 1).
    assert (first["path"], first["line"]) == ("pkg/mod.py", 6)
    assert first["seconds"] > 0 and first["attempts"] >= 1
    assert first["text"].startswith("**`") and "no commits yet" not in first["text"]
    assert first["newest_commit"] == setup["tip"]      # the last commit changed pkg/mod.py
    assert first["names_newest_commit"] == (setup["tip"][:10] in first["text"])
    assert first["index_run_seconds"] is not None


def test_until_cuts_at_the_nth_commit_and_the_text_report_renders(repo):
    _history(repo, 6)
    out = subprocess.run([sys.executable, str(BENCH), str(repo.path), "--until", "3",
                          "--functions", "2", "--log-l", "1", "--git-runs", "1",
                          "--update-runs", "1", "--no-first-hover"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "cut: first-parent commit 3 counted from the root" in out.stdout
    assert "indexed: 2 commits" in out.stdout
    assert "git log -p --no-merges > /dev/null (best)" in out.stdout
    assert "One new commit: cortex index" in out.stdout
    assert "First hover" not in out.stdout


def test_only_first_hover_skips_the_other_steps_and_hovers_at_the_newest_commit(repo):
    _history(repo, 4)
    report = _run(repo, "--only-first-hover")
    assert "full_index" not in report and "queries" not in report and "update" not in report
    first = report["first_hover"]
    assert (first["path"], first["line"]) == ("pkg/mod.py", 6)       # f0's changed return
    assert first["text"].startswith("**`")
    # The server indexed the clone at T (HEAD here): once its index run has ended, a hover names
    # T; before, it may answer from the older history.
    assert first["index_finished_before"] or first["partial"]
    assert first["newest_commit"] == repo.head()
    assert first["names_newest_commit"] == (repo.head()[:10] in first["text"])


def test_settings_reach_every_cortex_run_and_bad_ones_are_refused(repo):
    _history(repo, 4)
    report = _run(repo, "--no-first-hover", "--set", "index.max_file_bytes=20")
    assert report["setup"]["settings"] == "[index]\nmax_file_bytes = 20\n\n"
    # Both files are over 20 bytes: recorded at file level only, in the full run ...
    assert report["full_index"]["summary"]["skipped_file_changes"] > 0
    assert report["full_index"]["summary"]["symbol_changes"] == 0
    assert report["update"]["new_commits"] == 1     # ... and the update ran with it too
    for bad, said in (("max_file_bytes", "expected SECTION.KEY=VALUE"),
                      ("index.nope=1", "unknown key index.nope"),          # as cortex says it
                      ("index.max_file_bytes=1\n[time]\nclock='wall'", "VALUE must be")):
        out = subprocess.run([sys.executable, str(BENCH), str(repo.path), "--set", bad],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 2 and said in out.stderr, (bad, out.stderr)


def test_settings_are_refused_when_the_repository_tracks_its_config(repo):
    _history(repo, 3)
    repo.write(".cortex/config.toml", "[index]\nmax_file_bytes = 1000\n")
    repo.commit("track the config")
    out = subprocess.run([sys.executable, str(BENCH), str(repo.path), "--no-first-hover",
                          "--set", "index.max_file_bytes=20"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "tracks .cortex/config.toml" in out.stderr
