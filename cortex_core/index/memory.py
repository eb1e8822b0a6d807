"""Memory items: what search, clusters and context packs draw from, kept in step with the history.

After the commits of a run are stored, every commit without items gets its segments, every document
whose blob changed at HEAD gets its sections again, and every item without a vector is embedded —
identical texts once, in batches — into the `item_vectors` vec0 table. Item text is redacted before
it is stored, so the lexical index, the vectors and everything rendered from them never hold a
secret that the history contained.
"""

from __future__ import annotations

import json
import re
from typing import Callable, Iterable

from cortex_core.memory.embeddings import (BATCH, Embedder, ModelUnavailable, local_model_path,
                                          text_hash)
from cortex_core.text.redact import redact, redact_pair
from cortex_core.memory.segments import Section, commit_segments, doc_sections, is_doc_path
from cortex_core.store.store import get_meta, hand_over, set_meta
from cortex_core.memory.tokens import CODE_PATH_WORDS, expand, path_words

Progress = Callable[[int, int, str], None]
MAX_QUALNAMES = 100     # symbols of one item in its code field (a mass rename names thousands)
NO_VECTOR = 0           # vector_id of an item whose text has no known token (an all-zero vector)


# Words that every merge shares and numbers that mean nothing to a static model: left out of the
# text a vector stands for (they stay in the lexical index). On the retrieval benchmark this took
# vectors alone from MRR@10 0.24 to 0.38 (scrapy) and 0.26 to 0.34 (requests).
_MERGE_LINE = re.compile(r"^Merge (?:pull request #\d+ from \S+|branch '[^'\n]*'(?: of \S+)?"
                         r"(?: into \S+)?|remote-tracking branch \S+(?: into \S+)?)[ \t]*", re.M)
_NOISE = re.compile(r"\(?#\d+\)?|\bhttps?://\S+")


EMBED_TEXT_VERSION = "2"   # bump when embed_text changes: stored hashes and vectors are redone


def embed_text(kind: str, segment: int, title: str, body: str) -> str:
    """The text a vector stands for: a list item alone (its commit's subject would make all the
    segments of a commit alike), otherwise title and body; merge boilerplate, issue numbers and
    URLs dropped."""
    text = body if kind == "commit" and segment > 0 else (f"{title}\n{body}" if body else title)
    if kind == "commit":
        text = _NOISE.sub("", _MERGE_LINE.sub("", text)).strip()
    return text


def insert_item(con, *, kind: str, title: str, body: str, time: int, signal: str | None,
                files: Iterable[int] = (), symbols: Iterable[int] = (), paths: Iterable[str] = (),
                commit_id: int | None = None, segment: int = 0, file_id: int | None = None,
                blob: str | None = None, note_id: int | None = None, line: int | None = None,
                end_line: int | None = None, qualnames: Iterable[str] = (),
                code_words: str = "", indexed_body: str | None = None) -> int:
    """`indexed_body`: what the lexical index reads as its body, when not `body` (a commit's head
    segment is searched by its whole message)."""
    title, body = redact_pair(title, body)
    searched = body if indexed_body is None else redact(indexed_body)
    digest = text_hash(embed_text(kind, segment, title, body))
    # Not `returning id`: a statement with RETURNING opens a statement savepoint, at which FTS5
    # writes out the terms it holds for the lexical index, so each item's became a segment of
    # its own (sympy's 65k commit items: 12 s of inserts instead of 1).
    con.execute(
        "insert into items(kind, commit_id, segment, file_id, blob, note_id, title, body, line,"
        " end_line, time, signal, text_hash) values (?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (kind, commit_id, segment, file_id, blob, note_id, title, body, line, end_line, time,
         signal, digest))
    item_id = con.last_insert_rowid()
    con.executemany("insert or ignore into item_files(item_id, file_id) values (?, ?)",
                    ((item_id, f) for f in dict.fromkeys(files)))
    con.executemany("insert or ignore into item_symbols(item_id, symbol_id) values (?, ?)",
                    ((item_id, s) for s in dict.fromkeys(symbols)))
    con.execute("insert into items_fts(rowid, title, body, terms, paths) values (?,?,?,?,?)",
                (item_id, title, searched, expand(title + "\n" + searched), path_words(paths)))
    names = " ".join(dict.fromkeys(qualnames))
    code_paths = path_words(paths, CODE_PATH_WORDS)
    if names or code_words or code_paths:
        con.execute("insert into items_code(rowid, symbols, code, paths) values (?,?,?,?)",
                    (item_id, _with_parts(names), _with_parts(redact(code_words)), code_paths))
    return item_id


def _with_parts(text: str) -> str:
    """The text and the spoken parts of its identifiers (FTS5 keeps `getUserById` whole)."""
    parts = expand(text)
    return f"{text} {parts}" if parts else text


def delete_items(con, where: str, params: tuple) -> int:
    """Delete the items selected by `where` (a condition on `items`) with their index rows."""
    rows = con.execute(f"select id, vector_id from items where {where}", params).fetchall()
    ids = [r[0] for r in rows]
    for table in ("item_files", "item_symbols"):
        con.executemany(f"delete from {table} where item_id = ?", ((i,) for i in ids))
    con.executemany("delete from items_fts where rowid = ?", ((i,) for i in ids))
    con.executemany("delete from items_code where rowid = ?", ((i,) for i in ids))
    con.executemany("delete from items where id = ?", ((i,) for i in ids))
    # A vector no item stands for any more would take a neighbour's place in every search.
    orphans = [v for v in {r[1] for r in rows if r[1]}
               if not con.execute("select 1 from items where vector_id = ? limit 1", (v,)).fetchone()]
    if orphans and con.execute("select 1 from sqlite_master where name = 'item_vectors'").fetchone():
        con.executemany("delete from item_vectors where rowid = ?", ((v,) for v in orphans))
        vectors_changed(con)
    con.executemany("delete from vectors where id = ?", ((v,) for v in orphans))
    return len(ids)


# -- commits -----------------------------------------------------------------------------------


def add_commit_items(con, progress: Progress | None = None) -> int:
    """Segments for every commit that has none yet. Returns the number of items added."""
    # In history's order (seq), not the commits' ids: those follow the order worker processes
    # delivered them in, and the items' order is the areas' (a seeded clustering of them in id
    # order): two runs of one history gave 2,424 of requests' 7,658 items other areas.
    pending = con.execute(
        "select id, subject, body, kind, author_time, code_words from commits c"
        " where not exists (select 1 from items i where i.commit_id = c.id)"
        " order by seq").fetchall()
    added = 0
    for done, (commit_id, subject, body, kind, when, code_words) in enumerate(pending, 1):
        if progress and done % 500 == 0:
            progress(done, len(pending), "commit messages")
        hand_over(con)   # a note waits: commit what is done (sympy's 65k items take 30 s)
        # By name: the tables' keys would give the ids' order, and a segment keeps the first of
        # its paths' words and of its symbols (PATH_WORDS, MAX_QUALNAMES).
        files = con.execute("select f.id, f.path from file_changes fc join files f"
                            " on f.id = fc.file_id where fc.commit_id = ? order by f.path",
                            (commit_id,)).fetchall()
        syms = con.execute(
            "select s.id, f.path, s.qualname, s.name from symbol_changes sc"
            " join symbols s on s.id = sc.symbol_id join files f on f.id = s.file_id"
            " where sc.commit_id = ? order by f.path, s.qualname", (commit_id,)).fetchall()
        file_ids = {path: fid for fid, path in files}
        sym_ids = {(path, qual): sid for sid, path, qual, _ in syms}
        segments = commit_segments(subject, body, [p for _, p in files],
                                   [(p, q, n) for _, p, q, n in syms])
        for number, seg in enumerate(segments):
            text = seg.text
            if number == 0:  # the head segment: subject as title, the rest as body
                text = text[len(subject):].strip("\n")
            insert_item(con, kind="commit", title=subject, body=text, time=when, signal=kind,
                        commit_id=commit_id, segment=number,
                        files=(file_ids[p] for p in seg.files if p in file_ids),
                        symbols=(sym_ids[s] for s in seg.symbols if s in sym_ids),
                        paths=seg.files, qualnames=(q for _, q in seg.symbols[:MAX_QUALNAMES]),
                        code_words=code_words if number == 0 else "",
                        indexed_body=body if number == 0 and len(segments) > 1 else None)
            added += 1
    return added


COMPACT_SHARE = 0.10   # items added, of all, past which the lexical indexes are merged whole
COMPACT_MIN = 1_000


def compact_lexical(con, added: int) -> bool:
    """Merge the lexical indexes into one segment each after a run that added many items.
    FTS5 merges the segments it writes as it goes, a step at a time, so a long run leaves
    merges half done beside their inputs: on sympy's 65k commit items, 11 MB more of index
    than merged whole, 0.7-0.9 s to merge (the pages it frees stay in the file, for what the
    store writes next: the vectors, with a model)."""
    if added < COMPACT_MIN or added < COMPACT_SHARE * con.execute(
            "select count(*) from items").get:
        return False
    for table in ("items_fts", "items_code"):
        con.execute(f"insert into {table}({table}) values ('optimize')")
    return True


# -- documents ---------------------------------------------------------------------------------


def refresh_docs(con, read_blob: Callable[[str], bytes | None]) -> int:
    """Sections of every document at HEAD whose blob changed since they were cut; sections of
    documents gone from HEAD are dropped. Returns the number of items added."""
    # By path: the items' order is the areas' (and head_files' key, the file ids, follows the
    # order an index run's workers delivered commits in).
    current = {fid: (path, blob) for fid, path, blob in con.execute(
        "select h.file_id, f.path, h.blob from head_files h join files f on f.id = h.file_id"
        " where h.skip_reason is null order by f.path")}
    docs = {fid: pb for fid, pb in current.items() if is_doc_path(pb[0])}
    indexed = dict(con.execute("select file_id, blob from items where kind = 'doc' group by file_id"))
    added = 0
    for fid in indexed.keys() - docs.keys():
        delete_items(con, "kind = 'doc' and file_id = ?", (fid,))
    for fid, (path, blob) in docs.items():
        if indexed.get(fid) == blob:
            continue
        data = read_blob(blob)
        if data is None:
            delete_items(con, "kind = 'doc' and file_id = ?", (fid,))
            continue
        when = con.execute("select max(c.author_time) from file_changes fc join commits c"
                           " on c.id = fc.commit_id where fc.file_id = ? and c.reachable = 1",
                           (fid,)).get or 0
        added += _recut(con, fid, path, blob, when,
                        doc_sections(path, data.decode("utf-8", "replace")))
    return added


def _recut(con, fid: int, path: str, blob: str, when: int, sections: list[Section]) -> int:
    """A changed document's sections: one whose text is unchanged keeps its item (its vector,
    area and search rows) and gets its new place and time; the others are added or dropped.
    A changelog grows by an entry at a time: cutting all of it again made every update that
    touched one (a thousand sections) insert, embed and place a thousand items."""
    kept: dict[tuple[str, str], list[int]] = {}
    for item, title, body in con.execute("select id, title, body from items"
                                         " where kind = 'doc' and file_id = ? order by id", (fid,)):
        kept.setdefault((title, body), []).append(item)
    added = 0
    for section in sections:
        # Stored text is redacted; redaction is idempotent, so a section equal to a stored text
        # redacts to it: only a section that is not (a secret masked, or new) is redacted to
        # be looked up (redacting a thousand unchanged entries took most of this step).
        same = kept.get((section.title, section.text)) or \
            kept.get(redact_pair(section.title, section.text))
        if same:
            con.execute("update items set blob = ?, line = ?, end_line = ?, time = ? where id = ?",
                        (blob, section.line, section.end_line, when, same.pop(0)))
        else:
            _insert_section(con, fid, path, blob, when, section)
            added += 1
    gone = [item for items in kept.values() for item in items]
    if gone:
        delete_items(con, "id in (select value from json_each(?))", (json.dumps(gone),))
    return added


def _insert_section(con, fid: int, path: str, blob: str, when: int, section: Section) -> None:
    insert_item(con, kind="doc", title=section.title, body=section.text, time=when, signal="doc",
                file_id=fid, blob=blob, line=section.line, end_line=section.end_line,
                files=(fid,), paths=(path,))


# -- vectors -----------------------------------------------------------------------------------


def prepare_vectors(con, embedder: Embedder) -> str | None:
    """Make the vector table fit `embedder`. When another model (or width) wrote the vectors, drop
    them all: they are re-embedded, never mixed. Returns the previous model's name if dropped."""
    previous = get_meta(con, "embed_model")
    if vectors_current(con, embedder.name, embedder.dim, embedder.fingerprint):
        return None
    _drop(con)
    if get_meta(con, "embed_text_version") != EMBED_TEXT_VERSION:
        _rehash(con)
    con.execute(f"create virtual table item_vectors using vec0("
                f"embedding float[{embedder.dim}] distance_metric=cosine)")
    set_meta(con, "embed_model", embedder.name)
    set_meta(con, "embed_dim", str(embedder.dim))
    set_meta(con, "embed_fingerprint", embedder.fingerprint)
    con.execute("delete from meta where key = 'embed_off_reason'")
    return previous or None


def keep_vocabulary(con, name: str) -> None:
    """A copy of the model's tokenizer vocabulary in the store, when a query can use it
    (memory/wordpiece.py); a no-op when the copy is that of the tokenizer file on disk."""
    from cortex_core.memory.wordpiece import store_vocabulary
    try:
        folder = local_model_path(name)
    except ModelUnavailable:
        return
    store_vocabulary(con, folder)


def vectors_current(con, name: str, dim: int | None, fingerprint: str) -> bool:
    """Whether the stored vectors were made by this model (name, width, files) from texts built
    the way embed_text builds them now. `dim` None: not checked (the model is not loaded)."""
    return (get_meta(con, "embed_model") == name
            and (dim is None or get_meta(con, "embed_dim") == str(dim))
            and get_meta(con, "embed_fingerprint") == fingerprint
            and get_meta(con, "embed_text_version") == EMBED_TEXT_VERSION
            and con.execute("select 1 from sqlite_master where name = 'item_vectors'")
            .fetchone() is not None)


def _rehash(con) -> None:
    rows = con.execute("select id, kind, segment, title, body from items").fetchall()
    con.executemany("update items set text_hash = ? where id = ?",
                    ((text_hash(embed_text(k, n, t, b)), i) for i, k, n, t, b in rows))
    set_meta(con, "embed_text_version", EMBED_TEXT_VERSION)


def _drop(con) -> None:
    """No vectors, and areas computed from them are recomputed."""
    con.execute("drop table if exists item_vectors")
    con.execute("drop table if exists query_vocab")
    con.execute("delete from meta where key = 'query_vocab'")
    con.execute("delete from vectors")
    con.execute("update items set vector_id = null")
    con.execute("delete from meta where key in ('areas_basis', 'embed_fingerprint')")
    vectors_changed(con)


def vectors_changed(con) -> None:
    """A new token for the vectors: a server's copy of them in memory is stale
    (memory/vector_matrix.py). Random, so that a rebuilt store never repeats an old one."""
    import secrets
    set_meta(con, "vectors_version", secrets.token_hex(8))


def drop_vectors(con, reason: str) -> None:
    """Semantic search turned off on purpose: no vectors, and the reason recorded."""
    if get_meta(con, "embed_model") or con.execute(
            "select 1 from sqlite_master where name = 'item_vectors'").fetchone():
        _drop(con)
        con.execute("delete from meta where key in ('embed_model', 'embed_dim')")
    set_meta(con, "embed_off_reason", reason)


def pending_vectors(con) -> int:
    return con.execute("select count(*) from items where vector_id is null").get


def embed_missing(con, embedder: Embedder, progress: Progress | None = None,
                  batch: int = BATCH) -> int:
    """Embed the items without a vector, each distinct text once, one transaction per batch.
    Returns the number of distinct texts encoded."""
    rows = con.execute("select id, kind, segment, title, body, text_hash from items"
                       " where vector_id is null").fetchall()
    by_hash: dict[str, list[int]] = {}
    texts: dict[str, str] = {}
    for item_id, kind, segment, title, body, digest in rows:
        by_hash.setdefault(digest, []).append(item_id)
        texts.setdefault(digest, embed_text(kind, segment, title, body))
    known = dict(con.execute("select text_hash, id from vectors"))
    with con:
        for digest in [d for d in by_hash if d in known]:
            _point(con, by_hash.pop(digest), known[digest])
    todo = list(by_hash)
    for start in range(0, len(todo), batch):
        chunk = todo[start:start + batch]
        vectors = embedder.unit_vectors([texts[d] for d in chunk], con)
        with con:
            for digest, vector in zip(chunk, vectors):
                if vector is None:    # nothing to compare, or damaged
                    _point(con, by_hash[digest], NO_VECTOR)
                    continue
                vid = con.execute("insert into vectors(text_hash) values (?) returning id",
                                  (digest,)).get
                con.execute("insert into item_vectors(rowid, embedding) values (?, ?)",
                            (vid, vector))
                _point(con, by_hash[digest], vid)
            vectors_changed(con)
        if progress:
            progress(min(start + batch, len(todo)), len(todo), "texts embedded")
    return len(todo)


def _point(con, item_ids: list[int], vector_id: int) -> None:
    con.executemany("update items set vector_id = ? where id = ?",
                    ((vector_id, i) for i in item_ids))
