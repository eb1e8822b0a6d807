#!/usr/bin/env python3
"""Fit the weights of search's second stage (cortex_core/memory/rerank.py) on self-supervised
pairs from the repositories' own history; no changelog, no evaluation query.

A pair: the title of a merged pull request ("Merge pull request #N from user/branch", its title on
the next line) is the query; the commits the pull request brought (reachable from the merge's
second parent, not from its first; merges left out) are the answers. The merge commit itself holds
the title, so it is left out of the search (`SearchOptions.exclude`): the answer must be found from
the commits' own messages and code, as a changelog entry must be.

For each query the first stage runs as search does, and the features of its best `rerank.DEPTH`
candidates are read back (the script sets every weight to 1, so each feature's contribution is
its value). The model is a pairwise logistic one (RankNet-style: every answer against every other
candidate of its query), fitted with Newton steps and a small L2 penalty, in numpy. Two models:
with vectors (hybrid search) and without (lexical search).

Run: `python bench/fit_rerank.py REPO:DB [REPO:DB ...] [--pairs N] [--seed S]`. It prints, for
each model, the weights and the cross-repository check (fitted on all but one repository, MRR@10
of the re-ranked candidates on the one left out, against the first stage's order), then the
`Model(...)` lines to paste into rerank.py.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import sys
from pathlib import Path

import numpy as np
import pygit2

_PR = "Merge pull request #"


def pr_pairs(repo_path: Path, limit: int, seed: int, max_commits: int = 20) -> list[tuple]:
    """(merge sha, title, answer shas) of merged pull requests with a title, a seeded sample."""
    repo = pygit2.Repository(str(repo_path))
    head = repo.head.peel(pygit2.Commit)
    merges = []
    for commit in repo.walk(head.id, pygit2.GIT_SORT_TIME):
        if len(commit.parent_ids) != 2:
            continue
        message = commit.message
        if not message.startswith(_PR):
            continue
        lines = [line.strip() for line in message.split("\n")[1:] if line.strip()]
        if not lines or len(lines[0].split()) < 3:
            continue
        merges.append((commit, lines[0]))
    random.Random(seed).shuffle(merges)
    out = []
    for commit, title in merges:
        walker = repo.walk(commit.parent_ids[1], pygit2.GIT_SORT_TIME)
        walker.hide(commit.parent_ids[0])
        answers = {str(c.id) for c in walker if len(c.parent_ids) == 1}
        if 0 < len(answers) <= max_commits:
            out.append((str(commit.id), title, answers))
        if len(out) >= limit:
            break
    return out


def collect(con, pairs, mode: str, embedder) -> list[tuple[np.ndarray, np.ndarray, int]]:
    """Per query: (features of its candidates, 1 for an answer else 0, first-stage rank of the
    first answer or 0)."""
    from cortex_core.memory import rerank
    from cortex_core.memory.search import SearchOptions, search
    ones = rerank.Model(0.0, (1.0,) * len(rerank.FEATURES))
    rerank.WITH_VECTORS = rerank.LEXICAL_ONLY = ones    # contributions are the values
    out = []
    for merge, title, answers in pairs:
        options = SearchOptions(top_k=rerank.DEPTH, kinds=("commit",), mode=mode, priors=True,
                                context=False, exclude=(merge,), per_source=1)
        hits = search(con, title, options, embedder=embedder).hits
        hits = [h for h in hits if h.why is not None and h.why.rerank is not None]
        if not hits:
            continue
        x = np.array([[v for _, v in h.why.rerank_parts] for h in hits])
        y = np.array([1.0 if h.sha in answers else 0.0 for h in hits])
        # The first stage's order: by fused score with priors (what the hits held before).
        first = sorted(range(len(hits)), key=lambda i: -(hits[i].why.fused
                                                         * (1 + hits[i].why.boost)))
        first_rank = next((n + 1 for n, i in enumerate(first) if y[i]), 0)
        out.append((x, y, first_rank))
    return out


def fit(groups, l2: float = 1e-2, steps: int = 30) -> np.ndarray:
    """Pairwise logistic regression: minimise sum log(1 + exp(-w.(x_answer - x_other)))."""
    diffs = [x[y == 1][:, None, :] - x[y == 0][None, :, :] for x, y, _ in groups
             if y.any() and not y.all()]
    d = np.concatenate([p.reshape(-1, p.shape[-1]) for p in diffs])
    w = np.zeros(d.shape[1])
    for _ in range(steps):
        z = d @ w
        p = 1 / (1 + np.exp(-z))
        grad = -(d * (1 - p)[:, None]).sum(0) / len(d) + l2 * w
        hess = (d * (p * (1 - p))[:, None]).T @ d / len(d) + l2 * np.eye(len(w))
        w -= np.linalg.solve(hess, grad)
    return w


def mrr(groups, w: np.ndarray | None, k: int = 10) -> tuple[float, float]:
    """(Recall@k, MRR@k) over the groups: re-ranked by w, or the first stage's order if None."""
    hits = rr = 0.0
    for x, y, first_rank in groups:
        if w is None:
            rank = first_rank
        else:
            order = np.argsort(-(x @ w), kind="stable")
            rank = next((n + 1 for n, i in enumerate(order) if y[i]), 0)
        if 0 < rank <= k:
            hits += 1
            rr += 1 / rank
    return hits / len(groups), rr / len(groups)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("repos", nargs="+", help="REPO:DB, the repository and its index")
    p.add_argument("--pairs", type=int, default=400, help="pull requests per repository")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    from cortex_core.memory import rerank
    from cortex_core.memory.embeddings import load_embedder
    from cortex_core.store.store import open_reader
    data: dict[str, dict[str, list]] = {"hybrid": {}, "lexical": {}}
    for spec in args.repos:
        repo, db = spec.split(":", 1)
        pairs = pr_pairs(Path(repo), args.pairs, args.seed)
        con = open_reader(Path(db))
        embedder = load_embedder(con)
        for mode in data:
            data[mode][repo] = collect(con, pairs, mode, embedder)
        print(f"{repo}: {len(pairs)} pull requests, {len(data['hybrid'][repo])} with candidates",
              file=sys.stderr)
    names = rerank.FEATURES
    for mode, by_repo in data.items():
        print(f"\n== {mode}")
        for held in by_repo:
            train = [g for r, gs in by_repo.items() if r != held for g in gs]
            if not train:
                continue
            w = fit(train)
            base, new = mrr(by_repo[held], None), mrr(by_repo[held], w)
            print(f"  held out {Path(held).name}: first stage R@10 {base[0]:.3f} MRR {base[1]:.3f}"
                  f" -> re-ranked R@10 {new[0]:.3f} MRR {new[1]:.3f}")
        every = [g for gs in by_repo.values() for g in gs]
        w = fit(every)
        base, new = mrr(every, None), mrr(every, w)
        print(f"  all, in sample: first stage R@10 {base[0]:.3f} MRR {base[1]:.3f} -> "
              f"R@10 {new[0]:.3f} MRR {new[1]:.3f}")
        for name, value in zip(names, w):
            print(f"    {name:18s} {value:+.3f}")
        model = dataclasses.replace(rerank.Model(0.0, ()), weights=tuple(round(float(v), 3)
                                                                           for v in w))
        print(f"  {model}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
