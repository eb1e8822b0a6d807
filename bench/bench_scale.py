#!/usr/bin/env python3
"""Scale: one run on a big repository — full index time, peak memory of the process tree, store
size, time to the first hover, hover and code-lens p95, a one-commit update — each against a
baseline a user could run, timed in the same run (issue 17, item 6).

Works on a private clone of REPO under the work folder (REPO itself is never altered; a bare
repository is fine, the clone has a working tree):

  0. with --first-half, the clone is cut at the commit in the middle of HEAD's first-parent
     history (with --until N, at the N-th first-parent commit counted from the root): HEAD of
     the clone moves there, so every step below sees a repository with that part of the history
     (cortex indexes what HEAD reaches). Run once with and once without to compare two sizes of
     the same repository;
  1. T is the newest non-merge commit on the first-parent line; the clone is checked out at its
     first parent T~1 (T is the one-commit update of step 6);
  2. baseline: `git log -p --no-merges > /dev/null` at T~1 (best of --git-runs; wall and CPU);
  3. `cortex index` (the real CLI in a child process, cortex's default --jobs unless --jobs),
     into a fresh store outside the clone: wall time, CPU time (the process and the workers it
     reaped), ratio to the baseline; memory of the process tree sampled from /proc every 100 ms:
     the summed PSS of the main process and its workers (pages shared after fork count once),
     which process held what at the tree's peak, each process's own peak RSS (VmHWM), and a
     coarse timeline (main / workers every ~2 s) to show what grows as the history goes by;
  4. the store's size on disk (with its WAL), against the bytes of the baseline's output;
  5. S sampled functions of Python files at HEAD known to the index (bench_lsp's sampler: the
     server's own extractor): hover (cortex_ls.queries.locate + hover) and code lens
     (queries.lenses per file, queries.lens_title per lens) in this process on a reader, warm,
     p50/p95; against `git blame -L n,n --porcelain` on each function's line and `git log -L
     :RE:FILE` (git's funcname regex of the definition) on the first L of them, each a child
     process, start included;
  6. one new commit: the clone moves to T and `cortex index` runs (best of --update-runs, each
     from a copy of the store taken before);
  7. first hover (unless --no-first-hover): a real language server (`python -m cortex_ls`,
     driven over stdio by pytest-lsp's client) opens the clone with no index and indexes it in
     the background; a function line changed by the newest commit that changed Python code is
     hovered (its file opened) every --poll seconds: the time until the first answer with history (a symbol card, not
     "no commits yet"), whether it said the index was still building (the server answers from
     the part of the history already written, oldest first), and the time until the server's
     index run finished (cortex/indexUpdated). The server's descendants (its indexer and
     workers) are sampled too.

Run with the venv's python: `/work/venv/bin/python bench/bench_scale.py REPO [--first-half]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import sys
import time
from pathlib import Path

import _benchlib as bl
import _linelog as ll
import _lsp_common as lsp
from _procmem import TreeMemory
from _scale_report import render, summarize_queries


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Scale benchmark: full cortex index vs git log -p --no-merges, peak memory "
        "of the process tree, store size, first hover, hover and code lens p95 vs git blame "
        "-L / git log -L, one-commit update. Works on a private clone.")
    p.add_argument("repo", type=Path, help="the git repository (not modified; may be bare)")
    cut = p.add_mutually_exclusive_group()
    cut.add_argument("--first-half", action="store_true",
                     help="cut the clone at the middle of HEAD's first-parent history")
    cut.add_argument("--until", type=int, metavar="N",
                     help="cut the clone at the N-th first-parent commit from the root")
    p.add_argument("--jobs", type=int, help="pass --jobs N to cortex index (default: cortex's "
                   "own default)")
    p.add_argument("--git-runs", type=int, default=2, help="git log -p runs, best kept "
                   "(default 2)")
    p.add_argument("--update-runs", type=int, default=3,
                   help="one-commit updates, each from a copy of the store (default 3)")
    p.add_argument("--functions", type=int, default=40, metavar="S",
                   help="sampled functions for hover, code lens and git blame (default 40)")
    p.add_argument("--log-l", type=int, default=10, metavar="L",
                   help="of those, how many also timed with git log -L (slow; default 10)")
    p.add_argument("--no-first-hover", action="store_true",
                   help="skip step 7 (a second full index, by the language server)")
    p.add_argument("--only-first-hover", action="store_true",
                   help="step 7 alone (no index by the CLI, no baselines)")
    p.add_argument("--limit", type=float, default=7200, metavar="SECONDS",
                   help="step 7 gives up after this long (default 7200)")
    p.add_argument("--poll", type=float, default=1.0, metavar="SECONDS",
                   help="seconds between first-hover attempts (default 1)")
    p.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    p.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="a setting for every cortex run, written to the clone's "
                   ".cortex/config.toml (repeatable; e.g. index.max_file_bytes=500000 holds "
                   "the largest file parsed fixed across two sizes of a history)")
    p.add_argument("--work", type=Path, help="work folder (default: a new folder under "
                   "bench/.work/); removed at the end unless --keep")
    p.add_argument("--json", action="store_true", help="print a machine-readable report")
    p.add_argument("--keep", action="store_true", help="keep the work folder")
    args = p.parse_args(argv)
    if args.until is not None and args.until < 2:
        p.error("--until N needs N >= 2 (a commit and its parent)")
    try:
        args.settings = settings_toml(args.set)
    except ValueError as e:
        p.error(str(e))
    return args


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BARE = re.compile(r"[A-Za-z0-9_./:+-]+")


def settings_toml(pairs: list[str]) -> str:
    """`SECTION.KEY=VALUE` pairs as the text of a config.toml, checked as cortex checks its
    own (unknown keys, wrong types). VALUE is a TOML value (a number, true or false, a quoted
    string, a list) or else a bare word taken as text (`memory.model=none`); nothing else."""
    if not pairs:
        return ""
    import tempfile
    import tomllib
    from cortex_core.config import load_settings
    from cortex_core.errors import CortexError
    sections: dict[str, dict[str, str]] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        section, dot, key = name.strip().partition(".")
        value = value.strip()
        if not sep or not dot or not _NAME.fullmatch(section) or not _NAME.fullmatch(key):
            raise ValueError(f"--set {pair!r}: expected SECTION.KEY=VALUE, e.g. "
                             "index.max_file_bytes=500000")
        try:   # one value on one line, nothing after it
            parsed = tomllib.loads(f"v = {value}") if value.isprintable() else {}
        except tomllib.TOMLDecodeError:
            parsed = {}
        if set(parsed) != {"v"}:
            if not _BARE.fullmatch(value):
                raise ValueError(f"--set {pair!r}: VALUE must be a TOML value (a number, true "
                                 "or false, a quoted string, a list) or a bare word")
            value = json.dumps(value)
        if key in sections.setdefault(section, {}):
            raise ValueError(f"--set {section}.{key}: given twice")
        sections[section][key] = value
    text = "".join(f"[{s}]\n" + "".join(f"{k} = {v}\n" for k, v in keys.items()) + "\n"
                   for s, keys in sections.items())
    with tempfile.TemporaryDirectory() as folder:   # what cortex would say of the file
        path = Path(folder) / "config.toml"
        path.write_text(text, encoding="utf-8")
        try:
            load_settings(path)
        except CortexError as exc:
            raise ValueError(f"--set: {str(exc).replace(str(path), 'the settings')}") from None
    return text


# -- memory of a process tree ------------------------------------------------------------------


def run_measured(cmd: list[str]) -> tuple[bl.Run, dict]:
    """bl.run with this script's descendants sampled meanwhile (it has no other child then)."""
    sampler = TreeMemory(os.getpid())
    try:
        result = bl.run(cmd)
    finally:
        memory = sampler.stop()
    return result, memory


# -- steps -------------------------------------------------------------------------------------


def cut_clone(clone: Path, args, log) -> dict:
    head = bl.git(clone, "rev-parse", "HEAD")
    line = bl.git(clone, "rev-list", "--first-parent", "HEAD").split()   # newest first
    out = {"original_head": head, "original_first_parent_commits": len(line),
           "original_commits": int(bl.git(clone, "rev-list", "--count", "HEAD"))}
    if args.first_half:
        cut = line[len(line) // 2]
        out["cut"] = "first half: the middle of the first-parent history"
    elif args.until is not None:
        n = min(args.until, len(line))
        cut = line[len(line) - n]
        out["cut"] = f"first-parent commit {n} counted from the root"
    else:
        return out
    bl.run(["git", "-C", str(clone), "checkout", "-q", "-B", "bench", cut])
    out["cut_commit"] = cut
    log(f"clone cut at {cut[:10]} ({out['cut']})")
    return out


def sample_functions(clone: Path, db: Path, n: int, seed: int) -> list[lsp.Position]:
    """N function lines of N Python files at HEAD known to the index (one per file while there
    are files enough), the cursor on the definition's first line when it can be found."""
    rng = random.Random(seed)
    files, _ = lsp.pick_files(clone, db, n, rng)
    out = []
    for i in range(n if files else 0):
        f = files[i % len(files)]
        out.append(lsp.make_positions([f], 1, 0.0, 0.0, rng)[0])
    return out


def definition(pos: lsp.Position) -> tuple[int, str] | None:
    """(1-based line, name) of the def enclosing the position: the nearest `def` line at or above
    it with less or equal indentation."""
    lines = pos.file.text.split("\n")
    indent = pos.file.indent.get(pos.line, 0)
    for i in range(pos.line, -1, -1):
        name = ll.python_def_name(lines[i])
        if name and lines[i].lstrip().startswith(("def ", "async ")) and \
                len(lines[i]) - len(lines[i].lstrip()) <= indent:
            return i + 1, name
    return None


def queries_in_process(clone: Path, positions: list[lsp.Position]) -> dict:
    from lsprotocol import types

    from cortex_ls import queries
    from cortex_ls.documents import Buffer
    from cortex_ls.repos import Repos
    from cortex_ls.settings import parse_settings

    settings, errors = parse_settings(lsp.SERVER_OPTIONS)
    if errors:
        raise RuntimeError(f"settings: {errors}")
    repo = Repos().add_folder(clone)
    # One snapshot for the whole run (the server opens one per request: a read transaction).
    with repo.snapshot(settings) as snap:
        files = {p.file.path: p.file for p in positions}
        buffers = {path: Buffer(f.uri, clone / path, f.text, 1, "python")
                   for path, f in files.items()}

        def hover(p):
            t = time.perf_counter()
            loc = queries.locate(repo, p.file.path, buffers[p.file.path],
                                 types.Position(p.line, p.character), "utf-16", snap)
            text = queries.hover(snap, loc, settings)
            return time.perf_counter() - t, text

        for p in positions:             # warm-up: page cache, statement cache
            hover(p)
        hovers = [hover(p) for p in positions]
        lens_s, title_s, lenses = [], [], 0
        for path in files:
            queries.lenses(snap, repo, path, buffers[path], settings)     # warm-up
            t = time.perf_counter()
            found = queries.lenses(snap, repo, path, buffers[path], settings)
            lens_s.append(time.perf_counter() - t)
            lenses += len(found)
            for lens in found:
                t = time.perf_counter()
                queries.lens_title(snap, repo, path, lens.qualname, settings)
                title_s.append(time.perf_counter() - t)
        return {"hover_seconds": [s for s, _ in hovers],
                "hover_kinds": [lsp.hover_kind(text) for _, text in hovers],
                "lenses_seconds": lens_s, "lens_title_seconds": title_s, "lenses": lenses,
                "files": len(files)}


def git_baselines(clone: Path, positions: list[lsp.Position], log_l: int, log) -> dict:
    blame, line_log, skipped = [], [], 0
    for p in positions:
        d = definition(p)
        line = d[0] if d else p.line + 1
        r = bl.run(["git", "-C", str(clone), "blame", "-L", f"{line},{line}", "--porcelain",
                    "--", p.file.path], capture=False)
        blame.append(r.seconds)
        if d is None or len(line_log) >= log_l:
            skipped += d is None
            continue
        regex, _ = ll.git_regex(d[1], "function")
        r = bl.run(["git", "-C", str(clone), "log", f"-L:{regex}:{p.file.path}", "HEAD"],
                   capture=False, check=False)
        if r.returncode == 0:
            line_log.append(r.seconds)
        if len(line_log) % 5 == 0:
            log(f"git log -L {len(line_log)}/{log_l}")
    return {"blame_seconds": blame, "log_l_seconds": line_log, "no_definition": skipped}


def changed_function(clone: Path) -> tuple[lsp.Position, str] | None:
    """A function line that the newest commit changing Python code (of HEAD's last 500
    non-merge first-parent commits) added or changed, and that commit: the code a user opens
    first, whose hover should name that commit once the history is indexed. Falls back to a
    function of a file that commit changed when none of its added lines is in a function."""
    shas = bl.git(clone, "rev-list", "--first-parent", "--no-merges", "-n", "500", "HEAD",
                  "--", "*.py").split()
    for sha in shas:
        patch = bl.git(clone, "diff-tree", "-p", "-U0", "--no-commit-id", "--no-renames",
                       sha, "--", "*.py")
        added: dict[str, set[int]] = {}      # path -> 0-based lines added at `sha`
        path = None
        for line in patch.split("\n"):
            if line.startswith("+++ "):
                path = line[6:] if line.startswith("+++ b/") else None
            elif line.startswith("@@") and path is not None:
                m = ll.HUNK.match(line)
                if m:
                    start, count = int(m.group(3)), int(m.group(4) or 1)
                    added.setdefault(path, set()).update(range(start - 1, start - 1 + count))
        for path, lines in added.items():
            full = clone / path
            if not full.is_file():
                continue
            text = full.read_text(encoding="utf-8", errors="replace")
            f = lsp.classify(path, text)
            if f is None or not f.function_lines or "\r" in text:
                continue
            f.uri = full.as_uri()
            changed = [n for n in f.function_lines if n in lines]
            line = (changed or f.function_lines)[0]
            return lsp.Position(f, line, f.indent[line], "function"), sha
    return None


async def first_hover(clone: Path, pos: lsp.Position, newest: str, poll: float, limit: float,
                      log) -> dict:
    """A language server opens `clone` with no index; a hover on `pos` every `poll` seconds."""
    from lsprotocol import types
    from pytest_lsp import ClientServerConfig, client_capabilities

    env = dict(os.environ, CORTEX_MODEL="none")
    config = ClientServerConfig(server_command=[sys.executable, "-m", "cortex_ls"],
                                server_env=env)
    t0 = time.perf_counter()
    client = await config.start()
    memory = TreeMemory(client._server.pid)
    done: list[float] = []

    @client.feature("cortex/indexUpdated")
    def _updated(params):
        done.append(time.perf_counter())

    @client.feature("cortex/indexStatus")
    def _status(params):
        pass

    @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def _refresh(params):
        pass

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def _register(params):
        return None

    out: dict = {"path": pos.file.path, "line": pos.line + 1, "newest_commit": newest}
    try:
        await client.initialize_session(types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"), root_uri=clone.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=clone.as_uri(), name=clone.name)],
            initialization_options=lsp.SERVER_OPTIONS))
        out["initialize_seconds"] = time.perf_counter() - t0
        client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(
            uri=pos.file.uri, language_id="python", version=1, text=pos.file.text)))
        attempts, deadline = 0, t0 + limit
        while time.perf_counter() < deadline:
            attempts += 1
            result = await asyncio.wait_for(client.text_document_hover_async(types.HoverParams(
                types.TextDocumentIdentifier(pos.file.uri),
                types.Position(pos.line, pos.character))), lsp.REQUEST_TIMEOUT)
            text = result.contents.value if result else None
            # A card with history; not "no commits yet", which a partial index gives for a
            # symbol whose commits it has not read.
            if lsp.hover_kind(text) == "symbol" and "no commits yet" not in text:
                out.update(seconds=time.perf_counter() - t0, attempts=attempts,
                           partial="index still building" in text or "history from" in text,
                           history_from=next((line.strip("*_ ") for line in text.split("\n")
                                              if "history from" in line), None),
                           index_finished_before=bool(done), text=text[:600],
                           names_newest_commit=newest[:10] in text)
                break
            if attempts % 60 == 0:
                log(f"first hover: no answer after {time.perf_counter() - t0:.0f} s")
            await asyncio.sleep(poll)     # polling an editor's way, not a synchronisation
        while not done and time.perf_counter() < deadline:   # the rest of the index run
            await asyncio.sleep(poll)
        out["index_run_seconds"] = done[0] - t0 if done else None
    finally:
        out["memory"] = memory.stop()
        try:
            await asyncio.wait_for(client.shutdown_session(), 30)
        except Exception as exc:  # noqa: BLE001 - reported, the server is killed below
            log(f"shutdown failed: {exc!r}")
        if client._server.returncode is None:
            client._server.kill()          # our own child: never left behind
        await client.stop()
    return out


def first_hover_step(clone: Path, args, log) -> dict:
    found = changed_function(clone)
    if found is None:
        return {"skipped": "no Python function to hover"}
    pos, newest = found
    log(f"first hover: a language server on the clone with no index, hovering "
        f"{pos.file.path}:{pos.line + 1} ...")
    try:
        return asyncio.run(first_hover(clone, pos, newest, args.poll, args.limit, log))
    except Exception as exc:  # noqa: BLE001 - the other steps are still reported
        log(f"first hover failed: {exc!r}")
        return {"error": f"{type(exc).__name__}: {exc}"}


# -- main --------------------------------------------------------------------------------------


def main(argv=None) -> int:
    args = parse_args(argv)
    repo = args.repo.resolve()
    log = bl.progress
    cortex = bl.cortex_command()
    jobs = ["--jobs", str(args.jobs)] if args.jobs else []
    if args.work:
        work = args.work.resolve()
        work.mkdir(parents=True, exist_ok=False)
    else:
        work = bl.work_dir("scale-", args.keep)
    report: dict = {"benchmark": "scale", "config": bl.config(args)}
    try:
        clone = bl.private_clone(repo, work / "clone", checkout=True)
        setup = cut_clone(clone, args, log)
        head = bl.git(clone, "rev-parse", "HEAD")
        tip = bl.git(clone, "rev-list", "--first-parent", "--no-merges", "-n", "1", head)
        base = bl.git(clone, "rev-parse", f"{tip}^1")
        bl.run(["git", "-C", str(clone), "checkout", "-q", "-B", "bench", base])
        report["environment"] = bl.environment(clone)
        setup.update(tip=tip, base=base, jobs=args.jobs or "cortex default",
                     commits=int(bl.git(clone, "rev-list", "--count", "HEAD")),
                     non_merge_commits=int(bl.git(clone, "rev-list", "--count", "--no-merges",
                                                  "HEAD")),
                     first_parent_commits=int(bl.git(clone, "rev-list", "--count",
                                                     "--first-parent", "HEAD")),
                     files_at_head=len(bl.git(clone, "ls-files").split("\n")),
                     first_commit_date=bl.git(clone, "log", "--reverse", "--format=%cs",
                                              "HEAD").split("\n")[0],
                     head_date=bl.git(clone, "log", "-1", "--format=%cs", "HEAD"))
        if args.settings:   # cortex reads <repo>/.cortex/config.toml (docs/settings.md)
            if any(bl.git(clone, "ls-tree", "--name-only", rev, "--", ".cortex/config.toml")
                   for rev in (base, tip)):   # the update step resets the clone to the tip
                print("bench_scale: the repository tracks .cortex/config.toml: --set would "
                      "replace it, and the update step's reset would bring it back",
                      file=sys.stderr)
                return 2
            (clone / ".cortex").mkdir(exist_ok=True)
            (clone / ".cortex" / "config.toml").write_text(args.settings, encoding="utf-8")
            setup["settings"] = args.settings
        report["setup"] = setup
        log(f"clone at {base[:10]}: {setup['commits']} commits ({setup['non_merge_commits']} "
            f"non-merge), {setup['files_at_head']} files")

        if not args.only_first_hover:
            # -- 2. baseline ---------------------------------------------------------------------
            git_cmd = ["git", "-C", str(clone), "log", "-p", "--no-merges", "HEAD"]
            git_runs = []
            for i in range(max(1, args.git_runs)):
                git_runs.append(bl.run(git_cmd, capture=False))
                log(f"git log -p --no-merges run {i + 1}: {bl.fmt_seconds(git_runs[-1].seconds)}")
            best = min(git_runs, key=lambda r: r.seconds)
            git_bytes = bl.stdout_bytes(git_cmd)
            report["git_log_p"] = {"seconds_best": best.seconds,
                                   "seconds_all": [r.seconds for r in git_runs],
                                   "cpu_seconds": best.user_seconds + best.system_seconds,
                                   "max_rss_kib": best.max_rss_kib, "bytes": git_bytes}

            # -- 3. full index -------------------------------------------------------------------
            db = work / "store" / "cortex.db"
            db.parent.mkdir()
            log("cortex index (full) ...")
            full, memory = run_measured([*cortex, "index", "--repo", str(clone), "--db", str(db),
                                         "--quiet", "--json", *jobs])
            summary = json.loads(full.stdout)
            cpu = full.user_seconds + full.system_seconds
            report["full_index"] = {
                "command": "cortex index --quiet --json" + (" " + " ".join(jobs) if jobs else ""),
                "seconds": full.seconds, "cpu_seconds": cpu,
                "over_git_log_p": full.seconds / best.seconds,
                "cpu_over_git_log_p_cpu": cpu / max(1e-9, best.user_seconds + best.system_seconds),
                "largest_process_peak_rss_kib": full.max_rss_kib,
                "memory": memory, "summary": summary}
            log(f"full index: {bl.fmt_seconds(full.seconds)} (CPU {cpu:.0f} s), tree peak "
                f"{memory['peak']['total_kib'] / 1024:.0f} MiB")

            # -- 4. store size -------------------------------------------------------------------
            size = bl.db_size(db)
            report["store"] = {"bytes": size, "over_git_log_p_bytes": size / max(1, git_bytes),
                               "bytes_per_non_merge_commit": size / max(1, setup["non_merge_commits"])}

            # -- 5. hover, code lens; git blame -L, git log -L -----------------------------------
            positions = sample_functions(clone, db, args.functions, args.seed)
            # The in-process reader opens the clone's default store: link it there (read only).
            default = clone / ".cortex"
            default.mkdir(exist_ok=True)
            linked = [default / f.name for f in db.parent.glob("cortex.db*")]
            for f in linked:
                os.link(db.parent / f.name, f)
            q = queries_in_process(clone, positions) if positions else None
            log(f"git blame -L and git log -L on {len(positions)} functions ...")
            g = git_baselines(clone, positions, args.log_l, log)
            for f in default.glob("cortex.db*"):   # the links and what the reader added
                f.unlink()
            report["queries"] = summarize_queries(q, g)

            # -- 6. one-commit update ------------------------------------------------------------
            saved = work / "store" / "saved.db"
            bl.copy_db(db, saved)
            updates = []
            for i in range(max(1, args.update_runs)):
                if i:
                    bl.run(["git", "-C", str(clone), "reset", "-q", "--hard", base])
                    bl.copy_db(saved, db)
                bl.run(["git", "-C", str(clone), "reset", "-q", "--hard", tip])
                r, m = run_measured([*cortex, "index", "--repo", str(clone), "--db", str(db),
                                     "--quiet", "--json", *jobs])
                updates.append((r, m, json.loads(r.stdout)))
                log(f"one-commit update {i + 1}: {bl.fmt_seconds(r.seconds)}")
            bl.remove_db(saved)
            one = min(bl.run(["git", "-C", str(clone), "log", "-p", "-1", tip],
                             capture=False).seconds for _ in range(3))
            fastest = min(updates, key=lambda u: u[0].seconds)
            report["update"] = {"seconds_best": fastest[0].seconds,
                                "seconds_all": [u[0].seconds for u in updates],
                                "cpu_seconds": fastest[0].user_seconds + fastest[0].system_seconds,
                                "new_commits": fastest[2]["new_commits"],
                                "tree_peak_kib": max(u[1]["peak"]["total_kib"] for u in updates),
                                "git_log_p_one_commit_seconds": one}

        # -- 7. first hover ------------------------------------------------------------------
        if not args.no_first_hover:
            if args.only_first_hover:       # at T, as after step 6
                bl.run(["git", "-C", str(clone), "reset", "-q", "--hard", tip])
            report["first_hover"] = first_hover_step(clone, args, log)
        report["environment_at_end"] = {"load_average_1m_5m_15m":
                                        [round(x, 2) for x in os.getloadavg()]}
    finally:
        if not args.keep:
            bl.remove(work)
    bl.emit(report, args.json, render)
    return 0


if __name__ == "__main__":
    sys.exit(main())
