"""The store's schema, as an append-only list of migrations: entry N brings version N to N+1.

Never edit a migration that has shipped; add one. A migration that needs more than SQL to fill
what it adds in an existing store has a Python step in BACKFILLS. The vector table
(`item_vectors`, vec0) is not here: its width is the embedding model's, so it is created when a
model is first used; nor is `query_vocab`, the model tokenizer's vocabulary (memory/wordpiece.py),
which exists only for a tokenizer of BERT's kind.
"""

MIGRATIONS: list[str] = [
    # 1: history at file and symbol level.
    """
    create table meta(key text primary key, value text not null) without rowid;

    -- seq: ingestion order, parents before children; it orders lineage (renames, moves).
    -- reachable: 0 once a rewrite (rebase, force-push, reset) leaves the commit behind.
    create table commits(
        id integer primary key,
        sha text not null unique,
        seq integer not null,
        parents text not null,
        author_name text not null,
        author_email text not null,
        author_time integer not null,
        author_offset integer not null,
        committer_time integer not null,
        subject text not null,
        body text not null,
        kind text not null,
        is_merge integer not null,
        reachable integer not null default 1,
        files_changed integer not null default 0,
        lines_added integer not null default 0,
        lines_deleted integer not null default 0
    );
    create index commits_time on commits(author_time);

    create table files(
        id integer primary key,
        path text not null unique,
        language text
    );

    -- One row per file a commit changed. old_file_id is set for renames. added/deleted are null
    -- when the file was too large to diff. skip_reason is set when the file is recorded at file
    -- level only (binary, vendored, minified, generated, lockfile, too large...).
    create table file_changes(
        commit_id integer not null references commits(id),
        file_id integer not null references files(id),
        old_file_id integer references files(id),
        status text not null,
        added integer,
        deleted integer,
        skip_reason text,
        primary key (commit_id, file_id)
    ) without rowid;
    create index file_changes_file on file_changes(file_id, commit_id);

    -- Zero-context hunks, as git reports them (1-based starts).
    create table hunks(
        commit_id integer not null,
        file_id integer not null,
        old_start integer not null,
        old_lines integer not null,
        new_start integer not null,
        new_lines integer not null
    );
    create index hunks_file on hunks(file_id, commit_id);

    -- A symbol is identified by its file and qualified name; it lives on when deleted (alive = 0)
    -- so that its history and a later re-creation share one identity.
    create table symbols(
        id integer primary key,
        file_id integer not null references files(id),
        qualname text not null,
        name text not null,
        kind text not null,
        alive integer not null default 0,
        unique (file_id, qualname)
    );
    create index symbols_name on symbols(name);

    -- Where a live symbol is at HEAD (several rows for merged duplicates such as overloads).
    create table symbol_spans(
        symbol_id integer not null references symbols(id),
        start_line integer not null,
        end_line integer not null
    );
    create index symbol_spans_symbol on symbol_spans(symbol_id);

    -- The precomputed `git log -L` of every symbol. change: added, modified, deleted, renamed,
    -- moved. from_symbol_id links a rename or move to the symbol it came from.
    create table symbol_changes(
        symbol_id integer not null references symbols(id),
        commit_id integer not null references commits(id),
        change text not null,
        added integer not null,
        deleted integer not null,
        from_symbol_id integer references symbols(id),
        primary key (symbol_id, commit_id)
    ) without rowid;
    create index symbol_changes_commit on symbol_changes(commit_id);
    create index symbol_changes_from on symbol_changes(from_symbol_id);

    -- The files of the indexed HEAD tree, with the blob last parsed for each.
    create table head_files(
        file_id integer primary key references files(id),
        blob text not null,
        skip_reason text
    );
    """,
    # 2: memory — searchable items (commit segments, doc sections, notes), notes, clusters.
    """
    -- Notes: bi-temporal. valid_from/valid_until: when what the note says holds (valid time);
    -- recorded_at: when it was written here (transaction time). A superseded note keeps its row,
    -- gets valid_until and superseded_by, and never reaches search results or context packs.
    -- anchor_commit/anchor_hash: HEAD and the target's body hash (a symbol's text, a file's blob)
    -- when the note was written; a different hash today means the note may be stale.
    create table notes(
        id integer primary key,
        target text not null,
        path text,
        qualname text,
        text text not null,
        author text,
        valid_from integer not null,
        valid_until integer,
        recorded_at integer not null,
        superseded_by integer references notes(id),
        anchor_commit text,
        anchor_hash text
    );
    create index notes_path on notes(path);

    -- Memory items: the searchable units. kind: commit (one or more segments of a commit message),
    -- doc (a section of a document at HEAD, split at headings), note. body is already redacted.
    -- time orders recency: the commit's author time, the document's last change, the note's
    -- valid_from. signal: a commit's kind (fix, feat, ...). vector_id: the row of its text in
    -- item_vectors, shared by identical texts. cluster: the spectral cluster, if computed.
    create table items(
        id integer primary key,
        kind text not null,
        commit_id integer references commits(id),
        segment integer not null default 0,
        file_id integer references files(id),
        blob text,
        note_id integer references notes(id),
        title text not null,
        body text not null,
        line integer,
        end_line integer,
        time integer not null,
        signal text,
        text_hash text not null,
        vector_id integer,
        cluster integer
    );
    create index items_commit on items(commit_id);
    create index items_file on items(file_id) where kind = 'doc';
    create index items_note on items(note_id);
    create index items_hash on items(text_hash);
    create index items_unembedded on items(vector_id) where vector_id is null;

    -- The files and symbols an item is about (a commit segment names them; a doc section is its
    -- file; a note is its target).
    create table item_files(
        item_id integer not null references items(id),
        file_id integer not null references files(id),
        primary key (item_id, file_id)
    ) without rowid;
    create index item_files_file on item_files(file_id);
    create table item_symbols(
        item_id integer not null references items(id),
        symbol_id integer not null references symbols(id),
        primary key (item_id, symbol_id)
    ) without rowid;
    create index item_symbols_symbol on item_symbols(symbol_id);

    -- Lexical index: rowid = items.id; terms holds the code-aware expansion (getUserById ->
    -- get user by id) so that both spellings match; paths the item's files (split on / . _ -).
    create virtual table items_fts using fts5(title, body, terms, paths,
        tokenize = 'porter unicode61 remove_diacritics 2');

    -- One vector per distinct text (text_hash), whatever the number of items that share it.
    create table vectors(
        id integer primary key,
        text_hash text not null unique
    );

    create table clusters(
        id integer primary key,
        size integer not null,
        label text not null,
        terms text not null,
        paths text not null,
        first_time integer,
        last_time integer,
        centroid blob
    );
    """,
    # 3: structure at HEAD (and modified files of the working tree): definitions, references,
    # imports, inheritance, tests, resolved to their targets.
    """
    -- What the structure pass last read for a file: HEAD's blob, or the working tree's content
    -- (worktree = 1, blob = its git hash). skip_reason: too large, generated, unsupported...
    create table struct_files(
        file_id integer primary key references files(id),
        blob text not null,
        language text,
        worktree integer not null default 0,
        is_test integer not null default 0,
        error_nodes integer not null default 0,
        skip_reason text
    );

    -- Definitions in the version read (HEAD or working tree).
    create table defs(
        file_id integer not null references files(id),
        qualname text not null,
        name text not null,
        kind text not null,
        start_line integer not null,
        end_line integer not null,
        is_test integer not null default 0,
        primary key (file_id, qualname)
    ) without rowid;
    create index defs_name on defs(name);

    -- References as read: calls, inheritance, other uses, and imports (kind = 'import'; module
    -- and level set). scope: the innermost enclosing definition (null: module level).
    -- status: resolved, ambiguous (several candidate targets), unresolved, external (a package
    -- outside the repository).
    create table refs(
        id integer primary key,
        file_id integer not null references files(id),
        scope text,
        kind text not null,
        name text,
        qualifier text,
        module text,
        level integer not null default 0,
        alias text,
        owner text,
        line integer not null,
        status text not null default 'unresolved'
    );
    create index refs_file on refs(file_id);
    create index refs_name on refs(name);

    -- Where a reference points: one row when resolved (confidence from how it was resolved),
    -- one row per candidate when ambiguous (confidence shared), none when unresolved.
    -- dst_qualname null: the file itself (a module import).
    create table edges(
        ref_id integer not null references refs(id),
        dst_file_id integer not null references files(id),
        dst_qualname text,
        confidence real not null
    );
    create index edges_ref on edges(ref_id);
    create index edges_dst on edges(dst_file_id, dst_qualname);
    """,
    # 4: identities with tags (overloads are distinct symbols), change kinds (body, signature,
    # docs, reformatted, rescoped) and the confidence of a rename or move pairing. Stores written
    # before it hold other identities: the indexer rebuilds their history in place (notes kept).
    """
    alter table symbol_changes add column confidence real;
    insert or replace into meta(key, value) select 'rebuild_history', '4'
        where exists (select 1 from commits);
    """,
    # 5: line blame through merges (every file's version graph, see versions.py) and an order of
    # history that does not depend on how the commits were indexed.
    """
    -- generation: 1 + the largest generation among the commit's parents (1 for a root): above
    -- every ancestor's, whatever order commits were indexed in; it orders commits of equal time,
    -- and lineage (renames, moves). Existing stores get it from the backfill (BACKFILLS).
    -- versioned: 1 once the commit's file versions are in file_versions.
    alter table commits add column generation integer not null default 0;
    alter table commits add column versioned integer not null default 0;
    create index commits_unversioned on commits(id) where versioned = 0;

    -- Merges carry no file_changes (their changes are the merged commits'); for line blame each
    -- file the merge's result differs in from its first parent has a row here. status and
    -- old_file_id: against the first parent (A M D R T). via: the first parent (0-based) whose
    -- version is identical (git blame passes the whole file to it), via_file_id its path there;
    -- null when the merge changed the file against every parent: then merge_edges has a row per
    -- parent that has the file, and lines is the merge's line count.
    create table merge_files(
        commit_id integer not null references commits(id),
        file_id integer not null references files(id),
        old_file_id integer references files(id),
        status text not null,
        via integer,
        via_file_id integer references files(id),
        lines integer,
        primary key (commit_id, file_id)
    ) without rowid;
    create index merge_files_file on merge_files(file_id, commit_id);

    -- A merge's diff of a file against one parent's version (old_file_id: its path there), with
    -- its hunks in merge_hunks; skip_reason: why the hunks were not recorded.
    create table merge_edges(
        commit_id integer not null references commits(id),
        file_id integer not null references files(id),
        parent integer not null,
        old_file_id integer not null references files(id),
        skip_reason text,
        primary key (commit_id, file_id, parent)
    ) without rowid;
    create table merge_hunks(
        commit_id integer not null,
        file_id integer not null,
        parent integer not null,
        old_start integer not null,
        old_lines integer not null,
        new_start integer not null,
        new_lines integer not null
    );
    create index merge_hunks_edge on merge_hunks(file_id, commit_id, parent);

    -- The version graph of every file: a row per commit that made a version of the file (a
    -- non-merge that changed it, a merge that changed it against every parent) and parent whose
    -- version it changed; prev_commit_id: the commit that made that parent's version (null when
    -- unknown), prev_file_id: the file's path there. parent null: the file was created there, with
    -- `lines` lines. skip_reason: the diff was not recorded (the edge cannot be crossed). merge:
    -- the hunks are in merge_hunks, not hunks (kept here: reading it from commits costs more
    -- than the rest of a step of the walk).
    create table file_versions(
        file_id integer not null references files(id),
        commit_id integer not null references commits(id),
        parent integer,
        prev_commit_id integer references commits(id),
        prev_file_id integer references files(id),
        skip_reason text,
        lines integer,
        merge integer not null default 0
    );
    create index file_versions_node on file_versions(file_id, commit_id);

    -- The commit whose version of each file the indexed HEAD has (meta versions_head: which
    -- HEAD), and the file's path there (a merge may have taken it whole from a renamed file).
    create table head_versions(
        file_id integer primary key references files(id),
        commit_id integer not null references commits(id),
        version_file_id integer not null references files(id)
    );

    -- Merges indexed before this migration have no merge_files: the indexer reads them again.
    insert or replace into meta(key, value) select 'reread_merges', '5'
        where exists (select 1 from commits where is_merge = 1);
    """,
    # 6: history as `git log -- FILE` simplifies it (simplified.py): the file changes a merge
    # dropped (it kept the file as its other parent had it), left out of histories.
    """
    -- head_file_id: the file at the indexed HEAD whose version graph was walked.
    create table pruned_changes(
        commit_id integer not null references commits(id),
        file_id integer not null references files(id),
        head_file_id integer not null references files(id),
        primary key (commit_id, file_id)
    ) without rowid;
    create index pruned_changes_head on pruned_changes(head_file_id);
    -- The version of each HEAD file that pruned_changes was computed from ("commit:file").
    create table pruned_heads(
        file_id integer primary key references files(id),
        version text not null
    );
    """,
    # 7: search reads the code: each commit's words of its changed source lines, and a lexical
    # index of the code an item is about (its symbols, those words). Stores written before it
    # have no words for their commits: the indexer rebuilds them in place (notes kept).
    """
    -- code_words: distinct identifiers and string-literal words of the lines the commit added or
    -- removed in source files, redacted and bounded (memory/code_words.py), space separated.
    alter table commits add column code_words text not null default '';

    -- The code side of the lexical index, apart from items_fts so that its length does not
    -- weigh on the message's BM25: rowid = items.id; symbols: the qualified names of the
    -- symbols the item is about, code: its commit's code_words (head segments only); both with
    -- their identifiers' spoken parts (getUserById -> get user by id).
    create virtual table items_code using fts5(symbols, code,
        tokenize = 'porter unicode61 remove_diacritics 2');

    insert or replace into meta(key, value) select 'rebuild_history', '7'
        where exists (select 1 from commits);
    """,
    # 8: items_fts.paths keeps the first few distinct words of an item's paths (memory/tokens.py,
    # PATH_WORDS), not every path: a big commit's file list weighed on its message's BM25. The
    # backfill rewrote the stored rows; migration 9 writes them again from the items' files, so
    # 8 no longer has a backfill of its own (a store goes from 7 through 8 to 9 alike).
    """
    -- items_fts.paths: the first PATH_WORDS distinct words of the item's paths, lowercased.
    """,
    # 9: the code's table gets the words of the paths (up to CODE_PATH_WORDS), where a file's
    # name still finds the commit once the message's table keeps only a few. The backfill writes
    # both tables' path words from item_files (sorted, composed: memory/tokens.py).
    """
    -- items_code gains paths: FTS5 tables take no new column, so it is made again.
    create virtual table items_code_9 using fts5(symbols, code, paths,
        tokenize = 'porter unicode61 remove_diacritics 2');
    insert into items_code_9(rowid, symbols, code, paths)
        select rowid, symbols, code, '' from items_code;
    drop table items_code;
    alter table items_code_9 rename to items_code;
    """,
    # 10: history's order with skewed clocks: a commit dated before its parent (a wrong clock,
    # an imported history) was listed below it. order_time is git's corrected commit date
    # without its +1: the committer time, raised to the largest order_time among the parents.
    # With clocks that agree it is the committer time itself, so nothing else moves; ties go to
    # the higher generation, the child. The backfill computes it over the parent links.
    """
    alter table commits add column order_time integer not null default 0;
    """,
    # 11: a merge's own symbol changes: the definitions holding lines that are in none of its
    # parents' versions (a conflict's resolution), as git blame credits them to the merge.
    """
    -- Merges indexed before this migration have none: the indexer reads them again.
    insert or replace into meta(key, value) select 'reread_merges', '11'
        where exists (select 1 from commits where is_merge = 1);
    """,
    # 12: the changes a merge dropped, recomputed for every file: before 11 a branch merged with
    # `-s ours` after an index run was left unpruned (HEAD's version of its files did not move),
    # and a store's later runs only look at the commits they add (simplified.py).
    """
    delete from pruned_heads;
    delete from meta where key = 'pruned_head';
    """,
    # 13: the same again: a first index run stopped and resumed stored side branches' older
    # commits after newer ones, and the pruning counted "older" in that order, dropping changes
    # that `git log -- FILE` lists (simplified.py now counts in history's order); and a change
    # of a file's mode alone, merged from a branch, was pruned (it is no version of content).
    """
    delete from pruned_heads;
    delete from meta where key = 'pruned_head';
    """,
    # 14: and again: an earlier life of a path (before the life HEAD has was created) stayed on
    # histories even where `git log -- FILE` never reaches it (a side branch's life that its
    # merge dropped); simplified.py now walks git's simplification through that stretch. And a
    # path renamed away and used again lost the new life's changes to the pruning of the file
    # its old life became (an earlier path now counts only until it is used again). Where a path was
    # renamed away to is asked by history's lineage (history._FILE_AWAY) and by that walk, and
    # where a path was born and deleted by the lineage (history._FILE_LIFE): indexes of a few
    # rows each.
    """
    delete from pruned_heads;
    delete from meta where key = 'pruned_head';
    create index if not exists file_changes_renamed_from on file_changes(old_file_id)
        where status = 'R';
    create index if not exists file_changes_life on file_changes(file_id)
        where status in ('A', 'R', 'D');
    """,
    # 15: a dropped change is dropped from one HEAD file's history, not from every history: two
    # HEAD files can share a path's changes (an older life renamed to one, the name used again by
    # the other) and only one of them may have lost it at a merge. Keyed by (commit, path) alone,
    # the first file to prune a change owned its row: one file's pruning hid the change from the
    # other's history, and which file came first depended on the order of index runs (an
    # incremental run and a rebuild disagreed). Now each HEAD file has its own rows; they are
    # recomputed from the store, so none are copied. The walk also tells now, at a merge that
    # deleted a path, which other parent had none (git follows that one alone).
    """
    drop table if exists pruned_changes_15;
    create table pruned_changes_15(
        head_file_id integer not null references files(id),
        commit_id integer not null references commits(id),
        file_id integer not null references files(id),
        primary key (head_file_id, commit_id, file_id)
    ) without rowid;
    -- The rows kept as they were until the run recomputes them: readers during a long run
    -- (or after a stopped one) still see what merges dropped.
    insert or ignore into pruned_changes_15(head_file_id, commit_id, file_id)
        select head_file_id, commit_id, file_id from pruned_changes;
    drop table pruned_changes;
    alter table pruned_changes_15 rename to pruned_changes;
    -- A history of a file that HEAD no longer has asks for any HEAD file's pruning.
    create index if not exists pruned_changes_change on pruned_changes(commit_id, file_id);
    delete from pruned_heads;
    delete from meta where key = 'pruned_head';
    """,
    # 16: which version of the reader (index/reader_version.py) read each commit: an incremental
    # run reads only new commits, so a store read by several versions mixes their readings, and
    # only a record per commit tells which (a run by an older Cortex extending a newer store, a
    # rewrite that leaves no commit of the older reading reachable). NULL: read before the
    # record (version 1). The column is added by its backfill (_reader_column), which a store
    # that already has it skips.
    """
    select 1;
    """,
    # 17: the commits' parents (as ids) and places in history's order, kept by chunks of
    # commits for the walks of an index run (index/commit_graph.py), which read them all. A
    # later migration that changes a stored commit's parents or order empties this table. And
    # indexes for what every run asks of all commits, and of all items: an incremental update
    # of the areas (areas._place_new) reads the items without a cluster and counts each
    # cluster's items and time span, which read every item's row (sympy: 67,000 items, 60 ms
    # of every one-commit update); with items_cluster the first reads the new items alone and
    # the second the index.
    """
    drop table if exists commit_graph;   -- derived: whatever has that name is made again
    create table commit_graph(
        first_id integer primary key,   -- the chunk holds the commits with ids in
        last_id integer not null,       -- [first_id, last_id]
        commits integer not null,
        data blob not null,             -- int64 little-endian: ids, orders, counts, parents
        missing text not null           -- parents not stored when it was written (shas)
    );
    -- Every run counts the reachable commits, asks which readers read them and where seq
    -- ends, and simplified.py which merges renamed a path away: 15-30 ms each over the
    -- tables on sympy, a few over these.
    create index if not exists commits_reachable on commits(reachable, reader);
    create index if not exists commits_seq on commits(seq);
    create index if not exists merge_files_renamed_from on merge_files(old_file_id)
        where old_file_id is not null;
    create index if not exists items_cluster on items(cluster, time);
    """,
    # 18: the kind of the version a symbol change names and of the one it came from: a deleted
    # symbol takes its newest version's (index/symbol_kinds.py). NULL: recorded before; a
    # deleted symbol of such changes keeps the kind it has. The columns are added by the
    # backfill (_kind_columns), which a store that has them skips.
    """
    select 1;
    """,
]


# An SQL condition on a file_changes row `fc` that renamed a path away: the new path is a file
# HEAD has, or becomes one through its own later renames (at most 50). A side branch's rename that
# its merge dropped, or a branch never merged, leads to none (history._FILE_AWAY, simplified.py).
RENAMED_INTO_HEAD = ("exists (with recursive later(id, n) as (select fc.file_id, 0 union"
                     " select r.file_id, later.n + 1 from later join file_changes r"
                     " on r.old_file_id = later.id and r.status = 'R' where later.n < 50)"
                     " select 1 from later join head_files h on h.file_id = later.id)")


def _parents_first(con) -> tuple[list[int], dict[int, list[int]]]:
    """Every stored commit's id, parents before children, and each one's stored parents.
    Depth-first over the parent links rather than in seq order: a run resumed after a kill may
    have stored a child before its parent. A parent missing from the store (a shallow clone) is
    left out."""
    ids: dict[str, int] = {}
    shas: dict[int, list[str]] = {}
    for commit_id, sha, parent_shas in con.execute("select id, sha, parents from commits"):
        ids[sha] = commit_id
        shas[commit_id] = parent_shas.split()
    parents = {c: [ids[p] for p in ps if p in ids] for c, ps in shas.items()}
    done: set[int] = set()
    order: list[int] = []
    for start in parents:
        stack = [start]
        while stack:
            top = stack[-1]
            if top in done:
                stack.pop()
                continue
            waiting = [p for p in parents[top] if p not in done]
            if waiting:
                stack.extend(waiting)
                continue
            done.add(top)
            order.append(top)
            stack.pop()
    return order, parents


def _generations(con) -> None:
    """Migration 5's backfill: every stored commit's generation (a missing parent counts as
    generation 0)."""
    order, parents = _parents_first(con)
    generation: dict[int, int] = {}
    for c in order:
        generation[c] = 1 + max((generation[p] for p in parents[c]), default=0)
    con.executemany("update commits set generation = ? where id = ?",
                    ((g, c) for c, g in generation.items()))


def _order_times(con) -> None:
    """Migration 10's backfill: every stored commit's order_time (a missing parent adds
    nothing)."""
    order, parents = _parents_first(con)
    own = dict(con.execute("select id, committer_time from commits"))
    when: dict[int, int] = {}
    for c in order:
        when[c] = max([own[c], *(when[p] for p in parents[c])])
    con.executemany("update commits set order_time = ? where id = ?",
                    ((t, c) for c, t in when.items()))


def _path_words(con, chunk: int = 2000) -> None:
    """Migration 9's backfill: each item's path words, from its files, in the message's table
    (the first few) and in the code's (more), by chunks of items."""
    from cortex_core.memory.tokens import CODE_PATH_WORDS, path_words
    last = -1
    while True:
        ids = [i for (i,) in con.execute("select id from items where id > ? order by id limit ?",
                                         (last, chunk))]
        if not ids:
            return
        last = ids[-1]
        marks = ",".join("?" * len(ids))
        paths: dict[int, list[str]] = {}
        for item, path in con.execute(f"select f.item_id, files.path from item_files f join files"
                                      f" on files.id = f.file_id where f.item_id in ({marks})",
                                      ids):
            paths.setdefault(item, []).append(path)
        con.executemany("update items_fts set paths = ? where rowid = ?",
                        [(path_words(p), item) for item, p in paths.items()])
        coded = {i for (i,) in con.execute(f"select rowid from items_code where rowid in ({marks})",
                                           ids)}
        words = [(path_words(p, CODE_PATH_WORDS), item) for item, p in paths.items()]
        con.executemany("update items_code set paths = ? where rowid = ?",
                        [w for w in words if w[1] in coded])
        con.executemany("insert into items_code(rowid, symbols, code, paths) values (?, '', '', ?)",
                        [(item, text) for text, item in words if item not in coded and text])


def _reader_column(con) -> None:
    """Migration 16: commits.reader, given the version a store of this session's first form
    recorded for its oldest commits in its meta (history_reader), else left NULL."""
    if "reader" not in {row[1] for row in con.execute("pragma table_info(commits)")}:
        con.execute("alter table commits add column reader integer")
    con.execute("update commits set reader = (select cast(value as integer) from meta"
                " where key = 'history_reader' and value glob '[0-9]*') where reader is null;"
                " delete from meta where key = 'history_reader'")


def _kind_columns(con) -> None:
    """Migration 18: symbol_changes.kind and from_kind, left NULL for the changes stored."""
    have = {row[1] for row in con.execute("pragma table_info(symbol_changes)")}
    for column in ("kind", "from_kind"):
        if column not in have:
            con.execute(f"alter table symbol_changes add column {column} text")


# Python steps of migrations, run after the migration's SQL in its transaction: version -> step.
BACKFILLS = {5: _generations, 9: _path_words, 10: _order_times, 16: _reader_column,
             18: _kind_columns}
