"""bench/bench_areas.py on a real store, through the real script: the areas recomputed in child
processes on copies (the store itself untouched), at two history lengths, with agreement."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

from test_areas import fast_history

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench" / "bench_areas.py"


def test_the_areas_benchmark_measures_copies_and_agrees_with_itself(repo, cortex, tiny_model):
    fast_history(repo, 48)
    cortex.index(model=tiny_model)   # keys of model vectors: bytes, hashed with a per-process seed
    before = hashlib.md5(cortex.db.read_bytes()).hexdigest()
    out = subprocess.run([sys.executable, str(BENCH), str(cortex.db), "--code", str(ROOT),
                          "--code", str(ROOT), "--max-items", "12", "--items", "30", "0",
                          "--json"], capture_output=True, text=True, check=True, timeout=600)
    report = json.loads(out.stdout)
    runs = report["runs"]
    assert [(r["items"], r["max_items"]) for r in runs] == [(30, 12)] * 2 + [(48, 12)] * 2
    assert all(Path(r["cortex_core"]).is_relative_to(ROOT) for r in runs)
    assert all(r["peak_reset"] and r["step_peak_kib"] > 0 and r["k"] >= 1 for r in runs)
    # Two processes, the same code: the same clusters, whatever each process's hash seed.
    assert runs[1]["identical"] and runs[3]["identical"] and runs[1]["ari_first"] == 1.0
    assert sorted(r["items"] for r in report["references"]) == [30, 48]
    assert all(-1.0 <= r["ari_exact"] <= 1.0 for r in runs)
    assert hashlib.md5(cortex.db.read_bytes()).hexdigest() == before
