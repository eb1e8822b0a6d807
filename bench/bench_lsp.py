#!/usr/bin/env python3
"""Language server: hover and code lens latency of a real cortex-ls, against `git blame -L n,n`.

A real server process (`python -m cortex_ls`) is driven over stdio by pytest-lsp's client (used
outside pytest), on a private clone of REPO under bench/.work/ (REPO itself is never altered):

  1. the clone gets an index: with `--db`, a copy of that database at `<clone>/.cortex/cortex.db`
     (the server's default), brought up to date by one `cortex index` with the server's model
     setting (untimed: a model setting other than the one the database was built with drops or
     re-makes vectors and areas once, which is not what a warm start costs); with `--fresh`, no
     database: the server builds it (time to index measured);
  2. the server starts and is initialized like VS Code (pytest_lsp.client_capabilities(
     "visual-studio-code"), root = the clone, initializationOptions {"pollInterval": 0,
     "hotspotThreshold": 2, "hotspotWindowDays": 3650}: a low threshold over ten years, so that
     code lenses exist on an older history); the script waits for `cortex/indexUpdated` (an
     event, not a sleep), which the server sends when its background index run (a child process,
     `python -m cortex_core index --progress-json`) has finished;
  3. memory while it indexes: the server's descendants are sampled from /proc every 50 ms — the
     indexer's own peak RSS (VmHWM, the kernel's high-water mark, read at each sample: exact up to
     the last 50 ms of its life) and the summed PSS of the indexer and its worker processes (a
     peak shorter than 50 ms may be missed). The indexer is a grandchild of this script: its
     rusage never reaches us (os.wait4 and RUSAGE_CHILDREN only see reaped children);
  4. positions: F Python files at HEAD that the index knows (`git ls-files '*.py'` and the
     index's `head_files`), sampled with the seed, each parsed with the server's own extractor
     (cortex_core.lang.live) to classify its non-blank lines: inside a function or method (the hover
     shows the symbol's card) or outside any symbol (the hover shows the line's last commit, from
     the index's hunks). Positions cycle over the files; each is a function line, or with
     probability --outside-share a line outside any symbol; the cursor is on the line's first
     non-blank character (with --class-share, also lines of a class outside its methods: the
     class's card, which rolls up its members' changes). Every file is opened with didOpen
     (text from disk);
  5. hover: W warm-up requests (other positions, not counted), then N requests, one at a time;
     each round trip timed on the client (time.perf_counter around the awaited request: JSON-RPC
     both ways, the server's thread hops and query, the client's decoding); then 200 hovers on
     a file outside every repository, answered (null) on the server's event loop without a
     query: the protocol's floor (pygls itself reads stdin through a thread pool, three hops
     per message; a hover adds two hops to the server's query threads);
  6. code lens: `textDocument/codeLens` per file, then `codeLens/resolve` for each lens it
     returned, cycling over the files until N requests in all (after W warm-up requests);
     p50/p95 for each method separately, and how many lenses came back;
  7. search: Q `cortex/search` requests (after 5 warm-up ones), one at a time, each the subject
     of a sampled non-merge commit (hybrid when the index has vectors: build it with a model);
  8. the server's resident memory (VmRSS of /proc/<pid>/status) after the index run, after the
     hovers and after the lenses, and its peak (VmHWM); then shutdown and exit;
  9. git blame: for B of the measured hover positions (sampled with the seed),
     `git -C CLONE blame -L n,n --porcelain -- FILE`, process start included (what a blame-based
     editor tool pays per hover); ratios git blame / hover at p50 and p95, and per position; for
     the positions whose hover named a line's last commit, whether it names git blame's commit;
  10. in process, for the same positions: cortex_ls.queries.locate + queries.hover (and
     queries.lenses, queries.lens_title) on a reader connection, warm, timed one by one — the
     query's own cost; the rest of the round trip is protocol, threads and client.

Run with the venv's python: `/work/venv/bin/python bench/bench_lsp.py REPO --db DB`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
from pathlib import Path

import _benchlib as bl
from _lsp_common import (File, Position, REQUEST_TIMEOUT, SERVER_OPTIONS, hover_kind,
                         make_positions, pick_files, plain)
from _lsp_report import render, summarize
from _procmem import ChildSampler, proc_status


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="cortex-ls hover and code lens latency (p50/p95, client round trip) over a "
        "real server on stdio, its memory, and git blame -L n,n on the same lines (same run). "
        "Works on a private clone under bench/.work/.")
    p.add_argument("repo", type=Path, help="the git repository (not modified)")
    p.add_argument("--db", type=Path, help="an index of REPO (copied into the clone's "
                   ".cortex/cortex.db); one of --db and --fresh is required")
    p.add_argument("--fresh", action="store_true", help="no database: the server indexes the "
                   "clone from scratch (time to index measured)")
    p.add_argument("--requests", type=int, default=1000, metavar="N",
                   help="measured hover requests, and code lens requests (default 1000)")
    p.add_argument("--warmup", type=int, default=50, metavar="W",
                   help="warm-up requests of each kind, not counted (default 50)")
    p.add_argument("--files", type=int, default=40, metavar="F",
                   help="Python files opened and spread over (default 40)")
    p.add_argument("--outside-share", type=float, default=0.2, metavar="S",
                   help="share of positions on lines outside any symbol (default 0.2)")
    p.add_argument("--class-share", type=float, default=0.0, metavar="S",
                   help="share of positions on class lines outside its methods (the class's "
                   "card, its members' changes rolled up; default 0)")
    p.add_argument("--blame-sample", type=int, default=100, metavar="B",
                   help="hover positions also timed with git blame -L n,n (default 100)")
    p.add_argument("--searches", type=int, default=100, metavar="Q",
                   help="cortex/search requests, commit subjects as queries (default 100)")
    p.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    p.add_argument("--model", help="embedding model for the server's indexer (CORTEX_MODEL; "
                   "default: none)")
    p.add_argument("--no-inproc", action="store_true",
                   help="skip the in-process timing of the same positions")
    p.add_argument("--server-log", type=Path, metavar="FILE",
                   help="run the server with -vv --log-file FILE (debug logging of every "
                   "message: slows the requests; for profiling only)")
    p.add_argument("--json", action="store_true", help="print a machine-readable report")
    p.add_argument("--keep", action="store_true", help="keep the work folder under bench/.work/")
    args = p.parse_args(argv)
    if (args.db is None) == (not args.fresh):
        p.error("give exactly one of --db DB (a copy of an index) and --fresh (the server "
                "indexes)")
    return args


# -- the server --------------------------------------------------------------------------------


async def drive_server(args, clone: Path, db: Path, env: dict, log, report: dict) -> dict:
    """Start the server, wait for its index run, time the requests; the raw results."""
    from lsprotocol import types
    from pytest_lsp import ClientServerConfig, client_capabilities

    command = bl.python_module("cortex_ls")
    if args.server_log:
        command += ["-vv", "--log-file", str(args.server_log.resolve())]
    config = ClientServerConfig(server_command=command, server_env=env)
    out: dict = {"command": command, "initialization_options": SERVER_OPTIONS}
    t0 = time.perf_counter()
    client = await config.start()
    pid = client._server.pid
    sampler = ChildSampler(pid)
    updates, statuses, refreshes = [], [], [0]
    ready = asyncio.Event()

    @client.feature("cortex/indexUpdated")
    def _updated(params):
        updates.append((time.perf_counter(), plain(params)))
        ready.set()

    @client.feature("cortex/indexStatus")
    def _status(params):
        p = plain(params)
        statuses.append(p)
        if p.get("state") == "error" or (p.get("error") and p.get("state") != "indexing"):
            ready.set()

    @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def _refresh(params):
        refreshes[0] += 1

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def _register(params):
        return None

    try:
        await client.initialize_session(types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            root_uri=clone.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=clone.as_uri(), name=clone.name)],
            initialization_options=SERVER_OPTIONS))
        t_init = time.perf_counter()
        out["initialize_seconds"] = t_init - t0
        out["rss_after_initialize_kib"] = proc_status(pid).get("VmRSS")
        log(f"server pid {pid} initialized in {bl.fmt_seconds(t_init - t0)}; waiting for "
            "cortex/indexUpdated ...")
        await asyncio.wait_for(ready.wait(), 3600 if args.fresh else 600)
        children = sampler.stop()
        if not updates:
            raise RuntimeError(f"the server's index run failed: {statuses[-1:]} "
                               f"{[m.message for m in client.log_messages[-3:]]}")
        t_ready, update = updates[0]
        out["index_run"] = {"seconds_from_initialized": t_ready - t_init,
                            "notification": update, "statuses": len(statuses),
                            "progress_reports": sum(len(v) for v in
                                                    client.progress_reports.values()),
                            "code_lens_refreshes": refreshes[0]}
        out["children"] = children
        status = proc_status(pid)
        out["rss_after_index_kib"] = status.get("VmRSS")
        out["hwm_after_index_kib"] = status.get("VmHWM")
        ix = children["indexer"]
        log(f"index run done in {bl.fmt_seconds(t_ready - t_init)} "
            f"({update.get('newCommits')} new commits); server RSS "
            f"{status.get('VmRSS', 0) / 1024:.0f} MiB; indexer peak "
            f"{(ix or {}).get('peak_rss_kib', 0) / 1024:.0f} MiB")

        # -- positions (after the index exists: --fresh builds it just now) ------------------
        rng = random.Random(args.seed)
        files, eligible = pick_files(clone, db, args.files, rng)
        if not files:
            raise RuntimeError("no Python file at HEAD with functions and module-level lines")
        warm = make_positions(files, args.warmup, args.outside_share, args.class_share, rng)
        measured = make_positions(files, args.requests, args.outside_share, args.class_share,
                                  rng)
        report["positions"] = {
            "files": len(files), "eligible_files": eligible,
            "lines_in_functions": sum(len(f.function_lines) for f in files),
            "lines_outside_symbols": sum(len(f.outside_lines) for f in files),
            "measured_in_functions": sum(p.where == "function" for p in measured),
            "measured_outside_symbols": sum(p.where == "outside" for p in measured),
            "measured_in_class_bodies": sum(p.where == "class" for p in measured),
            "file_paths": [f.path for f in files]}
        for f in files:
            client.text_document_did_open(types.DidOpenTextDocumentParams(
                types.TextDocumentItem(uri=f.uri, language_id="python", version=1,
                                       text=f.text)))

        async def hover(p: Position):
            t = time.perf_counter()
            result = await asyncio.wait_for(client.text_document_hover_async(types.HoverParams(
                types.TextDocumentIdentifier(p.file.uri), types.Position(p.line, p.character))),
                REQUEST_TIMEOUT)
            return time.perf_counter() - t, (result.contents.value if result else None)

        # -- hovers --------------------------------------------------------------------------
        log(f"{len(files)} files open; {len(warm)} warm-up hovers, then {len(measured)} ...")
        for p in warm:
            await hover(p)
        out["rss_after_open_and_warmup_kib"] = proc_status(pid).get("VmRSS")
        hovers = []
        for p in measured:
            seconds, text = await hover(p)
            hovers.append({"path": p.file.path, "line": p.line + 1, "where": p.where,
                           "seconds": seconds, "kind": hover_kind(text),
                           "chars": len(text or ""), "text": text})
        out["rss_after_hovers_kib"] = proc_status(pid).get("VmRSS")
        # The protocol's floor: hovers on a file outside every repository, which the server
        # answers (null) on its event loop without a query or a thread hop.
        outside = Position(File("outside.py", "x = 1\n", uri=(clone.parent / "outside.py")
                                .as_uri()), 0, 0, "floor")
        floor, floor_answers = [], 0
        for _ in range(min(args.requests, 200)):
            seconds, text = await hover(outside)
            floor.append(seconds)
            floor_answers += text is not None      # expected: null, no query behind it
        log(f"hover p50 {bl.fmt_seconds(bl.percentile([h['seconds'] for h in hovers], 50))}, "
            f"p95 {bl.fmt_seconds(bl.percentile([h['seconds'] for h in hovers], 95))}")

        # -- code lenses ---------------------------------------------------------------------
        async def lens_round(budget: int):
            lens_reqs, resolve_reqs, per_file = [], [], {}
            done, i = 0, 0
            while done < budget:
                f = files[i % len(files)]
                i += 1
                t = time.perf_counter()
                lenses = await asyncio.wait_for(client.text_document_code_lens_async(
                    types.CodeLensParams(types.TextDocumentIdentifier(f.uri))), REQUEST_TIMEOUT)
                lens_reqs.append({"path": f.path, "seconds": time.perf_counter() - t,
                                  "lenses": len(lenses or [])})
                per_file.setdefault(f.path, len(lenses or []))
                done += 1
                for lens in lenses or []:
                    if done >= budget:
                        break
                    t = time.perf_counter()
                    resolved = await asyncio.wait_for(client.code_lens_resolve_async(lens),
                                                      REQUEST_TIMEOUT)
                    resolve_reqs.append({"path": f.path, "line": lens.range.start.line + 1,
                                         "seconds": time.perf_counter() - t,
                                         "qualname": (lens.data or {}).get("qualname"),
                                         "title": resolved.command.title
                                         if resolved and resolved.command else None})
                    done += 1
            return lens_reqs, resolve_reqs, per_file

        await lens_round(args.warmup)
        lens_reqs, resolve_reqs, per_file = await lens_round(args.requests)
        out["rss_after_lenses_kib"] = proc_status(pid).get("VmRSS")
        out["hwm_at_end_kib"] = proc_status(pid).get("VmHWM")
        log(f"codeLens p50 {bl.fmt_seconds(bl.percentile([r['seconds'] for r in lens_reqs], 50))}"
            f", resolve p50 "
            f"{bl.fmt_seconds(bl.percentile([r['seconds'] for r in resolve_reqs] or [0], 50))}")
        # -- search --------------------------------------------------------------------------
        # Queries a user could type: subjects of sampled non-merge commits (the server's
        # `cortex/search`, hybrid when the index has vectors), after a few warm-up searches.
        subjects = search_queries(clone, args.searches + 5, random.Random(args.seed + 2))
        searches = []
        for n, query in enumerate(subjects):
            t = time.perf_counter()
            found = await asyncio.wait_for(client.protocol.send_request_async(
                "cortex/search", {"query": query, "uri": clone.as_uri()}), REQUEST_TIMEOUT)
            if n >= 5:
                searches.append({"query": query, "seconds": time.perf_counter() - t,
                                 "mode": _field(found, "mode"),
                                 "semantic": _field(found, "semantic")})
        out.update(files=files, warm=warm, measured=measured, hovers=hovers, floor=floor,
                   searches=searches,
                   floor_answers=floor_answers,
                   lens_requests=lens_reqs, resolve_requests=resolve_reqs,
                   lenses_per_file=per_file)
    finally:
        if sampler._thread.is_alive():
            sampler.stop()
        try:    # shutdown + exit; a server never initialized gets neither (pytest-lsp)
            await asyncio.wait_for(client.shutdown_session(), 30)
        except Exception as exc:  # noqa: BLE001 - report it, the server is killed below
            log(f"shutdown failed: {exc!r}")
        if client._server.returncode is None:
            client._server.kill()          # our own child: never left behind
        await client.stop()
    out["server_exit_code"] = client._server.returncode
    return out


# -- git blame and in-process ------------------------------------------------------------------


def _field(result, name: str):
    """A field of a custom request's result, whichever shape the client decoded it into."""
    return result.get(name) if isinstance(result, dict) else getattr(result, name, None)


def search_queries(clone: Path, n: int, rng: random.Random) -> list[str]:
    """`n` subjects of non-merge commits of the clone, sampled; at least three words each."""
    out = bl.run(["git", "-C", str(clone), "log", "--no-merges", "--format=%s"]).stdout
    subjects = [s for s in out.decode("utf-8", "replace").splitlines() if len(s.split()) >= 3]
    return rng.sample(subjects, min(n, len(subjects)))


def time_blame(clone: Path, hovers: list[dict], sample: int, rng: random.Random, log) -> dict:
    picked = sorted(rng.sample(range(len(hovers)), min(sample, len(hovers))))
    if not picked:
        return {"n": 0}
    first = hovers[picked[0]]
    bl.run(["git", "-C", str(clone), "blame", "-L", f"{first['line']},{first['line']}",
            "--porcelain", "--", first["path"]])          # warm-up: page cache, not counted
    rows = []
    for k, i in enumerate(picked, 1):
        h = hovers[i]
        r = bl.run(["git", "-C", str(clone), "blame", "-L", f"{h['line']},{h['line']}",
                    "--porcelain", "--", h["path"]])
        sha = r.stdout.split(b" ", 1)[0].decode()
        agrees = None
        if h["kind"] == "line":
            agrees = sha[:10] in (h["text"] or "")
        rows.append({"index": i, "path": h["path"], "line": h["line"], "where": h["where"],
                     "seconds": r.seconds, "hover_seconds": h["seconds"], "sha": sha,
                     "hover_kind": h["kind"], "line_hover_names_blame_commit": agrees})
        if k % 20 == 0:
            log(f"git blame {k}/{len(picked)}")
    return {"rows": rows}


def in_process(clone: Path, files: list[File], measured: list[Position], warm: list[Position],
               hovers: list[dict], resolve_requests: list[dict], log) -> dict:
    """The same hovers and lenses answered in this process: cortex_ls.queries on a reader."""
    from lsprotocol import types

    from cortex_ls import queries
    from cortex_ls.documents import Buffer
    from cortex_ls.repos import Repos
    from cortex_ls.settings import parse_settings

    settings, errors = parse_settings(SERVER_OPTIONS)
    assert not errors, errors
    repo = Repos().add_folder(clone)
    # One snapshot for the whole run (the server opens one per request: a read transaction).
    with repo.snapshot(settings) as snap:
        buffers = {f.path: Buffer(f.uri, clone / f.path, f.text, 1, "python") for f in files}

        def one(p: Position):
            buf = buffers[p.file.path]
            t = time.perf_counter()
            loc = queries.locate(repo, p.file.path, buf, types.Position(p.line, p.character),
                                 "utf-16", snap)
            t_loc = time.perf_counter()
            text = queries.hover(snap, loc, settings)
            return t_loc - t, time.perf_counter() - t_loc, text

        for p in warm:
            one(p)
        rows, same = [], 0
        for p, h in zip(measured, hovers):
            locate_s, hover_s, text = one(p)
            same += text == h["text"]
            rows.append({"locate": locate_s, "hover": hover_s, "total": locate_s + hover_s,
                         "kind": hover_kind(text), "where": p.where})
        lens_s = []
        for f in files:
            t = time.perf_counter()
            queries.lenses(snap, repo, f.path, buffers[f.path], settings)
            lens_s.append(time.perf_counter() - t)
        title_s = []
        for r in resolve_requests:
            t = time.perf_counter()
            queries.lens_title(snap, repo, r["path"], r["qualname"], settings)
            title_s.append(time.perf_counter() - t)
        log(f"in process: hover p50 {bl.fmt_seconds(bl.percentile([r['total'] for r in rows], 50))}")
        return {"rows": rows, "identical_texts": same, "lenses_seconds": lens_s,
                "lens_title_seconds": title_s}


    # -- main --------------------------------------------------------------------------------------


def main(argv=None) -> int:
    args = parse_args(argv)
    repo = args.repo.resolve()
    log = bl.progress
    env = bl.environment(repo)
    try:    # this benchmark measures cortex_ls too: its uncommitted edits, as for cortex_core/
        dirty = bl.run(["git", "-C", str(bl.PROJECT_DIR), "status", "--porcelain", "--",
                        "cortex_ls"]).stdout.decode().splitlines()
        env["cortex"]["cortex_ls_uncommitted"] = [line[3:] for line in dirty]
    except RuntimeError:
        pass
    head = env["repository"]["head"]
    work = bl.work_dir("lsp-", args.keep)
    server_env = dict(os.environ, CORTEX_MODEL=args.model or "none")
    report: dict = {"benchmark": "lsp", "environment": env, "config": bl.config(args)}
    try:
        clone = bl.private_clone(repo, work / repo.name, checkout=True)
        try:    # the same remote as REPO: the hovers link commits the same way
            bl.run(["git", "-C", str(clone), "remote", "set-url", "origin",
                    bl.git(repo, "remote", "get-url", "origin")])
        except RuntimeError:
            pass
        db = clone / ".cortex" / "cortex.db"
        setup = {"clone": str(clone), "db": str(db), "mode": "fresh" if args.fresh else "copy",
                 "model": server_env["CORTEX_MODEL"]}
        if not args.fresh:
            import apsw
            src = args.db.resolve()
            con = apsw.Connection(str(src), flags=apsw.SQLITE_OPEN_READONLY)
            indexed = con.execute("select value from meta where key = 'head'").fetchone()
            con.close()
            setup.update(db_source=str(src), db_source_head=indexed and indexed[0],
                         db_bytes=bl.db_size(src))
            if not indexed or indexed[0] != head:
                log(f"note: {src} indexes {indexed and indexed[0]}, not HEAD {head}: the "
                    "server's run indexes the difference")
            db.parent.mkdir(parents=True, exist_ok=True)
            bl.copy_db(src, db)
            log(f"copied {src} to {db}; settling it with the server's model setting ...")
            r = bl.run([*bl.cortex_command(), "index", "--repo", str(clone), "--db", str(db),
                        "--quiet", "--json"], env=server_env)
            s = json.loads(r.stdout)
            setup["settle_run"] = {
                "seconds": r.seconds, "new_commits": s.get("new_commits"),
                "semantic": s.get("semantic"), "areas": s.get("areas"),
                "items_without_vector": s.get("items_without_vector")}
            log(f"settle run: {bl.fmt_seconds(r.seconds)} ({s.get('semantic')}, areas "
                f"{s.get('areas')})")
        report["setup"] = setup

        run = asyncio.run(drive_server(args, clone, db, server_env, log, report))
        setup["db_bytes_after"] = bl.db_size(db)

        log(f"git blame -L n,n on {args.blame_sample} of the positions ...")
        blame = time_blame(clone, run["hovers"], args.blame_sample,
                           random.Random(args.seed + 1), log)
        inproc = None
        if not args.no_inproc:
            inproc = in_process(clone, run["files"], run["measured"], run["warm"], run["hovers"],
                                run["resolve_requests"], log)
        summarize(report, run, blame, inproc)
    finally:
        if not args.keep:
            bl.remove(work)
    bl.emit(report, args.json, render)
    return 0


if __name__ == "__main__":
    sys.exit(main())
