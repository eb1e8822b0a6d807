"""History of a file or a symbol: the commits that changed it, newest first.

A symbol's history follows its lineage — the renames and moves recorded at indexing — and, for a
container such as a class, rolls up the changes of its members. A file's history follows renames.

Kinds of a symbol's change (symbol_changes, change_kinds): added, deleted, body, signature, docs,
reformatted, renamed, moved, rescoped; "modified" in stores indexed before kinds existed. A
container's entry for a commit that changed only its members takes the members' kind: body unless
they were all docs, reformatted or rescoped. A substantive history leaves out what did not change
the symbol's meaning (change_kinds.NOT_SUBSTANTIVE: reformatting, and lineage waypoints where its
own code did not change, such as a rename of its enclosing class); file moves, renames and doc
changes stay.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from functools import lru_cache

import apsw

from cortex_core.index.messages import WHY_CHARS, why
from cortex_core.lang.change_kinds import NOT_SUBSTANTIVE
from cortex_core.query.targets import (Target, TargetSpec, file_level_reason, no_symbol_at,
                                        resolve)
from cortex_core.store.schema import RENAMED_INTO_HEAD
from cortex_core.text.redact import redact

NO_LIMIT = (1 << 62, 0, "")   # a lineage limit (see _lineage) above every commit
NO_FLOOR = (-1, 0, "")        # a lineage floor (see _lineage) below every commit
# The order of history, the same however the store was indexed (one run, resumed, incremental):
# newest first by committer time, which is what git log orders by and which follows topology far
# better than author time (a rebase or a cherry-pick keeps the author's date, gives a new
# committer date), raised where a clock was wrong to its parents' (order_time, schema.py
# migration 10: never below a parent, as git's corrected commit date); commits of equal time
# children first (higher generation); then by sha.
# ORDER_KEY is time and generation in one integer (generations below 2^24), the eighth column of
# COMMIT_COLUMNS; NEWEST_FIRST the same order for SQL, OLDEST_FIRST its reverse; BEFORE, AFTER
# and SINCE (at or after) compare with a commit's (order_time, generation, sha).
ORDER_KEY = "c.order_time * 16777216 + min(c.generation, 16777215)"
NEWEST_FIRST = "c.order_time desc, c.generation desc, c.sha desc"
OLDEST_FIRST = "c.order_time, c.generation, c.sha"
BEFORE = "(c.order_time, c.generation, c.sha) < (?, ?, ?)"
AFTER = "(c.order_time, c.generation, c.sha) > (?, ?, ?)"
SINCE = "(c.order_time, c.generation, c.sha) >= (?, ?, ?)"
COMMIT_COLUMNS = ("c.sha, c.author_time, c.author_offset, c.author_name, c.author_email,"
                  f" c.subject, c.kind, {ORDER_KEY}")


@dataclass(frozen=True)
class CommitRef:
    """A commit as a history shows it."""
    sha: str
    time: int      # author time, seconds since the epoch
    offset: int    # author's UTC offset in minutes
    author: str
    email: str
    subject: str
    kind: str

    @property
    def short(self) -> str:
        return self.sha[:10]


def commit_ref(row, redact_subject: bool = True) -> CommitRef:
    """A CommitRef from the first seven columns of COMMIT_COLUMNS; the subject and the author
    redacted (an author name is free text too). `redact_subject=False` is for callers that count
    entries and redact the few they show (see `redacted`)."""
    return CommitRef(row[0], row[1], row[2], _redact_name(row[3]), _redact_name(row[4]),
                     redact(row[5]) if redact_subject else row[5], row[6])


def redacted(ref: CommitRef) -> CommitRef:
    """A CommitRef made with redact_subject=False, made safe to show."""
    return replace(ref, subject=redact(ref.subject))


def reasons(con: apsw.Connection, commits: list[CommitRef],
            limit: int = WHY_CHARS) -> dict[str, str | None]:
    """sha -> the "why" of each commit (messages.why), at most `limit` characters. Read with
    the stored subject, not the redacted one shown: a secret may run from the subject into the
    body (a key file committed as the message), and is only found whole."""
    if not commits:
        return {}
    shas = list(dict.fromkeys(c.sha for c in commits))
    marks = ",".join("?" * len(shas))
    rows = con.execute(f"select sha, subject, body from commits where sha in ({marks})", shas)
    return {sha: why(subject, body, limit) for sha, subject, body in rows}


@lru_cache(maxsize=4096)
def _redact_name(text: str) -> str:
    # Authors repeat across a history: a long history is redacted once per author, not per commit.
    return redact(text)


@dataclass(frozen=True)
class HistoryEntry:
    """One commit of a file's or a symbol's history, and what it did to it."""
    commit: CommitRef
    change: str              # added | modified | deleted | renamed | moved (files: A M D R ...)
    added: int | None
    deleted: int | None
    path: str                # the path at that commit
    name: str | None = None  # the symbol's qualified name at that commit
    members: tuple[str, ...] = ()  # for a container: the members whose change it rolls up
    # Where the lineage crosses a pairing made by similarity (a rename or move with edits): how
    # alike the two versions were, below 1.0. None for exact pairings and other changes.
    confidence: float | None = None
    # A file's change whose symbols were not read, why (a limit with the setting that raises
    # it): "diff too large (over 20,000 changed lines; raise [index] max_diff_lines ...)".
    skipped: str | None = None

    @property
    def substantive(self) -> bool:
        return self.change not in NOT_SUBSTANTIVE


@dataclass(frozen=True)
class History:
    """The history of a target, newest first."""
    target: Target
    entries: list[HistoryEntry] = field(default_factory=list)
    note: str | None = None
    total: int = 0  # commits in the whole history; `entries` may be limited to the newest
    # Set while the index holds a recent window only: the date its history starts from, so
    # that older commits are not there yet (status.history_from).
    history_from: int | None = None
    # Set while the index's first run has not reached HEAD: the date of the newest commit it
    # holds, so that newer commits are not there yet (store.history_until).
    history_until: int | None = None
    # Set for a shallow clone: the date of its oldest commit, read as a root (store.shallow_from).
    shallow_from: int | None = None
    # For a symbol gone at HEAD that was renamed or moved away: where its code lives at HEAD
    # (`PATH::SYMBOL`), and the commit that took it there (moved_to).
    moved_to: str | None = None
    moved_in: CommitRef | None = None


FILE_STATUS = {"A": "added", "M": "modified", "D": "deleted", "R": "renamed", "C": "copied",
               "T": "type changed"}


def history(con: apsw.Connection, spec: TargetSpec, limit: int | None = None,
            substantive: bool = False) -> History:
    """`substantive`: leave out reformatting and lineage waypoints (see the module)."""
    target = resolve(con, spec)
    note = None
    if spec.line is not None and target.symbol_id is None:
        note = f"{no_symbol_at(con, target, spec.line)}; showing the file's history"
    if target.symbol_id is None:
        level = file_level_reason(con, target.file_id)
        if level is not None:
            note = f"recorded at file level only, {level}"
    if target.symbol_id is None:
        entries = file_history(con, target.file_id)
    else:
        entries = symbol_history(con, target.symbol_id)
        born = entries[-1].commit.time if entries else None
        if substantive:
            entries = [e for e in entries if e.substantive]
        # Commits of its file, since its first change, that no symbol history can show.
        cut = [e for e in file_history(con, target.file_id, only_skipped=True)
               if e.skipped and (born is None or e.commit.time >= born)]
        if cut:
            n = len(cut)
            note = (f"{n} commit{'s' if n != 1 else ''} of its file{' were' if n != 1 else ' was'}"
                    f" not read for symbols, the newest {cut[0].commit.short}: {cut[0].skipped}")
            missing = _missing_version(con)
            if any(e.skipped == missing for e in cut):
                note += f"; {REBUILD}"
    if note is None and (not entries or entries[-1].change not in ("added", "copied")):
        # No birth at its start, in a store that could not read some objects: commits behind a
        # missing commit or tree are not indexed at all. (A history that starts with its
        # birth lost nothing of that kind: a missing blob is said on its own commits.)
        missing = _missing(con)
        if missing:
            note = f"this history may stop short: {missing}; {REBUILD}"
    from cortex_core.store.store import history_from, history_until, shallow_from
    until = history_until(con)   # not None: HEAD not indexed yet, so nothing is known gone
    if target.symbol_id is None and until is None and con.execute(
            "select 1 from head_files where file_id = ?", (target.file_id,)).fetchone() is None:
        target = replace(target, alive=False)     # a file deleted or renamed away
        went = file_moved_to(con, target.file_id)
    else:
        went = moved_to(con, target.symbol_id) if target.symbol_id and not target.alive else None
    return History(target, entries[:limit] if limit else entries, note, len(entries),
                   history_from(con), until, shallow_from(con), *(went or (None, None)))


MOVES_FOLLOWED = 16   # renames and moves followed from a gone symbol to where it lives
MOVES_TRIED = 64      # continuations looked at in all (a branch's rename HEAD does not have)
UNTIL = "(c.order_time, c.generation, c.sha) <= (?, ?, ?)"   # a life's end, its own commit too


def moved_to(con: apsw.Connection, symbol_id: int) -> tuple[str, CommitRef] | None:
    """Where the code of a symbol gone at HEAD lives at HEAD, when its last life was renamed
    or moved away (`PATH::SYMBOL`), and the commit that did it; None when that code was
    deleted, or its continuations lead to nothing alive. Each hop is a continuation made after
    the hop before it (for the first, after the symbol's last birth: a reused name is another
    life, as for history and co-change), the newest first; one that leads nowhere (a branch's
    rename HEAD does not have, a continuation deleted since) gives way to the next. A
    continuation it lived on beside (it became a wrapper of the new code) ends nothing."""
    birth = con.execute(
        "select c.order_time, c.generation, c.sha from symbol_changes sc join commits c"
        " on c.id = sc.commit_id where sc.symbol_id = ? and c.reachable = 1 and"
        f" (sc.change = 'added' or sc.from_symbol_id is not null) order by {NEWEST_FIRST}"
        " limit 1", (symbol_id,)).fetchone() or (-(1 << 62), -1, "")
    tries = MOVES_TRIED

    def life_end(current: int, after: tuple) -> tuple:
        """Where the life of `current` that began at `after` ends: its deletion, or the birth of
        a new life of the name (1 << 62: not yet)."""
        return con.execute(
            "select c.order_time, c.generation, c.sha from symbol_changes sc join commits c"
            " on c.id = sc.commit_id where sc.symbol_id = ? and c.reachable = 1 and"
            f" sc.change in ('added', 'deleted') and {AFTER} order by c.order_time,"
            " c.generation, c.sha limit 1", (current, *after)).fetchone() or (1 << 62, 0, "")

    def follow(current: int, after: tuple, hops: int) -> tuple[str, tuple] | None:
        """(where its code lives at HEAD, the continuation taken) of the life of `current`
        that began at `after`: its continuations newest first, each followed in turn."""
        nonlocal tries
        for row in con.execute(
                f"select sc.symbol_id, s.alive, f.path, s.qualname, c.order_time,"
                f" c.generation, c.sha, {COMMIT_COLUMNS} from symbol_changes sc join commits c"
                " on c.id = sc.commit_id join symbols s on s.id = sc.symbol_id join files f"
                " on f.id = s.file_id where sc.from_symbol_id = ? and sc.symbol_id !="
                f" sc.from_symbol_id and c.reachable = 1 and {AFTER} and {UNTIL}"
                # Not where it lived on as a wrapper of its continuation (its own change there
                # is an edit, not the move): its life went on, and its end decides.
                " and not exists (select 1 from symbol_changes w where w.symbol_id ="
                " sc.from_symbol_id and w.commit_id = sc.commit_id and w.change not in"
                " ('moved', 'renamed', 'rescoped'))"
                f" order by {NEWEST_FIRST}, sc.symbol_id",
                (current, *after, *life_end(current, after))).fetchall():
            tries -= 1
            if tries < 0:
                return None
            if row[1]:
                return f"{row[2]}::{row[3]}", row
            later = (follow(row[0], tuple(row[4:7]), hops + 1)
                     if hops + 1 < MOVES_FOLLOWED else None)
            if later:
                return later[0], row
        return None

    found = follow(symbol_id, birth, 0)   # the answer's commit is the first hop's
    return (found[0], commit_ref(found[1][7:])) if found else None


MISSING = "missing object"   # commit_reader's skip reason: git could not give a version


# Said in the engine's words: a front end names its own way to rebuild (status does).
REBUILD = "a rebuild of the index reads what is missing once the repository has it"


def _missing(con: apsw.Connection) -> str | None:
    """The objects the index runs could not read, if any (the store's count and cause: a
    partial clone offline, or a damaged repository)."""
    from cortex_core.store.store import get_meta
    count = int(get_meta(con, "missing_objects") or 0)
    if not count:
        return None
    cause = get_meta(con, "missing_cause") or "missing from the repository"
    return f"{count} object{'s' if count != 1 else ''} could not be read ({cause})"


def _missing_version(con: apsw.Connection) -> str:
    """A change whose version git could not give, as its history row says it."""
    from cortex_core.store.store import get_meta
    return f"missing object ({get_meta(con, 'missing_cause') or 'missing from the repository'})"


def file_moved_to(con: apsw.Connection, file_id: int) -> tuple[str, CommitRef] | None:
    """Where a file gone at HEAD lives at HEAD when it was renamed away (through later
    renames), and the commit that renamed it; None when it was deleted. The newest rename of
    each path that leads to a file at HEAD is taken, each after the one before."""
    after: tuple = (-(1 << 62), -1, "")
    first = None
    current = file_id
    for _ in range(MOVES_FOLLOWED):
        row = con.execute(
            f"select fc.file_id, f.path, c.order_time, c.generation, c.sha, {COMMIT_COLUMNS}"
            " from file_changes fc join commits c on c.id = fc.commit_id join files f"
            " on f.id = fc.file_id where fc.old_file_id = ? and fc.status = 'R' and"
            f" fc.file_id != fc.old_file_id and c.reachable = 1 and {AFTER} and"
            f" {RENAMED_INTO_HEAD} order by {NEWEST_FIRST} limit 1", (current, *after)).fetchone()
        if row is None:
            return None
        first = first or row
        if con.execute("select 1 from head_files where file_id = ?", (row[0],)).fetchone():
            return row[1], commit_ref(first[5:])
        current, after = row[0], tuple(row[2:5])
    return None


def file_history(con: apsw.Connection, file_id: int, redact_subjects: bool = True,
                 only_skipped: bool = False) -> list[HistoryEntry]:
    """`only_skipped`: the changes whose symbols were not read, alone (a few rows, where a busy
    file's whole history takes milliseconds)."""
    said: dict[str, str | None] = {}   # skip reason -> as users read it, when a limit gave it

    def skipped(reason: str | None) -> str | None:
        if reason is None:
            return None
        if reason not in said:   # the settings' module only then: `history` starts light
            from cortex_core.index.skip_rules import LIMITED_BY, explain, indexed_limits
            said[reason] = (explain(reason, indexed_limits(con)) if reason in LIMITED_BY
                            else _missing_version(con) if reason == MISSING else None)
        return said[reason]
    entries: list[tuple[int, HistoryEntry]] = []
    head = _pruning_head(con, file_id)
    for fid, limit, floor in _lineage(con, file_id, _FILE_LINKS, _FILE_LIFE, _FILE_AWAY):
        for row in con.execute(
                f"select {COMMIT_COLUMNS}, fc.status, fc.added, fc.deleted, f.path, fc.skip_reason"
                " from file_changes fc join commits c on c.id = fc.commit_id"
                " join files f on f.id = fc.file_id"
                f" where fc.file_id = ? and c.reachable = 1 and {BEFORE} and {SINCE}"
                f" and {_on_gits_history('fc', head)}"
                + (" and fc.skip_reason is not null" if only_skipped else ""),
                (fid, *limit, *floor)):
            # A limit that cut this change out of symbol history is said where it happened.
            entries.append((row[7], HistoryEntry(commit_ref(row, redact_subjects),
                                                 FILE_STATUS.get(row[8], row[8]),
                                                 row[9], row[10], row[11],
                                                 skipped=skipped(row[12]))))
        if not only_skipped:
            entries += _merges_with_own_lines(con, fid, limit, floor, redact_subjects)
        if fid == file_id and not only_skipped:
            # The commits that renamed it away into a file HEAD has (git's `log -- PATH` shows
            # them as deletions; a side branch's rename its merge dropped, it does not show):
            # the rows are its new path's.
            for row in con.execute(
                    f"select {COMMIT_COLUMNS}, fc.added, fc.deleted, f.path from file_changes fc"
                    " join commits c on c.id = fc.commit_id join files f on f.id = fc.file_id"
                    " where fc.old_file_id = ? and fc.status = 'R' and fc.file_id !="
                    f" fc.old_file_id and c.reachable = 1 and {BEFORE} and {SINCE}"
                    f" and {RENAMED_INTO_HEAD}", (fid, *limit, *floor)):
                entries.append((row[7], HistoryEntry(commit_ref(row, redact_subjects),
                                                     "renamed away", row[8], row[9], row[10])))
    return _newest_first(entries)


def _merges_with_own_lines(con: apsw.Connection, file_id: int, limit, floor,
                           redact_subjects: bool) -> list[tuple[int, HistoryEntry]]:
    """The merges that wrote lines of the file themselves (in none of their parents' versions:
    a conflict's resolution), which git blame credits to them, as entries "merged" with those
    lines as added; the lines a merge removed are in none of its versions, so none counted."""
    from cortex_core.lang.line_ranges import added_ranges, intersect_ranges
    rows = con.execute(
        f"select {COMMIT_COLUMNS}, f.path, m.commit_id from merge_files m join commits c"
        " on c.id = m.commit_id join files f on f.id = m.file_id where m.file_id = ?"
        f" and m.via is null and m.status != 'D' and c.reachable = 1 and {BEFORE} and {SINCE}",
        (file_id, *limit, *floor)).fetchall()
    if not rows:
        return []
    # The file's merge diffs, read at once: a changelog's conflicts are many merges.
    edges: dict[int, dict[int, bool]] = {}   # merge -> parent -> diff recorded
    for commit_id, parent, skip in con.execute(
            "select commit_id, parent, skip_reason from merge_edges where file_id = ?",
            (file_id,)):
        edges.setdefault(commit_id, {})[parent] = skip is None
    hunks: dict[tuple[int, int], list[tuple]] = {}
    for commit_id, parent, *hunk in con.execute(
            "select commit_id, parent, old_start, old_lines, new_start, new_lines"
            " from merge_hunks where file_id = ?", (file_id,)):
        hunks.setdefault((commit_id, parent), []).append(hunk)
    out = []
    for row in rows:
        recorded = edges.get(row[9], {})
        if not recorded or not all(recorded.values()):
            continue   # no diff against some parent: which lines are its own is not known
        own = intersect_ranges([added_ranges(hunks.get((row[9], parent), []))
                                for parent in recorded])
        lines = sum(hi - lo + 1 for lo, hi in own)
        if lines:
            out.append((row[7], HistoryEntry(commit_ref(row, redact_subjects), "merged", lines,
                                             0, row[8])))
    return out


def symbol_history(con: apsw.Connection, symbol_id: int,
                   redact_subjects: bool = True) -> list[HistoryEntry]:
    by_commit: dict[str, dict] = {}
    for qualname, (_, _, _, _, *row) in _lineage_rows(
            con, symbol_id, f"{COMMIT_COLUMNS}, sc.change, sc.added, sc.deleted, f.path,"
            " s.qualname, sc.confidence"):
        slot = by_commit.setdefault(row[0], {"row": row, "own": None, "added": 0,
                                             "deleted": 0, "members": set(), "kinds": set(),
                                             "name": qualname})
        slot["added"] += row[9]
        slot["deleted"] += row[10]
        if row[12] == qualname:   # its own change: the last life's, under its name
            slot["own"], slot["name"] = row, qualname
        else:
            slot["members"].add(row[12][len(qualname) + 1:])
            slot["kinds"].add(row[8])
    entries = []
    for slot in by_commit.values():
        own = slot["own"]
        row = own or slot["row"]
        change = _container_change(own[8] if own is not None else None, slot["kinds"])
        confidence = own[13] if own is not None and own[13] is not None and own[13] < 1 else None
        entries.append((row[7], HistoryEntry(commit_ref(row, redact_subjects), change,
                                             slot["added"], slot["deleted"],
                                             row[11], slot["name"], tuple(sorted(slot["members"])),
                                             confidence)))
    return _newest_first(entries)


def symbol_history_commits(con: apsw.Connection, symbol_id: int) -> dict[str, tuple[str, str]]:
    """The substantive commits of symbol_history (its entries whose `substantive` holds), each
    with the path and the name its entry shows, from the same rows, without building the
    entries (about twice as fast: requests' `Request`, 378 changes, 1.5 ms). A commit is merged
    as symbol_history merges it: the own change of the last life that has one, under its name
    (else the first's name), every member's kind."""
    slots: dict[str, list] = {}   # sha -> [name, path, own change, member kinds]
    for qualname, (_, _, _, _, sha, path, name, change) in _lineage_rows(
            con, symbol_id, "c.sha, f.path, s.qualname, sc.change"):
        slot = slots.setdefault(sha, [qualname, path, None, set()])
        if name == qualname:
            slot[0], slot[1], slot[2] = qualname, path, change
        else:
            slot[3].add(change)
    return {sha: (path, name) for sha, (name, path, own, kinds) in slots.items()
            if _container_change(own, kinds) not in NOT_SUBSTANTIVE}


def _lineage_rows(con: apsw.Connection, symbol_id: int, columns: str) -> list[tuple[str, tuple]]:
    """(the life's name, (symbol id, from symbol id, lines added, change, *columns)) of each
    change row of the symbol's lineage and its members, life by life (_symbol_segments' order),
    each row once. `columns` start with the commit's sha.

    A rename gives two rows in its commit: the old name's, a rename, a move or a new signature
    that only deletes its lines, and the new name's, which continues it (`from_symbol_id`) and
    counts the same lines. Where another life of the lineage continues a row, that row is its
    former self's and is left out, whatever it did; inside one life, only a rename's old side
    is. So the old name's row is left out where both are read: a member renamed inside a class
    (the class listed both names and counted the deleted lines twice), and two lives of one
    lineage that both hold the commit (a rename made on two branches, a fix cherry-picked, ends
    the old name's life at the later one; a Java method whose parameters change and change
    back: scrapy's `test_spider_errback_downloader_error_exception` listed its nested `eb`
    twice). In a class,
    a method that gave its code to a new one and lives on changed itself, and is kept: as a
    wrapper that added lines (werkzeug's `Client.open` and `_open`), or a body that only lost
    them. A row that two lives hold is kept once, in the later."""
    found: dict[tuple[int, str], tuple[int, str, tuple]] = {}   # (symbol, sha) -> life, row
    for life, (file_id, qualname, head, limit, floor) in enumerate(
            _symbol_segments(con, symbol_id)):
        for row in con.execute(
                f"select sc.symbol_id, sc.from_symbol_id, sc.added, sc.change, {columns}"
                " from symbols s"
                " join symbol_changes sc on sc.symbol_id = s.id join commits c"
                " on c.id = sc.commit_id join files f on f.id = s.file_id"
                f" {_SEGMENT} and {_on_gits_history('s', head)}",
                _segment_params(file_id, qualname, limit, floor)):
            key = (row[0], row[4])   # the row's own key: its symbol and its commit (sha)
            found.pop(key, None)     # a later life holding it takes it
            found[key] = (life, qualname, row)
    continued: dict[tuple[int, str], set[int]] = defaultdict(set)   # -> lives continuing it
    for life, _, row in found.values():
        if row[1] is not None:
            continued[(row[1], row[4])].add(life)

    def kept(key: tuple[int, str], life: int, row: tuple) -> bool:
        by = continued.get(key)
        if not by:
            return True
        if by - {life}:      # another life continues it: the symbol's own history goes on there
            return False
        return bool(row[2]) or row[3] not in _RENAME_SIDES
    return [(qualname, row) for key, (life, qualname, row) in found.items()
            if kept(key, life, row)]


# What the old name's row of a rename is (_lineage_rows): not a body or docs change.
_RENAME_SIDES = frozenset({"renamed", "moved", "rescoped", "signature"})

# One segment of a symbol's lineage (_symbol_segments): its changes and its members', under the
# name it had then, within the segment's limit and floor.
_SEGMENT = ("where s.file_id = ? and (s.qualname = ? or substr(s.qualname, 1, ?) = ?)"
            f" and c.reachable = 1 and {BEFORE} and {SINCE}")


def _segment_params(file_id: int, qualname: str, limit: Limit, floor: Limit) -> tuple:
    return (file_id, qualname, len(qualname) + 1, qualname + ".", *limit, *floor)


def _symbol_segments(con: apsw.Connection, symbol_id: int):
    """(file id, qualified name, pruning head, limit, floor) of each identity of the symbol's
    lineage, oldest first: by where each segment ends (the symbol's own, open, last), then
    where it starts, then by name. A commit two segments hold (a lineage that came back to a
    name) is the newest own change's, under its name: that order must not be the identities'
    ids, which an index run gives in the order its workers deliver commits."""
    home = con.execute("select s.file_id from symbols s join head_files h on h.file_id = s.file_id"
                       " where s.id = ? and s.alive = 1", (symbol_id,)).get
    segments = []
    for sid, limit, floor in _lineage(con, symbol_id, _SYMBOL_LINKS, _SYMBOL_LIFE,
                                      _SYMBOL_AWAY):
        file_id, qualname, path = con.execute(
            "select s.file_id, s.qualname, f.path from symbols s join files f"
            " on f.id = s.file_id where s.id = ?", (sid,)).fetchone()
        segments.append((limit, floor, path, qualname, file_id))
    for limit, floor, _, qualname, file_id in sorted(segments):
        # Under its HEAD file's path, that file's pruning; moved from another file, whichever
        # HEAD file that one's content went to (not known here: any; hotspots.py does the same).
        yield file_id, qualname, (file_id if file_id == home else None), limit, floor


def _pruning_head(con: apsw.Connection, file_id: int) -> int | None:
    """Whose pruning a file's history takes: its own when HEAD has it; None (any HEAD file's)
    for a file HEAD no longer has, whose history no walk was made for."""
    found = con.execute("select 1 from head_files where file_id = ?", (file_id,)).fetchone()
    return None if found is None else file_id


def _on_gits_history(table: str, head: int | None) -> str:
    """A change a merge dropped (simplified.py) is on no history, as in `git log -- FILE`:
    dropped on the way to the HEAD file `head`, or to any HEAD file when None. Another HEAD file's pruning is not this one's: a path's older life, renamed to
    one file, may have lost at a merge a change that the name's next life, another file, kept."""
    on_head = "" if head is None else f" and p.head_file_id = {int(head)}"
    return ("not exists (select 1 from pruned_changes p where p.commit_id = c.id"
            f" and p.file_id = {table}.file_id{on_head})")


def _container_change(own: str | None, member_kinds: set[str]) -> str:
    """A symbol's kind of change in a commit, given its own (None: only members changed) and its
    members' kinds: a non-substantive own change (or none) gives way to a member's real one."""
    if own is not None and (own not in NOT_SUBSTANTIVE or not member_kinds):
        return own
    if member_kinds <= {"reformatted"}:
        return "reformatted"
    if member_kinds <= {"docs", "reformatted"}:
        return "docs"
    if member_kinds <= NOT_SUBSTANTIVE:
        return own or "rescoped"
    return "body"


# Lineage links: (predecessor id, the link's commit as a limit), for an id, a limit and a floor.
# "Before the link" is before it in history's order (BEFORE): what history shows below the
# rename is the old identity's, whatever order the commits were indexed in.
_COMMIT_KEY = "c.order_time, c.generation, c.sha"
_FILE_LINKS = (f"select fc.old_file_id, {_COMMIT_KEY} from file_changes fc"
               " join commits c on c.id = fc.commit_id where fc.file_id = ? and fc.status = 'R'"
               f" and {BEFORE} and {SINCE} and c.reachable = 1 and fc.old_file_id is not null"
               f" order by {NEWEST_FIRST}")
_SYMBOL_LINKS = (f"select sc.from_symbol_id, {_COMMIT_KEY}"
                 " from symbol_changes sc join commits c on c.id = sc.commit_id"
                 f" where sc.symbol_id = ? and {BEFORE} and {SINCE} and c.reachable = 1"
                 f" and sc.from_symbol_id is not null order by {NEWEST_FIRST}")
# Where an identity was renamed or moved away to another identity, newest first, below a limit:
# only to one that lives on at HEAD (through its own renames, if any). A side branch's rename
# that its merge dropped, or a branch never merged, leads nowhere: it ends no life.
_FILE_AWAY = (f"select {_COMMIT_KEY} from file_changes fc join commits c on c.id = fc.commit_id"
              " where fc.old_file_id = ? and fc.status = 'R' and fc.file_id != fc.old_file_id"
              f" and c.reachable = 1 and {BEFORE} and {RENAMED_INTO_HEAD}"
              f" order by {NEWEST_FIRST}")
# Its own starts and ends, below a limit: (key..., 'rename' when renamed or moved into it,
# 'birth' when created, 'end' when deleted). A copy starts nothing: copied back from the file it
# was renamed to (requests' __version__.py, renamed to __about__.py and copied back the same
# day), its content's past is the older life.
_FILE_LIFE = (f"select {_COMMIT_KEY}, case when fc.status = 'D' then 'end' when fc.status = 'R'"
              " and fc.old_file_id != fc.file_id then 'rename' else 'birth' end"
              " from file_changes fc join commits c on c.id = fc.commit_id where fc.file_id = ?"
              " and fc.status in ('A', 'R', 'D') and c.reachable = 1"
              f" and {BEFORE} order by {NEWEST_FIRST}")
# A symbol's: to one that lives on at HEAD, and not where the old one kept code of its own in
# that commit (a wrapper: its code moved into a new method, it lives on).
_SYMBOL_AWAY = (f"select {_COMMIT_KEY} from symbol_changes sc"
                " join commits c on c.id = sc.commit_id where sc.from_symbol_id = ?"
                f" and sc.symbol_id != sc.from_symbol_id and c.reachable = 1 and {BEFORE}"
                " and not exists (select 1 from symbol_changes o where o.symbol_id ="
                " sc.from_symbol_id and o.commit_id = sc.commit_id and o.change not in"
                " ('renamed', 'moved', 'deleted')) and exists (with recursive"
                " later(id, n) as (select sc.symbol_id, 0 union select r.symbol_id, later.n + 1"
                " from later join symbol_changes r on r.from_symbol_id = later.id"
                " where later.n < 50) select 1 from later join symbols s on s.id = later.id"
                f" where s.alive = 1) order by {NEWEST_FIRST}")
# A method whose code moved into a new one in a commit that kept it (a wrapper now) lives on:
# neither an end nor a birth (symbol_changes.py, commands.md).
_SYMBOL_LIFE = (f"select {_COMMIT_KEY}, case when sc.change = 'deleted' then 'end'"
                " when sc.from_symbol_id != sc.symbol_id then 'rename' else 'birth' end"
                " from symbol_changes sc join commits c on c.id = sc.commit_id"
                " where sc.symbol_id = ? and (sc.change in ('added', 'deleted')"
                " or sc.from_symbol_id != sc.symbol_id) and c.reachable = 1"
                f" and {BEFORE} order by {NEWEST_FIRST}")

Limit = tuple[int, int, str]   # (order time, generation, sha) of a commit, see BEFORE


def _lineage(con: apsw.Connection, start: int, links_sql: str, life_sql: str,
             away_sql: str) -> list[tuple[int, Limit, Limit]]:
    """(identity, limit, floor) for the target and every identity it was renamed or moved from;
    each predecessor contributes only the commits before the link, and from its floor on (see
    _floor). Terminates on cycles (a -> b -> a) because every step back lowers the limit."""
    out: list[tuple[int, Limit, Limit]] = []
    stack: list[tuple[int, Limit]] = [(start, NO_LIMIT)]
    while stack:
        ident, limit = stack.pop()
        floor = _floor(con, ident, limit, life_sql, away_sql)
        if any(i == ident and lim >= limit and low <= floor for i, lim, low in out):
            continue
        out.append((ident, limit, floor))
        for previous, *link in con.execute(links_sql, (ident, *limit, *floor)).fetchall():
            if previous != ident:
                stack.append((previous, tuple(link)))
    return _disjoint(out)


def _disjoint(segments: list[tuple[int, Limit, Limit]]) -> list[tuple[int, Limit, Limit]]:
    """The same identity's overlapping segments (reached along two paths of renames) as one:
    each commit once."""
    out: list[tuple[int, Limit, Limit]] = []
    for ident, limit, floor in sorted(segments, key=lambda s: (s[0], s[2], s[1])):
        if out and out[-1][0] == ident and floor <= out[-1][1]:
            out[-1] = (ident, max(limit, out[-1][1]), out[-1][2])
        else:
            out.append((ident, limit, floor))
    return out


def earlier_identities(con: apsw.Connection, file_id: int | None = None,
                       symbol_id: int | None = None) -> set[int]:
    """The ids a file (or a symbol) had along its lineage, its own included: its paths before
    renames and moves, as history follows them. Not an earlier path that HEAD has again as
    another file (a path renamed away and used again): a filter by id cannot tell its two lives
    apart, and the other file's commits are not this one's."""
    if symbol_id is not None:
        found = {i for i, _, _ in _lineage(con, symbol_id, _SYMBOL_LINKS, _SYMBOL_LIFE,
                                           _SYMBOL_AWAY)}
        alive = {i for (i,) in con.execute(
            f"select id from symbols where alive = 1 and id in ({','.join('?' * len(found))})",
            tuple(found))}
        return found - (alive - {symbol_id})
    if file_id is None:
        return set()
    found = {i for i, _, _ in _lineage(con, file_id, _FILE_LINKS, _FILE_LIFE, _FILE_AWAY)}
    at_head = {i for (i,) in con.execute(
        f"select file_id from head_files where file_id in ({','.join('?' * len(found))})",
        tuple(found))}
    return found - (at_head - {file_id})


def _floor(con: apsw.Connection, ident: int, limit: Limit, life_sql: str,
           away_sql: str) -> Limit:
    """The first commit of the identity's current life below `limit` (inclusive), or NO_FLOOR.

    A name renamed away and used again later (`a.py` became `b.py`, then a new `a.py`; `f`
    renamed to `g` and a new `f` written) is two lives: the older one's commits belong to its
    successor, as in co-change (coupling.Lineage). So is a name deleted and then taken by a
    rename or a move (requests' `tests/test_requests.py`, deleted in 2012, then the name of the
    `test_requests.py` moved there in 2016): the new life has its own ancestry, and the dead one
    is nobody's (`git log --follow` does not list it either). A name deleted and created anew
    keeps one history, as `git log -- PATH` shows it. The current life starts at the first birth
    at or after the newest end that one follows. A rename away that no birth follows (a side
    branch's rename that its merge dropped) cuts nothing. Most identities have one birth: they
    cost one indexed read."""
    life = [(tuple(row[:3]), row[3]) for row in con.execute(life_sql, (ident, *limit))]
    births = [(key, kind) for key, kind in life if kind != "end"]
    if len(births) < 2:
        return NO_FLOOR
    # Aways: no index by the old path for files, so read only for a second birth.
    ends = [(tuple(away), "away") for away in con.execute(away_sql, (ident, *limit))]
    ends += [(key, "end") for key, kind in life if kind == "end"]
    for end, kind in sorted(ends, reverse=True):
        after = [key for key, born in births
                 if key >= end and (kind == "away" or born == "rename")]
        if after:
            return min(after)
    return NO_FLOOR


def born_twice(con: apsw.Connection, level: str, among: set[int] | None = None) -> set[int]:
    """The files (level "file") or symbols whose history may start after an earlier life of
    their name (_floor): born at least twice (created, or renamed or moved into), and either
    renamed away at some point or deleted before a rename into them; of `among` alone, when
    given (a few: indexed reads). One grouped read."""
    only = "" if among is None else f" in ({','.join(map(str, sorted(among)))})"
    if level == "file":
        sql = ("select fc.file_id from file_changes fc join commits c on c.id = fc.commit_id"
               f" where c.reachable = 1{' and fc.file_id' + only if only else ''}"
               " group by fc.file_id"
               " having sum(fc.status = 'A' or (fc.status = 'R' and fc.old_file_id != fc.file_id))"
               " >= 2 and ((sum(fc.status = 'R' and fc.old_file_id != fc.file_id) > 0"
               " and sum(fc.status = 'D') > 0) or exists (select 1 from file_changes o"
               " where o.old_file_id = fc.file_id and o.status = 'R'"
               " and o.file_id != fc.file_id))")
    else:
        sql = ("select sc.symbol_id from symbol_changes sc join commits c on c.id = sc.commit_id"
               f" where c.reachable = 1{' and sc.symbol_id' + only if only else ''}"
               " group by sc.symbol_id"
               " having sum(sc.change = 'added' or (sc.from_symbol_id is not null"
               " and sc.from_symbol_id != sc.symbol_id)) >= 2"
               " and ((sum(sc.from_symbol_id is not null and sc.from_symbol_id != sc.symbol_id)"
               " > 0 and sum(sc.change = 'deleted') > 0) or exists (select 1 from"
               " symbol_changes o where o.from_symbol_id = sc.symbol_id"
               " and o.symbol_id != sc.symbol_id))")
    return {ident for (ident,) in con.execute(sql)}


def floor_at(con: apsw.Connection, level: str, ident: int, limit_key: int, limit_sha: str
             ) -> tuple[int, str] | None:
    """Where the life of `ident` that holds its changes below a limit starts (_floor), both as
    (ORDER_KEY, sha) (a limit of 1 << 62: none); None when it has no earlier life there."""
    limit = NO_LIMIT if limit_key >= 1 << 62 else (limit_key >> 24, limit_key & 16777215,
                                                    limit_sha)
    life, away = (_FILE_LIFE, _FILE_AWAY) if level == "file" else (_SYMBOL_LIFE, _SYMBOL_AWAY)
    floor = _floor(con, ident, limit, life, away)
    return None if floor == NO_FLOOR else (floor[0] * 16777216 + min(floor[1], 16777215),
                                           floor[2])


def _newest_first(entries: list[tuple[int, HistoryEntry]]) -> list[HistoryEntry]:
    """Entries keyed by ORDER_KEY in history's order (see ORDER_KEY); ties by sha."""
    entries.sort(key=lambda pair: (pair[0], pair[1].commit.sha), reverse=True)
    return [entry for _, entry in entries]


def commits_touching(con, file_ids: list[int]) -> list[tuple]:
    """The reachable non-merge commits that changed any of the files: COMMIT_COLUMNS, then the
    body, the commit's id and the file's id (a row per commit and file)."""
    if not file_ids:
        return []
    marks = ",".join("?" * len(file_ids))
    return con.execute(
        f"select {COMMIT_COLUMNS}, c.body, c.id, fc.file_id from file_changes fc"
        f" join commits c on c.id = fc.commit_id where fc.file_id in ({marks})"
        " and c.reachable = 1 and c.is_merge = 0", file_ids).fetchall()


def explained_commits(con, min_body: int, kinds: tuple[str, ...], limit: int) -> list[tuple]:
    """The newest reachable non-merge commits of these kinds whose body has at least `min_body`
    characters: COMMIT_COLUMNS, then the body."""
    return con.execute(
        f"select {COMMIT_COLUMNS}, c.body from commits c where c.reachable = 1 and c.is_merge = 0"
        f" and length(c.body) >= ? and c.kind in ({','.join('?' * len(kinds))})"
        " order by c.author_time desc, c.sha limit ?", (min_body, *kinds, limit)).fetchall()
