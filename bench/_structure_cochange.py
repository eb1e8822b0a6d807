"""bench_structure.py, part 2: time-split co-change prediction (co-change alone, structure alone,
fused) from an index of the clone at the split against the later commits."""

from __future__ import annotations

import statistics
import time
from collections import Counter
from pathlib import Path

import _benchlib as bl

log = bl.progress


CUT = 200   # rank cut of the co-change lists (fused_related's top_k in the brief)


def index_in_process(clone: Path, db: Path, jobs: int | None) -> tuple[float, object]:
    from cortex_core.config import Settings
    from cortex_core.index.ingest import index_repository
    start = time.perf_counter()
    summary = index_repository(clone, db, Settings(), rebuild=True, model="none", jobs=jobs)
    return time.perf_counter() - start, summary


def pick_split(clone: Path, head: str, split: str | None) -> tuple[str, int, int]:
    line = bl.git(clone, "rev-list", "--first-parent", "--reverse", head).split()
    if split:
        sha = bl.git(clone, "rev-parse", split)
        pos = line.index(sha) if sha in line else -1
        return sha, pos, len(line)
    pos = int(len(line) * 0.8)
    return line[pos], pos, len(line)


def later_commits(clone: Path, split: str, head: str) -> list[tuple[str, list[str], str]]:
    """Non-merge first-parent commits after the split, oldest first: (sha, files, subject)."""
    out = []
    text = bl.git(clone, "log", "--first-parent", "--no-merges", "--reverse", "--no-renames",
                  "--name-only", "--format=%x00%H%x01%s", f"{split}..{head}")
    for block in text.split("\x00"):
        if not block.strip():
            continue
        first, _, rest = block.partition("\n")
        sha, _, subject = first.partition("\x01")
        files = [f for f in rest.splitlines() if f.strip()]
        out.append((sha.strip(), files, subject))
    return out


def _rank_lists(files: list) -> dict[str, list[str]]:
    fused = [f.path for f in files if f.score > 0][:CUT]
    co = [f.path for f in sorted((f for f in files if f.cochange > 0),
                                 key=lambda f: (-f.cochange, f.path))][:CUT]
    st = [f.path for f in sorted((f for f in files if f.structure > 0),
                                 key=lambda f: (-f.structure, f.path))][:CUT]
    return {"cochange": co, "structure": st, "fused": fused}


ALT_WEIGHTS = (0.5, 0.25, 0.1)


def _alternatives(files: list, n: int = 0) -> dict[str, list[str]]:
    """Diagnostic rankings from the same s and c (not Cortex's): the fused formula with the
    structure term scaled by w, and co-change with structure breaking its ties."""
    out = {}
    for w in ALT_WEIGHTS:
        scored = [(1 - (1 - w * f.structure) * (1 - f.cochange), f) for f in files]
        out[f"1-(1-{w}s)(1-c)"] = [f.path for sc, f in sorted(
            scored, key=lambda t: (-t[0], -t[1].support, t[1].path)) if sc > 0][:CUT]
    for k in (0.5, 1, 2, 5):   # structure weighted by how little history the target has
        scored = [(f.cochange + f.structure * k / (k + n), f) for f in files]
        out[f"c+s*{k}/({k}+n)"] = [f.path for sc, f in sorted(
            scored, key=lambda t: (-t[0], -t[1].support, t[1].path)) if sc > 0][:CUT]
    out["c, ties by s"] = [f.path for f in sorted(
        (f for f in files if f.cochange > 0 or f.structure > 0),
        key=lambda f: (-f.cochange, -f.structure, f.path))][:CUT]
    return out


def _metrics(ranked: list[str], gold: set[str]) -> tuple[float, float, int | None]:
    first = next((i for i, p in enumerate(ranked, 1) if p in gold), None)
    recall = len(gold & set(ranked[:10])) / len(gold)
    return recall, (1 / first if first else 0.0), first


def part_cochange(clone: Path, work: Path, head: str, args) -> dict:
    from cortex_core.query.blast import fused_related
    from cortex_core.store.store import open_reader
    from cortex_core.query.targets import TargetSpec

    split, pos, length = pick_split(clone, head, args.split)
    bl.run(["git", "-C", str(clone), "checkout", "-q", "-B", "bench-split", split])
    db = work / "split.db"
    log(f"co-change: indexing the split {split[:10]} ({pos + 1}/{length} first-parent) ...")
    seconds, summary = index_in_process(clone, db, args.jobs)
    con = open_reader(db)
    at_split = {p for (p,) in con.execute(
        "select f.path from head_files h join files f on f.id = h.file_id")}
    structured = {p for (p,) in con.execute(
        "select f.path from struct_files s join files f on f.id = s.file_id"
        " where s.skip_reason is null")}
    commits = later_commits(clone, split, head)
    queries, used, examined = [], 0, 0
    skipped = Counter()
    fused_times = []
    for sha, files, subject in commits:
        if used >= args.split_commits:
            break
        examined += 1
        existing = sorted({f for f in files if f in at_split})
        if len(existing) < 2:
            skipped["fewer than 2 files existing at the split"] += 1
            continue
        if len(existing) > 10:
            skipped["more than 10 files existing at the split"] += 1
            continue
        used += 1
        for f in existing:
            gold = set(existing) - {f}
            start = time.perf_counter()
            try:
                res = fused_related(con, TargetSpec(f), top_k=1_000_000, depth=2,
                                    max_changeset=30, min_support=1)
            except Exception as exc:  # noqa: BLE001 - counted
                skipped[f"fused_related failed: {type(exc).__name__}"] += 1
                continue
            fused_times.append(time.perf_counter() - start)
            lists = _rank_lists(res.files)
            q = {"commit": sha, "subject": subject[:80], "file": f, "gold": sorted(gold),
                 "files_changed": len(files), "structured": f in structured,
                 "candidates": len(res.files),
                 "structure_ge_0_9": sum(1 for x in res.files if x.structure >= 0.9),
                 "fused_ge_0_99": sum(1 for x in res.files if x.score >= 0.99)}
            for name, ranked in lists.items():
                recall, rr, first = _metrics(ranked, gold)
                q[name] = {"recall10": recall, "rr": rr, "first_gold_rank": first,
                           "top3": ranked[:3], "listed": len(ranked)}
            q["alternatives"] = {}
            for name, ranked in _alternatives(res.files, res.target_commits).items():
                recall, rr, first = _metrics(ranked, gold)
                q["alternatives"][name] = {"recall10": recall, "rr": rr}
            queries.append(q)
        if used % 25 == 0:
            log(f"co-change: {used} commits, {len(queries)} queries")
    con.close()

    def summarize(qs):
        out = {"queries": len(qs)}
        for name in ("cochange", "structure", "fused"):
            out[name] = {
                "recall_at_10": statistics.fmean(q[name]["recall10"] for q in qs) if qs else None,
                "mrr": statistics.fmean(q[name]["rr"] for q in qs) if qs else None}
        return out

    overall = summarize(queries)
    alternatives = {}
    if queries:
        for name in queries[0]["alternatives"]:
            alternatives[name] = {
                "recall_at_10": statistics.fmean(q["alternatives"][name]["recall10"]
                                                 for q in queries),
                "mrr": statistics.fmean(q["alternatives"][name]["rr"] for q in queries)}
    by_kind = {"file with structure": summarize([q for q in queries if q["structured"]]),
               "file without structure": summarize([q for q in queries if not q["structured"]])}
    best_single = {m: max(overall["cochange"][k], overall["structure"][k])
                   for m, k in (("recall_at_10", "recall_at_10"), ("mrr", "mrr"))} \
        if queries else {}
    beats = bool(queries) and all(overall["fused"][k] > best_single[k] for k in best_single)
    paired = Counter()
    worse = []
    for q in queries:
        for base in ("cochange", "structure"):
            d = q["fused"]["rr"] - q[base]["rr"]
            paired[f"fused vs {base}: " + ("better" if d > 1e-12 else "worse" if d < -1e-12
                                           else "same")] += 1
        b = max(q["cochange"]["rr"], q["structure"]["rr"])
        if q["fused"]["rr"] < b - 1e-12:
            worse.append(q)
    worse.sort(key=lambda q: q["fused"]["rr"] - max(q["cochange"]["rr"], q["structure"]["rr"]))
    return {"split": split, "split_position": pos + 1, "first_parent_length": length,
            "split_date": bl.git(clone, "log", "-1", "--format=%cI", split),
            "index_seconds": seconds, "files_at_split": len(at_split),
            "structure_files_at_split": len(structured),
            "commits_after_split": len(commits), "commits_examined": examined,
            "commits_used": used, "skipped": dict(skipped), "overall": overall,
            "by_query_file": by_kind, "diagnostic_alternatives": alternatives,
            "fused_beats_both": beats, "paired_rr": dict(paired),
            "fused_worse_than_best_single": len(worse), "worse_examples": worse[:12],
            "structure_ge_0_9_median": statistics.median(
                [q["structure_ge_0_9"] for q in queries if q["structured"]] or [0]),
            "structure_ge_0_9_mean": statistics.fmean(
                [q["structure_ge_0_9"] for q in queries if q["structured"]] or [0]),
            "fused_ge_0_99_mean": statistics.fmean(
                [q["fused_ge_0_99"] for q in queries if q["structured"]] or [0]),
            "fused_related_p50": bl.percentile(fused_times, 50) if fused_times else None,
            "fused_related_p95": bl.percentile(fused_times, 95) if fused_times else None,
            "queries": queries}
