"""The `cortex` command line: a thin shell over cortex_core, one command per core call.

Heavy modules (pygit2, tree-sitter) are imported only by the commands that need them, so a query
such as `cortex history` starts in a few tens of milliseconds.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import asdict, is_dataclass
from pathlib import Path

from . import __version__
from .errors import CortexError

EPILOG = """targets:
  PATH            a file (relative to the repository root or the current directory)
  PATH::SYMBOL    a symbol in it, by qualified name (Class.method) or unambiguous short name
  PATH:LINE       the innermost symbol enclosing that line at HEAD

The index lives in <repo>/.cortex/cortex.db unless --db says otherwise.
Settings: <repo>/.cortex/config.toml (see the README)."""


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--repo", metavar="PATH",
                        help="the git repository (default: the one around the current directory)")
    common.add_argument("--db", metavar="FILE", help="the index database (default: <repo>/.cortex/cortex.db)")
    common.add_argument("--json", action="store_true", help="print JSON for machines")

    parser = argparse.ArgumentParser(
        prog="cortex", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG,
        description="A memory of a git repository: symbol-level history, hotspots, co-change.")
    parser.add_argument("--version", action="version", version=f"cortex {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("index", parents=[common], help="index new commits (incremental)",
                       description="Index the commits not indexed yet, down to functions. "
                       "Safe to interrupt: the next run continues.")
    p.add_argument("--rebuild", action="store_true", help="delete the index and rebuild it from scratch")
    branches = p.add_mutually_exclusive_group()
    branches.add_argument("--all-branches", dest="all_branches", action="store_true", default=None,
                          help="index every local branch, not only HEAD (remembered)")
    branches.add_argument("--head-only", dest="all_branches", action="store_false",
                          help="index only what HEAD reaches (the default; remembered)")
    p.add_argument("--wait", type=float, default=10.0, metavar="SECONDS",
                   help="how long to wait for another running indexer (default: 10)")
    p.add_argument("--jobs", "-j", type=_positive_int, metavar="N",
                   help="processes reading history in long runs (default: one per CPU, at most 4)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")

    p = sub.add_parser("history", parents=[common], help="commits that changed a file or symbol",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG,
                       description="The commits that changed PATH, PATH::SYMBOL or the symbol at "
                       "PATH:LINE, newest first, following renames and moves.")
    p.add_argument("target", metavar="TARGET", help="PATH, PATH::SYMBOL or PATH:LINE")
    p.add_argument("-n", "--limit", type=_positive_int, metavar="N", help="show at most N commits")

    p = sub.add_parser("hotspots", parents=[common], help="symbols and files that change the most",
                       description="Symbols and files ranked by recency-weighted change count, "
                       "distinct authors and churn (formula: --explain).")
    p.add_argument("--since", type=_positive_float, metavar="DAYS", help="only commits of the last DAYS days")
    p.add_argument("--path", metavar="PREFIX", help="only under this folder or file")
    p.add_argument("--top-k", type=_positive_int, default=10, metavar="N", help="how many of each (default: 10)")
    p.add_argument("--half-life", type=_positive_float, metavar="DAYS",
                   help="recency half-life (default: 90, or [hotspots] half_life_days)")
    p.add_argument("--explain", action="store_true", help="print the formula and its inputs")

    p = sub.add_parser("related", parents=[common], help="what changes together with a file or symbol",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG,
                       description="Files (and symbols) that historically change in the same "
                       "commits, with support, confidence and the shared commits as evidence.")
    p.add_argument("target", metavar="TARGET", help="PATH or PATH::SYMBOL")
    p.add_argument("--top-k", type=_positive_int, default=10, metavar="N", help="how many (default: 10)")
    p.add_argument("--min-support", type=_positive_int, metavar="N",
                   help="shared commits needed (default: 2, or [coupling] min_support)")

    sub.add_parser("status", parents=[common], help="what the index holds",
                   description="Commits, symbols, languages, skipped files with reasons, the last "
                   "indexed commit and the database size.")
    return parser


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number: {text}")
    return value


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except CortexError as exc:
        print(f"cortex: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("cortex: interrupted (the index stays consistent; run again to continue)",
              file=sys.stderr)
        return 130
    except BrokenPipeError:  # `cortex history ... | head`
        sys.stderr.close()
        return 0


# -- plumbing -------------------------------------------------------------------------------------

def _locate(args) -> tuple[Path, Path]:
    from .repo_paths import find_repo_root
    from .store import default_db_path
    root = find_repo_root(args.repo)
    db = Path(args.db).expanduser().resolve() if args.db else default_db_path(root)
    return root, db


def _settings(root: Path):
    from .config import load_settings
    return load_settings(root / ".cortex" / "config.toml")


def _reader(args):
    from .store import open_reader
    root, db = _locate(args)
    return root, db, open_reader(db)


def _spec(text: str, root: Path):
    from .repo_paths import repo_relative
    from .targets import TargetSpec, parse_target
    spec = parse_target(text)
    return TargetSpec(repo_relative(spec.path, root), spec.symbol, spec.line)


def _emit_json(result) -> int:
    import json  # only for --json: every import shows in the start of each command
    print(json.dumps(_plain(result), indent=2, ensure_ascii=False))
    return 0


def _plain(value):
    if is_dataclass(value):
        out = asdict(value)
        for name in ("label", "short"):  # derived properties that a reader would want
            if hasattr(value, name):
                out[name] = getattr(value, name)
        return out
    return value


# -- commands -------------------------------------------------------------------------------------

def cmd_index(args) -> int:
    from .ingest import index_repository
    from . import render
    root, db = _locate(args)
    show = not args.quiet and not args.json and sys.stderr.isatty()
    bar = render.ProgressBar(sys.stderr) if show else None
    summary = index_repository(root, db, _settings(root), all_branches=args.all_branches,
                               rebuild=args.rebuild, wait_seconds=args.wait, jobs=args.jobs,
                               progress=bar.update if bar else None)
    if bar:
        bar.close()
    if args.json:
        return _emit_json(summary)
    print(render.index_summary(summary, db, root))
    return 0


def cmd_history(args) -> int:
    from .history import history
    from . import render
    root, _, con = _reader(args)
    result = history(con, _spec(args.target, root), limit=args.limit)
    if args.json:
        return _emit_json(result)
    print(render.history(result, time.time()))
    return 0


def cmd_hotspots(args) -> int:
    from .hotspots import hotspots
    from .repo_paths import repo_relative
    from . import render
    root, _, con = _reader(args)
    settings = _settings(root)
    result = hotspots(con, half_life_days=args.half_life or settings.hotspots.half_life_days,
                      since_days=args.since, top_k=args.top_k,
                      path_prefix=repo_relative(args.path, root) if args.path else None)
    if args.json:
        return _emit_json(result)
    print(render.hotspots(result, time.time(), args.explain))
    return 0


def cmd_related(args) -> int:
    from .coupling import related
    from . import render
    root, _, con = _reader(args)
    settings = _settings(root).coupling
    result = related(con, _spec(args.target, root), top_k=args.top_k,
                     max_changeset=settings.max_changeset,
                     min_support=args.min_support or settings.min_support)
    if args.json:
        return _emit_json(result)
    print(render.related(result))
    return 0


def cmd_status(args) -> int:
    from .status import status
    from . import render
    root, db, con = _reader(args)
    result = status(con, db)
    if args.json:
        return _emit_json(result)
    print(render.status(result, root, time.time()))
    return 0


COMMANDS = {"index": cmd_index, "history": cmd_history, "hotspots": cmd_hotspots,
            "related": cmd_related, "status": cmd_status}


if __name__ == "__main__":
    sys.exit(main())
