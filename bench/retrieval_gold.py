#!/usr/bin/env python3
"""Gold queries for retrieval benchmarks, from a repository's own changelog.

A human-written changelog is a set of natural-language descriptions of changes, each citing the
issues or pull requests (#1234, :gh:`1234`, ...) it comes from. With those numbers removed, an
entry is a query; the commits whose messages cite the same numbers ("Merge pull request #1234
from ...", "Fix X (#1234)", "Fixes #1234", "closes gh-1234") are its gold answers.

    gold_queries(repo_path, changelog=None, *, min_words=4) -> list[GoldQuery]
    extract(repo_path, changelog=None, *, min_words=4) -> GoldSet   # the same, with statistics

How it works:

1. The changelog: `changelog` (a path relative to the repository, or absolute), else the
   candidate (HISTORY.md, CHANGES.rst, CHANGELOG.md, NEWS, docs/news.rst, ...; see
   CHANGELOG_NAMES) that cites the most issue/PR numbers, read from HEAD's tree (the working
   tree if HEAD has no such file). Markdown or reStructuredText, by extension or by content.
2. Entries: the top-level bullets (`-`, `*`, `+`), each with its continuation lines (indented
   lines, nested bullets, indented paragraphs after a blank line, and markdown's unindented
   "lazy" continuation lines). Headings, bold-only lines (`**Bugfixes**`), unindented
   paragraphs and code/literal blocks end or stay out of an entry.
3. Refs of an entry: `#N`, `\\#N`, `GH-N`, `:gh:`N``/`:issue:`N``/`:pr:`N`` (also `:gh:`text <N>``),
   links to this repository's issues/pull requests on GitHub (`.../issues/N`, `.../pull/N`, the
   owner is not checked: repositories move, e.g. kennethreitz/requests -> psf/requests) and
   `owner/name#N` when name is this repository's. Refs to other repositories (`shazow/urllib3#544`,
   `travis#296`, bugs.python.org, `bpo-N`, CVE numbers) are not refs; URLs and other repositories'
   refs are removed from the text, `bpo-N` and CVE ids stay (they are words of the entry).
   `:commit:` and `:rev:` roles are removed; an entry citing a commit directly (`:commit:`abc``)
   is dropped: in scrapy's old notes those entries are copies of commit subjects, which would
   make the query the gold commit's own message.
4. Query text: the entry with the refs (and the word that introduces them: "fixes", "closes",
   "see", "issue", "PR", ...) removed, empty brackets left behind removed, markup reduced to its
   words (``code`` -> code, :class:`~a.b.C` -> C, :ref:`text <target>` -> text, [text](url) ->
   text, **bold** -> bold, escapes undone), whitespace normalised.
5. Gold: every commit reachable from HEAD (any number of parents: merges included) whose message
   cites one of the entry's refs, the union over the refs. Commit messages are matched with the
   forms above plus "issue N", "issueN", "bug N", "PR N", "pull request N", "ticket N" (the
   keyword before the number, no '#' needed), whole numbers only: `#12345` never counts for 1234,
   nor `#1234.5`, `#1234abc`, `&#1234;`, `x#1234`, `a/b#1234` (another repository) or
   `/issue1234` (a URL, or a branch name in "Merge pull request #N from user/issue1234", which
   is the merged branch's name, not a reference).
6. Dropped, counted by reason: no refs, only refs below `min_ref` (10: "test #2", "Merge pull
   request #1 from user/master" -- a pull request inside a fork -- make small numbers
   unreliable), more than `max_refs` refs (catch-all entries; no limit by default), a `:commit:`
   citation, a copied "Merge pull request/branch" line, fewer than `min_words` words, refs that no
   commit cites, and duplicates (entries with the same query text are merged: refs and gold
   united, the first location kept).
7. Optionally (`expand_merges`), a gold merge brings the commits it merged into the gold.

Run `python bench/retrieval_gold.py REPO [--changelog FILE] [--json]` for the statistics and a
few examples. Standard library and pygit2 only.
"""

from __future__ import annotations

import argparse
import difflib
import json
import random
import re
import statistics
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pygit2

from _gold_changelog import changelog_refs, sniff_format, find_changelog, plain_text, split_entries
from _gold_messages import CitingCommit, MERGE_LINE, commit_refs, repo_names


@dataclass(frozen=True)
class GoldQuery:
    query: str                 # the entry's words, refs and markup removed
    refs: tuple[int, ...]      # the issue/PR numbers the entry cited
    gold: frozenset[str]       # full shas of the commits whose messages cite one of refs
    source: str                # "HISTORY.md:123": the changelog and the entry's first line


@dataclass
class GoldSet:
    queries: list[GoldQuery]
    changelog: str
    fmt: str                                   # "markdown" | "rst"
    entries: int                               # bullets found
    dropped: dict[str, int]                    # reason -> entries
    stats: dict = field(default_factory=dict)  # see _stats


# ---------------------------------------------------------------------------------------------
# The query text


def _words(text: str) -> int:
    return sum(1 for tok in text.split() if re.search(r"\w", tok))


def _subject_key(subject: str, names: set[str]) -> str:
    return plain_text(changelog_refs(subject, "markdown", names)[1], "markdown").lower()


# ---------------------------------------------------------------------------------------------
# The gold set


def extract(repo_path: Path, changelog: str | None = None, *, min_words: int = 4,
            min_ref: int = 10, max_refs: int | None = None,
            expand_merges: bool = False) -> GoldSet:
    """The gold queries of a repository and the statistics of their extraction.

    min_ref: numbers below it are not refs, on either side ("#1" in a commit message is as often
    an enumeration, "test #2", or a pull request merged inside a contributor's fork, "Merge pull
    request #1 from user/master", as this repository's issue 1). max_refs: entries citing more
    refs are dropped (catch-all entries such as "Other documentation improvements" citing 50
    pull requests); None keeps them all. expand_merges: a gold merge commit brings the commits
    it merged (reachable from its other parents, not from its first) into the gold too, unless
    they are more than MAX_MERGED (a long-lived branch rather than a pull request)."""
    repo_path = Path(repo_path)
    repo = pygit2.Repository(str(repo_path))
    names = repo_names(repo, repo_path)
    path, text = find_changelog(repo, repo_path, changelog, names)
    fmt = sniff_format(path, text)
    by_ref, commits = commit_refs(repo, names)
    entries = split_entries(text, fmt)
    dropped: Counter[str] = Counter()
    unmapped_refs: Counter[int] = Counter()
    merged: dict[str, dict] = {}
    expansion: dict[str, set[str] | None] = {}
    for entry in entries:
        # nested bullets' markers are not words
        raw = "\n".join(re.sub(r"^[-*+]\s+", "", line) for line in entry.lines)
        refs, rest, cites_commit = changelog_refs(raw, fmt, names)
        if not refs:
            dropped["no_refs"] += 1
            continue
        if not any(r >= min_ref for r in refs):
            dropped["refs_below_min_ref"] += 1
            continue
        refs = [r for r in refs if r >= min_ref]
        if max_refs is not None and len(refs) > max_refs:
            dropped["too_many_refs"] += 1
            continue
        if cites_commit:
            dropped["cites_commit"] += 1
            continue
        query = plain_text(rest, fmt)
        if MERGE_LINE.match(query):
            dropped["merge_line"] += 1
            continue
        if _words(query) < min_words:
            dropped["too_short"] += 1
            continue
        gold: set[str] = set()
        for ref in refs:
            gold |= by_ref.get(ref, set())
            if ref not in by_ref:
                unmapped_refs[ref] += 1
        if not gold:
            dropped["refs_without_commit"] += 1
            continue
        if expand_merges:
            for sha in [s for s in gold if commits[s].parents > 1]:
                if sha not in expansion:
                    expansion[sha] = _merged_commits(repo, sha)
                gold |= expansion[sha] or set()
        source = f"{path}:{entry.line}"
        if query in merged:
            dropped["duplicate"] += 1
            m = merged[query]
            m["refs"] += [r for r in refs if r not in m["refs"]]
            m["gold"] |= gold
            continue
        merged[query] = {"refs": list(refs), "gold": gold, "source": source}
    queries = [GoldQuery(q, tuple(m["refs"]), frozenset(m["gold"]), m["source"])
               for q, m in merged.items()]
    out = GoldSet(queries, path, fmt, len(entries), dict(dropped))
    out.stats = _stats(queries, commits, by_ref, unmapped_refs, names)
    if expand_merges:
        out.stats["merges_expanded"] = sum(1 for v in expansion.values() if v is not None)
        out.stats["merges_not_expanded_too_large"] = sum(1 for v in expansion.values() if v is None)
    return out


MAX_MERGED = 50


def _merged_commits(repo: pygit2.Repository, sha: str) -> set[str] | None:
    """The commits a merge brought in (reachable from its other parents, not from its first);
    None if more than MAX_MERGED."""
    commit = repo[sha]
    walker = repo.walk(commit.parent_ids[1], pygit2.enums.SortMode.NONE)
    for extra in commit.parent_ids[2:]:
        walker.push(extra)
    walker.hide(commit.parent_ids[0])
    out: set[str] = set()
    for c in walker:
        out.add(str(c.id))
        if len(out) > MAX_MERGED:
            return None
    return out


def gold_queries(repo_path: Path, changelog: str | None = None, *, min_words: int = 4,
                 min_ref: int = 10, max_refs: int | None = None) -> list[GoldQuery]:
    """The gold queries of a repository (see the module's documentation and `extract`)."""
    return extract(repo_path, changelog, min_words=min_words, min_ref=min_ref,
                   max_refs=max_refs).queries


def _summary(values: list[float]) -> dict:
    if not values:
        return {"mean": None, "median": None, "max": None}
    return {"mean": round(statistics.fmean(values), 2), "median": statistics.median(values),
            "max": max(values), "min": min(values)}


def _stats(queries: list[GoldQuery], commits: dict[str, CitingCommit], by_ref: dict[int, set[str]],
           unmapped_refs: Counter, names: set[str]) -> dict:
    per_commit: Counter[str] = Counter()
    for q in queries:
        per_commit.update(q.gold)
    gold_all = [sha for q in queries for sha in q.gold if sha in commits]
    merge_only = sum(1 for q in queries
                     if all(s in commits and commits[s].parents > 1 for s in q.gold))
    # A query that is (nearly) the subject of one of its gold commits: the changelog copied the
    # PR title. Realistic, but an easy query; counted, not dropped.
    verbatim = 0
    for q in queries:
        key = q.query.lower()
        for sha in q.gold & commits.keys():
            subject = _subject_key(commits[sha].title, names)
            if difflib.SequenceMatcher(None, key, subject).ratio() >= 0.9:
                verbatim += 1
                break
    hubs = [{"sha": sha, "queries": n, "subject": commits[sha].subject,
             "parents": commits[sha].parents}
            for sha, n in per_commit.most_common(5) if n > 1 and sha in commits]
    return {
        "gold_size": _summary([len(q.gold) for q in queries]),
        "refs_per_query": _summary([len(q.refs) for q in queries]),
        "query_words": _summary([_words(q.query) for q in queries]),
        "gold_commits_distinct": len(per_commit),
        "gold_merge_share": round(sum(commits[s].parents > 1 for s in gold_all)
                                  / len(gold_all), 3) if gold_all else None,
        "queries_gold_merges_only": merge_only,
        "queries_near_verbatim_subject": verbatim,
        "commits_gold_for_several_queries": sum(1 for n in per_commit.values() if n > 1),
        "commits_gold_for_5_or_more_queries": sum(1 for n in per_commit.values() if n >= 5),
        "top_shared_gold_commits": hubs,
        "commits_citing_refs": len(commits),
        "refs_cited_by_commits": len(by_ref),
        "changelog_refs_without_commit": len(unmapped_refs),
    }


# ---------------------------------------------------------------------------------------------


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Gold queries from a repository's changelog: "
                                "entries without their issue/PR numbers, and the commits that "
                                "cite those numbers.")
    p.add_argument("repo", type=Path, help="the git repository")
    p.add_argument("--changelog", help="the changelog, relative to the repository (default: "
                   "found automatically)")
    p.add_argument("--min-words", type=int, default=4, help="shorter queries are dropped "
                   "(default 4)")
    p.add_argument("--min-ref", type=int, default=10, help="smaller numbers are not refs "
                   "(default 10)")
    p.add_argument("--max-refs", type=int, help="entries citing more refs are dropped (default: "
                   "none dropped)")
    p.add_argument("--expand-merges", action="store_true", help="a gold merge adds the commits "
                   "it merged to the gold")
    p.add_argument("--examples", type=int, default=5, help="random examples shown (default 5)")
    p.add_argument("--seed", type=int, default=0, help="seed of the examples (default 0)")
    p.add_argument("--all", action="store_true", help="with --json: every query, not only the "
                   "examples")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    args = p.parse_args(argv)
    gs = extract(args.repo, args.changelog, min_words=args.min_words, min_ref=args.min_ref,
                 max_refs=args.max_refs, expand_merges=args.expand_merges)
    repo = pygit2.Repository(str(args.repo))
    rng = random.Random(args.seed)
    sample = rng.sample(gs.queries, min(args.examples, len(gs.queries)))

    def example(q: GoldQuery) -> dict:
        return {"query": q.query, "refs": list(q.refs), "source": q.source,
                "gold": [{"sha": s, "subject": repo[s].message.strip().split("\n", 1)[0]}
                         for s in sorted(q.gold)]}
    report = {"repository": str(args.repo.resolve()), "changelog": gs.changelog,
              "format": gs.fmt, "entries": gs.entries, "queries": len(gs.queries),
              "min_words": args.min_words, "min_ref": args.min_ref, "max_refs": args.max_refs,
              "dropped": gs.dropped, **gs.stats,
              "examples": [example(q) for q in sample]}
    if args.all:
        report["all_queries"] = [{"query": q.query, "refs": list(q.refs), "source": q.source,
                                  "gold": sorted(q.gold)} for q in gs.queries]
    if args.json:
        json.dump(report, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    s = gs.stats
    print(f"{report['repository']}: {gs.changelog} ({gs.fmt}), {gs.entries} entries")
    print(f"queries: {len(gs.queries)} (min {args.min_words} words)")
    print("dropped: " + (", ".join(f"{k} {v}" for k, v in sorted(gs.dropped.items())) or "none"))
    g, r, w = s["gold_size"], s["refs_per_query"], s["query_words"]
    print(f"gold commits per query: mean {g['mean']}, median {g['median']}, max {g['max']}")
    print(f"refs per query: mean {r['mean']}, max {r['max']};  words per query: mean {w['mean']},"
          f" median {w['median']}, max {w['max']}")
    print(f"distinct gold commits {s['gold_commits_distinct']}, of which merges "
          f"{s['gold_merge_share']:.0%}; queries whose gold is merges only "
          f"{s['queries_gold_merges_only']}; near-verbatim PR/commit subject "
          f"{s['queries_near_verbatim_subject']}")
    print(f"commits gold for several queries {s['commits_gold_for_several_queries']}, "
          f"for 5 or more {s['commits_gold_for_5_or_more_queries']}; changelog refs no commit "
          f"cites: {s['changelog_refs_without_commit']}")
    for h in s["top_shared_gold_commits"]:
        print(f"  {h['sha'][:10]}  gold for {h['queries']} queries  {h['subject'][:70]}")
    print(f"\n{len(sample)} examples (seed {args.seed}):")
    for ex in report["examples"]:
        print(f"\n  {ex['source']}  refs {ex['refs']}\n  query: {ex['query']}")
        for gdict in ex["gold"]:
            print(f"    {gdict['sha'][:10]}  {gdict['subject'][:90]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
