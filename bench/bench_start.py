"""How long a `cortex` command takes from the shell, process start included, against a bare Python.

    python bench/bench_start.py REPO [--db DB] [--model NAME] [--runs 30] [--json] [--keep]

Times, best of `--runs` rounds taken in turn (each round runs every command once, so that a
busy moment of a shared machine falls on all of them alike), with the venv's interpreter and its
`cortex` script:

- the baseline: `python -c pass` (the interpreter's own start, site included);
- three floors, to tell what is Cortex's own from what a Python command line pays anyway:
  `python -c "import re"` (the console script pip writes for `cortex` imports `re` before
  Cortex runs); the least any answer from the store costs in Python, APSW imported, the store
  opened read-only and one commit read by its key (no argument parsing, no results, nothing
  printed); and the standard modules and APSW that today's history query imports (re, json,
  argparse, pathlib, typing, dataclasses, apsw);
- `cortex --version` (the CLI's parser and nothing else);
- `cortex history FILE:LINE` on the most changed symbol of REPO (`cortex hotspots`' first);
- `cortex search WORDS --mode lexical`;
- with `--model NAME`: `cortex search WORDS` (hybrid: BM25 and the model's vectors), and what a
  user runs instead, `git log -i --grep=WORD | head` (the query's longest word);
- the history and the searches again through a `cortex daemon` (cortex_cli/daemon.py) that the
  script starts in a private folder of its own and stops at the end (`--no-daemon`: not). The
  other `cortex` rows run with CORTEX_DAEMON=off, so that a daemon the user runs does not
  answer them. The report says how many commands the daemon answered and refused: a refused
  one ran in its own process, and its row would not measure the daemon.

and prints each as a ratio to the baseline, with the number of modules each imports (`python -X
importtime`). Without `--db`, REPO is indexed into a temporary store under bench/.work/ first
(`cortex index --model NAME`, `none` without `--model`), removed at the end unless `--keep`. With
`--db` and `--model`, the store must have been indexed with that model. The start does not depend
on the history's length; the queries do (issue 18 asks for hybrid search on 10k commits).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
from pathlib import Path

from _benchlib import (cortex_command, dump_json, environment, environment_lines, fmt_seconds,
                       remove, run, table, work_dir)


# The modules a `cortex history` cannot do without: its arguments (argparse), its store (apsw,
# json for the store's meta), its paths (pathlib), its typed results (dataclasses, typing), and
# `re`, which the console script and most of these import anyway.
FLOOR = "import re, json, argparse, pathlib, typing, dataclasses, apsw"
# The least a Python process answering from the store does: APSW, the store opened, one row.
STORE_FLOOR = ("import apsw; apsw.Connection({db!r}, flags=apsw.SQLITE_OPEN_READONLY).execute("
               "'select sha, subject from commits where id = (select max(id) from commits)')"
               ".fetchall()")


def importtime_modules(cmd: list[str], cwd: Path, env: dict) -> int:
    """How many modules a command imports beyond what `python -c pass` does."""
    python = sys.executable
    if Path(cmd[0]).name == "cortex":   # the console script: run its Python with -X importtime
        cmd = [python, "-X", "importtime", cmd[0], *cmd[1:]]
    else:
        cmd = [cmd[0], "-X", "importtime", *cmd[1:]]
    return sum(1 for line in run(cmd, cwd=cwd, env=env).stderr.decode().splitlines()
               if line.startswith("import time:") and "|" in line and "self [us]" not in line)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--db", type=Path, help="an index of REPO (default: build one)")
    parser.add_argument("--runs", type=int, default=30, help="rounds (default: 30)")
    parser.add_argument("--model", help="index with this model2vec model (a folder or a hub id) "
                        "and time hybrid search too")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the temporary store")
    parser.add_argument("--no-daemon", action="store_true",
                        help="leave out the rows through a `cortex daemon`")
    args = parser.parse_args()
    repo = args.repo.resolve()
    cortex = cortex_command()
    work = None
    daemon_env: dict | None = None
    db = args.db
    try:
        if db is None:
            work = work_dir("start-", args.keep)
            db = work / "cortex.db"
            print(f"indexing {repo} into {db} ...", file=sys.stderr)
            run([*cortex, "index", "--repo", str(repo), "--db", str(db), "--model",
                 args.model or "none", "-q"])
        db = db.resolve()
        hot = json.loads(run([*cortex, "hotspots", "--repo", str(repo), "--db", str(db),
                              "--top-k", "1", "--json"]).stdout)
        if not hot["symbols"]:
            print("no symbol with history in this index: use a repository with code",
                  file=sys.stderr)
            return 1
        top = hot["symbols"][0]
        target = f"{top['path']}:{top['line']}"
        words = " ".join(top["qualname"].replace(".", " ").replace("_", " ").split())
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "python -c 'import re'": [sys.executable, "-c", "import re"],
            "python: apsw, the store opened, one commit read": [
                sys.executable, "-c", STORE_FLOOR.format(db=str(db))],
            "python -c 'import <what history needs>'": [sys.executable, "-c", FLOOR],
            "cortex --version": [*cortex, "--version"],
            f"cortex history {target}": [*cortex, "history", target, "--db", str(db)],
            f"cortex search {words!r} --mode lexical": [*cortex, "search", words, "--mode",
                                                        "lexical", "--db", str(db)],
        }
        if args.model:
            word = max(words.split(), key=len)
            commands[f"cortex search {words!r}"] = [*cortex, "search", words, "--db", str(db)]
            commands[f"git log -i --grep={word} | head"] = [
                "sh", "-c", f"git log -i --grep={shlex.quote(word)} | head"]
        through = {name: cmd for name, cmd in commands.items()
                   if name.startswith(("cortex history", "cortex search"))}
        if args.model:
            done = json.loads(run([*cortex, "search", words, "--db", str(db), "--json"],
                                  cwd=repo).stdout)
            if not done.get("semantic"):
                print(f"the index at {db} has no usable vectors: {done.get('note')}",
                      file=sys.stderr)
                return 1
        # Bytecode as a user has it: written on the first run (a PYTHONDONTWRITEBYTECODE in the
        # environment would make every run compile the modules edited since the last write).
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env_of = {name: dict(env, CORTEX_DAEMON="off") for name in commands}
        if not args.no_daemon:
            folder = tempfile.mkdtemp(prefix="cortex-bench-")   # mode 700; a short socket path
            daemon_env = dict(env, CORTEX_DAEMON_DIR=folder)
            run([*cortex, "daemon", "start"], cwd=repo, env=daemon_env)
            for name, cmd in through.items():
                commands[name + ", through the daemon"] = cmd
                env_of[name + ", through the daemon"] = daemon_env
        for name, cmd in commands.items():
            run(cmd, cwd=repo, env=env_of[name])
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, cmd in commands.items():
                times[name].append(run(cmd, cwd=repo, env=env_of[name]).seconds)
        base = min(times["python -c pass"])
        report = {"environment": environment(repo), "db": str(db), "runs": args.runs,
                  "commands": {}}
        rows = []
        for name, cmd in commands.items():
            best = min(times[name])
            modules = importtime_modules(cmd, repo, env_of[name]) if cmd[0] != "sh" else "-"
            report["commands"][name] = {"best_seconds": best, "ratio": best / base,
                                        "median_seconds": sorted(times[name])[len(times[name]) // 2],
                                        "modules_imported": modules}
            rows.append([name, fmt_seconds(best),
                         fmt_seconds(report["commands"][name]["median_seconds"]),
                         f"{best / base:.2f}x", str(modules)])
        if daemon_env is not None:
            report["daemon"] = json.loads(run([*cortex, "daemon", "status", "--json"], cwd=repo,
                                              env=daemon_env).stdout)
        if args.json:
            dump_json(report)
        else:
            print("\n".join(environment_lines(report["environment"])))
            print(f"best and median of {args.runs} rounds, process start included\n")
            print(table(rows, ["command", "best", "median", "best / python -c pass",
                               "modules imported"]))
            if daemon_env is not None:
                d = report["daemon"]
                if not d.get("running"):
                    print("\nthe daemon stopped during the run (a file of Cortex changed?): "
                          "the rows through it may have run in their own process; run again")
                else:
                    print(f"\nthe daemon answered {d.get('served')} commands and refused "
                          f"{sum((d.get('refused') or {}).values())} {d.get('refused') or ''}")
        return 0
    finally:
        if daemon_env is not None:
            run([*cortex, "daemon", "stop"], cwd=repo, env=daemon_env)
            remove(Path(daemon_env["CORTEX_DAEMON_DIR"]))
        if work is not None and not args.keep:
            remove(work)


if __name__ == "__main__":
    sys.exit(main())
