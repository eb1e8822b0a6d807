"""The structure pass: definitions, references, imports and inheritance of every file at HEAD,
with the working tree's modified files read from disk instead, resolved to their targets.

Incremental: a file is read again only when the version to read (HEAD's blob, or the hash of the
modified file on disk) differs from the one last read; its definitions are replaced, and its
references too, but for those whose fields are unchanged, which keep their rows and answers
(_write_refs), the rest of the files kept. Resolution then runs again for the changed files' new
references and those of their kept ones that their own change can move, and for every reference
anywhere that names a definition or an import the change added or removed (and for every import
when the set of files changed), so that a new function resolves the calls that were waiting for
it (resolve_refs).
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import time
import zlib
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable, Sequence

from cortex_core.git.git_reads import head_commit, path_blob, path_text, read_blob
from cortex_core.lang import go_build
from cortex_core.lang.languages import language_for_path
from cortex_core.lang.test_paths import is_test_path
from cortex_core.index.resolve import RESOLVER_VERSION, RefRow, Resolver, Target, local_name
from cortex_core.index.skip_rules import skip_by_content, skip_by_path
from cortex_core.store.store import get_meta, set_meta, turn_wanted

if TYPE_CHECKING:
    from cortex_core.lang.symbols import SymbolParser

Progress = Callable[[int, int, str], None]
BATCH_SECONDS = 1.0     # a transaction of the files read commits at least this often
RESOLVE_ALL_AT = 300     # this many changed files or more: resolve everything again

_TEST_FUNC = re.compile(r"^(test|Test|it_|should)")


@dataclass(frozen=True)
class StructureCounts:
    files_read: int
    files_removed: int
    refs_resolved: int


def update_structure(con, repo, settings, progress: Progress | None = None,
                     known: SymbolParser | None = None) -> StructureCounts:
    """Bring the structure tables up to date with HEAD and the working tree. `known`: a parser
    whose cached symbols may be taken (the commit reader's, which has just read the new
    versions of the files changed since the last run)."""
    from cortex_core.lang.structure_extract import EXTRACT_VERSION, SUPPORTED, extract_structure
    from cortex_core.lang.symbols import SymbolParser

    wanted = _wanted(con, repo, settings, SUPPORTED)
    current = {fid: (blob, wt, skipped) for fid, blob, wt, skipped in con.execute(
        "select file_id, blob, worktree, skip_reason is not null from struct_files")}
    removed = [fid for fid in current if fid not in wanted]
    # References an earlier extractor read are not what this one reads: every file again, once.
    stale_extract = bool(current) and get_meta(con, "extract_version") != EXTRACT_VERSION
    changed = [fid for fid, w in wanted.items()
               if stale_extract or current.get(fid, ())[:2] != (w[1], w[2])]
    # The files that appeared, went or became (un)readable: a module may now be another file
    # for the imports that name it (resolve_refs). Otherwise an import elsewhere can only resolve
    # differently through a name the changed files define or bind.
    moved_paths = [path for (path,) in con.execute(
        "select path from files where id in (select value from json_each(?))",
        (json.dumps(removed),))]
    names_touched: set[str] = set()
    imports_touched: set[str] = set()
    wildcards: set[_Wildcard] = set()   # (file, module, level, scope) of `import *`
    bases_changed = False   # then everything is resolved again: subclasses anywhere
    classes: set[str] = set()   # classes with bases that appeared or went whole (_whole_classes)
    answers: dict[tuple, set] = {}   # what the changed files' base rows resolved to before
    parser = SymbolParser(cache_size=64, tree_cache_size=8)
    builds = _go_builds(con)
    fresh: set[int] = set()   # the changed files' references written anew: no answer yet
    stale: set[int] = set()   # those kept, but whose answer their own file's change may move
    previous: dict[int, _Answer] = {}   # imports written anew -> their answer before
    with con:
        for fid in removed:
            shape = _shape(con, fid)
            names_touched |= _changes(fid, shape, _EMPTY)[0]
            went = _whole_classes(shape, _EMPTY)
            bases_changed = bases_changed or went is None
            classes |= went or set()
            _forget(con, fid)
            _set_go_build(con, builds, fid, None)
            con.execute("delete from struct_files where file_id = ?", (fid,))
        go_moved = _record_go_module(con, repo)
        crates_moved = _record_rust_crates(con, repo)
        if go_moved or crates_moved:   # Go imports or Rust paths everywhere may move: all again,
            # and in this transaction, so that a run dying before it resolves leaves that to do
            con.execute("insert or replace into meta(key, value) values"
                        " ('structure_resolve_pending', '1')")
    # One transaction of the files read every BATCH_SECONDS or so: one per file cost a tenth of
    # a full pass in commits (sympy's 1,600 files: 5 s), and an interrupted pass still keeps
    # what it finished but its last second.
    batch = _Batch(con)
    with batch:
        for n, fid in enumerate(changed, 1):
            path, blob, worktree, language, data, reason = wanted[fid]
            reason = reason or skip_by_path(path, settings)
            with con:   # a savepoint per file
                before = _shape(con, fid)
                answers.update(_base_answers(con, [fid]))
                # An extractor that reads otherwise than the last: nothing of its reading is kept.
                _forget(con, fid, refs=stale_extract)
                if data is None:
                    data = read_blob(repo, blob)
                    if data is None:
                        reason = "missing object"
                if reason is None:
                    reason = skip_by_content(data, settings)
                all_tests = _rust_tests_module(language, path)
                test_file = is_test_path(path) or all_tests
                errors, rewrite = 0, _Rewrite()
                if reason is None:
                    errors, rewrite = _store_file(con, fid, language, blob, data, test_file, parser,
                                                  extract_structure, all_tests, known)
                else:
                    _forget_refs(con, fid)
                after = _shape(con, fid)
                defined, imported, starred = _changes(fid, before, after)
                # Imports only reordered are the same set (_changes sees none), but what the file
                # binds by a name, and re-exports to other files, may now be another import's.
                imported |= rewrite.moved
                if rewrite.wild_moved:
                    starred |= {(fid, module, level or 0, scope)
                                for name, _alias, module, level, scope in after[1] if name == "*"}
                build = go_build.constraint(path, data) if (
                    language == "go" and reason is None and data is not None) else None
                if _set_go_build(con, builds, fid, build):
                    # Calls elsewhere may reach its definitions now, or no longer; its own calls
                    # may reach others (a build's files see each other).
                    defined |= {name for _, name, _ in before[0] | after[0]}
                    rewrite.all_moved = True
                fresh.update(rewrite.fresh)
                stale.update(rewrite.stale(defined | imported))
                previous.update(rewrite.previous)
                # A class's bases changed, or one resolves through a name that changed here (its
                # file's base rows may be new rows: _resolve cannot see those move). A class that
                # appeared or went whole is no subclass's yet, or no more: _whole_classes.
                kept = before[2] & after[2]
                bases = {n for _, name, q, _ in kept for n in (name, (q or "").split(".")[0]) if n}
                whole = _whole_classes(before, after)
                bases_changed = bases_changed or whole is None or bool(
                    bases & (defined | imported)) or bool(kept and starred)
                classes |= whole or set()
                names_touched |= defined
                imports_touched |= imported
                wildcards |= starred
                con.execute("insert or replace into struct_files(file_id, blob, language, worktree,"
                            " is_test, error_nodes, skip_reason) values (?,?,?,?,?,?,?)",
                            (fid, blob, language, worktree, int(test_file), errors, reason))
                if fid not in current or current[fid][2] != (reason is not None):
                    moved_paths.append(path)
            if progress and (n % 200 == 0 or n == len(changed)):
                progress(n, len(changed), "files read for structure")
            batch.tick()
    resolved = 0
    pending = con.execute("select 1 from meta where key = 'structure_resolve_pending'").fetchone()
    # Answers an earlier resolver gave are not what this one would give: all again, once. The
    # mark names the files it resolved, so that an earlier version's update since is seen too.
    pending = pending or bool(current) and get_meta(con, "resolver_version") != _resolver_mark(
        current)
    ran = bool(changed or removed or pending)
    if ran:   # nothing read and nothing left over: nothing to resolve
        with con:   # a resolution that dies half-way is redone in full by the next run
            con.execute("insert or replace into meta(key, value) values"
                        " ('structure_resolve_pending', '1')")
        everything = bool(pending) or bases_changed or \
            len(changed) + len(removed) >= RESOLVE_ALL_AT
        resolved = resolve_refs(con, changed, names_touched, everything=everything,
                                moved_paths=moved_paths, imported=imports_touched,
                                wildcards=wildcards, classes=classes, fresh=fresh, stale=stale,
                                previous=previous)
        # A changed file's base row that stayed may resolve to another class through another
        # file's change (a re-export moved in the same commit): its answers are new rows, so
        # _resolve cannot see them move. Compared here; then subclasses anywhere may inherit
        # other methods, and everything is resolved again.
        if not everything and _base_answers(con, changed, answers) != answers:
            with con:   # the first resolution took the mark away: a run dying now needs it
                con.execute("insert or replace into meta(key, value) values"
                            " ('structure_resolve_pending', '1')")
            resolved = resolve_refs(con, [], set(), everything=True)
    if ran or not current:   # every answer is this resolver's, for these files
        with con:
            _set_resolver_version(con)
            set_meta(con, "extract_version", EXTRACT_VERSION)
    return StructureCounts(len(changed), len(removed), resolved)


class _Batch:
    """A transaction that commits, and begins again, at the first tick after BATCH_SECONDS.
    A commit that fails (a full disk shows there, in WAL mode) or an interrupt between the
    commit and the next begin leaves none open: its error is the one raised, not the failed
    rollback of a transaction that is gone."""

    def __init__(self, con):
        self._con = con
        self._since = 0.0
        self._open = False

    def __enter__(self) -> "_Batch":
        self._con.__enter__()
        self._open = True
        self._since = time.monotonic()
        return self

    def tick(self) -> None:
        if time.monotonic() - self._since >= BATCH_SECONDS or turn_wanted(self._con):
            self._open = False   # committed or rolled back, whatever the commit raises
            self._con.__exit__(None, None, None)
            self.__enter__()

    def __exit__(self, *exc) -> bool | None:
        if not self._open:
            return None
        self._open = False
        return self._con.__exit__(*exc)


def _wanted(con, repo, settings, supported) -> dict:
    """file id -> (path, blob, worktree, language, data or None, skip reason or None). The
    reason a HEAD file's path gives is left to the caller, for the files it reads (every path
    matched against the skip patterns was a tenth of an update of sympy's 1,600 files)."""
    out: dict[int, tuple] = {}
    for fid, path, blob, reason in con.execute(
            "select f.id, f.path, h.blob, h.skip_reason from head_files h join files f"
            " on f.id = h.file_id"):
        language = language_for_path(path)
        if language in supported:
            out[fid] = (path, blob, 0, language, None, reason)
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
    # A sparse checkout's files left out of the working tree are not deleted: read from HEAD.
    sparse: frozenset[str] = frozenset()
    if any(flags & FileStatus.WT_DELETED for flags in status.values()):
        from cortex_core.git.workspace import skip_worktree_paths
        sparse = skip_worktree_paths(workdir)
    for raw, flags in status.items():
        path = path_text(os.fsencode(raw))
        if flags & FileStatus.WT_DELETED:
            if raw not in sparse:
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


def _go_builds(con) -> dict[str, str]:
    """Each Go file's build constraint (lang/go_build.py), by file id, for the files that
    have one (meta `go_build:<file id>`, a row each: a first run over a repository of
    thousands of platform files writes each once)."""
    return dict(con.execute("select substr(key, 10), value from meta where key like"
                            " 'go\\_build:%' escape '\\'"))


def _set_go_build(con, builds: dict[str, str], fid: int, build: str | None) -> bool:
    """Record a file's build constraint (None: built everywhere); whether it changed."""
    if builds.get(str(fid)) == build:
        return False
    if build is None:
        del builds[str(fid)]
        con.execute("delete from meta where key = ?", (f"go_build:{fid}",))
    else:
        builds[str(fid)] = build
        set_meta(con, f"go_build:{fid}", build)
    return True


def _record_go_module(con, repo) -> bool:
    """The module path of go.mod at the root, for resolving Go imports to directories; whether
    it changed (then any Go import may now name another directory, or none). An unreadable
    go.mod (a partial clone offline) keeps the last one read."""
    import pygit2
    head = head_commit(repo)
    data = path_blob(repo, head, "go.mod")
    module = None
    if data is not None:
        match = re.search(r"^module\s+(\S+)", data.decode("utf-8", "replace"), re.M)
        module = match.group(1).strip('"') if match else None
    else:
        try:
            if head is None or head.tree["go.mod"] is not None:
                return False   # unborn, or there but unreadable
        except KeyError:
            pass               # gone: Go imports resolve by directory alone
        except (ValueError, pygit2.GitError):
            return False
    if module == get_meta(con, "go_module"):
        return False
    if module is None:
        con.execute("delete from meta where key = 'go_module'")
    else:
        set_meta(con, "go_module", module)
    return True


_MANIFEST_BYTES = 1 << 20   # a larger Cargo.toml is not read: untrusted input


def _record_rust_crates(con, repo) -> bool:
    """The Rust packages of HEAD's Cargo.toml files, for `use <crate>::…` of a crate of the
    repository: package folder -> [crate name, library root] (meta `rust_crates`); whether
    they changed (then any Rust path may name another file). The manifests are read again only
    when one of them changed; one that cannot be read (a partial clone offline) keeps the last
    answer, as go.mod does."""
    manifests = [(path, blob) for path, blob in con.execute(
        "select f.path, h.blob from head_files h join files f on f.id = h.file_id"
        " where f.path like '%Cargo.toml' order by f.path")
        if posixpath.basename(path) == "Cargo.toml"]
    key = f"{zlib.crc32(json.dumps(manifests).encode()):08x}"
    if key == get_meta(con, "rust_manifests"):
        return False
    crates: dict[str, list[str]] = {}
    for path, blob in manifests:
        data = read_blob(repo, blob)
        if data is None:
            return False
        crate = _cargo_crate(data)
        if crate is not None:
            crates[posixpath.dirname(path)] = crate
    set_meta(con, "rust_manifests", key)
    value = json.dumps(crates, sort_keys=True)
    if value == (get_meta(con, "rust_crates") or "{}"):
        return False
    set_meta(con, "rust_crates", value)
    return True


def _cargo_crate(data: bytes) -> list[str] | None:
    """[crate name, library root in the package's folder] of a Cargo.toml: `[lib] name`, else
    the package's name with `-` as `_`; `[lib] path`, else src/lib.rs. None for a manifest
    without a package (a workspace's root) or one that does not parse."""
    if len(data) > _MANIFEST_BYTES:
        return None
    import tomllib   # here: only a Rust repository's manifests need it (6 ms of every start)
    try:
        manifest = tomllib.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):   # not TOML, not UTF-8, or nested past the stack
        return None
    package, lib = manifest.get("package"), manifest.get("lib")
    if not isinstance(package, dict):
        return None
    lib = lib if isinstance(lib, dict) else {}
    name = lib.get("name") if isinstance(lib.get("name"), str) else package.get("name")
    path = lib.get("path") if isinstance(lib.get("path"), str) else "src/lib.rs"
    path = posixpath.normpath(path.replace("\\", "/"))
    if not isinstance(name, str) or not name or path.startswith(("/", "../")) or path == "..":
        return None
    return [name.replace("-", "_"), path]


_Shape = tuple[frozenset, frozenset, frozenset]   # a file's definitions, imports, bases
_Wildcard = tuple[int, "str | None", int, "str | None"]   # `import *`: file, module, level, scope
_EMPTY: _Shape = (frozenset(), frozenset(), frozenset())


def _shape(con, fid: int) -> _Shape:
    """What other files' references can resolve through in this file: its definitions (name,
    kind), its imports (re-exports) and its classes' bases; not its calls, nor line numbers."""
    return (frozenset(con.execute("select qualname, name, kind from defs where file_id = ?",
                                  (fid,))),
            frozenset(con.execute("select name, alias, module, level, scope from refs where"
                                  " file_id = ? and kind = 'import'", (fid,))),
            frozenset(con.execute("select scope, name, qualifier, owner from refs where"
                                  " file_id = ? and kind = 'inherits'", (fid,))))


def _base_answers(con, fids: list[int], only: dict | None = None) -> dict[tuple, set]:
    """The answers of these files' base rows: (file, scope, name, qualifier, owner) -> the
    (file, qualname, confidence) they resolve to; with `only`, for its keys alone."""
    out: dict[tuple, set] = {}
    for fid in fids:
        for row in con.execute(
                "select r.file_id, r.scope, r.name, r.qualifier, r.owner, e.dst_file_id,"
                " e.dst_qualname, e.confidence from refs r left join edges e on e.ref_id = r.id"
                " where r.file_id = ? and r.kind = 'inherits'", (fid,)):
            key = row[:5]
            if only is not None and key not in only:
                continue
            answer = out.setdefault(key, set())
            if row[5] is not None:
                answer.add((row[5], row[6], round(row[7], 6)))
    if only is not None:   # a row gone: no answer (and _whole_classes judged it)
        out.update({key: only[key] for key in only.keys() - out.keys()})
    return out


def _whole_classes(before: _Shape, after: _Shape) -> set[str] | None:
    """The names of the classes whose bases changed because the class itself appeared or went
    (a test class added, a file of subclasses removed); None when a class that stays changed
    its bases, which resolves everything again.

    What resolved through such a class is named by it or by its members, which are all
    definitions that appeared or went (_changes): a reference named so, a subclass's base (whose
    answer then moves, and everything is resolved again), an import of it (what it binds is
    then resolved again), and a call on a value of the class, whose qualifier names it
    (resolve_refs, `classes`). A change of one class's bases, by contrast, moves what its
    subclasses inherit under names nothing else says.

    A base row counts for every class of its file whose qualname is its scope or whose last
    part is its owner (Resolver.bases): `Outer.Kid(Other)` gives the top-level `Kid` of its
    file that base too. So a class went whole only if no such class is left on the other side
    (removing `Outer.Kid` changes the bases of a `Kid` that stays)."""
    names: set[str] = set()
    for scope, _name, _qualifier, owner in before[2] ^ after[2]:
        had = {name for qualname, name, _ in before[0] if _reads(qualname, scope, owner)}
        has = {name for qualname, name, _ in after[0] if _reads(qualname, scope, owner)}
        if bool(had) == bool(has):   # it stays (or is no definition at all): its bases moved
            return None
        names |= had | has
    return names


def _reads(qualname: str, scope: str | None, owner: str | None) -> bool:
    """Whether Resolver.bases of the class `qualname` reads a base row of this scope and owner
    (`scope = ? or owner = ?`, with the class's last part)."""
    return qualname == scope or (owner is not None and qualname.rsplit(".", 1)[-1] == owner)


def _changes(fid: int, before: _Shape, after: _Shape
             ) -> tuple[set[str], set[str], set[_Wildcard]]:
    """From a file's shape before and after: the names of the definitions that appeared, went
    or changed kind, and what the imports that changed bind or ask for (_import_names). A
    change inside function bodies changes none of them, and resolves again only the file's own
    references. (A change of a class's bases is seen by the caller: a method call in another
    file's subclass may now find another method, by a name the file need not define.)"""
    bound, starred = _import_names(fid, before[1] ^ after[1])
    return {name for _, name, _ in before[0] ^ after[0]}, bound, starred


def _forget(con, fid: int, refs: bool = True) -> None:
    """Drop a file's structure; without `refs`, its definitions only (its references are then
    rewritten by _write_refs)."""
    if refs:
        _forget_refs(con, fid)
    con.execute("delete from defs where file_id = ?", (fid,))


def _forget_refs(con, fid: int) -> None:
    con.execute("delete from edges where ref_id in (select id from refs where file_id = ?)", (fid,))
    con.execute("delete from refs where file_id = ?", (fid,))


# A reference's fields but its id and line: all its answer depends on in its file (_resolve's
# memo). Imports and bases are read in their file's order (Resolver.binding, Resolver.bases).
_KEY = ("scope", "kind", "name", "qualifier", "module", "level", "alias", "owner")
_ORDERED = ("import", "inherits")
_Answer = tuple[str, frozenset]   # a reference's status and (file, qualname, confidence)s


@dataclass
class _Rewrite:
    """How a changed file's references were written (_write_refs): the rows inserted, which
    have no answer yet, and those kept from the version before with their answers."""
    fresh: list[int] = field(default_factory=list)
    kept: dict[int, tuple] = field(default_factory=dict)   # id -> fields (_KEY)
    moved: set[str] = field(default_factory=set)   # names whose binding imports changed order
    all_moved: bool = False   # imports with a wildcard, or bases, changed order
    wild_moved: bool = False   # imports with a wildcard changed order
    # Imports written anew (their sequence changed) -> the answer of the row of the same fields
    # before: resolved again, one whose answer moved moves what it binds (_resolve).
    previous: dict[int, _Answer] = field(default_factory=dict)

    def stale(self, blocked: set[str]) -> list[int]:
        """The kept references whose answer the file's own change may move: those read by a
        name of `blocked` (the file's definitions that appeared, went or changed kind, and
        what its imports that appeared or went bind or ask for: _changes) or of `moved`.
        What else moves an answer moves those of unchanged files alike: resolve_refs finds
        them all the same way."""
        if self.all_moved:
            return list(self.kept)
        names = blocked | self.moved
        return [ref_id for ref_id, key in self.kept.items()
                if not names.isdisjoint(_names_read(key))]


def _names_read(key: tuple) -> set[str]:
    """The names a reference of these fields (_KEY) is looked up by: its name, its alias and
    the name it binds, its owner, every part of its qualifier (`Outer.Inner.m()` reads the
    class `Inner` of `Outer`) and of its scope (a class around it that became a function no
    longer has its members), and the first part of its module."""
    scope, _kind, name, qualifier, module, _level, alias, owner = key
    out = {n for n in (name, alias, local_name(name, alias, module), owner, qualifier) if n}
    for dotted in (qualifier, scope):
        if dotted:
            out.update(_PARTS.split(dotted))
    if module:
        out.add(_PARTS.split(module, maxsplit=1)[0])
    return out


_PARTS = re.compile(r"\.|::|/")


def _write_refs(con, fid: int, rows: list[tuple], java: bool) -> _Rewrite:
    """Write a file's references (`rows`: file, the fields of _KEY, line), keeping the rows it
    had with the same fields, their answers with them: most references of a changed file are
    unchanged, and writing and resolving them all again was most of an update of a large file.
    Imports and bases are kept only as a whole, when their sequence is the same (their order
    is read); otherwise they are written anew in the file's order."""
    out = _Rewrite()
    old = con.execute(f"select id, {', '.join(_KEY)}, line from refs where file_id = ?"
                      " order by id", (fid,)).fetchall()
    gone: list[int] = []
    lines: list[tuple[int, int]] = []
    insert: list[tuple] = []
    earlier: dict[tuple, _Answer] = {}
    for kind in _ORDERED:
        had = [r for r in old if r[2] == kind]
        has = [r for r in rows if r[2] == kind]
        if [r[1:9] for r in had] == [r[1:9] for r in has]:
            for o, n in zip(had, has):
                out.kept[o[0]] = o[1:9]
                if o[9] != n[9]:
                    lines.append((n[9], o[0]))
            continue
        gone += [r[0] for r in had]
        insert += has
        if kind == "inherits":
            out.all_moved = True   # what `self.method()` finds in its class may move
        elif kind == "import":
            out.moved, out.wild_moved = _rebound(had, has, java)
            out.all_moved = out.all_moved or out.wild_moved
            earlier = _answers(con, had)
    # The rest, matched by their fields: on the same line first, then anywhere (a file of
    # thousands of one call in one scope costs no more than any other).
    exact: dict[tuple, list[int]] = {}
    for r in old:
        if r[2] not in _ORDERED:
            exact.setdefault((*r[1:9], r[9]), []).append(r[0])
    unmatched: list[tuple] = []
    for n in rows:
        if n[2] in _ORDERED:
            continue
        there = exact.get(n[1:10])
        if there:
            out.kept[there.pop()] = n[1:9]
        else:
            unmatched.append(n)
    anywhere: dict[tuple, list[int]] = {}
    for (*key, _line), ids in exact.items():
        anywhere.setdefault(tuple(key), []).extend(ids)
    for n in unmatched:
        there = anywhere.get(n[1:9])
        if there:
            ref_id = there.pop()
            out.kept[ref_id] = n[1:9]
            lines.append((n[9], ref_id))
        else:
            insert.append(n)
    gone += [ref_id for ids in anywhere.values() for ref_id in ids]
    con.executemany("delete from edges where ref_id = ?", ((i,) for i in gone))
    con.executemany("delete from refs where id = ?", ((i,) for i in gone))
    con.executemany("update refs set line = ? where id = ?", lines)
    newest = con.execute("select coalesce(max(id), 0) from refs").get
    con.executemany("insert into refs(file_id, scope, kind, name, qualifier, module, level, alias,"
                    " owner, line) values (?,?,?,?,?,?,?,?,?,?)", insert)
    # New rows take ids above every row there is (rowids), in the order given.
    written = con.execute(f"select id, {', '.join(_KEY)} from refs where file_id = ? and id > ?"
                          " order by id", (fid, newest)).fetchall()
    out.fresh = [r[0] for r in written]
    out.previous = {r[0]: earlier[r[1:]] for r in written if r[1:] in earlier}
    return out


def _answers(con, rows: list[tuple]) -> dict[tuple, _Answer]:
    """The answers of these reference rows (id, the fields of _KEY, ...), by their fields;
    fields whose rows disagree are left out (they are resolved as new)."""
    targets: dict[int, set] = {r[0]: set() for r in rows}
    status: dict[int, str] = {}
    ids = list(targets)
    for at in range(0, len(ids), 500):
        step = ids[at:at + 500]
        marks = ",".join("?" * len(step))
        for ref_id, f, q, c in con.execute(
                "select ref_id, dst_file_id, dst_qualname, confidence from edges"
                f" where ref_id in ({marks})", step):
            targets[ref_id].add((f, q, c))
        status.update(con.execute(f"select id, status from refs where id in ({marks})", step))
    out: dict[tuple, _Answer] = {}
    torn: set[tuple] = set()
    for r in rows:
        answer = (status[r[0]], frozenset(targets[r[0]]))
        if out.setdefault(r[1:9], answer) != answer:
            torn.add(r[1:9])
    for key in torn:
        del out[key]
    return out


def _rebound(had: list[tuple], has: list[tuple], java: bool) -> tuple[set[str], bool]:
    """For a file's imports before and after (rows of _KEY's fields after the id): the local
    names whose binding imports are not the same ones in the same order, and whether either
    side has a wildcard import (`*`, a Java on-demand import), whose place among the others
    decides what it binds."""
    def bindings(rows):
        out: dict[str, list[tuple]] = {}
        for r in rows:
            local = local_name(r[3], r[7], r[5])
            if local and local != "*":
                out.setdefault(local, []).append(r[1:9])
        return out
    wild = any(r[3] == "*" or (r[3] is None and java) for r in had + has)
    before, after = bindings(had), bindings(has)
    return {n for n in before.keys() | after.keys() if before.get(n) != after.get(n)}, wild


def _store_file(con, fid, language, blob, data, test_file, parser, extract,
                all_tests: bool = False, known: SymbolParser | None = None
                ) -> tuple[int, _Rewrite]:
    """Definitions and references of one file version; returns its syntax errors and how its
    references were written (_write_refs: the file's earlier ones are kept). A test is
    a test file's `test…` function, or test code as the extractor marks it (Rust's `#[test]`
    functions and what `mod tests` or a `#[cfg(test)]` module holds), or any definition of a
    file that is all tests (`all_tests`: a Rust `tests.rs` module)."""
    symbols = (known is not None and known.cached(language, blob)
               or parser.symbols(language, blob, data)) if language else []
    # The tree the symbols were read from, when a parser kept it: not parsed a second time.
    tree = (known is not None and known.tree(language, blob)) or parser.tree(language, blob) \
        if language else None
    found = extract(language, data, tree)
    ranges = list(found.tests) if found is not None else []
    if all_tests:
        ranges.append((0, len(data)))
    marked = _ends_inside([s.end_byte for s in symbols], ranges)
    con.executemany(
        "insert or ignore into defs(file_id, qualname, name, kind, start_line, end_line, is_test)"
        " values (?,?,?,?,?,?,?)",
        ((fid, s.structural_name, s.name, s.kind, s.start_line, s.end_line,
          int((test_file and bool(_TEST_FUNC.match(s.name))) or marked[n]))
         for n, s in enumerate(symbols)))
    if found is None:
        _forget_refs(con, fid)
        return 0, _Rewrite()
    spans = sorted(((s.start_byte, s.end_byte, s.structural_name) for s in symbols),
                   key=lambda t: (t[0], -t[1]))
    rows: list[tuple] = []
    # A Rust `use` belongs to the module it is in: its `self::` and `super::` start there.
    # Elsewhere an import is the file's, wherever it is written.
    places = _scopes(spans, [imp.byte for imp in found.imports]) if language == "rust" else \
        [None] * len(found.imports)
    for imp, place in zip(found.imports, places):
        rows.append((fid, place, "import", imp.name if not imp.wildcard else "*",
                     None, imp.module, imp.level, imp.alias, None, imp.line))
    scopes = _scopes(spans, [ref.byte for ref in found.refs])
    for ref, scope in zip(found.refs, scopes):
        rows.append((fid, scope, ref.kind, ref.name, ref.qualifier, None, 0,
                     None, ref.owner, ref.line))
    return found.error_nodes, _write_refs(con, fid, rows, language == "java")


def _import_names(fid: int, imports) -> tuple[set[str], set[_Wildcard]]:
    """What a file's imports bind or ask for, from (name, alias, module, level, scope) rows: the
    names, and the (file, module, level, scope) of its wildcard imports (every definition of
    that module is bound): what another file importing from this one may resolve through (a
    re-export)."""
    out: set[str] = set()
    starred: set[_Wildcard] = set()
    for name, alias, module, level, scope in imports:
        if name == "*":
            starred.add((fid, module, level or 0, scope))
        out.update(n for n in (name, local_name(name, alias, module)) if n and n != "*")
    return out, starred


def _rust_tests_module(language: str | None, path: str) -> bool:
    """A Rust file that is a module named `tests` (`#[cfg(test)] mod tests;` in its parent):
    all of it is test code, as an inline `mod tests { }` is."""
    folder, name = posixpath.split(path)
    return language == "rust" and (name == "tests.rs" or (
        name == "mod.rs" and posixpath.basename(folder) == "tests"))


def _ends_inside(ends: list[int], ranges: list[tuple[int, int]]) -> list[bool]:
    """For each definition's end byte, whether it lies in one of the ranges (a definition
    ends inside the test item it is, or in the test module holding it): the ranges merged
    first, so that a file of thousands of tests costs a sort, not a product."""
    merged: list[list[int]] = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    starts = [start for start, _ in merged]
    out = []
    for end in ends:
        i = bisect_right(starts, end - 1) - 1
        out.append(i >= 0 and end <= merged[i][1])
    return out


def _aliases_closure(con, names: set[str]) -> set[str]:
    """`names`, and the aliases that imports of them bind (`from a import x as y`: y), again for
    those, until no new one: files that import y from this file resolve through it."""
    out, frontier = set(names), set(names)
    while frontier:
        new: set[str] = set()
        for name in frontier:
            new.update(r[0] for r in con.execute(
                "select distinct alias from refs where name = ? and kind = 'import' and alias"
                " is not null", (name,)))
        frontier = new - out
        out |= frontier
    return out


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


def resolve_refs(con, changed: list[int], names: set[str], everything: bool = False,
                 moved_paths: Sequence[str] = (),
                 imported: frozenset[str] | set[str] = frozenset(),
                 wildcards: frozenset | set = frozenset(),
                 classes: frozenset[str] | set[str] = frozenset(),
                 fresh: set[int] | None = None, stale: set[int] | frozenset[int] = frozenset(),
                 previous: dict[int, _Answer] | None = None) -> int:
    """Resolve again the references that the change can affect; returns how many.

    `names`: the definitions the changed files added, removed or changed the kind of (every
    reference of such a name may now find another definition; structure._changes);
    `imported`: what their imports that changed bind or ask for, and `wildcards` the (file,
    module, level) of their `import *` that changed, which bind every name the module
    defines; `moved_paths`: the files that appeared, went or became (un)readable;
    `classes`: the classes with bases that appeared or went whole (_whole_classes), whose
    values' calls name them in their qualifier (`request.url_for()`, `request: Request`);
    `fresh`: the changed files' references written anew, and `stale` those kept whose
    answer their file's change may move (_write_refs; None: every reference of the changed
    files is new); `previous`: the answers before of those fresh imports that were only
    written again, compared as a kept import's would be. The changed files' other references
    are found as any others are.

    An import elsewhere can resolve differently only through a name of those sets (a
    definition, or a re-export), through one that an import of such a name binds under an
    alias (followed to its end), as a wildcard or default import, or, when files moved, as an
    import whose module may now be another file (_refs_naming_modules: its words hold the
    name of a moved file, or of its folder where that is the module) and, from there, as an
    import of what such an import binds when it now resolves differently (or is a changed
    file's). Another reference resolves differently only through a definition's name, as
    `module.name` of such a name, as `Name.member` where a wildcard import bound Name,
    through an import of its own file that now resolves differently (read after the imports,
    by the name or the qualifier it binds, also when that import is downstream of one that
    does); a class base that now resolves differently resolves everything again. Resolving
    every import again cost a one-commit update on scrapy half its structure step, and one
    that adds a file to sympy 0.6 s of its 0.9. tests/test_structure.py checks the result
    against a full resolution."""
    resolver = Resolver(con, whole=everything)
    if everything:
        _resolve(con, resolver, [r[0] for r in con.execute("select id from refs")], detect=False)
        with con:
            con.execute("delete from meta where key = 'structure_resolve_pending'")
        return con.execute("select count(*) from refs").get
    if fresh is None:
        fresh = {r[0] for fid in changed
                 for r in con.execute("select id from refs where file_id = ?", (fid,))}
    found: set[int] = set(fresh) | set(stale)
    for name in names:
        found.update(r[0] for r in con.execute("select id from refs where name = ?", (name,)))
    found.update(r[0] for r in con.execute(
        "select id from refs where kind = 'import' and name in ('*', 'default')"))
    naming: set[int] = set()
    if moved_paths:
        naming = _refs_naming_modules(con, moved_paths)
        found |= naming
    if names:
        found |= _qualified_through_wildcards(con, names)
    found |= _qualified_by(con, classes)
    if names or imported:   # `shop::Item::new()` goes through lib.rs's `pub use items::Item`
        found |= _rust_paths_naming(con, names | set(imported))
    starred = {n for fid, module, level, scope in wildcards if fid in resolver.path
               for place in resolver.module_places(fid, module, level, scope) or ()
               for n in resolver.glob(place)}
    found.update(_importers(con, names | set(imported) | starred))
    moved, bases_moved = _resolve(con, resolver, sorted(found), fresh=fresh, previous=previous)
    # A module that is now another file: what the imports naming it bound may be another
    # definition for the files importing that from theirs, and so on. A changed file's import
    # whose text stayed may name another file too, and _resolve cannot tell (its answers are
    # new rows): those naming a moved file are followed as if they had moved.
    frontier = moved + [row[1:] for row in con.execute(
        "select id, file_id, name, alias, module from refs where kind = 'import' and file_id in"
        " (select value from json_each(?))", (json.dumps(changed),)) if row[0] in naming] \
        if moved_paths else []
    downstream: set[int] = set()   # the imports of what they bind, moved or not
    while frontier:
        if any(name == "*" for _, name, _, _ in frontier):
            return resolve_refs(con, [], set(), everything=True)   # binds every name: rare
        reached = _importers(con, {local_name(name, alias, module) or ""
                                   for _, name, alias, module in frontier})
        downstream |= reached
        more = reached - found
        found |= more
        frontier, bases = _resolve(con, resolver, sorted(more), fresh=fresh, previous=previous)
        moved += frontier
        bases_moved = bases_moved or bases
    # The references bound by an import that now resolves differently, in its own file; and by
    # one downstream of such an import even if its own answer stayed: an import's answer stops
    # at the module that lacks the name ("module only"), where the binding that `Name.member`
    # reads follows the module's own imports on.
    bound = moved + [row for row in con.execute(
        "select file_id, name, alias, module from refs where kind = 'import' and id in"
        " (select value from json_each(?))", (json.dumps(sorted(downstream)),))]
    again: set[int] = set()
    for fid, name, alias, module in bound:
        if name == "*":
            again.update(r[0] for r in con.execute(
                "select id from refs where file_id = ? and kind != 'import'", (fid,)))
            continue
        local = local_name(name, alias, module) or ""
        again.update(r[0] for r in con.execute(
            "select id from refs where file_id = ? and kind != 'import' and (name = ? or"
            " qualifier = ? or qualifier like ? escape '\\' or qualifier like ? escape '\\')",
            (fid, local, local, _like_prefix(local) + ".%", _like_prefix(local) + "::%")))
    bases_moved = _resolve(con, resolver, sorted(again - found), fresh=fresh,
                           previous=previous)[1] or bases_moved
    if bases_moved:   # a class now inherits from another one: methods found through it may be
        return resolve_refs(con, [], set(), everything=True)   # others, in any subclass
    with con:
        con.execute("delete from meta where key = 'structure_resolve_pending'")
    return len(found | again)


def _importers(con, names: set[str]) -> set[int]:
    """Imports of these names and of the aliases they are imported under (followed to their
    end), and `module.name` anywhere: the module's binding of the name (a re-export) may now
    be another definition."""
    found: set[int] = set()
    for name in _aliases_closure(con, names):
        found.update(r[0] for r in con.execute(
            "select id from refs where name = ? and (kind = 'import' or (qualifier is not"
            " null and qualifier not in ('self', 'cls', 'this', 'super', '?')))", (name,)))
    return found


def _rust_paths_naming(con, names: set[str]) -> set[int]:
    """Rust references whose path holds one of these names as a segment: `T::f()` and
    `a::T::f()` resolve through the type or inline module T (resolve.Resolver._rust_walk), and
    `use crate::a::T` through a, so a definition of that name that appeared, went or changed
    kind, or an import of it (a re-export), may give them another answer, though they name
    neither it nor an import of it."""
    path = "case when r.kind = 'import' then r.module when r.qualifier glob '*::' then" \
        " r.qualifier end"   # `x.f()` names a value, not a path
    rows = f"select r.id, {path} as path from struct_files s join refs r on" \
        f" r.file_id = s.file_id where s.language = 'rust' and {path} is not null"
    keys = sorted(names)
    if len(keys) <= _KEYS_IN_SQL:   # a superset in SQL, the segments in Python
        found = con.execute(f"select id, path from ({rows}) where "
                            + " or ".join(["instr(path, ?)"] * len(keys)), keys)
    else:
        found = con.execute(rows)
    return {ref_id for ref_id, text in found if not names.isdisjoint(text.split("::"))}


def _qualified_through_wildcards(con, names: set[str]) -> set[int]:
    """`Name.member` in the files with a wildcard import, for a Name among the definitions that
    appeared or went: the wildcard binds it by what its module defines (Java's `import p.*`,
    Python's `from m import *`), and the wildcard's own answer (its module) stays the same."""
    return {ref_id for ref_id, qualifier in con.execute(
        "select id, qualifier from refs where qualifier is not null and file_id in"
        " (select file_id from refs where kind = 'import' and name = '*')")
        if _HEAD.split(qualifier, 1)[0] in names}


_HEAD = re.compile(r"\.|::")
_WORDS = re.compile(r"\w+")
# SQLite's expressions nest at most 1,000 deep: more keys than this are matched in Python alone.
_KEYS_IN_SQL = 200
# A crate's root: every `crate::` path of the folders below it may now start elsewhere.
_ROOT_FILES = frozenset({"lib.rs", "main.rs"})
_PACKAGE_FILES = frozenset({".go", ".java"})   # a package is its folder's files
_FOLDER_MODULES = frozenset({"__init__", "index", "mod"})   # the file is its folder's module
_PLACE = re.compile(r"\A\W*\Z|/\.\.?/*\Z")   # no word (`.`, `..`), or ending in `/..`
_RUST_PLACE = re.compile(r"\A(?:self|super)(?:::|\Z)")   # Rust's `super::`, `self::`


def _module_keys(paths: Sequence[str]) -> set[str] | None:
    """The words a module path must hold to name one of these files (None: any may): the
    file's name without its extension, and its folder's name where the folder is the module
    (a Go or Java package, `__init__.py`, `index.js`, `mod.rs`). A file at the root (Go's
    module package, Java's default one, a top-level module) or a crate root: None."""
    keys: set[str] = set()
    for path in paths:
        folder, name = posixpath.split(path)
        if not folder or name in _ROOT_FILES:
            return None
        stem, extension = posixpath.splitext(name)
        keys.update(_WORDS.findall(stem))
        if extension in _PACKAGE_FILES or stem in _FOLDER_MODULES:
            keys.update(_WORDS.findall(posixpath.basename(folder)))
    return keys


def _refs_naming_modules(con, paths: Sequence[str]) -> set[int]:
    """The references whose module may now be another file: imports, and Rust's qualified paths
    (`db::save()`, looked up as modules), whose module holds a key of _module_keys or names a
    folder only by where it is (`from . import x`, `'..'`, `'./lib/..'`, Rust's `super::x`,
    whose parent module is a file beside its folder)."""
    keys = _module_keys(paths)
    imports = "select id, module, name from refs where kind = 'import'"
    rust = (" union all select r.id, r.qualifier, null from struct_files s join refs r on"
            " r.file_id = s.file_id where s.language = 'rust' and r.kind != 'import' and"
            " r.qualifier glob '*::'")   # a path; `x.f()` names a value
    if not keys:   # None, or names without a word (`-.ts`): any may
        return {ref_id for (ref_id,) in con.execute(f"select id from ({imports}{rust})")}
    if len(keys) <= _KEYS_IN_SQL:
        # SQLite picks the rows holding a key or no ASCII word (a superset, read in C: sympy's
        # 38,000 imports in 30 ms), Python the words among them.
        holds = " or ".join(["instr(module, ?) or instr(name, ?)"] * len(keys))
        by_place = ("module is null or module not glob '*[A-Za-z0-9_]*' or rtrim(module, '/')"
                    " glob '*/.' or rtrim(module, '/') glob '*/..' or module glob 'self*'"
                    " or module glob 'super*'")
        rows = con.execute(f"select id, module, name from ({imports}{rust}) where {by_place}"
                           f" or {holds}", [k for k in sorted(keys) for _ in (0, 1)])
    else:
        rows = con.execute(f"{imports}{rust}")
    named = re.compile(r"\b(?:{})\b".format("|".join(map(re.escape, sorted(keys)))))
    place, rust_place = _PLACE.search, _RUST_PLACE.match
    return {ref_id for ref_id, module, name in rows if place(module or "")
            or rust_place(module or "") or named.search(f"{module} {name or ''}")}


def _set_resolver_version(con) -> None:
    files = {fid: (blob, wt, skipped) for fid, blob, wt, skipped in con.execute(
        "select file_id, blob, worktree, skip_reason is not null from struct_files")}
    set_meta(con, "resolver_version", _resolver_mark(files))


def _resolver_mark(files: dict) -> str:
    """RESOLVER_VERSION and a digest of the files whose references it resolved (file id ->
    (blob, worktree, skipped), as update_structure reads them)."""
    digest = zlib.crc32("\n".join(f"{fid} {files[fid]}" for fid in sorted(files)).encode())
    return f"{RESOLVER_VERSION}:{digest:08x}"


def _qualified_by(con, classes: Iterable[str]) -> set[int]:
    """The references whose qualifier holds one of `classes` as a whole part (`Request`,
    `wrappers.Request`, `Request.Inner`, `crate::Request`): one scan of the references for up
    to 200 names (a file of many test classes would otherwise scan them once a class)."""
    found: set[int] = set()
    names = sorted(classes)
    for i in range(0, len(names), 200):
        chunk = names[i:i + 200]
        test = " or ".join(["parts like ? escape '\\'"] * len(chunk))
        found.update(r[0] for r in con.execute(
            f"select id from (select id, '.' || replace(qualifier, '::', '.') || '.' as parts"
            f" from refs where qualifier is not null) where {test}",
            [f"%.{_like_prefix(name)}.%" for name in chunk]))
    return found


def _like_prefix(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


_ANSWERS_KEPT = 8192


def _resolve(con, resolver: Resolver, ids: list[int],
             fresh: set[int] | frozenset[int] = frozenset(),
             detect: bool = True, previous: dict[int, _Answer] | None = None
             ) -> tuple[list[tuple], bool]:
    """Resolve these references again; returns (file, name, alias, module) of the imports among
    them whose answer changed, and whether a class's base now resolves differently. The
    `fresh` references (ids) were just written (they had no answer): their file's shape says
    what changed there (update_structure), but for the imports of `previous`, rows written
    again whose answer before is known. Without `detect` (a full resolution), nothing is
    compared."""
    moved: list[tuple] = []
    bases_moved = False
    # A reference's answer is its fields' but for its id: a file's many calls of one name in one
    # scope are resolved once (sympy's 492k references are 220k distinct). Bounded by count.
    answers: dict[tuple, tuple[str, list[Target]]] = {}
    with con:
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            marks = ",".join("?" * len(chunk))
            rows = con.execute(
                "select id, file_id, scope, kind, name, qualifier, module, level, alias, owner,"
                " status from refs where id in ({marks})".format(marks=marks), chunk).fetchall()
            before: dict[int, set] = {}
            for ref_id, f, q, c in con.execute(
                    "select ref_id, dst_file_id, dst_qualname, confidence from edges"
                    f" where ref_id in ({marks})", chunk) if detect else ():
                before.setdefault(ref_id, set()).add((f, q, c))
            statuses: list[tuple[str, int]] = []
            edges: list[tuple] = []
            if len(answers) > _ANSWERS_KEPT:
                answers.clear()
            for row in rows:
                ref = RefRow(*row[:-1])
                key = row[1:-1]
                answer = answers.get(key)
                if answer is None:
                    answer = answers[key] = resolver.resolve(ref)
                status, targets = answer
                if detect:
                    was = previous.get(ref.id) if previous else None
                    if was is not None and was != (status, frozenset(targets)):
                        moved.append((ref.file_id, ref.name, ref.alias, ref.module))
                    # Most answers stay as they were: nothing to write for them (an update that
                    # resolves every import again wrote 40,000 rows on sympy for a few changes).
                    if status == row[-1] and set(targets) == before.get(ref.id, set()):
                        continue
                    if ref.kind in ("import", "inherits") and ref.id not in fresh:
                        if ref.kind == "import":
                            moved.append((ref.file_id, ref.name, ref.alias, ref.module))
                        else:
                            bases_moved = True
                statuses.append((status, ref.id))
                edges.extend((ref.id, f, q, c) for f, q, c in targets)
            if detect:
                con.executemany("delete from edges where ref_id = ?", ((i,) for _, i in statuses))
            else:
                con.execute(f"delete from edges where ref_id in ({marks})", chunk)
            con.executemany("update refs set status = ? where id = ?", statuses)
            con.executemany("insert into edges(ref_id, dst_file_id, dst_qualname, confidence)"
                            " values (?,?,?,?)", edges)
    return moved, bases_moved

