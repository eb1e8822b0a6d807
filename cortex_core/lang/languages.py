"""Which tree-sitter language a path is written in, decided by its name alone.

Kept free of heavy imports: the indexer asks this for every changed path of every commit.
"""

from __future__ import annotations

SUPPORTED_LANGUAGES: tuple[str, ...] = (
    "python", "javascript", "typescript", "tsx", "go", "rust",
    "java", "c", "cpp", "ruby", "php",
)

# The languages whose structure (references, imports, tests) is read: lang/structure_extract's
# SUPPORTED, kept here too so that a query can say why a file has none without loading the
# grammars (test_structure_extract holds the two equal).
STRUCTURE_LANGUAGES: frozenset[str] = frozenset({
    "python", "javascript", "typescript", "tsx", "go", "rust", "java",
})

_BY_SUFFIX = {
    ".py": "python", ".pyi": "python", ".pyw": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".c++": "cpp",
    ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp", ".h++": "cpp", ".ipp": "cpp", ".tpp": "cpp",
    ".rb": "ruby", ".rake": "ruby", ".gemspec": "ruby", ".ru": "ruby",
    ".php": "php",
}

# Ruby build files carry no suffix.
_BY_NAME = {
    "Rakefile": "ruby", "Gemfile": "ruby", "Guardfile": "ruby",
    "Vagrantfile": "ruby", "Podfile": "ruby", "Capfile": "ruby",
}


def language_for_path(path: str) -> str | None:
    """The language of `path` (posix or Windows separators), or None when unsupported."""
    name = path.rsplit("/", 1)[-1].rsplit("\\", 1)[-1]
    by_name = _BY_NAME.get(name)
    if by_name is not None:
        return by_name
    dot = name.rfind(".")
    # dot == 0 is a dot file such as ".rb" or ".h": a name, not a suffix.
    if dot <= 0:
        return None
    return _BY_SUFFIX.get(name[dot:].lower())
