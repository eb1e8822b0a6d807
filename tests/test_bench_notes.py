"""bench_notes.py on a small history: its report holds what the benchmark claims to measure."""

from __future__ import annotations

import json
import subprocess

from bench_modules import import_bench


def test_the_report_times_notes_beside_the_run_and_the_idle_store(repo, tmp_path, capsys):
    (bench,) = import_bench("bench_notes")
    stream = []
    for n in range(1, 61):
        body = f"def step():\n    return {n}\n"
        stream.append(f"commit refs/heads/main\nmark :{n}\n"
                      f"committer Ann <ann@example.com> {1_600_000_000 + n * 60} +0000\n"
                      f"data <<EOF\nchange {n}\nEOF\n" + (f"from :{n - 1}\n" if n > 1 else "")
                      + f"M 100644 inline app.py\ndata {len(body)}\n{body}\n")
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo.path, check=True,
                   input="".join(stream).encode(), capture_output=True)
    repo.git("reset", "-q", "--hard")
    assert bench.main([str(repo.path), "--behind", "20", "--every", "0", "--tight", "--work",
                       str(tmp_path / "work"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["behind"], report["commits"]) == (20, 20)
    (measured,) = report["versions"]
    assert measured["idle_note"]["n"] == 10
    assert measured["alone"]["returncode"] == measured["with_notes"]["returncode"] == 0
    notes = measured["with_notes"]
    assert notes["failed"] == 0 and notes["notes"]["n"] >= 1
    assert measured["tight"]["returncode"] == 0 and measured["tight"]["failed"] == 0
    assert not (tmp_path / "work").exists()   # removed without --keep
