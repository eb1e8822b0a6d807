"""bench/bench_similarity.py through the real script, small: every shape timed against difflib
in the same run, each answer checked against difflib's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench" / "bench_similarity.py"


def test_every_shape_is_timed_beside_difflib_with_the_same_answer():
    out = subprocess.run([sys.executable, str(BENCH), "--scale", "0.02", "--runs", "1", "--json"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    names = [r["shape"] for r in report["shapes"]]
    assert len(names) == 6 and any(n.startswith("shuffled twins") for n in names)
    for row in report["shapes"]:
        assert row["same_answer"] is True
        assert row["difflib_seconds"] > 0 and row["cortex_seconds"] > 0


def test_bad_arguments_are_refused():
    out = subprocess.run([sys.executable, str(BENCH), "--scale", "0"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 2 and "--scale must be positive" in out.stderr
