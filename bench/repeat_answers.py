"""Does one history give one memory? Two index runs of REPO, every answer compared by name.

    /work/venv/bin/python bench/repeat_answers.py REPO [--jobs 2] [--model none|PATH]
        [--every 3] [--packs 50] [--queries 20] [--keep] [--json]
    /work/venv/bin/python bench/repeat_answers.py REPO --db A --db B [...]

An index run numbers what it stores (commits, files, symbols, items) in the order its worker
processes deliver them, which varies from run to run with `--jobs` above 1. No answer may
depend on those numbers. Either REPO is indexed twice (`--jobs`, default 2, `--model`, default
none), or two stores of it are given (`--db A --db B`: a `--jobs 1` and a `--jobs 2` run, a full
run and an incremental one, a window and a full build). This checkout then answers from both:

- the history of every live symbol and of every file at HEAD (sha and kind of each change);
- the hover of every `--every`-th symbol, as the language server renders it (one `now`);
- `related` (co-change fused with structure: symbols and files, with scores) and blast's hidden
  coupling for the same symbols, `related` for every file;
- the 100 first hotspots (symbols, files) with their scores;
- the context pack of `--packs` symbols (its text, at a fixed budget);
- `--queries` searches (subjects of REPO's commits, seeded), lexical, and hybrid when the stores
  hold vectors: the hits in order, scores to 1e-6 (sums taken in another order differ in the
  last digits);
- the areas: each memory item's area (areas matched by their overlap).

Exit status 1 when any answer differs; the report names the first differences of each kind.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from pathlib import Path

import _benchlib as bl

SCORE_DIGITS = 6


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("repo", type=Path)
    p.add_argument("--db", type=Path, action="append", default=[],
                   help="a store of REPO (give two), instead of indexing it twice")
    p.add_argument("--jobs", type=int, default=2, help="workers of each index run (default 2)")
    p.add_argument("--model", default="none", help="embedding model of each index run")
    p.add_argument("--every", type=int, default=3,
                   help="hover, related and blast every N-th live symbol (default 3)")
    p.add_argument("--packs", type=int, default=50, help="context packs compared (default 50)")
    p.add_argument("--queries", type=int, default=20, help="searches compared (default 20)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--keep", action="store_true", help="keep the two indexes (bench/.work)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    if len(args.db) not in (0, 2):
        p.error("give --db twice (two stores of REPO), or not at all")
    if args.every < 1:
        p.error("--every must be at least 1")
    return args


def index_twice(repo: Path, work: Path, jobs: int, model: str) -> tuple[list[Path], list[float]]:
    stores, seconds = [], []
    for name in ("a", "b"):
        db = work / f"{name}.db"
        bl.progress(f"indexing {repo} into {db} (--jobs {jobs}, --model {model}) ...")
        r = bl.run([*bl.cortex_command(), "index", "--repo", str(repo), "--db", str(db),
                    "--model", model, "--jobs", str(jobs), "--quiet"])
        stores.append(db)
        seconds.append(r.seconds)
    return stores, seconds


class Tally:
    """Per kind of answer: how many were compared, how many differed, the first few that did."""

    def __init__(self):
        self.compared: Counter = Counter()
        self.differ: Counter = Counter()
        self.examples: dict[str, list[str]] = {}

    def check(self, kind: str, what: str, a, b) -> None:
        self.compared[kind] += 1
        if a != b:
            self.differ[kind] += 1
            shown = self.examples.setdefault(kind, [])
            if len(shown) < 3:
                shown.append(f"{what}: {_first_difference(a, b)}")


def _first_difference(a, b) -> str:
    if isinstance(a, list) and isinstance(b, list):
        for n, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return f"#{n}: {bl.clip(repr(x), 160)} | {bl.clip(repr(y), 160)}"
        return f"lengths {len(a)} and {len(b)}"
    return f"{bl.clip(repr(a), 160)} | {bl.clip(repr(b), 160)}"


def _round(x: float) -> float:
    return round(x, SCORE_DIGITS)


def live_symbols(con) -> list[tuple[str, str]]:
    return con.execute(
        "select f.path, s.qualname from symbols s join files f on f.id = s.file_id join"
        " head_files h on h.file_id = s.file_id where s.alive = 1 order by 1, 2").fetchall()


def head_files(con) -> list[str]:
    return [p for (p,) in con.execute("select f.path from head_files h join files f on"
                                      " f.id = h.file_id order by 1")]


def compare(repo: Path, stores: list[Path], args) -> dict:
    from cortex_core.features.context_pack import build_pack
    from cortex_core.features.symbol_info import symbol_card
    from cortex_core.memory.embeddings import load_embedder
    from cortex_core.memory.search import SearchOptions, search
    from cortex_core.query.blast import blast, fused_related
    from cortex_core.query.history import file_history, symbol_history
    from cortex_core.query.hotspots import hotspots
    from cortex_core.query.targets import TargetSpec, resolve
    from cortex_core.store.store import open_reader
    from cortex_ls.render import hover

    cons = [open_reader(db) for db in stores]
    tally = Tally()
    symbols = [live_symbols(con) for con in cons]
    files = [head_files(con) for con in cons]
    tally.check("live symbols", "the list", symbols[0], symbols[1])
    tally.check("files at HEAD", "the list", files[0], files[1])
    now = time.time()

    bl.progress(f"histories of {len(symbols[0])} symbols and {len(files[0])} files ...")
    for path, qualname in symbols[0]:
        answers = []
        for con in cons:
            target = resolve(con, TargetSpec(path, qualname))
            answers.append([(e.commit.sha, e.change) for e in
                            symbol_history(con, target.symbol_id, redact_subjects=False)])
        tally.check("symbol history", f"{path}::{qualname}", *answers)
    for path in files[0]:
        answers = []
        for con in cons:
            target = resolve(con, TargetSpec(path))
            answers.append([(e.commit.sha, e.change) for e in
                            file_history(con, target.file_id, redact_subjects=False)])
        tally.check("file history", path, *answers)

    sampled = symbols[0][::args.every]
    bl.progress(f"hovers, related and blast of {len(sampled)} symbols ...")
    for path, qualname in sampled:
        spec = TargetSpec(path, qualname)
        tally.check("hover", f"{path}::{qualname}", *(
            hover(symbol_card(con, repo, path, qualname, now=now), web_base=None, partial=False,
                  now=now) for con in cons))
        tally.check("related (symbol)", f"{path}::{qualname}", *(
            [(p.path, p.qualname, _round(p.score)) for p in found.symbols]
            + [(p.path, _round(p.score)) for p in found.files]
            for found in (fused_related(con, spec) for con in cons)))
        tally.check("blast hidden coupling", f"{path}::{qualname}", *(
            [(h.path, h.qualname, h.support) for h in blast(con, spec).hidden] for con in cons))
    bl.progress(f"related of {len(files[0])} files ...")
    for path in files[0]:
        tally.check("related (file)", path, *(
            [(p.path, _round(p.score)) for p in fused_related(con, TargetSpec(path)).files]
            for con in cons))

    bl.progress("hotspots ...")
    found = [hotspots(con, top_k=100) for con in cons]
    tally.check("hotspots", "the first 100 symbols", *(
        [(h.path, h.qualname, _round(h.score)) for h in f.symbols] for f in found))
    tally.check("hotspots", "the first 100 files", *(
        [(h.path, _round(h.score)) for h in f.files] for f in found))

    rng = random.Random(args.seed)
    packs = rng.sample(symbols[0], min(args.packs, len(symbols[0])))
    bl.progress(f"{len(packs)} context packs ...")
    for path, qualname in packs:
        tally.check("context pack", f"{path}::{qualname}", *(
            build_pack(con, repo, at=f"{path}::{qualname}", budget=3000,
                       working_tree=False).text for con in cons))

    subjects = [s for s in bl.git(repo, "log", "--no-merges", "--format=%s").splitlines()
                if len(s.split()) >= 3]
    queries = rng.sample(subjects, min(args.queries, len(subjects)))
    embedders = [load_embedder(con) for con in cons]
    modes = ["lexical"] + (["hybrid"] if all(embedders) else [])
    bl.progress(f"{len(queries)} searches ({', '.join(modes)}) ...")
    for query in queries:
        for mode in modes:
            tally.check(f"search ({mode})", query, *(
                [(h.kind, h.citation, _round(h.why.score)) for h in
                 search(con, query, SearchOptions(mode=mode, context=False),
                        embedder=embedder).hits]
                for con, embedder in zip(cons, embedders)))

    areas = [_areas(con) for con in cons]
    moved, common = _moved_items(*areas)
    tally.compared["areas (items)"] += common
    tally.differ["areas (items)"] += moved
    return {"compared": dict(tally.compared), "differ": dict(tally.differ),
            "examples": tally.examples, "modes": modes}


def _areas(con) -> dict:
    """Each memory item (by its commit or document, segment and title) -> its area's id."""
    return {(kind, sha, path, line, segment, title): cluster
            for kind, sha, path, line, segment, cluster, title in con.execute(
                "select i.kind, c.sha, f.path, i.line, i.segment, i.cluster, i.title from items i"
                " left join commits c on c.id = i.commit_id left join files f on f.id ="
                " i.file_id")}


def _moved_items(a: dict, b: dict) -> tuple[int, int]:
    """Items in another area once the two runs' areas are matched by their overlap (ids are the
    runs' own), and items compared; an item that only one run made counts as moved."""
    common = a.keys() & b.keys()
    pairs = Counter((a[k], b[k]) for k in common)
    match: dict = {}
    taken: set = set()
    for (x, y), _ in pairs.most_common():
        if x not in match and y not in taken:
            match[x] = y
            taken.add(y)
    moved = sum(1 for k in common if match.get(a[k]) != b[k])
    return moved + len(a.keys() ^ b.keys()), len(a.keys() | b.keys())


def render(report: dict) -> str:
    rows = [[kind, str(n), str(report["differ"].get(kind, 0))]
            for kind, n in report["compared"].items()]
    lines = [bl.table(rows, ["answer", "compared", "differ"])]
    for kind, shown in report["examples"].items():
        lines.append(f"\n{kind}:")
        lines += [f"  {e}" for e in shown]
    lines.append("\n" + ("every answer is the same" if report["same"] else
                         "SOME ANSWERS DIFFER between the two stores"))
    return "\n".join(lines)


def main(argv=None) -> int:
    args = parse_args(argv)
    repo = args.repo.resolve()
    work = None
    try:
        if args.db:
            stores, seconds = [db.resolve() for db in args.db], [None, None]
        else:
            work = bl.work_dir("repeat-", args.keep)
            stores, seconds = index_twice(repo, work, args.jobs, args.model)
        report = {"environment": bl.environment(repo), "config": bl.config(args),
                  "stores": [str(s) for s in stores], "index_seconds": seconds,
                  **compare(repo, stores, args)}
        report["same"] = not any(report["differ"].values())
        bl.emit(report, args.json, render)
        return 0 if report["same"] else 1
    finally:
        if work is not None and not args.keep:
            bl.remove(work)


if __name__ == "__main__":
    sys.exit(main())
