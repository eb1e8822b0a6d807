#!/usr/bin/env python3
"""Large source files: what parsing them for symbol history costs, and what indexing a repository
with one costs against `git log -p` on it.

Two parts (`--parts`, default both):

  parse   For each language (--languages, default python,java,c,javascript) and size in MB
          (--sizes, default 1,5,10,20): a generated but legitimate source file of that size (many
          small functions or methods, five lines each), in a child process of its own so its peak
          RSS is its own. Timed: tree-sitter's full parse; `extract_symbols` (a full parse and
          the walk that reads the definitions); an incremental update after a one-line edit in
          the middle (`SymbolParser.symbols` given the old blob and git's hunk, as the indexer
          does from one commit to the next). Per MB, and peak RSS of the child.
  index   A repository built under bench/.work/ (removed unless --keep): one generated Python
          file of --index-mb MB (default 10) added in a first commit, then --commits (default 5)
          commits each changing three functions. Timed in the same run: `git log -p
          --no-merges` on it (the baseline: reading every patch), `cortex index --rebuild` with
          the default settings (the file parsed) and with `max_file_bytes = 1000000` (the file at
          file level only: the old default), as subprocesses (CPU and peak RSS of the process),
          and, in process, `CommitReader.read` of each commit (parse + symbol diff + change
          kinds) with its symbol matching timed apart. In-process timings are CPU time (the
          machine is shared: wall times vary more); subprocesses report wall and CPU.

The repository is generated rather than fetched: what is measured is one file's size, and a
real repository with a 10 MB source file carries other costs that would hide it.

    /work/venv/bin/python bench/bench_large_files.py [--parts parse,index] [--sizes 1,5,10,20]
        [--languages python,java,c,javascript] [--index-mb 10] [--commits 5] [--json] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _benchlib as lib  # noqa: E402

# One definition of each language: five lines, as generated code often is.
TEMPLATES = {
    "python": ("", "def handler_{i}(value, scale=2):\n    total = value * scale + {i}\n"
                   "    return total\n\n\n", ""),
    "java": ("package big;\n\npublic class Big {\n",
             "    public int handler{i}(int value, int scale) {{\n        int total = value * scale"
             " + {i};\n        return total;\n    }}\n\n", "}\n"),
    "c": ("", "int handler_{i}(int value, int scale) {{\n    int total = value * scale + {i};\n"
              "    return total;\n}}\n\n", ""),
    "javascript": ("", "function handler{i}(value, scale) {{\n  const total = value * scale + {i};"
                       "\n  return total;\n}}\n\n", ""),
}
EXTENSIONS = {"python": "py", "java": "java", "c": "c", "javascript": "js"}


def source(language: str, size: int, changed: dict[int, str] | None = None) -> bytes:
    """A file of at most `size` bytes (10 MB stays under the default limit), within a definition
    of it; `changed` maps a definition's number to text appended to its `total` line (an edit
    of one line)."""
    head, body, tail = TEMPLATES[language]
    changed = changed or {}
    count, total = 0, len(head) + len(tail) + 64   # room for the edits
    while total + len(body) + 8 < size:
        total += len(body.format(i=count))
        count += 1
    parts = [head]
    for i in range(count):   # the same definitions whatever the edits
        text = body.format(i=i)
        if i in changed:
            text = text.replace(f" + {i}", f" + {i}{changed[i]}", 1)
        parts.append(text)
    parts.append(tail)
    return "".join(parts).encode()


# ---------------------------------------------------------------------------------------------
# parse


def parse_one(language: str, megabytes: float) -> dict:
    """Run in a child process: the timings of one language and size."""
    import resource

    from tree_sitter_language_pack import get_parser

    from cortex_core.lang.symbols import SymbolParser, extract_symbols
    old = source(language, int(megabytes * 1_000_000))
    definitions = old.count(b"total = value")
    middle = definitions // 2
    new = source(language, int(megabytes * 1_000_000), {middle: " + 1"})
    line = old[:old.index(f"+ {middle};".encode() if language != "python" else
                          f"+ {middle}\n".encode())].count(b"\n") + 1
    hunks = [(line, 1, line, 1)]

    # CPU time of this process: the machine is shared, its wall times vary far more.
    started = time.process_time()
    get_parser(language).parse(old)
    parse = time.process_time() - started
    started = time.process_time()
    symbols = extract_symbols(language, old)
    extract = time.process_time() - started
    parser = SymbolParser()
    parser.symbols(language, "old", old)
    started = time.process_time()
    updated = parser.symbols(language, "new", new, ("old", hunks))
    incremental = time.process_time() - started
    assert len(updated) == len(symbols), "the edit changed no definition's existence"
    return {"language": language, "bytes": len(old), "lines": old.count(b"\n"),
            "symbols": len(symbols), "parse_s": parse, "extract_s": extract,
            "incremental_s": incremental,
            "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}


def part_parse(languages: list[str], sizes: list[float]) -> list[dict]:
    rows = []
    for language in languages:
        for mb in sizes:
            print(f"parse: {language} {mb:g} MB", file=sys.stderr)
            out = subprocess.run([sys.executable, __file__, "--_parse-one", f"{language}:{mb}"],
                                 capture_output=True, text=True, check=True)
            rows.append(json.loads(out.stdout))
    return rows


def parse_table(rows: list[dict]) -> str:
    body = []
    for r in rows:
        mb = r["bytes"] / 1e6
        body.append([r["language"], f"{mb:.1f}", f"{r['lines']:,}", f"{r['symbols']:,}",
                     lib.fmt_seconds(r["parse_s"]), f"{r['parse_s'] / mb:.3f}",
                     lib.fmt_seconds(r["extract_s"]), f"{r['extract_s'] / mb:.3f}",
                     lib.fmt_seconds(r["incremental_s"]), f"{r['incremental_s'] / mb:.3f}",
                     lib.fmt_bytes(r["peak_rss_kib"] * 1024)])
    return lib.table(body, ["language", "MB", "lines", "symbols", "tree-sitter parse", "s/MB",
                            "parse + extraction", "s/MB", "incremental (1-line edit)", "s/MB",
                            "peak RSS"])


# ---------------------------------------------------------------------------------------------
# index


def build_repository(path: Path, megabytes: float, commits: int) -> None:
    env = dict(os.environ, GIT_AUTHOR_NAME="Bench", GIT_AUTHOR_EMAIL="bench@example.com",
               GIT_COMMITTER_NAME="Bench", GIT_COMMITTER_EMAIL="bench@example.com",
               GIT_CONFIG_NOSYSTEM="1")

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=path, env=env, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    size = int(megabytes * 1_000_000)
    (path / "big.py").write_bytes(source("python", size))
    (path / "README.md").write_text("# generated\n")
    git("add", ".")
    git("commit", "-q", "-m", "Generate the handlers")
    definitions = (path / "big.py").read_bytes().count(b"def handler_")
    for n in range(1, commits + 1):
        picked = {(n * 7919 * k) % definitions: f" + {n}" for k in (1, 2, 3)}
        (path / "big.py").write_bytes(source("python", size, picked))
        git("commit", "-q", "-am", f"Tune handlers {sorted(picked)}")


def per_commit(path: Path) -> list[dict]:
    """CommitReader.read of each commit, oldest first, in this process."""
    import pygit2

    import cortex_core.git.commit_reader as commit_reader
    from cortex_core.config import IndexSettings
    matching = {"s": 0.0}
    original = commit_reader.match_commit

    def timed(parsed):
        started = time.process_time()
        try:
            return original(parsed)
        finally:
            matching["s"] += time.process_time() - started

    commit_reader.match_commit = timed
    try:
        repo = pygit2.Repository(str(path))
        reader = commit_reader.CommitReader(repo, IndexSettings())
        walk = repo.walk(repo.head.target,
                         pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE)
        rows = []
        for commit in walk:
            matching["s"] = 0.0
            started = time.process_time()
            record = reader.read(commit)
            rows.append({"subject": record.subject, "seconds": time.process_time() - started,
                         "matching_s": matching["s"], "symbol_changes": len(record.symbols),
                         "parses": record.parses})
        return rows
    finally:
        commit_reader.match_commit = original


def part_index(megabytes: float, commits: int, keep: bool) -> dict:
    work = lib.work_dir("large-", keep)
    try:
        repo = work / "repo"
        repo.mkdir()
        print(f"index: building a repository with a {megabytes:g} MB file", file=sys.stderr)
        build_repository(repo, megabytes, commits)
        size = (repo / "big.py").stat().st_size
        assert size <= 1_000_000 * megabytes
        git_log = lib.run(["git", "-C", str(repo), "log", "-p", "--no-merges"],
                          stdout_path=os.devnull)
        results = {}
        for label, limit in (("parsed", None), ("file level only (1 MB limit)", 1_000_000)):
            config = repo / ".cortex" / "config.toml"
            config.parent.mkdir(exist_ok=True)
            config.write_text(f"[index]\nmax_file_bytes = {limit}\n" if limit else "")
            db = work / f"db-{len(results)}" / "cortex.db"
            print(f"index: cortex index --rebuild ({label})", file=sys.stderr)
            run = lib.run([*lib.cortex_command(), "index", "--rebuild", "--db", str(db)],
                          cwd=repo, env=dict(os.environ, CORTEX_MODEL="none"))
            results[label] = {"seconds": run.seconds, "cpu_s": run.user_seconds +
                              run.system_seconds, "peak_rss_kib": run.max_rss_kib,
                              "db_bytes": lib.db_size(db),
                              "summary": run.stdout.decode().splitlines()[:3]}
        print("index: CommitReader.read per commit", file=sys.stderr)
        commits_read = per_commit(repo)
        return {"file_bytes": size, "commits": commits + 1,
                "git_log_p": {"seconds": git_log.seconds,
                              "cpu_s": git_log.user_seconds + git_log.system_seconds},
                "cortex": results, "per_commit": commits_read}
    finally:
        if not keep:
            lib.remove(work)


def index_lines(r: dict) -> list[str]:
    base = r["git_log_p"]["seconds"]
    lines = [f"repository: one Python file of {r['file_bytes'] / 1e6:.1f} MB, {r['commits']} "
             f"commits (the first adds it, each other changes three functions)",
             f"  git log -p --no-merges               {lib.fmt_seconds(base):>9}  (baseline)"]
    for label, c in r["cortex"].items():
        lines.append(f"  cortex index --rebuild, {label:<28} {lib.fmt_seconds(c['seconds']):>9}"
                     f"  {c['seconds'] / base:6.1f}x git log -p  CPU {lib.fmt_seconds(c['cpu_s'])}"
                     f"  peak RSS {lib.fmt_bytes(c['peak_rss_kib'] * 1024)}"
                     f"  store {lib.fmt_bytes(c['db_bytes'])}")
    lines.append("  CommitReader.read per commit, CPU (parse + symbol diff + change kinds):")
    for c in r["per_commit"]:
        lines.append(f"    {lib.clip(c['subject'], 40):<40} {lib.fmt_seconds(c['seconds']):>9}"
                     f"  of which matching {lib.fmt_seconds(c['matching_s']):>9}"
                     f"  {c['symbol_changes']:6d} symbol changes")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--parts", default="parse,index")
    ap.add_argument("--sizes", default="1,5,10,20")
    ap.add_argument("--languages", default="python,java,c,javascript")
    ap.add_argument("--index-mb", type=float, default=10.0)
    ap.add_argument("--commits", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--_parse-one", dest="parse_one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.parse_one:
        language, mb = args.parse_one.split(":")
        print(json.dumps(parse_one(language, float(mb))))
        return 0
    parts = set(args.parts.split(","))
    report: dict = {"environment": lib.environment()}
    if "parse" in parts:
        report["parse"] = part_parse(args.languages.split(","),
                                     [float(s) for s in args.sizes.split(",")])
    if "index" in parts:
        report["index"] = part_index(args.index_mb, args.commits, args.keep)
    if args.json:
        lib.dump_json(report)
        return 0
    print("\n".join(lib.environment_lines(report["environment"])))
    if "parse" in report:
        print("\nparse (CPU time; one child process per row):")
        print(parse_table(report["parse"]))
    if "index" in report:
        print()
        print("\n".join(index_lines(report["index"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
