"""How bench_history.py classifies each commit listed by one tool only (cortex history or
git log -L): the kinds (KINDS, explained in bench_history.py's docstring) and the order in which
they are checked (Explainer.explain).
"""

from __future__ import annotations

import _benchlib as bl
import _linelog as ll
from _history_facts import Facts
from _history_model import RENAME_SIMILARITY, Func, line_class, outside_class, sample_line

# Kind -> (listed by, bug?, short meaning) for the report; bench_history.py's docstring explains
# each.
KINDS = {
    "git-merge": ("git", "no", "merge commit (cortex never lists merges)"),
    "git-trailing-blank": ("git", "no", "only blank lines after the function, inside git's range"),
    "git-trailing-comment": ("git", "no", "only comments after the function, inside git's range"),
    "git-trailing-decorator": ("git", "no", "decorators of the next def, inside git's range"),
    "git-trailing-code": ("git", "no", "code between the function and the next def, inside git's range"),
    "git-range-other-def": ("git", "no", "lines of another definition that git's range had taken in"),
    "git-before-birth": ("git", "no", "function absent on both sides: git tracked other lines"),
    "git-text-unchanged": ("git", "no", "text identical, its lines deleted and re-added (moved in the file)"),
    "cortex-unlinked-rename": ("git", "gap", "renamed with edits: git follows, cortex starts anew"),
    "cortex-missed": ("git", "BUG", "the function's own lines changed, cortex does not list it"),
    "cortex-missed-blank-lines": ("git", "BUG", "blank lines inside a function with nested defs changed, not listed"),
    "cortex-file-rename": ("cortex", "no", "file renamed, function text unchanged ('moved' event)"),
    "cortex-parent-rename": ("cortex", "no", "qualified name changed (class renamed/moved to), text same"),
    "git-range-shrunk": ("cortex", "no", "beyond the range git carried back (it lost its end later)"),
    "cortex-syntax-error": ("cortex", "no", "file does not parse on one side: definition lost/re-nested"),
    "cortex-earlier-life": ("cortex", "no", "before a deletion and re-creation under the same name"),
    "git-trailing-deletion": ("cortex", "no", "function's last lines deleted after git's range end"),
    "outside-git-range": ("cortex", "no", "own decorators and lines after a nested def changed"),
    "cortex-unlinked-requalify": ("cortex", "gap", "same definition under another qualified name in the parent, not linked"),
    "git-range-diverted": ("cortex", "no", "git's range left the function at a later commit"),
    "own-decorator": ("cortex", "no", "only the function's decorators or doc comment changed (outside git's range)"),
    "git-range-cut-short": ("cortex", "no", "only lines after a nested def/class changed"),
    "git-stopped-early": ("cortex", "no", "older than git's oldest commit: git's range ended"),
    "git-simplified-away": ("cortex", "no", "side branch dropped by git's history simplification"),
    "git-merge-dropped": ("cortex", "no", "a merge kept the other parent's version of the function"),
    "diff-realignment": ("cortex", "BUG", "text identical; libgit2's diff slid a hunk onto it"),
    "cortex-spurious": ("cortex", "BUG", "text unchanged and untouched, yet listed by cortex"),
    "unexplained-git": ("git", "?", "not classified: read the example"),
    "unexplained-cortex": ("cortex", "?", "not classified: read the example"),
}


class Explainer(Facts):
    # -- classification ----------------------------------------------------------------------

    def explain(self, fn: Func, lineage, sha: str, listed_by: str, git_view) -> dict:
        item = {"function": fn.label, "sha": sha, "subject": self.subject.get(sha, "?"),
                "listed_by": listed_by}
        if sha not in self.seq:
            item.update(kind=f"unexplained-{listed_by}", why="commit not in the index")
            return item
        if self.is_merge[sha]:
            kind = "git-merge" if listed_by == "git" else "unexplained-cortex"
            item.update(kind=kind, why=f"merge of {len(self.repo[sha].parents)} parents")
            return item
        commit, old, new, deleted, added = self.sides(fn, lineage, sha)
        item["path"] = new.path if new.span else old.path
        item["name"] = new.qualname if new.span else old.qualname
        touched = sorted(({("-", l) for l in deleted if old.in_span(l)}
                          | {("+", l) for l in added if new.in_span(l)}), key=lambda t: (t[1], t[0]))
        created_or_gone = (old.span is None) != (new.span is None)
        text_changed = old.text() != new.text()
        if listed_by == "git":
            return self._explain_git(item, fn, sha, old, new, touched, created_or_gone,
                                     text_changed, git_view)
        return self._explain_cortex(item, fn, lineage, sha, old, new, deleted, added, touched,
                                    created_or_gone, text_changed, git_view)

    def _explain_git(self, item, fn, sha, old, new, touched, created_or_gone, text_changed,
                     git_view) -> dict:
        blocks = git_view.get(sha, [])
        minus = [(l, t) for b in blocks for l, t in b["minus"]]
        plus = [(l, t) for b in blocks for l, t in b["plus"]]
        if touched and not created_or_gone and not text_changed:
            item.update(kind="git-text-unchanged",
                        why=f"{item['name']}'s text is identical on both sides, but the diff "
                            f"deletes and re-adds its lines (e.g. {sample_line(old, new, touched)}"
                            f"): it moved within the file, or identical lines were aligned anew")
            return item
        if touched or created_or_gone or text_changed:
            line = sample_line(old, new, touched)
            what = ("created" if new.span and not old.span else "deleted" if old.span
                    and not new.span else "changed")
            blank_only = (old.span is not None and new.span is not None
                          and ll.without_blank_lines(old.text())
                          == ll.without_blank_lines(new.text()))
            if blank_only:
                nested = any(s2.qualname.startswith(new.qualname + ".") for s2 in new.symbols)
                item.update(kind="cortex-missed-blank-lines",
                            why=f"only blank lines inside {item['name']} changed ({line}); the "
                                f"function {'has' if nested else 'has no'} nested definitions "
                                f"(cortex credits no blank line to a symbol that has children)")
                return item
            item.update(kind="cortex-missed", why=f"{item['name']} {what} in {item['path']}"
                        f" (text {'differs' if text_changed else 'same'}); e.g. {line}")
            return item
        if old.span is None and new.span is None:
            first = next((b["new_first"] or b["old_first"] for b in blocks), None)
            paths = sorted({p for b in blocks for p in (b["old_path"], b["new_path"]) if p})
            birth = self.birth(fn, git_view)
            if birth and birth["renamed_from"]:
                item.update(kind="cortex-unlinked-rename",
                            why=f"git follows the lines through {birth['sha'][:10]} "
                                f"({bl.clip(birth['subject'], 40)!r}), where "
                                f"{bl.clip(birth['renamed_from'], 60)!r} became "
                                f"{bl.clip(birth['new_first'], 60)!r} with edits; cortex starts "
                                f"the "
                                f"history there ({birth['change']}); here git tracked "
                                f"{', '.join(paths) or '?'}")
                return item
            origin = ""
            if birth and birth.get("git_from"):
                origin = (f"; at {birth['sha'][:10]} (cortex: {birth['change']}) git's range came "
                          f"from {bl.clip(birth['git_from'], 50)!r}"
                          + (f", a definition that cortex follows to {birth['heir']} there"
                             if birth.get("heir") else ", a definition still there after that "
                             "commit" if birth["survives"] else ""))
            if birth and birth.get("replaced"):
                origin = (f"; at {birth['sha'][:10]} (cortex: {birth['change']}) git's range came "
                          f"from {bl.clip(birth['replaced'], 50)!r}, a definition that commit "
                          f"removed, too unlike the function to be a rename (similarity "
                          f"{birth.get('similarity') or 0:.2f} < {RENAME_SIMILARITY})")
            item.update(kind="git-before-birth",
                        why=f"no {old.qualname} in {old.path} on either side; git was tracking "
                        f"{', '.join(paths) or '?'} from the line {bl.clip(first)!r}{origin}")
            return item
        outside = [("-", l, t) for l, t in minus if not old.in_span(l)] + \
                  [("+", l, t) for l, t in plus if not new.in_span(l)]
        if not outside:
            item.update(kind="unexplained-git", why="git's patch shows no changed line outside "
                        "the function, yet cortex's span is untouched")
            return item
        classes = {outside_class(old if sign == "-" else new, l, t) for sign, l, t in outside}
        if classes <= {"blank"}:
            kind = "git-trailing-blank"
        elif classes <= {"blank", "comment"}:
            kind = "git-trailing-comment"
        elif classes <= {"blank", "comment", "decorator"}:
            kind = "git-trailing-decorator"
        elif "other-def" in classes:
            kind = "git-range-other-def"
        else:
            kind = "git-trailing-code"
        sign, line, text = next((o for o in outside if line_class(o[2], self.lang) != "blank"),
                                outside[0])
        span = new.span or old.span
        item.update(kind=kind, why=f"{len(outside)} line(s) outside the function's lines "
                    f"{span[0]}-{span[1]} changed, e.g. {sign}{line}: {bl.clip(text)!r}")
        return item

    def _explain_cortex(self, item, fn, lineage, sha, old, new, deleted, added, touched,
                        created_or_gone, text_changed, git_view) -> dict:
        change = fn.cortex_entries.get(sha, {}).get("change", "?")
        item["cortex_change"] = change
        if not touched and not created_or_gone and not text_changed:
            if old.path != new.path and old.span is not None and new.span is not None:
                item.update(kind="cortex-file-rename", why=f"{old.path} -> {new.path}; the "
                            f"function's text is identical (cortex: {change})")
            elif old.qualname != new.qualname and old.span is not None and new.span is not None:
                broken = [label for label, c, path in (
                    ("before", self.repo[sha].parents[0], old.path), ("after", self.repo[sha],
                                                                     new.path))
                    if not self.parses_cleanly(c, path)]
                note = (f"; the file has a syntax error {' and '.join(broken)} the commit, which "
                        f"changes how its definitions nest" if broken else "")
                item.update(kind="cortex-parent-rename", why=f"{old.qualname} -> {new.qualname}; "
                            f"the function's text is identical (cortex: {change}){note}")
            else:
                item.update(kind="cortex-spurious", why=f"cortex says {change!r} but no diff line "
                            f"touches {item['name']} in {item['path']} and its text is unchanged")
            return item
        if (touched or created_or_gone) and not text_changed and old.qualname != new.qualname:
            item.update(kind="cortex-parent-rename", why=f"{old.qualname} -> {new.qualname}; "
                        f"the function's text is identical, its lines moved (to another class) "
                        f"(cortex: {change})")
            return item
        if (touched or created_or_gone) and not text_changed:
            git_touches = self.git_diff_touches(sha, old, new)
            how = ("git's own diff (with its default indent heuristic) does not touch it: "
                   "libgit2's diff, which has no such heuristic, slid a hunk by a line onto it"
                   if git_touches is False else "git's own diff touches it too")
            item.update(kind="diff-realignment", why=f"text identical; the diff cortex uses "
                        f"deleted/added {len(touched)} of its lines, e.g. "
                        f"{sample_line(old, new, touched)}; {how} (cortex: {change})")
            return item
        if sha not in self.simplified(fn, lineage):
            item.update(kind="git-simplified-away",
                        why=f"not in `git log -- {item['path']}`: git's history simplification "
                            f"follows, at a merge, a parent whose file is identical and drops "
                            f"this side branch (cortex: {change}; e.g. "
                            f"{sample_line(old, new, touched)})")
            return item
        broken = self.broken_sides(sha, old, new)
        if created_or_gone and broken:
            item.update(kind="cortex-syntax-error",
                        why=f"the file does not parse {' and '.join(broken)} the commit: "
                            f"tree-sitter's error recovery loses or re-nests the definition, so "
                            f"cortex records it as {change} while its lines barely changed "
                            f"(e.g. {sample_line(old, new, touched)})")
            return item
        later_birth = [s2 for s2, e in fn.cortex_entries.items() if e.get("change") == "added"
                       and self.seq.get(s2, -1) > self.seq[sha]]
        if later_birth:
            b = min(later_birth, key=lambda s2: self.seq[s2])
            item.update(kind="cortex-earlier-life",
                        why=f"the function was deleted and later re-created under the same name "
                            f"(cortex: added at {b[:10]} "
                            f"{bl.clip(self.subject.get(b, '?'), 40)!r}); "
                            f"cortex keeps one identity per file and qualified name, so its "
                            f"history includes the earlier life (here: {change}); git's range "
                            f"ends at the re-creation")
            return item
        twin = self.unlinked_twin(sha, old, new) if created_or_gone else None
        if twin:
            item.update(kind="cortex-unlinked-requalify",
                        why=f"cortex says {change}, but the parent holds the same definition as "
                            f"{twin} (class renamed, merged or split): cortex did not link the "
                            f"two names, so the history splits here")
            return item
        git_seqs = [self.seq[s] for s in fn.git_shas if s in self.seq]
        if not git_seqs or self.seq[sha] < min(git_seqs):
            if git_seqs:
                oldest = min(fn.git_shas, key=lambda s: self.seq.get(s, 1 << 60))
                at = fn.cortex_entries.get(oldest, {}).get("change", "not listed")
                item.update(kind="git-stopped-early",
                            why=f"git's history of the range begins at {oldest[:10]} "
                                f"({self.subject.get(oldest, '?')[:50]!r}; cortex there: {at}); "
                                f"cortex here: {change}")
            else:
                item.update(kind="git-stopped-early", why="git lists no commit at all")
            return item
        diverted = self.diverted(fn, lineage, sha, git_view)
        if diverted:
            item.update(kind="git-range-diverted", why=f"{diverted}; cortex here: {change}, e.g. "
                        f"{sample_line(old, new, touched)}")
            return item
        # Where each changed line of the function lands in the new blob, against git's range
        # there (def line .. line before the next def/class): git counts an added line inside
        # its range, and a deletion only when it falls between two lines of its range.
        ref = new if new.span is not None else old
        positions = []  # (position in ref, inside git's range?, pure deletion?)
        for sign, line in touched:
            if sign == "+" or ref is old:
                positions.append((line, ref.defline <= line <= ref.git_end, False))
            else:
                at, pure = deleted[line]
                inside = (ref.defline <= at < ref.git_end if pure
                          else ref.defline <= at <= ref.git_end)
                positions.append((at, inside, pure))
        in_git = [p for p in positions if p[1]]
        if positions and not in_git:
            cut = ref.git_end < ref.span[1]
            if all(p[0] < ref.defline for p in positions):
                item.update(kind="own-decorator", why=f"only lines above the def line changed, "
                            f"e.g. {sample_line(old, new, touched)}")
                return item
            if all(p[0] >= ref.git_end for p in positions) and cut:
                stop = ref.lines[ref.git_end] if ref.git_end < len(ref.lines) else "?"
                item.update(kind="git-range-cut-short",
                            why=f"git's range ends before line {ref.git_end + 1} "
                                f"{bl.clip(stop)!r}; changed: {sample_line(old, new, touched)}")
                return item
            before = sum(1 for p in positions if p[0] < ref.defline)
            if cut and all(p[0] < ref.defline or p[0] >= ref.git_end for p in positions):
                item.update(kind="outside-git-range",
                            why=f"{before} changed line(s) of the function above its def line "
                                f"(decorators) and {len(positions) - before} after line "
                                f"{ref.git_end}, where git's range stops at a nested def/class; "
                                f"e.g. {sample_line(old, new, touched)}")
                return item
            if all(p[2] and p[0] >= ref.git_end for p in positions):
                item.update(kind="git-trailing-deletion",
                            why=f"the function's last lines were deleted and the diff places the "
                                f"deletion after line {positions[0][0]}, the last line of git's "
                                f"range (the blank line before the next def): git counts a "
                                f"deletion only between two lines of its range; e.g. "
                                f"{sample_line(old, new, touched)}")
                return item
        dropped = self.merge_kept_other_side(lineage, sha)
        if dropped:
            m, p = dropped
            item.update(kind="git-merge-dropped",
                        why=f"the merge {m[:10]} ({bl.clip(self.subject.get(m, '?'), 40)!r}) kept "
                            f"the function as in its parent {p[:10]}, which does not contain this "
                            f"commit: git -L follows only that parent (cortex: {change}; e.g. "
                            f"{sample_line(old, new, touched)})")
            return item
        carried = self.carried_range(fn, lineage, sha, git_view) if ref is new else None
        if carried is not None:
            size, offset, source = carried
            start_ = ref.defline + offset
            end_ = start_ + size - 1
            inside = [p for p in positions
                      if start_ <= p[0] < end_ or (not p[2] and p[0] == end_)]
            if (end_ < ref.git_end or start_ != ref.defline) and not inside:
                item.update(kind="git-range-shrunk",
                            why=f"git's range here is the {size} line(s) {start_}-{end_} "
                                f"(size from {source} {size}), the function runs to "
                                f"{ref.span[1]}: at a later commit the range lost its end (a "
                                f"nested def, lines deleted just after it) or slid (a hunk "
                                f"replacing the def line with its decorator), and git never "
                                f"widens it going back; changed: "
                                f"{sample_line(old, new, touched)} "
                                f"(cortex: {change})")
                return item
        if positions and all(p[2] and p[0] >= ref.span[1] for p in positions):
            item.update(kind="git-trailing-deletion",
                        why=f"the function's last lines were deleted and the diff places the "
                            f"deletion after line {positions[0][0]}, among the blank lines that "
                            f"end git's full range ({ref.git_end}); git counts a deletion only "
                            f"between two lines of its range, and the range it carried back "
                            f"from HEAD had lost those blank lines (an edit there that git did "
                            f"not see); e.g. {sample_line(old, new, touched)}")
            return item
        item.update(kind="unexplained-cortex",
                    why=f"{len(touched)} changed line(s) of the function, {len(in_git)} inside "
                        f"git's approximate range, e.g. {sample_line(old, new, touched)} "
                        f"(cortex: {change})")
        return item
