"""The store: the one SQLite file (APSW, sqlite-vec, WAL, the writer lock), its schema as
append-only migrations, where a repository's store lives, and the salvage of a damaged one."""
