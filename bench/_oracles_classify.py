"""bench_oracles.py: every difference between cortex's history of a method and the oracle's,
classified (KINDS, in the order checked) from git alone: the commit's diff against its first
parent, the method's text on both sides, git's history simplification; and the lineage breaks."""

from __future__ import annotations

import re
from pathlib import Path

import _benchlib as bl
from _oracles_decls import bare, decls, pick, tag_params


WAYPOINT_TYPES = {"Yfilerename", "Ymovefromfile", "Yrename"}
KINDS = {  # (side, kind) -> meaning, in the order checked (wrong-target first on both sides)
    ("both", "wrong-target"): "PATH:LINE gave another symbol (anonymous class methods are none)",
    ("miss", "no-history"): "cortex listed nothing",
    ("miss", "before-cortex-start"): "older than cortex's oldest entry (see Lineage breaks)",
    ("miss", "not-found-by-name"): "no declaration of the method's names in the changed files",
    ("miss", "waypoint"): "file rename/move, text unchanged (--substantive drops it by design)",
    ("miss", "own-text-changed"): "method text changed and the diff touches it (BUG)",
    ("miss", "javadoc-only"): "only the Javadoc changed, not in whitespace only",
    ("miss", "format-only"): "whitespace-only change (--substantive drops it by design)",
    ("miss", "text-changed-outside-diff"): "text changed, no changed line inside it",
    ("miss", "untouched"): "the diff touches neither the method nor its Javadoc",
    ("extra", "waypoint"): "cortex entry with 0 lines (moved/renamed/rescoped)",
    ("extra", "side-branch"): "not in `git log START -- PATHS` (git's history simplification)",
    ("extra", "overload-sibling"): "only another declaration with the same name changed",
    ("extra", "before-oracle-birth"): "older than the oracle's Yintroduced: cortex links further",
    ("extra", "own-text-changed"): "method text changed; the oracle omits it",
    ("extra", "javadoc-only"): "only the Javadoc changed (not whitespace only); oracle omits it",
    ("extra", "format-only"): "whitespace-only change; the oracle omits it",
    ("extra", "text-changed-outside-diff"): "text changed, no changed line inside it",
    ("extra", "untouched"): "the diff touches neither the method nor its Javadoc (BUG?)",
}


def sh(cwd, *args: str, check: bool = True) -> str:
    return bl.git(cwd, *args, check=check, strip=False)


def components(change_type: str) -> list[str]:
    m = re.match(r"Ymultichange\((.*)\)$", change_type)
    return [c.strip() for c in m.group(1).split(",")] if m else [change_type]


def truth_for(variant: str, expected: dict) -> dict:
    if variant == "cortex-substantive":
        return {s: t for s, t in expected.items() if t != "Yformatchange"}
    return expected


class Git:
    """Cached git facts of one clone."""

    def __init__(self, clone: Path):
        self.clone, self._anc, self._simpl, self._diff = clone, {}, {}, {}

    def ancestors(self, sha: str) -> set[str]:  # strict ancestors
        if sha not in self._anc:
            self._anc[sha] = set(sh(self.clone, "rev-list", f"{sha}^@", check=False).split())
        return self._anc[sha]

    def simplified(self, start: str, paths: tuple[str, ...]) -> set[str]:
        if paths not in self._simpl:
            self._simpl[paths] = set(sh(self.clone, "log", "--format=%H", start, "--",
                                        *paths).split())
        return self._simpl[paths]

    def diff(self, sha: str, ext: str) -> tuple[str | None, dict]:
        """(first parent, {new path: (old path, [(old start, count, new start, count)])})."""
        if sha not in self._diff:
            parents = sh(self.clone, "rev-list", "--parents", "-n1", sha).split()[1:]
            base = parents[0] if parents else sh(self.clone, "hash-object", "-t", "tree",
                                                 "/dev/null").strip()
            files, old, header = {}, None, False
            for line in sh(self.clone, "diff", "-U0", "-M", "--no-color", "--no-ext-diff", base,
                           sha, "--", f"*{ext}").split("\n"):
                if line.startswith("diff --git "):
                    header = True
                elif header and line.startswith("--- "):
                    old = None if line == "--- /dev/null" else line[6:]
                elif header and line.startswith("+++ "):
                    hunks = files[old if line == "+++ /dev/null" else line[6:]] = (old, [])
                    header = False
                elif line.startswith("@@") and not header:
                    a, b, c, d = re.match(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@",
                                          line).groups()
                    hunks[1].append((int(a), int(b or 1), int(c), int(d or 1)))
            self._diff[sha] = (parents[0] if parents else None, files)
        return self._diff[sha]

    def blob(self, sha: str | None, path: str | None) -> str | None:
        if not sha or not path:
            return None
        r = bl.run(["git", "-C", str(self.clone), "show", f"{sha}:{path}"], check=False)
        return r.stdout.decode("utf-8", "replace") if r.returncode == 0 else None


def touched(hunks, side: str, lo: int, hi: int) -> bool:
    return any(n and s <= hi and s + n - 1 >= lo
               for s, n in ((a, b) if side == "old" else (c, d) for a, b, c, d in hunks))


def facts(g: Git, o: dict, sha: str, hints: list[tuple[str, str]], ref: dict,
          ref_all: list[dict]) -> dict:
    """What the commit did to the declaration meant. hints: (path, cortex qualname) of the
    method's identity around the commit, best first, each tried in its path, then in files of
    the same base name, then in every file the commit changed."""
    parent, diff = g.diff(sha, ".py" if o["language"] == "python" else ".java")
    strip = (lambda text: re.sub(r"\s+", "", text))
    for path, qualname in hints:
        name, qual, key = bare(qualname).rsplit(".", 1)[-1], bare(qualname), tag_params(qualname)
        key = ref["key"] if key is None else key
        siblings = ({d["key"] for d in ref_all if d["key"] != ref["key"]}
                    if name == o["functionName"] else set())
        base = path.rsplit("/", 1)[-1]
        for new_path in dict.fromkeys([p for p in diff if path in (p, diff[p][0])]
                                      + [p for p in diff if p.rsplit("/", 1)[-1] == base]
                                      + list(diff)):
            old_path, hunks = diff[new_path]
            old_d = decls(o["language"], g.blob(parent, old_path), name)
            new_d = decls(o["language"], g.blob(sha, new_path), name)
            if not old_d and not new_d:
                continue
            old_t, new_t = pick(old_d, key, qual, siblings), pick(new_d, key, qual, siblings)
            sides = ((old_t, old_d, "old"), (new_t, new_d, "new"))
            both = old_t and new_t
            return {"path": new_path, "name": name, "found": bool(old_t or new_t),
                    "own": any(t and touched(hunks, s, t["start"], t["end"]) for t, _, s in sides),
                    "doc": any(t and t["doc"] and touched(hunks, s, *t["doc"]) for t, _, s in sides),
                    "sibling": any(touched(hunks, s, d["start"], d["end"])
                                   for t, ds, s in sides for d in ds if d is not t),
                    "siblings": max(len(old_d), len(new_d)) - (1 if old_t or new_t else 0),
                    "changed": (old_t or {}).get("text") != (new_t or {}).get("text"),
                    "ws_only": bool(both and strip(old_t["text"]) == strip(new_t["text"])),
                    "doc_ws": bool(both and strip(old_t["doc_text"]) == strip(new_t["doc_text"])),
                    "born": old_t is None, "died": new_t is None}
    return {"path": None}


def describe(f: dict) -> str:
    if not f["path"]:
        return "no declaration of that name in the files it changes"
    if not f["found"]:
        return f"{f['path']}: only other declarations named {f['name']} ({f['siblings']})"
    return (f"{f['path']}: {f['name']} {'touched' if f['own'] else 'untouched'} by the diff"
            + (", text unchanged" if not f["changed"] else
               ", whitespace only" if f["ws_only"] else ", text changed")
            + (f", Javadoc touched{' (whitespace only)' if f['doc_ws'] else ''}" if f["doc"] else "")
            + (f", a same-named sibling touched ({f['siblings']})" if f["sibling"] else "")
            + (", created" if f["born"] else ", deleted" if f["died"] else ""))


def text_kind(f: dict) -> str:
    if f["own"] and not f["ws_only"]:
        return "own-text-changed"
    if f["doc"] and not f["doc_ws"]:
        return "javadoc-only"
    if f["own"] or f["doc"]:
        return "format-only"
    return "text-changed-outside-diff" if f["changed"] else "untouched"


def classify(o: dict, g: Git, res: dict, ref: dict | None, ref_all: list[dict],
             variant: str) -> list[dict]:
    truth, listed, entries = truth_for(variant, o["expectedResult"]), res["shas"], res["entries"]
    by_sha = {e["sha"]: e for e in entries}
    target = res.get("target") or {}
    wrong = bool(target.get("qualname")) and \
        bare(target["qualname"]).rsplit(".", 1)[-1] != o["functionName"]
    paths = tuple(sorted({o["filePath"], *(e["path"] for e in entries)}))
    oldest = listed[-1] if listed else None
    born = [s for s, t in truth.items() if "Yintroduced" in components(t)]
    items = []
    for side, shas in (("miss", [s for s in truth if s not in listed]),
                       ("extra", [s for s in listed if s not in truth])):
        for sha in shas:
            e = by_sha.get(sha)
            when, subject = sh(g.clone, "log", "-1", "--format=%ct%x00%s", sha).strip().split("\0")
            near = [e] if e else ([x for x in entries if x["time"] <= int(when)][:1]
                                  + [x for x in entries if x["time"] > int(when)][-1:])
            hints = [(x["path"], x["name"]) for x in near]
            hints.append((o["filePath"], target.get("qualname") or o["functionName"]))
            f = facts(g, o, sha, hints, ref, ref_all) if ref and not wrong else {"path": None}
            why = describe(f)
            if wrong:
                kind, why = "wrong-target", f"PATH:LINE gave {target['qualname']}"
            elif side == "miss":
                if not listed:
                    kind = "no-history"
                elif sha in g.ancestors(oldest):
                    kind = "before-cortex-start"
                    why = (f"cortex starts at {oldest[:10]} ({by_sha[oldest]['change']}), "
                           f"oracle there: {truth.get(oldest, 'not listed')}")
                elif not f.get("found"):
                    kind = "not-found-by-name"
                elif (not f["changed"] and not f["doc"]
                      and set(components(truth[sha])) <= WAYPOINT_TYPES):
                    kind = "waypoint"
                else:
                    kind = text_kind(f)
            elif e["change"] not in ("added", "deleted") and e["added"] == e["deleted"] == 0:
                kind, why = "waypoint", f"{e['change']} at {e['path']} as {e['name']}, 0 lines"
            elif sha not in g.simplified(o["startCommitName"], paths):
                kind = "side-branch"
            elif f["path"] and f["sibling"] and not f["own"]:
                kind = "overload-sibling"
            elif born and any(sha in g.ancestors(b) for b in born):
                kind, why = "before-oracle-birth", f"oracle: Yintroduced at {born[0][:10]}; {why}"
            else:
                kind = text_kind(f) if f["path"] else "untouched"
            items.append({"side": side, "kind": kind, "sha": sha, "oracle_type": truth.get(sha),
                          "cortex_change": e["change"] if e else None, "method": o["oracle"],
                          "subject": subject, "why": why})
    return items


def lineage_break(o: dict, res: dict | None) -> dict | None:
    """Where cortex's history starts while the oracle goes on."""
    if not res or not res["entries"]:
        return None
    oldest = res["entries"][-1]
    t = o["expectedResult"].get(oldest["sha"])
    if t is None or "Yintroduced" in components(t):
        return None
    return {"method": o["oracle"], "sha": oldest["sha"], "cortex_change": oldest["change"],
            "oracle_type": t, "subject": oldest["subject"]}
