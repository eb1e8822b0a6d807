"""The store's schema, as an append-only list of migrations: entry N brings version N to N+1.

Never edit a migration that has shipped; add one. Later issues add memory items (FTS5, vec0),
structural edges and notes as new migrations.
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
]
