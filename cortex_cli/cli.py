"""The `cortex` command line: a thin shell over the engine (cortex_core.engine), one command per
operation (cortex_core/operations.py) for most.

Heavy modules (pygit2, tree-sitter) are imported only by the commands that need them, so a query
such as `cortex history` starts in a few tens of milliseconds.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, NamedTuple

from cortex_core import __version__
from cortex_core.api import ENCODINGS, CortexError, encoding_name

if TYPE_CHECKING:
    from cortex_core.engine import Engine

EPILOG = """targets:
  PATH            a file (relative to the repository root or the current directory)
  PATH::SYMBOL    a symbol in it, by qualified name (Class.method) or unambiguous short name
  PATH:LINE       the innermost symbol enclosing that line at HEAD

The index lives in <repo>/.cortex/cortex.db unless --db says otherwise; when .cortex
cannot be used (read-only, not a folder, no file locks), in
$XDG_CACHE_HOME/cortex/<name>-<hash>/cortex.db (`cortex status` says which).
Settings: <repo>/.cortex/config.toml (see docs/settings.md)."""


class _NotAsked:
    """A subcommand other than the one asked for: nothing of it is built. Each argument costs a
    help formatter and each parser a few gettext lookups: the whole parser was most of the start
    of a short command such as `cortex history` (bench/bench_start.py)."""

    def __getattr__(self, name):
        return lambda *args, **kwargs: self


def _columns() -> int:
    """shutil.get_terminal_size().columns, without importing shutil: argparse's formatter does,
    once per argument, and shutil brings bz2, lzma and zlib, 2 ms of a short command's start.
    The width the client sends the daemon is read the same way (quick.columns)."""
    from cortex_cli.quick import columns
    return columns() or 80


class _Width:
    """A help formatter whose width comes from _columns() (argparse subtracts 2 likewise)."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position,  # type: ignore[call-arg]
                         _columns() - 2 if width is None else width)


class _Plain(_Width, argparse.HelpFormatter):
    pass


class _Raw(_Width, argparse.RawDescriptionHelpFormatter):
    pass


WORDS_COMMANDS = ("search", "context")   # the commands whose QUERY is _Words


def _number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


class _Words(argparse.Action):
    """A query of several words, unquoted (`cortex search flag parsing`), as one string; none
    given is None."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        setattr(namespace, self.dest, " ".join(values) or None)


class _Parser(argparse.ArgumentParser):
    """ArgumentParser with _Plain as its default formatter; subparsers are of this class too."""

    def __init__(self, **kwargs: Any) -> None:   # add_parser passes keywords only
        kwargs.setdefault("formatter_class", _Plain)
        super().__init__(**kwargs)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of `only` (a command name; "" for none)."""
    common = _Parser(add_help=False)
    common.add_argument("--repo", metavar="PATH",
                        help="the git repository (default: the one around the current directory)")
    common.add_argument("--db", metavar="FILE", help="the index database (default: <repo>/.cortex/cortex.db, or a per-user folder when .cortex cannot be used)")
    common.add_argument("--json", action="store_true", help="print JSON for machines")
    timed = _Parser(add_help=False)   # the commands that count back in time
    timed.add_argument("--clock", choices=("repository", "wall"),
                       help="what windows and recency count back from: the indexed HEAD's date "
                       "(repository) or today (wall) (default: repository, or [time] clock)")

    parser = _Parser(
        prog="cortex", formatter_class=_Raw, epilog=EPILOG,
        description="A memory of a git repository: symbol-level history, hotspots, co-change.")
    parser.add_argument("--version", action="version", version=f"cortex {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    def command(name: str, **kwargs):
        return sub.add_parser(name, **kwargs) if only is None or name == only else _NotAsked()

    p = command("index", parents=[common], help="index new commits (incremental)",
                description="Index the commits not indexed yet, down to functions. "
                "Safe to interrupt: the next run continues.")
    p.add_argument("--rebuild", action="store_true", help="empty the index and rebuild it from scratch (its notes, model and branches are kept)")
    branches = p.add_mutually_exclusive_group()
    branches.add_argument("--all-branches", dest="all_branches", action="store_true", default=None,
                          help="index every local branch, not only HEAD (remembered)")
    branches.add_argument("--head-only", dest="all_branches", action="store_false",
                          help="index only what HEAD reaches (the default; remembered)")
    p.add_argument("--wait", type=float, default=10.0, metavar="SECONDS",
                   help="how long to wait for another running indexer (default: 10)")
    p.add_argument("--coalesce", action="store_true",
                   help="for git hooks: if another run already waits for the running indexer, "
                   "exit at once (that run will index the newest commits); otherwise wait in "
                   "line (up to --wait)")
    p.add_argument("--recent-first", nargs="?", const="yes", default="no",
                   choices=("yes", "auto", "no"), metavar="yes|auto",
                   help="a first run indexes recent history first (the last "
                   "[index] window_commits first-parent commits, at most window_days old), "
                   "usable at once, then the whole history; `auto`: only for a history longer "
                   "than [index] recent_first_commits")
    p.add_argument("--jobs", "-j", type=_positive_int, metavar="N",
                   help="processes reading history in long runs (default: one per CPU, at most 4)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    p.add_argument("--progress-json", action="store_true",
                   help="for programs (the language server): one JSON object per line on stdout, "
                   '{"event": "progress", "phase", "done", "total"} while indexing, then '
                   '{"event": "done", "summary": {...}}')
    p.add_argument("--model", metavar="NAME",
                   help="embedding model: a model-hub id or a folder; 'none' turns vectors off "
                   "(default: $CORTEX_MODEL, [memory] model, or minishlab/potion-base-8M)")

    p = command("history", parents=[common], help="commits that changed a file or symbol",
                formatter_class=_Raw, epilog=EPILOG,
                description="The commits that changed PATH, PATH::SYMBOL or the symbol at "
                "PATH:LINE, newest first, following renames and moves. Each symbol change has "
                "a kind: added, deleted, body, signature, docs, reformatted, renamed, moved, "
                "rescoped (its class was renamed; its own code did not change). Overloads are "
                "distinct symbols: PATH::Class.method(int, String); PATH::Class.method "
                "lists them when it is ambiguous.")
    p.add_argument("target", metavar="TARGET", help="PATH, PATH::SYMBOL or PATH:LINE")
    p.add_argument("-n", "--limit", type=_positive_int, metavar="N", help="show at most N commits")
    p.add_argument("--substantive", action="store_true",
                   help="leave out formatting-only commits and waypoints where the symbol's own "
                   "code did not change (a rename of its class)")

    p = command("hotspots", parents=[common, timed], help="symbols and files that change the most",
                description="Symbols and files ranked by recency-weighted change count, "
                "distinct authors and churn (formula: --explain).")
    p.add_argument("--since", type=_positive_float, metavar="DAYS", help="only commits of the last DAYS days")
    p.add_argument("--path", metavar="PREFIX", help="only under this folder or file")
    p.add_argument("--top-k", type=_positive_int, default=10, metavar="N", help="how many of each (default: 10)")
    p.add_argument("--half-life", type=_positive_float, metavar="DAYS",
                   help="recency half-life (default: 90, or [hotspots] half_life_days)")
    p.add_argument("--explain", action="store_true", help="print the formula and its inputs")

    p = command("related", parents=[common], help="what changes together with a file or symbol",
                formatter_class=_Raw, epilog=EPILOG,
                description="Files that move with it, ranked by structure (what it calls, "
                "what calls it) and history (files changed in the same commits) fused; each "
                "with its structural relation, shared commits and confidence.")
    p.add_argument("target", metavar="TARGET", nargs="?",
                   help="PATH, PATH::SYMBOL or PATH:LINE; without it, what the uncommitted changes (staged "
                   "and not) usually bring along that is not changed yet")
    p.add_argument("--top-k", type=_positive_int, default=10, metavar="N", help="how many (default: 10)")
    p.add_argument("--min-support", type=_positive_int, metavar="N",
                   help="shared commits needed (default: 1, shown as weak; or [coupling] "
                   "min_support)")
    p.add_argument("--half-life", type=_non_negative_float, metavar="DAYS",
                   help="a shared commit's weight halves every DAYS days, on the repository's "
                   "own clock; 0: every commit counts alike (default: [coupling] "
                   "half_life_days, else it halves every half of the history's commits, "
                   "counting the commits made after it)")
    p.add_argument("--explain", action="store_true",
                   help="print each partner's score components and the formula")

    p = command("blast", parents=[common, timed], help="what depends on a symbol or file",
                formatter_class=_Raw, epilog=EPILOG,
                description="The blast radius: callers, importers, subclasses and tests "
                "up to --depth, each with the chain of edges that explains it; co-change "
                "partners the structure does not show (hidden coupling); a summary with "
                "a documented risk level.")
    p.add_argument("target", metavar="TARGET", help="PATH, PATH::SYMBOL or PATH:LINE")
    p.add_argument("--depth", type=_depth, default=2, metavar="N",
                   help="how many edges away (default: 2, at most 10)")
    p.add_argument("--min-confidence", type=_unit_float, default=0.25, metavar="C",
                   help="leave out chains less likely than C (default: 0.25; resolution by a "
                   "method's name alone is 0.4 shared among its candidates)")
    for name, help_ in (("callers", "what calls or references a symbol"),
                        ("callees", "what a symbol calls or references")):
        p = command(name, parents=[common], help=help_, epilog=EPILOG,
                    formatter_class=_Raw,
                    description=help_[0].upper() + help_[1:] + ", one edge away, with "
                    "the line and the resolution's confidence.")
        p.add_argument("target", metavar="TARGET", help="PATH, PATH::SYMBOL or PATH:LINE")

    command("status", parents=[common], help="what the index holds",
            description="Commits, symbols, languages, skipped files with reasons, the last "
            "indexed commit, memory items, whether semantic search is on, and the size.")

    p = command("search", parents=[common, timed], help="search commits, docs and notes",
                formatter_class=_Raw, epilog=EPILOG,
                description="Hybrid search: BM25 and vector neighbours fused by rank, then "
                "bounded priors (recency, signal, context, area). --explain shows why.")
    p.add_argument("query", metavar="QUERY", nargs="+", action=_Words,
                   help="words, code identifiers, a question (quotes not needed)")
    p.add_argument("--top-k", type=_positive_int, default=10, metavar="N", help="how many (default: 10)")
    p.add_argument("--since", type=_since_text, metavar="WHEN",
                   help="only items from this date (YYYY-MM-DD) or the last N days (on --clock)")
    p.add_argument("--path", metavar="PREFIX", help="only items about this folder or file")
    p.add_argument("--kind", action="append", choices=("commit", "doc", "note"),
                   help="only this kind (repeatable)")
    p.add_argument("--at", metavar="TARGET", help="boost what is about this PATH, PATH::SYMBOL or PATH:LINE")
    p.add_argument("--mode", choices=("hybrid", "lexical", "vector"), default="hybrid",
                   help="ranking (default: hybrid)")
    p.add_argument("--no-priors", action="store_true", help="rank by relevance alone")
    p.add_argument("--no-context", action="store_true",
                   help="ignore the working tree and the branch name")
    p.add_argument("--explain", action="store_true", help="show ranks and priors for each result")

    p = command("what", parents=[common, timed], help="what is relevant to your current changes",
                description="From the git state alone: notes and commits about the files "
                "you changed, recent decisions, and the hot spots you are touching.")
    p.add_argument("--top-k", type=_positive_int, default=5, metavar="N", help="per group (default: 5)")

    p = command("related-commits", parents=[common], help="commits related to a commit or symbol",
                formatter_class=_Raw, epilog=EPILOG,
                description="The commits touching a symbol (or the commit itself), commits "
                "whose messages are semantically close, and commits of the same area.")
    p.add_argument("target", metavar="COMMIT|TARGET",
                   help="a commit (a sha or a prefix, HEAD~1, a branch, a tag), or PATH, "
                   "PATH::SYMBOL, PATH:LINE")
    p.add_argument("--top-k", type=_positive_int, default=10, metavar="N", help="per group (default: 10)")

    p = command("areas", parents=[common], help="areas of the code base (spectral clusters)",
                description="Clusters of commits, doc sections and notes, with their size, "
                "label (distinctive terms), hottest paths and date span.")
    p.add_argument("--top-k", type=_positive_int, metavar="N", help="the N largest only")

    p = command("context", parents=[common, timed], help="a token-budgeted context pack for an agent",
                formatter_class=_Raw, epilog=EPILOG,
                description="The focus symbol's code, its history with reasons, live "
                "notes, what changes with it, related commits, docs and search hits, packed "
                "by utility per token under --budget, the room left filled by the next item "
                "cut to fit. Every item is cited; secrets are redacted. Tokens are counted "
                "in --encoding (see docs/commands.md, Context packs).")
    p.add_argument("query", metavar="QUERY", nargs="*", action=_Words,
                   help="a question or words (optional with --at; quotes not needed)")
    p.add_argument("--at", metavar="TARGET", help="PATH, PATH::SYMBOL or PATH:LINE to focus on")
    p.add_argument("--budget", type=_positive_int, default=2000, metavar="TOKENS",
                   help="hard limit on the pack's size (default: 2000)")
    p.add_argument("--format", choices=("markdown", "json"), default="markdown")
    p.add_argument("--encoding", choices=ENCODINGS, metavar="{" + ",".join(ENCODINGS) + "}",
                   type=_encoding, help="how tokens are counted (default: packs.encoding in "
                   ".cortex/config.toml, else o200k; estimate over-counts, for other tokenizers)")
    p.add_argument("--output", "-o", metavar="FILE", help="write the pack to FILE instead of stdout")

    p = command("note", help="notes on symbols, files or the repository",
                description="Notes are kept with time: superseded notes stay on record but "
                "never reach search or context packs; a note whose code changed is flagged.")
    notes = p.add_subparsers(dest="note_command", metavar="ACTION")
    notes.required = True
    q = notes.add_parser("add", parents=[common], help="write a note",
                         formatter_class=_Raw, epilog=EPILOG)
    q.add_argument("target", metavar="TARGET", help="PATH, PATH::SYMBOL, PATH:LINE, or . for the repository")
    q.add_argument("text", metavar="TEXT")
    q.add_argument("--author", metavar="NAME", help="who says so (default: git user.name)")
    q.add_argument("--valid-from", type=_since, metavar="YYYY-MM-DD",
                   help="since when it holds (default: now)")
    q = notes.add_parser("list", parents=[common], help="list notes, newest first")
    q.add_argument("target", metavar="TARGET", nargs="?", help="only notes on this file or symbol")
    q.add_argument("--all", action="store_true", help="include superseded and expired notes")
    q = notes.add_parser("supersede", parents=[common], help="replace a note by a new text")
    q.add_argument("id", type=_positive_int, metavar="ID")
    q.add_argument("text", metavar="TEXT")
    q.add_argument("--author", metavar="NAME")
    q = notes.add_parser("export", parents=[common], help="every note as JSON")
    q.add_argument("--output", "-o", metavar="FILE", help="write to FILE (default: stdout)")
    q = notes.add_parser("import", parents=[common], help="add the notes of an export")
    q.add_argument("file", metavar="FILE", help="a JSON export, or - for stdin")

    p = command("mcp", help="serve the memory to chat agents (Model Context Protocol, stdio)",
                formatter_class=_Raw,
                description="A Model Context Protocol server over stdio, for chat agents "
                "(Claude Code, Cursor, Codex, VS Code...). Tools: search_memory, "
                "symbol_history, blast_radius, related, hotspots, context_pack, status, "
                "sync, record_note, supersede_note. Each takes an optional `repo`.",
                epilog="Configure it in your agent as the command `cortex mcp --repo PATH`; "
                "see docs/agents.md.")
    p.add_argument("--repo", metavar="PATH", help="the repository tools use when a call names "
                   "none (default: the one around the current directory, if any)")
    p.add_argument("--db", metavar="FILE", help="that repository's index (default: "
                   "<repo>/.cortex/cortex.db, or a per-user folder when .cortex cannot be used)")
    p.add_argument("-v", "--verbose", action="count", default=0, help="log more to stderr")

    p = command("model", help="the embedding model",
                description="Semantic search needs a model2vec model on disk. Nothing is "
                "downloaded unless you ask: `cortex model pull`.")
    models = p.add_subparsers(dest="model_command", metavar="ACTION")
    models.required = True
    q = models.add_parser("pull", parents=[common], help="download a model from the model hub (network)")
    q.add_argument("name", metavar="NAME", nargs="?", help="default: the configured model")

    where = _Parser(add_help=False)
    where.add_argument("--repo", metavar="PATH",
                       help="the git repository (default: the one around the current directory)")
    where.add_argument("--json", action="store_true", help="print JSON for machines")
    p = command("daemon", help="answer queries from a process kept running (faster starts)",
                formatter_class=_Raw,
                description="A process per user that keeps Cortex loaded and its indexes "
                "open. While it runs, the\nqueries (history, blast, search, context...) typed "
                "in any repository are answered by it,\nas they would be here: the command "
                "starts as fast as a bare Python and a search keeps its\nmodel loaded. It "
                "refuses, and the command runs here as usual, when it could answer\n"
                "otherwise: another installation, Cortex's files changed, another HOME, cache "
                "folder,\nCORTEX_* or GIT_* setting. `status` counts what it answered and "
                "refused, and why.",
                epilog="Its folder: CORTEX_DAEMON_DIR, else $XDG_RUNTIME_DIR/cortex, else "
                "$TMPDIR/cortex-UID (mode 700;\nthe socket, a lock and daemon.log). "
                "CORTEX_DAEMON=off in a command's environment runs it here.")
    actions = p.add_subparsers(dest="daemon_command", metavar="ACTION")
    actions.required = True
    idle = _Parser(add_help=False)
    idle.add_argument("--idle-minutes", type=_non_negative_float, default=0.0, metavar="N",
                      help="stop after N minutes without a command (default: 0, never)")
    actions.add_parser("start", parents=[idle], help="start it in the background (if not running)",
                       description="Start the daemon in the background, or say that it runs.")
    actions.add_parser("stop", help="stop it", description="Stop the running daemon.")
    d = actions.add_parser("status", help="whether it runs; what it answered and refused",
                           description="Its process, socket, memory, the repositories it holds "
                           "open, the commands it answered and those it refused, by reason.")
    d.add_argument("--json", action="store_true", help="print JSON for machines")
    actions.add_parser("run", parents=[idle], help="run it in this terminal (Ctrl-C stops it)",
                       description="Serve in the foreground, logging to stderr (for a service "
                       "manager, or to watch it).")

    p = command("hooks", help="git hooks that keep the index fresh",
                formatter_class=_Raw,
                description="post-commit, post-merge, post-checkout and post-rewrite hooks "
                "that run `cortex index`\nin the background after each change: git "
                "returns at once and its output stays clean.",
                epilog="A hook already in place keeps running first (renamed to "
                "<hook>.cortex-chained), with the\nsame arguments and stdin, and its exit "
                "status; uninstall puts it back exactly.\nThe hooks directory is git's "
                "own (core.hooksPath is followed). The indexer writes to\n"
                "<git dir>/cortex-hook.log. CORTEX_HOOK_FOREGROUND=1 in the environment "
                "of git makes\nthe hooks index before git returns (scripts, tests).")
    hooks = p.add_subparsers(dest="hooks_command", metavar="ACTION")
    hooks.required = True
    hooks.add_parser("install", parents=[where], help="install the hooks (again: refreshes them)",
                     description="Install the hooks; an existing hook is chained to, not "
                     "replaced. Running it again changes nothing, or refreshes the hooks (for "
                     "another Python). The hooks run this Python: " + sys.executable)
    hooks.add_parser("uninstall", parents=[where], help="remove them; put back what was there",
                     description="Remove Cortex's hooks and put back the hooks they chained to, "
                     "byte for byte. Hooks that are not Cortex's are left alone.")
    hooks.add_parser("status", parents=[where], help="which hooks are installed, chained, foreign",
                     description="Per hook: installed by Cortex, chained to an existing hook, "
                     "a foreign hook, or absent; the hooks directory and the Python they run.")
    return parser


def _unit_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1: {text}")
    return value


def _since(text: str) -> int:
    """A date (YYYY-MM-DD) or a number of days back, as epoch seconds."""
    from cortex_core.dates import since
    try:
        return since(text)
    except CortexError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _encoding(text: str) -> str:
    try:
        return encoding_name(text)
    except CortexError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _since_text(text: str) -> str:
    """A date or a number of days, checked now and counted once the clock is known."""
    _since(text)
    return text


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text}")
    if value > 2**31 - 1:
        raise argparse.ArgumentTypeError(f"must be at most {2**31 - 1:,}: {text}")
    return value


def _depth(text: str) -> int:
    """blast's --depth: the engine goes no further than 10 edges, so more is refused, not cut."""
    value = _positive_int(text)
    if value > 10:
        raise argparse.ArgumentTypeError(f"must be at most 10: {text}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number: {text}")
    return value


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be 0 or a positive number: {text}")
    return value


def _asked(argv: list[str]) -> str | None:
    """The command that argv names first, if any ("" for --version alone): only its parser is
    built. Anything else (no command, a typo, --help) builds them all, for the full message."""
    first = argv[0] if argv else None
    if first in COMMANDS:
        return first
    return "" if argv == ["--version"] else None


# What fixes an error (its Hint), in the command line's words (cortex_core/errors.py, ACTIONS).
WORDS = {
    "index": "{message}; run `cortex index` first",
    "upgrade": "{message}; run `cortex index` to upgrade it",
    "rebuild": "{message}; run `cortex index --rebuild` (it keeps the notes it can read)",
    "newer": "{message}; upgrade Cortex or run `cortex index --rebuild`",
    "repository": "{message} (use --repo PATH)",
    "budget": "{message}; give a larger --budget",
    "focus": "give a query, --at TARGET, or both",
    "retry": "{message}; try again in a moment",
    "free_space": "{message}: is the disk full? Free some space and run the command again (a "
                  "rebuild goes on where it stopped)",
    "elsewhere": "{message} (or give the index another place with --db)",
    "wait": "{message} (use --wait SECONDS to wait longer)",
    "model": "{message}; see `cortex status`",
    "one_worker": "{message}; run again, or with --jobs 1",
    "continue": "{message}; run `cortex index` to continue it",
    "foreign": "{message}; give this repository its own index (--db FILE), or run `cortex index"
               " --rebuild` to replace this one",
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = _parser(_asked(argv))
    args, extra = parser.parse_known_args(argv)
    if extra:
        # A query's words after an option (`cortex search signer --top-k 1 key`) are its words:
        # any word after `--`, and before it any that is not an option (a number may be).
        head = extra[:extra.index("--")] if "--" in extra else extra
        if getattr(args, "command", None) in WORDS_COMMANDS and all(
                not word.startswith("-") or _number(word) for word in head):
            words = head + (extra[extra.index("--") + 1:] if "--" in extra else [])
            args.query = " ".join(word for word in (args.query, *words) if word)
        else:
            parser.parse_args(argv)   # the usual error, and its exit status

    # Arguments that are not valid UTF-8 (a file name, a pasted byte) arrive with surrogates,
    # which SQLite and the tokenizers refuse: carry them as replacement characters, and in a
    # target or a path each such byte as `\xNN`, as the index keeps it (git_reads.path_text).
    for name, value in vars(args).items():
        if isinstance(value, str):
            setattr(args, name, value.encode("utf-8", "surrogateescape").decode(
                "utf-8", "backslashreplace" if name in ("target", "path", "at") else "replace"))
    try:
        command = COMMANDS[args.command]
        return command(args) if callable(command) else run_operation(command, args)
    except CortexError as exc:
        # Messages quote repository text (a path, a config key): inert for the terminal.
        from cortex_core.text.sanitize import terminal
        print("cortex: " + "\n".join(terminal(line) for line in exc.phrased(WORDS).split("\n")),
              file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        from cortex_cli.quick import INTERRUPTED
        print(INTERRUPTED, file=sys.stderr)
        return 130
    except BrokenPipeError:  # `cortex history ... | head`
        sys.stderr.close()
        return 0


# -- plumbing -------------------------------------------------------------------------------------

# The daemon's engines (cortex_cli/daemon.py), kept open from one command to the next; None in
# a process that runs one command.
POOL: Callable[[Any], Any] | None = None


_PARSERS: dict = {}


def _parser(only: str | None) -> argparse.ArgumentParser:
    """build_parser(only); the daemon keeps each one it built (half of a history's time there).
    A help formatter reads the terminal's width when it is made, at each --help."""
    if POOL is None:
        return build_parser(only)
    if only not in _PARSERS:
        _PARSERS[only] = build_parser(only)
    return _PARSERS[only]


def _opened(args):
    """The engine of a query, as a context: closed at its end, or kept by the daemon's pool."""
    if POOL is None:
        return _engine(args)
    _in_own_process(args)
    return POOL(args)


class RunHere(Exception):
    """Raised in the daemon by a command that must run in a process of its own (the reason):
    the client then runs it (cortex_cli/daemon.py)."""


def _in_own_process(args) -> None:
    """In the daemon, a file written (`context -o`: with the daemon's umask, and /dev/stdout or
    /dev/tty would be the daemon's) or a --db under /dev or /proc (its own /dev/stdout, /proc/self)
    is for the command's own process."""
    if getattr(args, "output", None):
        raise RunHere("a command that writes a file (--output)")
    if args.db and os.path.abspath(os.path.expanduser(args.db)).startswith(("/dev/", "/proc/")):
        raise RunHere("an index under /dev or /proc (--db)")


def _engine(args, for_writing: bool = False) -> Engine:
    """The engine of the repository the command is about; one per command."""
    from cortex_core.engine import Engine
    return Engine.open(args.repo, db=args.db, for_writing=for_writing,
                       source="the command line")


def _emit_json(result) -> int:
    import json  # only for --json: every import shows in the start of each command
    # ASCII only: a C1 control or a bidi override in repository text stays an escape, not a
    # character a terminal acts on; every JSON reader gets the same text back.
    print(json.dumps(_plain(result), indent=2, ensure_ascii=True))
    return 0


def _plain(value):
    from cortex_core.plain import plain
    return plain(value)


def _now() -> float:
    return time.time()


# -- commands that are one operation each ---------------------------------------------------------


class Command(NamedTuple):
    """A command that is one engine operation (cortex_core/operations.py): its request, built
    from the arguments, and the text it prints without --json; `tells_reach` when its result
    says itself how far the index's history reaches (otherwise a note on stderr says it)."""
    request: Callable[[Any, Engine], Any]
    text: Callable[[Any, Any, Engine], str]
    tells_reach: bool = False


def run_operation(command: Command, args) -> int:
    with _opened(args) as engine, engine.snapshot() as snap:   # the note reads what the answer did
        result = engine.run(command.request(args, engine))
        if args.json:
            _emit_json(result)
        else:
            print(command.text(result, args, engine))
        if not command.tells_reach:
            _note_reach(snap)
    return 0


def _note_reach(snap) -> None:
    """On stderr, how far the index's history reaches when it does not hold all of it (a first
    run stopped or still running, only its recent window read, or a shallow clone): the answer
    above comes from that part. Its stdout stays the answer alone (--json included)."""
    since, until, shallow = snap.history_from(), snap.history_until(), snap.shallow_from()
    if since is not None or until is not None:
        print(f"cortex: {_render().partial_history(since, until)}", file=sys.stderr)
    if shallow is not None:
        print(f"cortex: {_render().shallow_note(shallow)}", file=sys.stderr)


def _render():
    from cortex_cli import render
    return render


def _label(engine: Engine, text: str | None) -> str | None:
    return engine.target(text).label if text else None


def _history(args, engine: Engine):
    from cortex_core.api import HistoryRequest
    return HistoryRequest(engine.target(args.target), args.limit, args.substantive)


def _hotspots(args, engine: Engine):
    from cortex_core.api import HotspotsRequest
    return HotspotsRequest(args.top_k, args.since, engine.relative(args.path) if args.path
                           else None, args.half_life, args.clock)


def _blast(args, engine: Engine):
    from cortex_core.api import BlastRequest
    return BlastRequest(engine.target(args.target), args.depth, args.min_confidence,
                        clock=args.clock)


def _neighbours(args, engine: Engine):
    from cortex_core.api import CalleesRequest, CallersRequest
    kind = CallersRequest if args.command == "callers" else CalleesRequest
    return kind(engine.target(args.target))


def _status(args, engine: Engine):
    from cortex_core.api import StatusRequest
    return StatusRequest()


def _search(args, engine: Engine):
    from cortex_core.api import SearchRequest
    return SearchRequest(
        args.query, top_k=args.top_k, kinds=tuple(args.kind or ()), since=args.since,
        path=engine.target(args.path).path if args.path else None, at=_label(engine, args.at),
        mode=args.mode, priors=not args.no_priors, context=not args.no_context or bool(args.at),
        workspace=not args.no_context, clock=args.clock)


def _what(args, engine: Engine):
    from cortex_core.api import WhatRequest
    return WhatRequest(args.top_k, args.clock)


def _related_commits(args, engine: Engine):
    from cortex_core.api import RelatedCommitsRequest
    return RelatedCommitsRequest(args.target, args.top_k, cwd=Path.cwd())


def _areas(args, engine: Engine):
    from cortex_core.api import AreasRequest
    return AreasRequest(args.top_k)


HISTORY = Command(_history,
                  lambda r, a, e: _render().history(r, _now()), tells_reach=True)
HOTSPOTS = Command(_hotspots,
                   lambda r, a, e: _render().hotspots(r, _now(), a.explain))
BLAST = Command(_blast, lambda r, a, e: _render().blast(r))
NEIGHBOURS = Command(_neighbours, lambda r, a, e: _render().neighbours(r, a.command))
def _status_text(result, args, engine: Engine) -> str:
    """The status, and whether HEAD has moved past the last indexed commit (the status reads
    git: it is no command a start time matters to; the others stay without it)."""
    text = _render().status(result, engine.root, _now())
    head = result.working_head
    if head and result.head and head != result.head:
        text += (f"\nnote: HEAD ({head[:10]}) is not the last indexed commit: answers"
                 " are of the indexed history; `cortex index` brings it to HEAD")
    return text


STATUS = Command(_status, _status_text,
                 tells_reach=True)
SEARCH = Command(_search,
                 lambda r, a, e: _render().search(r, _now(), a.explain))
WHAT = Command(_what, lambda r, a, e: _render().what(r, _now()))
RELATED_COMMITS = Command(_related_commits,
                          lambda r, a, e: _render().related_commits(r, _now()))
AREAS = Command(_areas, lambda r, a, e: _render().areas(r, _now()))


# -- commands with more to them -------------------------------------------------------------------

def cmd_index(args) -> int:
    from cortex_core.api import CortexError
    from cortex_core.child_process import error_event
    try:
        return _index(args)
    except CortexError as exc:
        if args.progress_json:   # a server started this run: it phrases the fix in its words
            _json_line(error_event(exc))
        raise


def _index(args) -> int:
    import os
    from cortex_core.child_process import die_with_parent
    die_with_parent()
    # One BLAS thread: the spectral step's eigensolver ran 3-10x slower with more threads on a
    # busy machine (bench/README.md, bench_memory.py) and was no faster on an idle one. Set
    # before numpy loads; a user's own setting wins.
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    from cortex_core.api import IndexQueued, IndexRequest
    from cortex_cli import render
    engine = _engine(args, for_writing=True)
    db = engine.db
    if engine.location.fallback:
        print(f"cortex: the index is at {db}: {engine.location.reason}", file=sys.stderr)
    show = not args.quiet and not args.json and not args.progress_json and sys.stderr.isatty()
    bar = render.ProgressBar(sys.stderr) if show else None
    progress = _json_progress if args.progress_json else bar.update if bar else None
    try:
        summary = engine.run(IndexRequest(
            all_branches=args.all_branches, rebuild=args.rebuild, wait_seconds=args.wait,
            jobs=args.jobs, model=args.model, coalesce=args.coalesce, progress=progress,
            on_wait=_say_queued if args.coalesce else None, recent_first=args.recent_first))
    except IndexQueued as exc:   # not a failure: the queued run does this one's work
        return _emit_json({"queued": str(exc)}) if args.json else _print(f"cortex: {exc}")
    if bar:
        bar.close()
    carried = engine.carry_seed_notes()   # the first run in the per-user folder: its notes
    if carried is not None:
        print(f"cortex: {carried} notes copied from {engine.location.seed}", file=sys.stderr)
    if args.progress_json:
        _json_line({"event": "done", "summary": _plain(summary)})
        return 0
    if args.json:
        return _emit_json(summary)
    print(render.index_summary(summary, db, engine.root))
    return 0


def _say_queued(holder: str) -> None:
    sys.stderr.write(f"cortex: queued behind the running indexer{holder}\n")   # one write:
    sys.stderr.flush()                                           # hook runs share one log


def _json_progress(done: int, total: int, phase: str = "commits") -> None:
    _json_line({"event": "progress", "phase": phase, "done": done, "total": total})


def _json_line(obj: dict) -> None:
    import json
    sys.stdout.write(json.dumps(obj, ensure_ascii=True, default=str) + "\n")
    sys.stdout.flush()


def cmd_related(args) -> int:
    """`related TARGET` is the related operation; without a target, changes_related."""
    from cortex_core.api import ChangesRelatedRequest, RelatedRequest
    from cortex_cli import render
    with _opened(args) as engine, engine.snapshot() as snap:
        chosen = {"top_k": args.top_k, "min_support": args.min_support,
                  "half_life_days": args.half_life}
        if args.target is None:
            found = engine.run(ChangesRelatedRequest(**chosen))
            if not (found.changed or found.unknown):
                raise CortexError("no uncommitted changes: give a TARGET (PATH, PATH::SYMBOL or PATH:LINE)")
            if args.json:
                _emit_json(found)
            else:
                _print(render.set_related(found, args.explain))
        else:
            result = engine.run(RelatedRequest(engine.target(args.target), **chosen))
            if args.json:
                _emit_json(result)
            else:
                _print(render.fused_related(result, args.explain))
        _note_reach(snap)
    return 0


def cmd_context(args) -> int:
    from cortex_core.api import ContextPackRequest
    with _opened(args) as engine, engine.snapshot() as snap:
        # The target read as every command reads it (Engine.target: the working tree's
        # lines, a staged rename), then handed on as the index names it.
        pack = engine.run(ContextPackRequest(
            query=args.query, at=_label(engine, args.at), budget=args.budget, fmt=args.format,
            encoding=args.encoding, clock=args.clock))
        _note_reach(snap)
    if pack.note:
        print(f"cortex: note: {pack.note}", file=sys.stderr)
    if args.json:  # the pack with its accounting
        return _emit_json(pack)
    if args.output:
        _write_file(args.output, pack.text)
        print(f"wrote {args.output}: {len(pack.items)} items, {pack.used}/{pack.budget} tokens"
              f" ({pack.tokenizer}; {pack.left_out} candidates left out)", file=sys.stderr)
    else:
        sys.stdout.write(pack.text)
    return 0


def cmd_note(args) -> int:
    from cortex_core import api
    from cortex_cli import render
    with _engine(args) as engine:
        return _note(args, engine, api, render)


def _note(args, engine: Engine, api, render) -> int:
    action = args.note_command
    if action == "add":
        target = None if args.target.strip() in (".", "/", "") else _label(engine, args.target)
        note = engine.run(api.AddNoteRequest(target, args.text,
                                             author=args.author or engine.git_author(),
                                             valid_from=args.valid_from))
        return _emit_json(note) if args.json else _print(f"added {render.notes([note], _now())}")
    if action == "supersede":
        note = engine.run(api.SupersedeNoteRequest(args.id, args.text,
                                                   author=args.author or engine.git_author()))
        return _emit_json(note) if args.json else \
            _print(f"#{args.id} superseded by {render.notes([note], _now())}")
    if action == "list":
        found = engine.run(api.NotesRequest(_label(engine, args.target),
                                            include_closed=args.all))
        return _emit_json(found) if args.json else _print(render.notes(found, _now()))
    if action == "export":
        text = api.notes_json(engine.run(api.ExportNotesRequest()))
        if args.output:
            _write_file(args.output, text)
            return _print(f"wrote {args.output}", sys.stderr)
        sys.stdout.write(text)
        return 0
    import json
    try:
        raw = sys.stdin.read() if args.file == "-" else Path(args.file).read_text(encoding="utf-8")
        data = json.loads(raw)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CortexError(f"cannot read notes from {args.file}: {exc}") from None
    added = engine.run(api.ImportNotesRequest(data))
    return _print(f"imported {added} notes")


def cmd_model(args) -> int:
    engine = _engine(args)
    name, path, dim = engine.pull_model(args.name)
    return _print(f"{name}: {dim} dimensions, at {path}\n"
                  "run `cortex index` to embed the memory items")


def cmd_mcp(args) -> int:
    import logging
    from cortex_core.api import NotARepository
    from cortex_core.engine import Engine
    try:
        root = Engine.find_root(args.repo)
    except NotARepository:
        if args.repo is not None:    # named explicitly: a mistake to report now
            raise
        root = None                  # started outside a repository: every call names its own
    db = Path(args.db).expanduser().resolve() if args.db else None   # else: store_location
    level = logging.DEBUG if args.verbose > 1 else logging.INFO if args.verbose else logging.WARNING
    logging.basicConfig(level=level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # The MCP server is a front end beside this one: `cortex mcp` hands over to it. Its
    # run(root, db) serves over stdio until the client leaves.
    from cortex_mcp.server import run
    run(root, db)
    return 0


def cmd_daemon(args) -> int:
    from cortex_cli import daemon
    action = args.daemon_command
    if action == "run":
        def ready(pid: int) -> None:
            print(f"cortex daemon {pid}: listening in {quick_folder()} (Ctrl-C stops it)",
                  file=sys.stderr, flush=True)
        return daemon.run(args.idle_minutes, ready)
    if action == "start":
        status = daemon.start(args.idle_minutes)
        word = "already running" if status["already"] else "started"
        return _print(f"cortex daemon: {word} (pid {status['pid']}), at {status['socket']}\n"
                      "queries in any repository are answered by it; `cortex daemon stop` "
                      "stops it")
    if action == "stop":
        stopped = daemon.stop()
        return _print("cortex daemon: stopped" if stopped else "cortex daemon: not running")
    status = daemon.running_status()
    if args.json:
        return _emit_json(status or {"running": False, "folder": quick_folder()})
    from cortex_cli import render
    return _print(render.daemon_status(status, quick_folder()))


def quick_folder() -> str:
    from cortex_cli.quick import folder
    return folder()


def cmd_hooks(args) -> int:
    from cortex_cli import hooks
    from cortex_core.engine import Engine
    root = Engine.find_root(args.repo)
    action = args.hooks_command
    report = getattr(hooks, action)(root)
    if args.json:
        _emit_json(report)
    else:
        print(hooks.render(report, action))
    # install / uninstall: 1 when a hook was left alone, for a reason the report gives
    return 0 if report.ok or action == "status" else 1


def _write_file(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise CortexError(f"cannot write {path}: {exc.strerror or exc}") from None


def _print(text: str, stream=None) -> int:
    print(text, file=stream or sys.stdout)
    return 0


# Each command: one engine operation (a Command), or a function for the commands with more to
# them (several operations, files, no repository). The operations: cortex_core/operations.py.
COMMANDS: dict[str, Command | Callable[[Any], int]] = {
    "index": cmd_index, "history": HISTORY, "hotspots": HOTSPOTS, "related": cmd_related,
    "status": STATUS, "search": SEARCH, "what": WHAT, "related-commits": RELATED_COMMITS,
    "areas": AREAS, "context": cmd_context, "note": cmd_note, "model": cmd_model,
    "blast": BLAST, "callers": NEIGHBOURS, "callees": NEIGHBOURS, "mcp": cmd_mcp,
    "hooks": cmd_hooks, "daemon": cmd_daemon}

# The engine operations each command runs (tests/test_operations.py checks them).
OPERATIONS_OF = {
    "index": ("index",), "history": ("history",), "hotspots": ("hotspots",),
    "related": ("related", "changes_related"), "status": ("status",), "search": ("search",),
    "what": ("what",), "related-commits": ("related_commits",), "areas": ("areas",),
    "context": ("context_pack",), "blast": ("blast",), "callers": ("callers",),
    "callees": ("callees",),
    "note": ("add_note", "supersede_note", "notes", "export_notes", "import_notes"),
    "model": (), "mcp": (), "hooks": (), "daemon": ()}


if __name__ == "__main__":
    sys.exit(main())
