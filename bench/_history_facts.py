"""What bench_history.py reads to explain a difference between `cortex history` and `git log -L`:
the function's identity along its rename/move lineage, its text on both sides of a commit (parsed
with cortex_core.lang.symbols), the lines a diff changes, git's own `-L` view, git's history
simplification, merges, and the rename/move links cortex follows. `Explainer`
(_history_explain.py) classifies with these facts.
"""

from __future__ import annotations

import re
from pathlib import Path

import _benchlib as bl
import _linelog as ll
from _history_model import LANGS, RENAME_SIMILARITY, Func, Lang, Side, def_line


class Facts:
    """Facts about sampled functions, read from the index (an open reader `con`), the repository
    (pygit2) and git in the private clone."""

    def __init__(self, repo, con, clone: Path, rev: str, lang: Lang = LANGS["python"]):
        from cortex_core.lang.symbols import extract_symbols
        self.repo, self.con, self.clone, self.rev, self.lang = repo, con, clone, rev, lang
        self._renames: dict[str, dict] = {}
        self.extract = extract_symbols
        self._parsed: dict[str, tuple[list[str], list]] = {}
        self._births: dict[str, dict | None] = {}
        self._simplified: dict[str, set[str]] = {}
        self.seq = {}
        self.subject = {}
        self.is_merge = {}
        for sha, seq, subject, merge in con.execute(
                "select sha, seq, subject, is_merge from commits where reachable = 1"):
            self.seq[sha], self.subject[sha], self.is_merge[sha] = seq, subject, bool(merge)

    # -- identities and versions -------------------------------------------------------------

    def lineage(self, symbol_id: int) -> list[tuple[int, float, float, str, str]]:
        """The function's identities through time, newest first: (symbol id, first seq, seq
        limit, path, qualname). Walking back from the function, each step takes the latest
        rename/move link into the current identity before the current bound, so a name that
        comes and goes (A -> B -> A, seen around files with syntax errors) gets one interval per
        stay. Where several symbols merged into one, only the latest link is followed."""
        chain = []
        current, upper = symbol_id, float("inf")
        while True:
            row = self.con.execute(
                "select sc.from_symbol_id, c.seq from symbol_changes sc join commits c on"
                " c.id = sc.commit_id where sc.symbol_id = ? and c.seq < ? and c.reachable = 1"
                " and sc.from_symbol_id is not null and sc.from_symbol_id != sc.symbol_id"
                " order by c.seq desc limit 1", (current, upper)).fetchone()
            path, qualname = self.con.execute(
                "select f.path, s.qualname from symbols s join files f on f.id = s.file_id"
                " where s.id = ?", (current,)).fetchone()
            lower = row[1] if row else float("-inf")
            chain.append((current, lower, upper, path, qualname))
            if row is None or len(chain) > 1000:
                return chain
            current, upper = row

    def identity(self, lineage, sha: str, old_side: bool) -> tuple[str, str]:
        """The (path, qualname) in effect on the new side of commit `sha`: the identity of the
        lineage with the nearest limit after it; on its old side: the identity that commit
        links from (a rename or move), or else the same one."""
        seq = self.seq[sha]
        best = next((r for r in lineage if r[1] <= seq < r[2]), lineage[-1])
        if old_side:
            row = self.con.execute(
                "select f.path, s.qualname from symbol_changes sc join commits c on"
                " c.id = sc.commit_id join symbols s on s.id = sc.from_symbol_id join files f on"
                " f.id = s.file_id where sc.symbol_id = ? and c.sha = ?", (best[0], sha)).fetchone()
            if row is not None:
                return row[0], row[1]
        return best[3], best[4]

    def git_diff_touches(self, sha: str, old: Side, new: Side) -> bool | None:
        """Whether `git diff -U0` (git's own diff, indent heuristic on by default) changes a
        line of the function on either side."""
        commit = self.repo[sha]
        if not commit.parents:
            return None
        out = bl.run(["git", "-C", str(self.clone), "diff", "-U0", "--no-color", "--no-ext-diff",
                      "-M", f"{sha}^", sha, "--", old.path, new.path]).stdout.decode("utf-8",
                                                                                       "replace")
        hunk = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", re.M)
        for m in hunk.finditer(out):
            o, on = int(m.group(1)), int(m.group(2) or 1)
            n, nn = int(m.group(3)), int(m.group(4) or 1)
            if any(old.in_span(l) for l in range(o, o + on)) or \
                    any(new.in_span(l) for l in range(n, n + nn)):
                return True
        return False

    def broken_sides(self, sha: str, old: Side, new: Side) -> list[str]:
        commit = self.repo[sha]
        out = []
        if commit.parents and old.lines is not None and \
                not self.parses_cleanly(commit.parents[0], old.path):
            out.append("before")
        if new.lines is not None and not self.parses_cleanly(commit, new.path):
            out.append("after")
        return out

    def unlinked_twin(self, sha: str, old: Side, new: Side) -> str | None:
        """For a function cortex says was added (or deleted): the qualified name under which the
        other side of the commit holds a definition with the same text, if any."""
        here, other_commit, path = (new, self.repo[sha].parents[0] if self.repo[sha].parents
                                    else None, new.path) if new.span else (old, self.repo[sha],
                                                                            old.path)
        if here.span is None or other_commit is None:
            return None
        text = here.text().split("\n", 1)
        blob = ll.blob_id(other_commit, path)
        if blob is None:
            return None
        lines, symbols = self.parsed(blob)
        name = here.qualname.rsplit(".", 1)[-1]
        for sym in symbols:
            if sym.name == name and sym.qualname != here.qualname:
                other = "\n".join(lines[sym.start_line - 1:sym.end_line]).split("\n", 1)
                if [t.strip() for t in other] == [t.strip() for t in text] or \
                        ll.dedent(other) == ll.dedent(text):
                    return sym.qualname
        return None

    def diverted(self, fn: Func, lineage, sha: str, git_view) -> str | None:
        """The oldest commit newer than `sha` that git lists and where git's range, in the
        parent, does not hold the function's def line although the function is there: the diff
        re-added the def line (function moved or restructured) and git went on with other lines,
        so the older history git shows is not the function's."""
        seq = self.seq[sha]
        newer = sorted((s2 for s2 in fn.git_shas if self.seq.get(s2, -1) > seq
                        and not self.is_merge.get(s2)), key=lambda s2: self.seq[s2])
        for z in newer:
            blocks = git_view.get(z) or []
            ranges = [r for b in blocks for r in b["old_ranges"]]
            commit = self.repo[z]
            if not commit.parents or not ranges:
                continue
            old = self.side(commit.parents[0], *self.identity(lineage, z, old_side=True))[0]
            if old.defline is None:
                continue
            if not any(a <= old.defline < a + n for a, n in ranges):
                first = next((b["old_first"] for b in blocks if b["old_first"]), "")
                a, n = ranges[0]
                return (f"at {z[:10]} ({bl.clip(self.subject.get(z, '?'), 40)!r}) git's range in "
                        f"the parent is lines {a}-{a + n - 1} ({bl.clip(first, 40)!r}) while the "
                        f"function "
                        f"is at {old.defline}-{old.git_end}: the diff re-added its def line and "
                        f"git went on with other lines")
        return None

    def linked_from(self, ident: tuple[str, str], sha: str) -> tuple[str, str] | None:
        """The (path, qualname) that commit `sha` renamed or moved into `ident`, if any."""
        row = self.con.execute(
            "select f2.path, s2.qualname from symbols s join files f on f.id = s.file_id"
            " join symbol_changes sc on sc.symbol_id = s.id join commits c on c.id = sc.commit_id"
            " join symbols s2 on s2.id = sc.from_symbol_id join files f2 on f2.id = s2.file_id"
            " where f.path = ? and s.qualname = ? and c.sha = ?", (*ident, sha)).fetchone()
        return (row[0], row[1]) if row else None

    def linked_to(self, ident: tuple[str, str], sha: str) -> tuple[str, str] | None:
        """The (path, qualname) that commit `sha` renamed or moved `ident` into, if any."""
        row = self.con.execute(
            "select f2.path, s2.qualname from symbols s join files f on f.id = s.file_id"
            " join symbol_changes sc on sc.from_symbol_id = s.id join commits c on"
            " c.id = sc.commit_id join symbols s2 on s2.id = sc.symbol_id join files f2 on"
            " f2.id = s2.file_id where f.path = ? and s.qualname = ? and c.sha = ?",
            (*ident, sha)).fetchone()
        return (row[0], row[1]) if row else None

    def parses_cleanly(self, commit, path: str) -> bool:
        """Whether tree-sitter reads the file at `commit` without a syntax error."""
        from tree_sitter_language_pack import get_parser
        try:
            data = self.repo[str(commit.tree[path].id)].data
        except (KeyError, AttributeError):
            return True
        return not get_parser(self.lang.name).parse(data).root_node.has_error

    def simplified(self, fn: Func, lineage) -> set[str]:
        """The commits `git log REV -- <every path of the function's lineage>` lists: git's
        default history simplification drops side branches whose merge kept the other
        parent's version of the file; git log -L walks the same simplified history."""
        key = fn.label
        if key not in self._simplified:
            paths = sorted({r[3] for r in lineage})
            out = bl.run(["git", "-C", str(self.clone), "log", "--format=%H", self.rev, "--",
                          *paths]).stdout.decode().split()
            self._simplified[key] = set(out)
        return self._simplified[key]

    def parsed(self, blob_id: str):
        got = self._parsed.get(blob_id)
        if got is None:
            data = self.repo[blob_id].data
            lines = data.decode("utf-8", "replace").split("\n")
            got = (lines, self.extract(self.lang.name, data))
            if len(self._parsed) > 2048:
                self._parsed.clear()
            self._parsed[blob_id] = got
        return got

    def side(self, commit, path: str, qualname: str) -> tuple[Side, str | None]:
        if commit is None:
            return Side(path, qualname, None, None, lang=self.lang), None
        try:
            blob_id = str(commit.tree[path].id)
        except KeyError:
            return Side(path, qualname, None, None, lang=self.lang), None
        lines, symbols = self.parsed(blob_id)
        sym = next((s for s in symbols if s.qualname == qualname), None)
        s = Side(path, qualname, lines, None, symbols=symbols, lang=self.lang)
        if sym is not None:
            s.span = (sym.start_line, sym.end_line)
            s.defline = def_line(lines, sym, self.lang)
            end = len(lines) - (1 if lines and lines[-1] == "" else 0)
            s.git_end = next((i - 1 for i in range(s.defline + 1, end + 1)
                              if self.lang.funcname.match(lines[i - 1])), end)
        return s, blob_id

    def sides(self, fn: Func, lineage, sha: str):
        """The function on both sides of commit `sha`. For a commit cortex lists, the identity is
        the one its entry names (path and qualified name at that commit, and what it was renamed
        or moved from); otherwise the one the lineage gives for that point in time."""
        commit = self.repo[sha]
        parent = commit.parents[0] if commit.parents else None
        entry = fn.cortex_entries.get(sha)
        if entry is not None and entry.get("name"):
            new_id = (entry["path"], entry["name"])
            old_id = self.linked_from(new_id, sha)
            if old_id is None:
                # The entry may name the old identity of a rename (its "renamed" row).
                successor = self.linked_to(new_id, sha)
                new_id, old_id = (successor, new_id) if successor else (new_id, new_id)
        else:
            new_id = self.identity(lineage, sha, old_side=False)
            old_id = self.identity(lineage, sha, old_side=True)
        new, new_blob = self.side(commit, *new_id)
        old, old_blob = self.side(parent, *old_id)
        deleted, added = self.diff_lines(old, old_blob, new, new_blob)
        return commit, old, new, deleted, added

    def diff_lines(self, old: Side, old_blob, new: Side, new_blob) -> tuple[dict, set[int]]:
        """The old line numbers a zero-context diff deletes (the diff cortex maps to symbols),
        each with where its hunk lands in the new blob: (new_start, pure deletion?); a pure
        deletion lies after new line new_start. And the new line numbers it adds."""
        if old_blob == new_blob:
            return {}, set()
        if old_blob is None:
            return {}, set(range(1, len(new.lines) + 1))
        if new_blob is None:
            return {l: (0, True) for l in range(1, len(old.lines) + 1)}, set()
        patch = self.repo[old_blob].diff(self.repo[new_blob], context_lines=0)
        deleted, added = {}, set()
        for h in patch.hunks:
            for l in range(h.old_start, h.old_start + h.old_lines):
                deleted[l] = (h.new_start, h.new_lines == 0)
            added.update(range(h.new_start, h.new_start + h.new_lines))
        return deleted, added

    # -- git's own view ----------------------------------------------------------------------

    def git_patch(self, fn: Func) -> dict[str, list[dict]]:
        """git log -L with its patch: per commit, the lines git saw deleted and added in its
        range, with numbers, and the first line of its range on each side."""
        return ll.line_log(self.clone, f":{fn.bre}:{fn.path}", self.rev)

    def birth(self, fn: Func, git_view) -> dict | None:
        """Where cortex's history of `fn` starts and what git's range was just before it: when
        git's range there began at another definition that the commit removed, the function was
        renamed (with edits) and cortex did not link the two names."""
        if fn.label in self._births:
            return self._births[fn.label]
        out = None
        if fn.cortex_shas:
            sha = min(fn.cortex_shas, key=lambda s: self.seq.get(s, 1 << 60))
            blocks = git_view.get(sha) or []
            out = {"sha": sha, "subject": self.subject.get(sha, "?"),
                   "change": fn.cortex_entries.get(sha, {}).get("change", "?"),
                   "renamed_from": None, "new_first": None,
                   "git_from": next((b["old_first"] for b in blocks if b["old_first"]), None),
                   "survives": False}
            for b in blocks:
                m = self.lang.funcname.match(b["old_first"] or "")
                name = self.lang.key(b["old_first"] or "")
                if not (m and name and b["new_path"]):
                    continue
                try:
                    data = self.repo[str(self.repo[sha].tree[b["new_path"]].id)].data
                except KeyError:
                    continue
                if self.lang.defines(data, name):
                    out["survives"] = True
                    continue
                # Gone, but cortex follows it to another definition (renamed): not this one's.
                old_def = self.old_definition(sha, b)
                heir = old_def and self.linked_to((b["old_path"], old_def[1].qualname), sha)
                if heir and heir != self.identity(self.lineage(fn.symbol_id), sha, False):
                    out["survives"], out["heir"] = True, f"{heir[0]}::{heir[1]}"
                    continue
                # Gone: a rename if the two definitions are alike, else a replacement.
                similarity = self.similarity(sha, b, fn)
                out["similarity"] = similarity
                if similarity is not None and similarity >= RENAME_SIMILARITY:
                    out["renamed_from"], out["new_first"] = b["old_first"], b["new_first"]
                    break
                out["replaced"] = b["old_first"]
        self._births[fn.label] = out
        return out

    def links(self, fn: Func, lineage) -> list[dict]:
        """Every rename/move link cortex follows for `fn`, with the difflib similarity of the
        definition before and after: a low one would be a wrong link (a cortex bug that would
        hide among the commits git -L does not reach)."""
        import difflib
        by_seq = {seq: sha for sha, seq in self.seq.items()}
        out = []
        for newer, older in zip(lineage, lineage[1:]):
            sha = by_seq.get(newer[1])
            if sha is None:
                continue
            commit = self.repo[sha]
            new = self.side(commit, newer[3], newer[4])[0]
            old = (self.side(commit.parents[0], older[3], older[4])[0] if commit.parents
                   else None)
            ratio = None
            if new.span is not None and old is not None and old.span is not None:
                ratio = difflib.SequenceMatcher(None, old.text(), new.text(),
                                                autojunk=False).ratio()
            out.append({"sha": sha, "subject": self.subject.get(sha, "?"),
                        "change": fn.cortex_entries.get(sha, {}).get("change", "?"),
                        "from": f"{older[3]}::{older[4]}", "to": f"{newer[3]}::{newer[4]}",
                        "similarity": ratio})
        return out

    def moves(self, lineage) -> list[dict]:
        """The links of the lineage (newest first) that change the function's file: a whole-file
        rename when git's own rename detection (`git diff -M` on the commit's first parent, as
        `git log -L` and `--follow` use it) pairs the two paths, which git -L follows too; else a
        cross-file move (the function went into another file, or git sees no rename), where git's
        range ends: its lines were all added there."""
        by_seq = {seq: sha for sha, seq in self.seq.items()}
        out = []
        for newer, older in zip(lineage, lineage[1:]):
            sha = by_seq.get(newer[1])
            if sha is None or newer[3] == older[3]:
                continue
            if sha not in self._renames:
                self._renames[sha] = (ll.renames(self.clone, sha) if self.repo[sha].parents
                                      else {})
            similarity = self._renames[sha].get((older[3], newer[3]))
            out.append({"sha": sha, "seq": newer[1], "subject": self.subject.get(sha, "?"),
                        "from": f"{older[3]}::{older[4]}", "to": f"{newer[3]}::{newer[4]}",
                        "file_rename": similarity is not None, "git_similarity": similarity})
        return out

    def old_definition(self, sha: str, block: dict):
        """(lines, symbol) of the definition git's range starts at in the parent, or None."""
        commit = self.repo[sha]
        if not commit.parents or not block["old_path"]:
            return None
        old_blob = ll.blob_id(commit.parents[0], block["old_path"])
        if old_blob is None:
            return None
        lines, symbols = self.parsed(old_blob)
        first = (block["old_first"] or "").strip()
        old_sym = next((s for s in symbols
                        if lines[def_line(lines, s, self.lang) - 1].strip() == first), None)
        return (lines, old_sym) if old_sym is not None else None

    def similarity(self, sha: str, block: dict, fn: Func) -> float | None:
        """difflib ratio between the definition git's range came from (in the parent) and the
        function as the commit leaves it."""
        import difflib
        found = self.old_definition(sha, block)
        path, qualname = self.identity(self.lineage(fn.symbol_id), sha, old_side=False)
        new = self.side(self.repo[sha], path, qualname)[0]
        if found is None or new.span is None:
            return None
        lines, old_sym = found
        old_text = "\n".join(lines[old_sym.start_line - 1:old_sym.end_line])
        return difflib.SequenceMatcher(None, old_text, new.text(), autojunk=False).ratio()

    def merge_kept_other_side(self, lineage, sha: str, limit: int = 5000):
        """The first merge after `sha` whose first parent with an identical version of the
        function (git's TREESAME, which -L applies to its line range) does not contain `sha`:
        git follows only that parent and never reaches `sha` (the side branch's change was
        overwritten, or made on both branches). (merge sha, parent sha) or None."""
        descendants = set(bl.run(["git", "-C", str(self.clone), "rev-list", "--ancestry-path",
                                  f"{sha}..{self.rev}"]).stdout.decode().split())
        descendants.add(sha)
        merges = bl.run(["git", "-C", str(self.clone), "rev-list", "--merges", "--reverse",
                         "--ancestry-path", f"{sha}..{self.rev}"]).stdout.decode().split()
        for m in merges[:limit]:
            if m not in self.seq:
                continue
            merge = self.repo[m]
            parents = merge.parents
            holds = [str(p.id) in descendants for p in parents]
            if all(holds) or not any(holds):
                continue
            path, qualname = self.identity(lineage, m, old_side=False)
            blob = ll.blob_id(merge, path)
            text = None
            # Like git: the first parent (in order) whose version is identical is the only one
            # followed. Identical file, or else identical function text.
            for parent, has in zip(parents, holds):
                same = ll.blob_id(parent, path) == blob
                if not same and blob is not None:
                    if text is None:
                        text = self.side(merge, path, qualname)[0].text() or ""
                    same = bool(text) and self.side(parent, path, qualname)[0].text() == text
                if same:
                    if not has:
                        return m, str(parent.id)
                    break
        return None

    def carried_range(self, fn: Func, lineage, sha: str, git_view) -> tuple[int, int, str] | None:
        """How many lines git's range has at `sha` (in its new blob), as carried back from HEAD:
        between two commits git lists, no commit changes the range (else git would list it), so
        its size at `sha` is the size of the parent-side range at the next newer commit git
        lists, or of the range at HEAD when there is none. Lines dropped at its edges on the way
        (deletions just after its end, a nested def added later) are never regained. Returns
        (size, offset of its first line from the def line, where the size comes from)."""
        seq = self.seq[sha]
        newer = [s2 for s2 in fn.git_shas if self.seq.get(s2, -1) > seq]
        if newer:
            y = min(newer, key=lambda s2: self.seq[s2])
            if self.is_merge.get(y):
                return None
            ranges = [r for b in git_view.get(y) or [] for r in b["old_ranges"]]
            if not ranges or not self.repo[y].parents:
                return None
            at_y = self.side(self.repo[y].parents[0], *self.identity(lineage, y, old_side=True))[0]
            if at_y.defline is None:
                return None
            return (sum(n for _, n in ranges), ranges[0][0] - at_y.defline,
                    f"{y[:10]} ({bl.clip(self.subject.get(y, '?'), 40)!r}), the next newer commit "
                    f"git lists, whose parent-side range has")
        head = self.repo[self.rev]
        side = self.side(head, fn.path, fn.qualname)[0]
        if side.defline is None:
            return None
        return side.git_end - side.defline + 1, 0, "HEAD, where the range has"
