"""The structure pass: definitions, references, imports and inheritance of every file at HEAD,
with the working tree's modified files read from disk instead, resolved to their targets.

Incremental: a file is read again only when the version to read (HEAD's blob, or the hash of the
modified file on disk) differs from the one last read; its definitions and references are
replaced, the rest kept. Resolution then runs again for the changed files' references and for
every reference elsewhere that names a definition the changed files added or removed (and for all
imports, which are cheap), so that a new function resolves the calls that were waiting for it.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
from dataclasses import dataclass
from typing import Callable

from cortex_core.git.git_reads import head_commit, path_blob, read_blob
from cortex_core.lang.languages import language_for_path
from cortex_core.index.resolve import RefRow, Resolver
from cortex_core.index.skip_rules import skip_by_content, skip_by_path

Progress = Callable[[int, int, str], None]
RESOLVE_ALL_AT = 300     # this many changed files or more: resolve everything again

TEST_PATHS = ("test_*.py", "*_test.py", "tests.py", "conftest.py", "*_test.go", "*.test.js",
              "*.test.jsx", "*.test.ts", "*.test.tsx", "*.spec.js", "*.spec.ts", "*.spec.tsx",
              "*.spec.jsx", "*Test.java", "*Tests.java", "*IT.java")
TEST_DIRS = ("test/", "tests/", "__tests__/", "spec/", "testing/")
_TEST_FUNC = re.compile(r"^(test|Test|it_|should)")


@dataclass(frozen=True)
class StructureCounts:
    files_read: int
    files_removed: int
    refs_resolved: int


def is_test_path(path: str) -> bool:
    name = posixpath.basename(path)
    if any(fnmatch.fnmatchcase(name, p) for p in TEST_PATHS):
        return True
    padded = "/" + path
    return any("/" + d in padded for d in TEST_DIRS)


def update_structure(con, repo, settings, progress: Progress | None = None) -> StructureCounts:
    """Bring the structure tables up to date with HEAD and the working tree."""
    from cortex_core.lang.structure_extract import SUPPORTED, extract_structure
    from cortex_core.lang.symbols import SymbolParser

    wanted = _wanted(con, repo, settings, SUPPORTED)
    current = {fid: (blob, wt) for fid, blob, wt in con.execute(
        "select file_id, blob, worktree from struct_files")}
    removed = [fid for fid in current if fid not in wanted]
    changed = [fid for fid, w in wanted.items() if current.get(fid) != (w[1], w[2])]
    names_touched: set[str] = set()
    parser = SymbolParser(cache_size=64, tree_cache_size=8)
    with con:
        for fid in removed:
            names_touched |= _forget(con, fid)
            con.execute("delete from struct_files where file_id = ?", (fid,))
        _record_go_module(con, repo)
    for n, fid in enumerate(changed, 1):
        path, blob, worktree, language, data, reason = wanted[fid]
        with con:   # one file per transaction: an interrupted pass keeps what it finished
            names_touched |= _forget(con, fid)
            if data is None:
                data = read_blob(repo, blob)
                if data is None:
                    reason = "missing object"
            if reason is None:
                reason = skip_by_content(data, settings)
            test_file = is_test_path(path)
            errors = 0
            if reason is None:
                names, errors = _store_file(con, fid, language, blob, data, test_file, parser,
                                            extract_structure)
                names_touched |= names
            con.execute("insert or replace into struct_files(file_id, blob, language, worktree,"
                        " is_test, error_nodes, skip_reason) values (?,?,?,?,?,?,?)",
                        (fid, blob, language, worktree, int(test_file), errors, reason))
        if progress and (n % 200 == 0 or n == len(changed)):
            progress(n, len(changed), "files read for structure")
    resolved = 0
    pending = con.execute("select 1 from meta where key = 'structure_resolve_pending'").fetchone()
    if changed or removed or pending:   # nothing read and nothing left over: nothing to resolve
        with con:   # a resolution that dies half-way is redone in full by the next run
            con.execute("insert or replace into meta(key, value) values"
                        " ('structure_resolve_pending', '1')")
        resolved = resolve_refs(con, changed, names_touched, everything=bool(pending) or
                                len(changed) + len(removed) >= RESOLVE_ALL_AT)
    return StructureCounts(len(changed), len(removed), resolved)


def _wanted(con, repo, settings, supported) -> dict:
    """file id -> (path, blob, worktree, language, data or None, skip reason or None)."""
    out: dict[int, tuple] = {}
    for fid, path, blob, reason in con.execute(
            "select f.id, f.path, h.blob, h.skip_reason from head_files h join files f"
            " on f.id = h.file_id"):
        language = language_for_path(path)
        if language in supported:
            out[fid] = (path, blob, 0, language, None, reason or skip_by_path(path, settings))
    for path, data, reason in _modified_files(repo, settings):
        row = con.execute("select id from files where path = ?", (path,)).fetchone()
        language = language_for_path(path)
        if row is None or language not in supported:
            continue
        if data is None and reason is None:   # deleted in the working tree: nothing to read
            out.pop(row[0], None)
            continue
        import pygit2
        digest = str(pygit2.hash(data)) if data is not None else "worktree:" + reason
        out[row[0]] = (path, digest, 1, language, data if data is not None else b"",
                       reason or skip_by_path(path, settings))
    return out


def _modified_files(repo, settings):
    """(path, content or None, skip reason or None) of tracked files changed in the working tree.
    Deleted files come as (path, None, None). Only regular files are read, never through a link
    (a link to a FIFO or to /dev/zero would block or never end), and never more than the limit."""
    import stat as stat_module

    import pygit2
    from pygit2.enums import FileStatus
    try:
        status = repo.status(untracked_files="no", ignored=False)
    except pygit2.GitError:
        return
    workdir = repo.workdir
    for raw, flags in status.items():
        path = os.fsencode(raw).decode("utf-8", "replace")
        if flags & FileStatus.WT_DELETED:
            yield path, None, None
            continue
        if not flags & (FileStatus.WT_MODIFIED | FileStatus.INDEX_MODIFIED
                        | FileStatus.WT_TYPECHANGE | FileStatus.INDEX_TYPECHANGE):
            continue
        full = os.path.join(workdir, raw)
        try:
            info = os.lstat(full)
            if not stat_module.S_ISREG(info.st_mode):
                yield path, None, "not a regular file"
                continue
            if info.st_size > settings.max_file_bytes:
                yield path, None, "too large"
                continue
            with open(full, "rb") as handle:
                data = handle.read(settings.max_file_bytes + 1)
        except OSError:
            continue
        if len(data) > settings.max_file_bytes:
            yield path, None, "too large"
            continue
        yield path, data, None


def _record_go_module(con, repo) -> None:
    """The module path of go.mod at the root, for resolving Go imports to directories."""
    data = path_blob(repo, head_commit(repo), "go.mod")
    if data is None:   # no go.mod, or unreadable
        return
    text = data.decode("utf-8", "replace")
    match = re.search(r"^module\s+(\S+)", text, re.M)
    if match:
        con.execute("insert or replace into meta(key, value) values ('go_module', ?)",
                    (match.group(1).strip('"'),))


def _forget(con, fid: int) -> set[str]:
    names = {r[0] for r in con.execute("select name from defs where file_id = ?", (fid,))}
    con.execute("delete from edges where ref_id in (select id from refs where file_id = ?)", (fid,))
    con.execute("delete from refs where file_id = ?", (fid,))
    con.execute("delete from defs where file_id = ?", (fid,))
    return names


def _store_file(con, fid, language, blob, data, test_file, parser,
                extract) -> tuple[set[str], int]:
    """Definitions and references of one file version: (the definitions' names, syntax errors)."""
    symbols = parser.symbols(language, blob, data) if language else []
    con.executemany(
        "insert or ignore into defs(file_id, qualname, name, kind, start_line, end_line, is_test)"
        " values (?,?,?,?,?,?,?)",
        ((fid, s.structural_name, s.name, s.kind, s.start_line, s.end_line,
          int(test_file and bool(_TEST_FUNC.match(s.name)))) for s in symbols))
    found = extract(language, data)
    if found is None:
        return {s.name for s in symbols}, 0
    spans = sorted(((s.start_byte, s.end_byte, s.structural_name) for s in symbols),
                   key=lambda t: (t[0], -t[1]))
    rows: list[tuple] = []
    for imp in found.imports:
        rows.append((fid, None, "import", imp.name if not imp.wildcard else "*",
                     None, imp.module, imp.level, imp.alias, None, imp.line))
    scopes = _scopes(spans, [ref.byte for ref in found.refs])
    for ref, scope in zip(found.refs, scopes):
        rows.append((fid, scope, ref.kind, ref.name, ref.qualifier, None, 0,
                     None, ref.owner, ref.line))
    con.executemany("insert into refs(file_id, scope, kind, name, qualifier, module, level, alias,"
                    " owner, line) values (?,?,?,?,?,?,?,?,?,?)", rows)
    return {s.name for s in symbols}, found.error_nodes


def _scopes(spans: list[tuple[int, int, str]], positions: list[int]) -> list[str | None]:
    """The innermost definition containing each position: one sweep over spans sorted by start
    (outer first) and positions sorted, with a stack of the spans still open."""
    out: list[str | None] = [None] * len(positions)
    stack: list[tuple[int, str]] = []   # (end, qualname), innermost last
    i = 0
    for index in sorted(range(len(positions)), key=positions.__getitem__):
        byte = positions[index]
        while i < len(spans) and spans[i][0] <= byte:
            start, end, qualname = spans[i]
            while stack and stack[-1][0] <= start:
                stack.pop()
            stack.append((end, qualname))
            i += 1
        while stack and stack[-1][0] <= byte:
            stack.pop()
        out[index] = stack[-1][1] if stack else None
    return out


def resolve_refs(con, changed: list[int], names: set[str], everything: bool = False) -> int:
    """Resolve again the references that the change can affect; returns how many."""
    if everything:
        ids = [r[0] for r in con.execute("select id from refs")]
    else:
        found: set[int] = set()
        for fid in changed:
            found.update(r[0] for r in con.execute("select id from refs where file_id = ?", (fid,)))
        for name in names:
            found.update(r[0] for r in con.execute("select id from refs where name = ?", (name,)))
        found.update(r[0] for r in con.execute("select id from refs where kind = 'import'"))
        ids = sorted(found)
    resolver = Resolver(con)
    with con:
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            marks = ",".join("?" * len(chunk))
            rows = con.execute(
                "select id, file_id, scope, kind, name, qualifier, module, level, alias, owner"
                f" from refs where id in ({marks})", chunk).fetchall()
            con.execute(f"delete from edges where ref_id in ({marks})", chunk)
            for row in rows:
                ref = RefRow(*row)
                status, targets = resolver.resolve(ref)
                con.execute("update refs set status = ? where id = ?", (status, ref.id))
                con.executemany("insert into edges(ref_id, dst_file_id, dst_qualname, confidence)"
                                " values (?,?,?,?)", ((ref.id, f, q, c) for f, q, c in targets))
        con.execute("delete from meta where key = 'structure_resolve_pending'")
    return len(ids)
