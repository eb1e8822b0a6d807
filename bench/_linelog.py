"""Helpers of the history benchmarks (bench_history.py, bench_scale.py): git's funcname lines
and `-L` regexes (Python, Go), `git log -L` patches, git's renames, speed against a baseline and
the agreement of commit sets.

Standard library only (plus the project, imported by the scripts themselves).
"""

from __future__ import annotations

import re
from pathlib import Path

from _benchlib import fmt_seconds, percentile, ratio, run, table

# ---------------------------------------------------------------------------------------------
# git log -L: funcname lines of git's diff drivers, the -L regex of a definition, patches


HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
TAB = "\t"
# git's built-in `python` diff driver: which lines are funcname lines.
PY_FUNCNAME = re.compile(r"^[ \t]*((class|(async[ \t]+)?def)[ \t].*)$")
# git's built-in `golang` driver (userdiff.c, git 2.39): `^[ \t]*(func[ \t]*.*(\{[ \t]*)?)` or
# `^[ \t]*(type[ \t].*(struct|interface)[ \t]*(\{[ \t]*)?)`, extended, unanchored at the end.
GO_FUNCNAME = re.compile(r"^[ \t]*(func|type[ \t].*(struct|interface))")


def git_regex(name: str, kind: str) -> tuple[str, re.Pattern[str]]:
    """The POSIX basic regex given to `git log -L :RE:FILE` (git compiles it with regcomp and
    REG_NEWLINE, no REG_EXTENDED) and the equivalent Python regex used to check, on the HEAD
    blob, that it matches the definition line and nothing else. Inside brackets POSIX has no
    escapes, so the tab is a literal tab."""
    ws = f"[ {TAB}]"
    if kind == "class":
        # ':' ends the funcname part of -L unless escaped; inside brackets the backslash is
        # literal in POSIX, which only widens the class by one character.
        return (f"^{ws}*class{ws}{ws}*{name}{ws}*[(\\:]",
                re.compile(rf"^[ \t]*class[ \t]+{name}[ \t]*[(\\:]"))
    return (f"^{ws}*\\(async{ws}{ws}*\\)\\{{0,1\\}}def{ws}{ws}*{name}{ws}*[(]",
            re.compile(rf"^[ \t]*(async[ \t]+)?def[ \t]+{name}[ \t]*\("))


def go_regex(qualname: str, name: str, kind: str) -> tuple[str, re.Pattern[str]]:
    """As git_regex, for a Go function (`func Save(`, `func Map[T any](`) or method: cortex's
    "Repo.Save" is `func (r *Repo) Save(`, `func (Repo) Save(`, `func (r *Repo[T]) Save(`; the
    receiver's name, `*` and type arguments are matched loosely, the type and the name exactly.
    A `type` symbol: `type Name ` (its line is a funcname line only for struct/interface)."""
    ws = f"[ {TAB}]"
    recv = qualname.rpartition(".")[0]
    if kind in ("function", "method") and recv:
        return (f"^func{ws}*(\\([^)]*[ {TAB}*]\\)\\{{0,1\\}}{recv}\\(\\[[^]]*]\\)\\{{0,1\\}}{ws}*)"
                f"{ws}*{name}{ws}*[[(]",
                re.compile(rf"^func[ \t]*\(([^)]*[ \t*])?{recv}(\[[^\]]*\])?[ \t]*\)[ \t]*{name}"
                           rf"[ \t]*[\[(]"))
    if kind in ("function", "method"):
        return (f"^func{ws}{ws}*{name}{ws}*[[(]", re.compile(rf"^func[ \t]+{name}[ \t]*[\[(]"))
    return (f"^{ws}*type{ws}{ws}*{name}{ws}", re.compile(rf"^[ \t]*type[ \t]+{name}[ \t]"))


def python_def_name(line: str) -> str | None:
    """The name a Python funcname line defines."""
    m = re.match(r"\s*(?:async\s+)?(?:def|class)\s+(\w+)", line or "")
    return m and m.group(1)


def go_def_name(line: str) -> str | None:
    """The qualified name a Go funcname line defines, as cortex names it (Repo.Save, Save)."""
    m = re.match(r"\s*func\s*\(([^)]*)\)\s*(\w+)|\s*func\s+(\w+)|\s*type\s+(\w+)", line or "")
    if not m:
        return None
    if m.group(2):
        recv = re.sub(r"\[.*", "", m.group(1)).replace("*", " ").split()
        return f"{recv[-1]}.{m.group(2)}" if recv else m.group(2)
    return m.group(3) or m.group(4)


def line_log(clone: str | Path, range_arg: str, rev: str) -> dict[str, list[dict]]:
    """`git log -L<range_arg> REV` with its patch, parsed: per commit (newest first), one block
    per file diff with its paths, the lines git shows deleted and added in its range (with their
    numbers), the hunks' ranges on each side and the first line of the range on each side."""
    r = run(["git", "-C", str(clone), "log", f"-L{range_arg}", "--format=%x00%H", rev])
    out: dict[str, list[dict]] = {}
    sha = block = None
    o = n = 0
    for raw in r.stdout.decode("utf-8", "replace").split("\n"):
        if raw.startswith("\0"):
            sha = raw[1:].strip()
            out[sha] = []
            block = None
        elif sha is None:
            continue
        elif raw.startswith("diff --git "):
            block = {"old_path": None, "new_path": None, "minus": [], "plus": [],
                     "old_first": None, "new_first": None, "old_ranges": [], "new_ranges": []}
            out[sha].append(block)
        elif block is None:
            continue
        elif raw.startswith("--- ") and block["old_path"] is None and not block["minus"]:
            block["old_path"] = raw[4:].removeprefix("a/")
        elif raw.startswith("+++ ") and block["new_path"] is None and not block["plus"]:
            block["new_path"] = raw[4:].removeprefix("b/")
        elif (m := HUNK.match(raw)):
            o, n = int(m.group(1)), int(m.group(3))
            block["old_ranges"].append((o, int(m.group(2) or 1)))
            block["new_ranges"].append((n, int(m.group(4) or 1)))
        elif raw.startswith("-"):
            block["minus"].append((o, raw[1:]))
            block["old_first"] = block["old_first"] or raw[1:]
            o += 1
        elif raw.startswith("+"):
            block["plus"].append((n, raw[1:]))
            block["new_first"] = block["new_first"] or raw[1:]
            n += 1
        elif raw.startswith(" "):
            block["old_first"] = block["old_first"] or raw[1:]
            block["new_first"] = block["new_first"] or raw[1:]
            o += 1
            n += 1
    return out


def renames(clone: str | Path, sha: str) -> dict[tuple[str, str], int]:
    """The renames git's own rename detection (`git diff -M`, default 50% similarity, what
    `git log -L` and `--follow` use) finds between `sha`'s first parent and `sha`:
    (old path, new path) -> similarity in percent."""
    out = run(["git", "-C", str(clone), "diff", "-M", "--name-status", "-z", f"{sha}^", sha],
              check=False).stdout.decode("utf-8", "replace").split("\0")
    found, i = {}, 0
    while i + 1 < len(out) and out[i]:
        status = out[i]
        if status[0] in ("R", "C"):
            if status[0] == "R":
                found[(out[i + 1], out[i + 2])] = int(status[1:] or 0)
            i += 3
        else:
            i += 2
    return found


# ---------------------------------------------------------------------------------------------
# Tools against a baseline (git): speed per item and agreement of commit sets


def speed_summary(times: dict[str, list[float]], baseline: str) -> dict:
    """Per tool (key -> its time per item, items in the same order for all): p50, p95, min, max;
    for each tool but the baseline, `git_over_this`: the baseline's time over the tool's at p50
    and p95, and per item (median, min, the number of items where the tool is faster)."""
    out = {key: {"p50": percentile(v, 50), "p95": percentile(v, 95), "min": min(v), "max": max(v)}
           for key, v in times.items()}
    g = out[baseline]
    for key, values in times.items():
        if key != baseline:
            per = [b / v for b, v in zip(times[baseline], values)]
            out[key]["git_over_this"] = {
                "p50": ratio(g["p50"], out[key]["p50"]), "p95": ratio(g["p95"], out[key]["p95"]),
                "per_function_median": percentile(per, 50), "per_function_min": min(per),
                "functions_faster_than_git": sum(1 for r in per if r > 1)}
    return out


def speed_table(summary: dict, labels) -> str:
    """speed_summary as a table, one row per (key, label); the baseline's ratios are 1x."""
    rows = []
    for key, label in labels:
        v = summary[key]
        r = v.get("git_over_this")
        rows.append([label, fmt_seconds(v["p50"]), fmt_seconds(v["p95"]),
                     f"{r['p50']:.1f}x" if r else "1x", f"{r['p95']:.1f}x" if r else "1x",
                     f"{r['per_function_median']:.1f}x / {r['per_function_min']:.1f}x"
                     if r else "-"])
    return table(rows, ["", "p50", "p95", "git/this p50", "git/this p95",
                        "per-function median / min"])


def set_scores(rows: list[dict]) -> dict:
    """Agreement of cortex's commit sets with git's (the reference), from per-function counts
    (set_counts: git, cortex, common, and merges: git's merge commits among its own): micro and
    macro precision and recall, the share of identical sets (nothing listed: precision 1)."""
    n, tp = len(rows), sum(r["common"] for r in rows)
    n_git, n_cortex = sum(r["git"] for r in rows), sum(r["cortex"] for r in rows)
    merges = sum(r["merges"] for r in rows)
    return {
        "functions": n,
        "exact_match_rate": sum(r["git"] == r["cortex"] == r["common"] for r in rows) / n
        if n else None,
        "precision_micro": tp / n_cortex if n_cortex else None,
        "recall_micro": tp / n_git if n_git else None,
        "precision_macro": sum(r["common"] / r["cortex"] if r["cortex"] else 1.0
                               for r in rows) / n if n else None,
        "recall_macro": sum(r["common"] / r["git"] if r["git"] else 1.0 for r in rows) / n
        if n else None,
        "commits_git": n_git, "commits_cortex": n_cortex, "commits_common": tp,
        # The same figure once git's merges are left out: cortex never lists merges by design.
        "recall_micro_without_git_merges": tp / (n_git - merges) if n_git - merges else None,
    }


def set_counts(g: set, c: set, merges: int) -> dict:
    return {"git": len(g), "cortex": len(c), "common": len(g & c), "merges": merges}


def score_rows(a: dict) -> list[tuple[str, str]]:
    """set_scores as (label, value) rows of a report's table."""
    def f(key, spec):
        return "-" if a[key] is None else format(a[key], spec)
    return [("functions with identical commit sets", f("exact_match_rate", ".0%")),
            ("precision (micro / macro)", f"{f('precision_micro', '.3f')} / "
                                          f"{f('precision_macro', '.3f')}"),
            ("recall (micro / macro)", f"{f('recall_micro', '.3f')} / {f('recall_macro', '.3f')}"),
            ("recall without git's merge commits", f("recall_micro_without_git_merges", ".3f")),
            ("commits: git / cortex / both", f"{a['commits_git']} / {a['commits_cortex']} / "
                                             f"{a['commits_common']}")]


def without_blank_lines(text: str | None) -> str | None:
    return None if text is None else "\n".join(l for l in text.split("\n") if l.strip())


def dedent(parts: list[str]) -> list[str]:
    import textwrap
    return [textwrap.dedent(p) for p in parts]


def blob_id(commit, path: str) -> str | None:
    try:
        return str(commit.tree[path].id)
    except KeyError:
        return None
