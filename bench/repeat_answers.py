"""Does one history give one memory? Two index runs of REPO, every answer compared by name.

    PYTHONPATH=TREE /work/venv/bin/python bench/repeat_answers.py REPO [--jobs 2]
        [--model none|PATH] [--every 3] [--packs 50] [--queries 20] [--keep] [--json]
    PYTHONPATH=TREE /work/venv/bin/python bench/repeat_answers.py REPO --db A --db B [...]

An index run numbers what it stores (commits, files, symbols, items, areas) in the order its
worker processes deliver them, which varies from run to run with `--jobs` above 1, and an
incremental run numbers what it adds after the rest. No answer may depend on those numbers.
Either REPO is indexed twice (`--jobs`, default 2; `--model`, default none), or two stores of
it are given (`--db A --db B`: a `--jobs 1` and a `--jobs 2` run, a full run and an updated one,
a window and a full build). The code imported (TREE on PYTHONPATH, else the installed one)
then asks both stores, through the engine every front end uses (`Engine.open(...).snapshot()`),
and compares the answers as the JSON front ends print (`plain`), with the run's own numbers
left out (`id`, `file_id`, `symbol_id`, `commit_id`, `item_id`, `cluster`, ...) and numbers
rounded to 1e-6 (sums taken in another order differ in their last digits):

- the history of every live symbol and of every file at HEAD;
- for every `--every`-th symbol: its hover card (also rendered as the language server renders
  it), `related` (symbols and files: scores, support, evidence, lines), `blast` (dependents with
  their chains, hidden coupling, summary), callers and callees, related commits;
- for every `--every`-th file: `related` and `blast`;
- the first 300 hotspots, `what`, the areas (labels, sizes, files), each memory item's area
  (areas matched by their overlap), related commits of sampled commits;
- `related` for 40 sampled sets of two symbols and two files, and for the working tree;
- `--packs` context packs and briefings of sampled symbols;
- `--queries` searches (subjects of REPO's commits, seeded), lexical, and hybrid when both
  stores hold vectors.

An answer only one store can give (a name the other lacks) is an error string, compared like any
answer. Exit status 1 when any answer differs; the report gives, per kind, how many were
compared and how many differed, and where the first ones first differ.
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


# Numbers an index run gives in its own order: never part of an answer's identity.
RUN_IDS = frozenset({"id", "ident", "file_id", "symbol_id", "commit_id", "item_id", "vector_id",
                     "note_id", "cluster", "cluster_id", "area_id", "rowid"})


def normal(value):
    """An answer as JSON, without the run's own numbers, floats rounded."""
    if isinstance(value, dict):
        return {k: normal(v) for k, v in value.items() if k not in RUN_IDS}
    if isinstance(value, (list, tuple)):
        return [normal(v) for v in value]
    if isinstance(value, float):
        return round(value, SCORE_DIGITS)
    return value


def first_difference(a, b, where: str = "$") -> str:
    """Where two answers first differ (a JSON path), with the text around it."""
    if type(a) is not type(b):
        return f"{where}: {bl.clip(repr(a), 160)} | {bl.clip(repr(b), 160)}"
    if isinstance(a, dict):
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                return first_difference(a.get(key), b.get(key), f"{where}.{key}")
    if isinstance(a, list):
        for n, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return first_difference(x, y, f"{where}[{n}]")
        return f"{where}: {len(a)} against {len(b)} entries"
    if isinstance(a, str):
        n = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        return (f"{where} at character {n}: ...{a[max(0, n - 60):n + 60]!r} | "
                f"...{b[max(0, n - 60):n + 60]!r}")
    return f"{where}: {bl.clip(repr(a), 160)} | {bl.clip(repr(b), 160)}"


class Tally:
    """Asks both stores each question; per kind of answer, how many were compared, how many
    differed, and the first few differences."""

    def __init__(self, engines):
        self.engines = engines
        self.compared: Counter = Counter()
        self.differ: Counter = Counter()
        self.examples: dict[str, list[str]] = {}

    def ask(self, kind: str, what: str, method: str, *args, **kwargs) -> None:
        """Both stores' answer to `Snapshot.method(*args, **kwargs)`."""
        from cortex_core.plain import plain
        answers = []
        for engine in self.engines:
            try:
                with engine.snapshot() as snap:
                    answers.append(normal(plain(getattr(snap, method)(*args, **kwargs))))
            except Exception as exc:   # a name one store lacks: an answer of its own
                answers.append(f"error {type(exc).__name__}: {exc}")
        self.check(kind, what, *answers)

    def check(self, kind: str, what: str, a, b) -> None:
        self.compared[kind] += 1
        if a != b:
            self.differ[kind] += 1
            shown = self.examples.setdefault(kind, [])
            if len(shown) < 3:
                shown.append(f"{what}: {first_difference(a, b)}")


def live_symbols(con) -> list[tuple[str, str]]:
    return con.execute(
        "select f.path, s.qualname from symbols s join files f on f.id = s.file_id join"
        " head_files h on h.file_id = s.file_id where s.alive = 1 order by 1, 2").fetchall()


def head_files(con) -> list[str]:
    return [p for (p,) in con.execute("select f.path from head_files h join files f on"
                                      " f.id = h.file_id order by 1")]


def compare(repo: Path, stores: list[Path], args) -> dict:
    from cortex_core.engine import Engine
    from cortex_core.query.targets import TargetSpec
    from cortex_ls.render import hover

    engines = [Engine.open(repo, db=db) for db in stores]
    tally = Tally(engines)
    cons = [engine.reader() for engine in engines]
    symbols = [live_symbols(con) for con in cons]
    files = [head_files(con) for con in cons]
    tally.check("live symbols", "the list", symbols[0], symbols[1])
    tally.check("files at HEAD", "the list", files[0], files[1])
    # What both hold: a name only one has is the difference above, not a crash below.
    both_symbols = sorted(set(symbols[0]) & set(symbols[1]))
    both_files = sorted(set(files[0]) & set(files[1]))
    now = time.time()
    with engines[0].snapshot() as snap:
        heat = snap.heat(4, 90.0)

    bl.progress(f"histories of {len(both_symbols)} symbols and {len(both_files)} files ...")
    for path, qualname in both_symbols:
        tally.ask("symbol history", f"{path}::{qualname}", "history", TargetSpec(path, qualname))
    for path in both_files:
        tally.ask("file history", path, "history", TargetSpec(path))

    sampled = both_symbols[::args.every]
    bl.progress(f"cards, related, blast, callers and callees of {len(sampled)} symbols ...")
    for path, qualname in sampled:
        spec, label = TargetSpec(path, qualname), f"{path}::{qualname}"
        tally.ask("hover card", label, "symbol_card", path, qualname, 5, heat)
        tally.check("hover, rendered", label, *(
            hover(_card(engine, path, qualname, heat), web_base=None, partial=False, now=now)
            for engine in engines))
        tally.ask("related (symbol)", label, "related", spec)
        tally.ask("blast (symbol)", label, "blast", spec)
        tally.ask("callers", label, "callers", spec)
        tally.ask("callees", label, "callees", spec)
        tally.ask("related commits (symbol)", label, "related_commits", label)
    bl.progress(f"related and blast of {len(both_files[::args.every])} files ...")
    for path in both_files[::args.every]:
        tally.ask("related (file)", path, "related", TargetSpec(path))
        tally.ask("blast (file)", path, "blast", TargetSpec(path))

    bl.progress("hotspots, what, areas, related commits, sets ...")
    tally.ask("hotspots", "the first 300", "hotspots", top_k=300)
    tally.ask("what", "what", "what", top_k=20)
    tally.ask("areas", "every area", "areas")
    rng = random.Random(args.seed)
    shas = sorted(set(_shas(cons[0])) & set(_shas(cons[1])))
    for sha in rng.sample(shas, min(40, len(shas))):
        tally.ask("related commits (commit)", sha, "related_commits", sha)
    for _ in range(40 if len(both_symbols) >= 2 and len(both_files) >= 2 else 0):
        pair = tuple(TargetSpec(p, q) for p, q in rng.sample(both_symbols, 2))
        tally.ask("related (set of symbols)", str(pair), "changes_related", changed=pair)
        pair = tuple(TargetSpec(p) for p in rng.sample(both_files, 2))
        tally.ask("related (set of files)", str(pair), "changes_related", changed=pair)
    tally.ask("related (working tree)", "the working tree", "changes_related")

    packs = rng.sample(both_symbols, min(args.packs, len(both_symbols)))
    bl.progress(f"{len(packs)} context packs and briefings ...")
    for path, qualname in packs:
        at = f"{path}::{qualname}"
        tally.ask("context pack", at, "context_pack", at=at, budget=3000)
        tally.ask("briefing", at, "briefing", at, "before-edit", 2000)

    subjects = [s for s in bl.git(repo, "log", "--no-merges", "--format=%s").splitlines()
                if len(s.split()) >= 3]
    queries = rng.sample(subjects, min(args.queries, len(subjects)))
    modes = ["lexical"] + (["hybrid"] if all(_has_vectors(con) for con in cons) else [])
    bl.progress(f"{len(queries)} searches ({', '.join(modes)}) ...")
    for query in queries:
        for mode in modes:
            tally.ask(f"search ({mode})", query, "search", query, mode=mode, workspace=False)

    areas = [_areas(con) for con in cons]
    moved, common = _moved_items(*areas)
    tally.compared["areas (items)"] += common
    tally.differ["areas (items)"] += moved
    return {"compared": dict(tally.compared), "differ": dict(tally.differ),
            "examples": tally.examples, "modes": modes}


def _card(engine, path: str, qualname: str, heat):
    """A symbol's hover card, the object the language server renders."""
    with engine.snapshot() as snap:
        return snap.symbol_card(path, qualname, 5, heat)


def _shas(con) -> list[str]:
    return [sha for (sha,) in con.execute("select sha from commits where reachable = 1")]


def _has_vectors(con) -> bool:
    return bool(con.execute("select count(*) from items where vector_id is not null").get)


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
