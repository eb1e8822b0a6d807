#!/usr/bin/env python3
"""Line blame: cortex's "last changed by" of a line against `git blame`, agreement and speed.

For a deterministic sample of lines of the text files at HEAD (seeded; a file is drawn uniformly,
then a line of it, so that small files count as much as large ones), this measures, in one run:

  (a) git blame --porcelain -L N,N HEAD -- FILE   in REPO (read-only), process start included,
                                                  git's default options (no -w, -M, -C)
  (b) cortex_core.query.blame.last_change_of_line(con, FILE, N)   in process, on one reader
                                                  connection warmed by a few calls, best of --runs

and prints p50/p95 of each and the ratios git/cortex. Agreement: the share of lines for which
cortex names git blame's commit (and the same path and line number in that commit). The files
sampled are those cortex tracks line by line at HEAD; the files it records at file level only at
HEAD (binary, lockfiles, generated, too large...: `cortex status` lists them) are left out and
counted, unless --all-files. Every disagreement is classified (see KINDS), by asking git again
with other options:

  - cortex-unknown     cortex gives no commit and says why (a diff of the file that it recorded
                       at file level only in some commit: generated, too large...);
  - indent-heuristic   `git -c diff.indentHeuristic=false blame` names cortex's commit: the two
                       diffs place an ambiguous change differently among identical lines (git
                       slides hunks by indentation; libgit2, which cortex uses, as configured);
  - identical-text     git and cortex name other commits, but the line's text in both of them is
                       the same: an ambiguous diff (identical lines, e.g. blank lines or `)`)
                       paired differently by the two diff implementations;
  - rename             the paths differ: a rename one side detected and the other did not;
  - other              none of the above (a bug until explained).

Run with the venv's python: `/work/venv/bin/python bench/bench_blame.py REPO [--db DB]`.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import _benchlib as bl

KINDS = {
    "cortex-unknown": "cortex cannot tell (a diff it did not record); it says why",
    "indent-heuristic": "git without its indent heuristic agrees with cortex: ambiguous hunk "
                        "placement",
    "identical-text": "other commits, same line text in both: identical lines paired differently",
    "rename": "the path in the answering commit differs: rename detection differs",
    "other": "unexplained",
}

_PORCELAIN = re.compile(rb"^([0-9a-f]{40}) (\d+) (\d+)")


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="cortex's line blame (last_change_of_line) against git blame --porcelain -L "
        "n,n on sampled lines at HEAD: agreement (every disagreement classified) and latency, "
        "both measured in the same run.")
    p.add_argument("repo", type=Path, help="the git repository (not modified)")
    p.add_argument("--db", type=Path, help="an index of REPO at its HEAD (default: index REPO "
                   "into a temporary database first, with --model none)")
    p.add_argument("--sample", type=int, default=300, help="lines to sample (default 300)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--runs", type=int, default=3, help="cortex calls per line, best kept")
    p.add_argument("--examples", type=int, default=5, help="examples printed per kind")
    p.add_argument("--all-files", action="store_true", help="also sample the files cortex "
                   "records at file level only at HEAD (binary, lockfiles, generated...)")
    p.add_argument("--json", action="store_true", help="print the whole report as JSON")
    p.add_argument("--keep", action="store_true", help="keep the temporary database")
    return p.parse_args(argv)


@dataclass
class Line:
    path: str
    line: int
    git: tuple[str, str, int] | None = None      # sha, path then, line then
    git_seconds: float = 0.0
    cortex: tuple[str | None, str, int] | None = None
    cortex_reason: str | None = None
    cortex_seconds: float = 0.0
    kind: str | None = None                       # None when they agree
    why: str = ""
    extra: dict = field(default_factory=dict)


def eligible_files(repo: Path, con, all_files: bool) -> tuple[list[tuple[str, int]], int]:
    """(path, line count) of the text files at HEAD that the index knows, non-empty; and how
    many were left out as recorded at file level only (unless `all_files`)."""
    import pygit2
    tree = pygit2.Repository(str(repo)).revparse_single("HEAD").peel(pygit2.Commit).tree
    known = dict(con.execute("select f.path, h.skip_reason from head_files h join files f"
                             " on f.id = h.file_id"))
    out, left_out = [], 0
    for path in sorted(known):
        try:
            blob = tree[path]
        except KeyError:
            continue
        if not isinstance(blob, pygit2.Blob) or blob.is_binary:
            continue
        data = blob.data
        count = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
        if not count:
            continue
        if known[path] is not None and not all_files:
            left_out += 1
            continue
        out.append((path, count))
    return out, left_out


def sample_lines(files: list[tuple[str, int]], n: int, seed: int) -> list[Line]:
    rng = random.Random(seed)
    total = sum(count for _, count in files)
    chosen: set[tuple[str, int]] = set()
    while len(chosen) < min(n, total):
        path, count = files[rng.randrange(len(files))]
        chosen.add((path, rng.randint(1, count)))
    lines = [Line(p, n) for p, n in chosen]
    rng.shuffle(lines)   # sets have no stable order across runs: sort, then shuffle with the seed
    lines.sort(key=lambda l: (l.path, l.line))
    rng.shuffle(lines)
    return lines


def git_blame(repo: Path, path: str, line: int,
              *options: str) -> tuple[tuple[str, str, int], float]:
    """((sha, path then, line then), seconds) of git blame for one line."""
    r = bl.run(["git", "-C", str(repo), *options, "blame", "--porcelain", "-L", f"{line},{line}",
                "HEAD", "--", path])
    sha, then, name = "", 0, ""
    for row in r.stdout.splitlines():
        m = _PORCELAIN.match(row)
        if m and not sha:
            sha, then = m.group(1).decode(), int(m.group(2))
        elif row.startswith(b"filename "):
            name = row[len(b"filename "):].decode("utf-8", "replace")
            break
    return (sha, name, then), r.seconds


def line_text(repo, sha: str, path: str, line: int) -> str | None:
    import pygit2
    try:
        data = repo.revparse_single(sha).peel(pygit2.Commit).tree[path].data
    except (KeyError, ValueError, pygit2.GitError):
        return None
    rows = data.split(b"\n")
    return rows[line - 1].decode("utf-8", "replace") if 0 < line <= len(rows) else None


def classify(repo: Path, item: Line) -> None:
    import pygit2
    sha, path, _ = item.git
    c_sha, c_path, c_line = item.cortex
    if c_sha is None:
        reason = item.cortex_reason or ""
        m = re.search(r"not recorded \(([^)]*)\)", reason)
        item.kind = "cortex-unknown"
        item.why = reason
        item.extra["reason"] = m.group(1) if m else "other"
        return
    plain, _ = git_blame(repo, item.path, item.line, "-c", "diff.indentHeuristic=false")
    if plain[0] == c_sha:
        item.kind, item.why = "indent-heuristic", "git without the indent heuristic agrees"
        return
    if path != c_path:
        item.kind, item.why = "rename", f"git: {path}, cortex: {c_path}"
        return
    pyrepo = pygit2.Repository(str(repo))
    ours = line_text(pyrepo, c_sha, c_path, c_line)
    theirs = line_text(pyrepo, sha, path, item.git[2])
    if ours is not None and ours == theirs:
        item.kind, item.why = "identical-text", f"both lines read {ours.strip()[:50]!r}"
        return
    item.kind = "other"
    item.why = f"git line {item.git[2]}: {theirs!r}; cortex line {c_line}: {ours!r}"


def main(argv=None) -> int:
    args = parse_args(argv)
    repo = args.repo.resolve()
    log = bl.progress
    env = bl.environment(repo)
    head = env["repository"]["head"]
    report: dict = {"benchmark": "blame", "environment": env, "config": bl.config(args)}
    work = None
    try:
        if args.db is None:
            work = bl.work_dir("blame-", args.keep)
        db, report["index"] = bl.index_store(repo, args.db, work)
        from cortex_core.query.blame import last_change_of_line
        from cortex_core.errors import CortexError
        from cortex_core.store.store import get_meta, open_reader
        con = open_reader(db)
        indexed = get_meta(con, "head")
        if indexed != head:
            raise SystemExit(f"{db} indexes {indexed}, not REPO's HEAD {head}")
        files, left_out = eligible_files(repo, con, args.all_files)
        lines = sample_lines(files, args.sample, args.seed)
        report["sample"] = {"files_eligible": len(files), "lines": len(lines),
                            "files_sampled": len({l.path for l in lines}),
                            "files_left_out_file_level_only": left_out}
        log(f"{len(lines)} lines of {report['sample']['files_sampled']} files; git blame ...")
        for i, item in enumerate(lines, 1):
            item.git, item.git_seconds = git_blame(repo, item.path, item.line)
            if i % 50 == 0:
                log(f"  git blame {i}/{len(lines)}")

        def ask(item: Line):
            try:
                found = last_change_of_line(con, item.path, item.line)
            except CortexError as exc:
                return None, str(exc)
            return found, found.reason

        for item in lines[:5]:   # warm the connection (page cache, statement cache) on a few lines
            ask(item)
        for item in lines:
            best = None
            for _ in range(max(1, args.runs)):
                t0 = time.perf_counter()
                found, reason = ask(item)
                elapsed = time.perf_counter() - t0
                best = elapsed if best is None else min(best, elapsed)
            item.cortex_seconds = best
            item.cortex_reason = reason
            item.cortex = ((found.commit.sha if found.commit else None, found.path, found.line)
                           if found is not None else (None, item.path, item.line))
        log("classifying disagreements ...")
        for item in lines:
            if item.cortex[0] != item.git[0]:
                classify(repo, item)
        report.update(summarize(lines))
    finally:
        if work is not None and not args.keep:
            bl.remove(work)
    bl.emit(report, args.json, render, args.examples)
    return 0


def summarize(lines: list[Line]) -> dict:
    n = len(lines)
    same = sum(1 for l in lines if l.cortex[0] == l.git[0])
    exact = sum(1 for l in lines if l.cortex == l.git)
    git_t = [l.git_seconds for l in lines]
    ours = [l.cortex_seconds for l in lines]
    timings = {
        "git_blame": {"p50": bl.percentile(git_t, 50), "p95": bl.percentile(git_t, 95)},
        "cortex_in_process": {"p50": bl.percentile(ours, 50), "p95": bl.percentile(ours, 95)},
    }
    timings["ratio_git_over_cortex"] = {
        "p50": bl.ratio(timings["git_blame"]["p50"], timings["cortex_in_process"]["p50"]),
        "p95": bl.ratio(timings["git_blame"]["p95"], timings["cortex_in_process"]["p95"])}
    kinds: dict[str, dict] = {}
    for l in lines:
        if l.kind is None:
            continue
        name = f"{l.kind} ({l.extra['reason']})" if l.extra.get("reason") else l.kind
        k = kinds.setdefault(name, {"meaning": KINDS[l.kind], "count": 0, "items": []})
        k["count"] += 1
        k["items"].append({"path": l.path, "line": l.line, "git": l.git, "cortex": l.cortex,
                           "why": l.why, **l.extra})
    per_file: dict[str, list[int]] = {}
    for l in lines:
        per_file.setdefault(l.path, [0, 0])
        per_file[l.path][0] += 1
        per_file[l.path][1] += l.cortex[0] == l.git[0]
    unknown = sum(1 for l in lines if l.cortex[0] is None)
    return {"agreement": {"lines": n, "same_commit": same,
                          "same_commit_rate": same / n if n else None,
                          "same_commit_path_line": exact, "unknown_by_cortex": unknown,
                          "same_commit_rate_where_cortex_answers":
                              same / (n - unknown) if n - unknown else None},
            "timings": timings,
            "disagreements": dict(sorted(kinds.items(), key=lambda kv: -kv[1]["count"])),
            "worst_files": sorted(([p, t, a] for p, (t, a) in per_file.items() if a < t),
                                  key=lambda r: r[2] / r[1])[:10]}


def render(report: dict, examples: int) -> str:
    out = ["cortex line blame vs git blame", "=" * 30, *bl.environment_lines(report["environment"])]
    idx = report["index"]
    if idx.get("seconds") is not None:
        out.append(f"index built for this run in {bl.fmt_seconds(idx['seconds'])}")
    s, a, t = report["sample"], report["agreement"], report["timings"]
    out.append(f"sample: {s['lines']} lines of {s['files_sampled']} files ({s['files_eligible']} "
               f"text files at HEAD; {s['files_left_out_file_level_only']} more recorded at file "
               f"level only, left out), seed {report['config']['seed']}")
    out += ["", "Agreement (reference: git blame --porcelain -L n,n HEAD, default options)"]
    out.append(bl.table([
        ["same commit", f"{a['same_commit']}/{a['lines']} ({a['same_commit_rate']:.1%})"],
        ["same commit, path and line", f"{a['same_commit_path_line']}/{a['lines']}"],
        ["cortex cannot tell (says why)", str(a["unknown_by_cortex"])],
        ["same commit where cortex answers",
         f"{a['same_commit_rate_where_cortex_answers']:.1%}"
         if a["same_commit_rate_where_cortex_answers"] is not None else "-"],
    ], ["", ""]))
    out += ["", "Latency (git: process start included; cortex: in process, warm, best of runs)"]
    r = t["ratio_git_over_cortex"]
    out.append(bl.table([
        ["git blame -L n,n (baseline)", bl.fmt_seconds(t["git_blame"]["p50"]),
         bl.fmt_seconds(t["git_blame"]["p95"])],
        ["last_change_of_line", bl.fmt_seconds(t["cortex_in_process"]["p50"]),
         bl.fmt_seconds(t["cortex_in_process"]["p95"])],
        ["git / cortex", f"{r['p50']:.0f}x", f"{r['p95']:.0f}x"],
    ], ["", "p50", "p95"]))
    d = report["disagreements"]
    if d:
        out += ["", "Disagreements by kind"]
        out.append(bl.table([[k, str(v["count"]), v["meaning"]] for k, v in d.items()],
                            ["kind", "lines", "meaning"]))
        for kind, v in d.items():
            out += ["", f"{kind} ({v['count']}):"]
            for item in v["items"][:examples]:
                git_sha, _, git_line = item["git"]
                ours = item["cortex"][0]
                out.append(f"  {item['path']}:{item['line']}  git {git_sha[:10]} (line {git_line})"
                           f"  cortex {ours[:10] if ours else '-'}  {item['why'][:120]}")
    if report["worst_files"]:
        out += ["", "Files with disagreements (lines sampled, agreeing): " + ", ".join(
            f"{p} {a}/{t}" for p, t, a in report["worst_files"])]
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
