"""Parsing (tree-sitter; no git, no SQL): which language a path is written in, the definitions
of a blob and their qualified names, a file's imports and references, what a commit's hunks did
to each symbol and what kind of change it was, and the symbols of a buffer being edited."""
