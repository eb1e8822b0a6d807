"""Commits related to a commit or a symbol: those that touch it, those whose messages say nearly
the same thing (vector neighbours), and those in the same area (spectral cluster)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from cortex_core.errors import CortexError, NotFound
from cortex_core.query.history import COMMIT_COLUMNS, CommitRef, commit_ref, history
from cortex_core.query.targets import parse_target

_SHA = re.compile(r"^[0-9a-fA-F]{4,40}$")
NEIGHBOURS = 100
MAX_SEEDS = 500


@dataclass(frozen=True)
class RelatedCommit:
    commit: CommitRef
    reason: str                 # "touches it", "similar message", "same area"
    similarity: float | None    # cosine similarity of the closest segments, when known
    area: str | None            # the shared area's label


@dataclass(frozen=True)
class RelatedCommits:
    subject: str                # what was asked about: a short sha or PATH::SYMBOL
    touching: list[RelatedCommit]
    similar: list[RelatedCommit]
    same_area: list[RelatedCommit]
    semantic: bool


def related_commits(con, target: str, *, embedder=None, top_k: int = 10,
                    relative_to=None, revision=None) -> RelatedCommits:
    """`target` is a commit (a sha or a unique prefix) or PATH / PATH::SYMBOL / PATH:LINE.
    `relative_to(spec)` maps a parsed target's path to the repository (the CLI's cwd handling).
    `revision(text)`: the full sha git resolves `text` to (`HEAD~1`, a branch, a tag), or None;
    asked only of a target that names no indexed file."""
    text = target.strip()
    is_file = con.execute("select 1 from files where path = ?", (text,)).fetchone()
    if not is_file and not _SHA.match(text) and "::" not in text and revision is not None:
        text = revision(text) or text
    if _SHA.match(text) and not is_file:
        cid = _commit_id(con, text)   # a hex word that is no file: a commit, or a clear error
        seeds = [cid]
        label = con.execute("select substr(sha, 1, 10) from commits where id = ?", (cid,)).get
        touching = [RelatedCommit(_ref(con, cid), "the commit itself", 1.0, None)]
    else:
        spec = parse_target(target)
        if relative_to is not None:
            spec = relative_to(spec)
        found = history(con, spec)
        label = found.target.label
        # The newest commits are enough of a picture (and keep SQL parameter lists bounded).
        seeds = [_commit_id(con, e.commit.sha) for e in found.entries[:MAX_SEEDS]]
        touching = [RelatedCommit(e.commit, "touches it", None, None)
                    for e in found.entries[:top_k]]
    seed_items = [r[0] for r in con.execute(
        f"select id from items where commit_id in ({','.join('?' * len(seeds))})", seeds)] \
        if seeds else []
    exclude = set(seeds)
    similar = _similar(con, seed_items, exclude, top_k) if embedder is not None else []
    exclude |= {_commit_id(con, r.commit.sha) for r in similar}
    same_area = _same_area(con, seed_items, exclude, top_k)
    return RelatedCommits(label, touching, similar, same_area, embedder is not None)


def _commit_id(con, sha: str, required: bool = True) -> int | None:
    rows = con.execute("select id from commits where sha >= ? and sha < ? and reachable = 1"
                       " limit 2", (sha.lower(), sha.lower() + "g")).fetchall()
    if len(rows) == 1:
        return rows[0][0]
    if not required:
        return None
    if not rows:
        raise NotFound(f"no indexed commit {sha}")
    raise CortexError(f"the commit prefix {sha} is ambiguous; give more characters")


def _ref(con, commit_id: int) -> CommitRef:
    return commit_ref(con.execute(f"select {COMMIT_COLUMNS} from commits c where c.id = ?",
                                  (commit_id,)).fetchone())


def _similar(con, seed_items: list[int], exclude: set[int], top_k: int) -> list[RelatedCommit]:
    """Commits whose segments are nearest to any seed segment (best similarity per commit)."""
    vids = [r[0] for r in con.execute(
        f"select distinct vector_id from items where id in ({','.join('?' * len(seed_items))})"
        " and vector_id > 0", seed_items)] if seed_items else []
    if not vids or not con.execute("select 1 from sqlite_master where name = 'item_vectors'"
                                   ).fetchone():
        return []
    nearest: dict[int, float] = {}     # vector -> its best similarity to any seed
    for vid in vids[:50]:       # a long history: its 50 first segments are enough of a picture
        blob = con.execute("select embedding from item_vectors where rowid = ?", (vid,)).get
        for other, distance in con.execute(
                "select rowid, distance from item_vectors where embedding match ? and k = ?",
                (blob, NEIGHBOURS)):
            nearest[other] = max(nearest.get(other, -1.0), 1.0 - distance)
    best: dict[int, float] = {}
    # One pass over the items for all the neighbours: items.vector_id has no index, and a lookup
    # per neighbour (up to 5,000) scanned the table each time, two seconds on 6k commits.
    sha: dict[int, str] = {}
    for vid, cid, commit_sha in con.execute(
            "select i.vector_id, i.commit_id, c.sha from items i join commits c on c.id ="
            " i.commit_id where c.reachable = 1 and i.vector_id in (select value from"
            " json_each(?))", (json.dumps(sorted(nearest)),)):
        if cid not in exclude:
            best[cid] = max(best.get(cid, -1.0), nearest[vid])
            sha[cid] = commit_sha
    # Equal messages embed alike: their ties go by sha, not by ids (which follow the order an
    # index run's workers delivered commits in).
    ranked = sorted(best.items(), key=lambda kv: (-round(kv[1], 9), sha[kv[0]]))[:top_k]
    return [RelatedCommit(_ref(con, cid), "similar message", round(sim, 4), None)
            for cid, sim in ranked]


def _same_area(con, seed_items: list[int], exclude: set[int], top_k: int) -> list[RelatedCommit]:
    """The newest commits of the seeds' dominant area."""
    if not seed_items:
        return []
    row = con.execute(
        f"select i.cluster, count(*) n from items i where i.id in ({','.join('?' * len(seed_items))})"
        " and i.cluster >= 0 group by i.cluster order by n desc, i.cluster limit 1", seed_items
    ).fetchone()
    if row is None:
        return []
    cluster = row[0]
    label = con.execute("select label from clusters where id = ?", (cluster,)).get
    out = []
    for (cid,) in con.execute(
            "select distinct i.commit_id from items i join commits c on c.id = i.commit_id"
            " where i.cluster = ? and c.reachable = 1 order by c.author_time desc, c.sha",
            (cluster,)):
        if cid in exclude:
            continue
        out.append(RelatedCommit(_ref(con, cid), "same area", None, label))
        if len(out) == top_k:
            break
    return out
