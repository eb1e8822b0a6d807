"""Plain-text rendering of core results for the terminal (the CLI's readable output)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from cortex_core.dates import date, on_clock, reach, relative_time, shallow_reach, window
from cortex_core.text.sanitize import quoted, terminal

if TYPE_CHECKING:  # types only: importing .ingest would load pygit2 for every command
    from cortex_core.api import CommitRef, History, Hotspots, IndexSummary, Status


def _clip(text: str, width: int) -> str:
    text = terminal(text)
    return text if len(text) <= width else text[: width - 1] + "…"


def _column(text: str, width: int) -> str:
    """`text` clipped and padded to `width` columns of a terminal: East Asian wide characters
    take two (a CJK subject pushed the columns after it out of line), combining marks none."""
    text = terminal(text)
    if _cells(text) > width:
        kept, used = [], 0
        for ch in text:
            if used + _cells(ch) > width - 1:
                break
            kept.append(ch)
            used += _cells(ch)
        text = "".join(kept) + "…"
    return text + " " * max(0, width - _cells(text))


def _cells(text: str) -> int:
    """Terminal columns of `text`."""
    if text.isascii():    # most subjects and names: one column a character
        return len(text)
    import unicodedata
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in (
        "W", "F") else 1 for c in text)


def _lines(added, deleted) -> str:
    if added is None and deleted is None:
        return "  (not diffed)"
    return f"+{added or 0} -{deleted or 0}"


def _commit_line(ref: CommitRef, now: float) -> str:
    return (f"{ref.short}  {date(ref.time, ref.offset)}  {relative_time(ref.time, now):>14}  "
            f"{_column(ref.author, 18)}  {_column(ref.subject, 60)}")


def history(result: History, now: float) -> str:
    t = result.target
    head = f"{terminal(t.label)}"
    if t.qualname:
        where = (f"lines {t.start_line}-{t.end_line}" if t.alive and t.start_line
                 else "HEAD not indexed yet" if result.history_until is not None
                 else "gone at HEAD")
        if result.moved_to and where == "gone at HEAD":
            where += (f"; moved to {terminal(result.moved_to)} in "
                      f"{result.moved_in.short if result.moved_in else '?'}")
        head += f"  ({t.kind}, {where})"
    elif not t.alive:   # a file deleted or renamed away
        head += "  (gone at HEAD" + (f"; moved to {terminal(result.moved_to)} in "
                                     f"{result.moved_in.short if result.moved_in else '?'})"
                                     if result.moved_to else ")")
    count = f"{result.total} commit{'s' if result.total != 1 else ''}"
    if len(result.entries) < result.total:
        count += f", newest {len(result.entries)} shown"
    lines = [f"{head}  —  {count}"]
    if result.note:
        lines.append(f"note: {result.note}")
    for e in result.entries:
        extra = ""
        if t.qualname and e.name and e.name != t.qualname:
            extra = f"  [as {terminal(e.path)}::{terminal(e.name)}]"
        elif t.qualname and e.path != t.path:   # moved with its file, or to another file
            extra = f"  [in {terminal(e.path)}]"
        if e.confidence is not None:  # the lineage crosses a pairing by similarity here
            extra += f"  (paired by similarity {e.confidence:.2f})"
        elif not t.qualname and e.path != t.path:
            extra = f"  [as {terminal(e.path)}]"
        if e.members:
            shown = ", ".join(terminal(m) for m in e.members[:3])
            extra += f"  (via {shown}{', …' if len(e.members) > 3 else ''})"
        if e.skipped:
            extra += f"  (symbols not read: {e.skipped})"
        lines.append(f"  {_commit_line(e.commit, now)}  {_lines(e.added, e.deleted):>10}  "
                     f"{e.change}{extra}")
    if not result.entries:
        lines.append("  no commits changed it (at symbol level) in the indexed history")
    if result.history_from is not None or result.history_until is not None:
        lines.append(partial_history(result.history_from, result.history_until))
    if result.shallow_from is not None:
        lines.append(shallow_note(result.shallow_from))
    return "\n".join(lines)


def replaced_note(count: int) -> str:
    return (f"{count} object{'s' if count != 1 else ''} replaced by `git replace`: the index "
            "reads the history as recorded, where `git log` shows the replacements (a graft "
            "that joins or cuts histories, a rewritten commit)")


def shallow_note(shallow_from: int) -> str:
    return (f"note: {shallow_reach(shallow_from)} (`git fetch --unshallow`, then `cortex index`,"
            " for the rest)")


def partial_history(history_from: int | None, history_until: int | None) -> str:
    """An index holding only the recent window its first run read first, or the older part of
    the history its first run read before it stopped (or while it runs)."""
    if history_until is not None:
        return (f"note: {reach(history_from, history_until)}: no index run has "
                "reached HEAD (`cortex index` continues it, or is doing so)")
    return (f"note: {reach(history_from)}; the older commits are not indexed yet (`cortex index` "
            "indexes them, or is doing so)")


def hotspots(result: Hotspots, now: float, explain: bool) -> str:
    if result.since_days:
        span = f"in the {window(result.since_days, result.clock)}"
    else:
        span = "over all history" + (f", {on_clock(result.clock)}" if result.clock else "")
    lines = [f"hotspots {span}; half-life {result.half_life_days:g} days"]
    if result.note:
        lines.append(f"note: {terminal(result.note)}")
    for title, rows in (("symbols (substantive changes: formatting-only commits not counted)",
                         result.symbols), ("files", result.files)):
        lines.append(f"\n{title}:")
        if not rows:
            lines.append("  none")
            continue
        lines.append(f"  {'score':>7}  {'changes':>7}  {'authors':>7}  {'churn':>6}  "
                     f"{'last change':>14}  {'what'}")
        for h in rows:
            what = f"{h.path}::{h.qualname}" if h.qualname else h.path
            if h.line:
                what += f"  (line {h.line})"
            lines.append(f"  {h.score:7.2f}  {h.changes:7d}  {h.authors:7d}  {h.churn:6d}  "
                         f"{relative_time(h.last_change, now):>14}  {terminal(what)}")
            if explain:
                lines.append(f"           R={h.recency_weighted:.3f} A={h.authors} L={h.churn}")
    lines.append(f"\n{result.formula}")
    return "\n".join(lines)


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024   # type: ignore[assignment]  # a size in larger units
    return str(n)


def _db_label(db: Path | str, root: Path) -> str:
    try:
        return os.path.relpath(db, root) if Path(db).is_relative_to(root) else str(db)
    except ValueError:
        return str(db)


def index_summary(s: IndexSummary, db: Path, root: Path) -> str:
    rate = s.new_commits / s.seconds if s.seconds > 0 else 0.0
    size = _size(sum(os.path.getsize(p) for p in (str(db), f"{db}-wal") if os.path.exists(p)))
    lines = _recovery(s.recovery) if s.recovery else []
    if s.window_seconds is not None:
        lines.append(f"recent history first: {s.window_commits} commits usable after "
                     f"{s.window_seconds:.1f}s"
                     + (f"; {reach(s.history_from)}, the older commits are being indexed by "
                        "another run" if s.history_from is not None else ""))
    lines += [f"{'rebuilt' if s.rebuilt else 'indexed'} {s.new_commits} new commit"
             f"{'s' if s.new_commits != 1 else ''} in {s.seconds:.1f}s ({rate:.0f} commits/s);"
             f" HEAD {s.head[:10]}",
             f"  {s.total_commits} commits reachable",
             f"  {s.file_changes} file changes ({s.skipped_file_changes} at file level only),"
             f" {s.symbol_changes} symbol changes, {s.blobs_parsed} blobs parsed"]
    if s.objects_fetched:
        lines.append(f"  partial clone: {s.objects_fetched} missing objects fetched before reading"
                     " the commits")
    if s.missing_objects:
        lines.append("  " + missing_objects(s.missing_objects, s.missing_cause))
    if s.marked_unreachable or s.reachable_again:
        lines.append(f"  history rewritten: {s.marked_unreachable} commits no longer reachable,"
                     f" {s.reachable_again} reachable again")
    lines.append(f"  structure: {s.structure_files_read} files read"
                 " (HEAD, and modified files from the working tree),"
                 f" {s.structure_refs_resolved} references resolved")
    lines.append(f"  memory: {s.items_added} items added, {s.texts_embedded} texts embedded"
                 + (f", {s.areas} areas" if s.areas else ""))
    if s.model_replaced:
        lines.append(f"  every item embedded again: the model, its files or the way texts are "
                     f"embedded changed (vectors were from {s.model_replaced})")
    lines.append(f"  semantic search {s.semantic}")
    if s.items_without_vector and s.semantic.startswith("off"):
        lines.append(f"  {s.items_without_vector} items have no vector: lexical search only")
    lines.append(f"  store: {_db_label(db, root)} ({size})")
    if s.earlier_reader is not None:
        lines.append(f"note: {earlier_reader(s.earlier_reader)}")
    return "\n".join(lines)


def _recovery(r) -> list[str]:
    lost = r.notes_found - r.notes_saved
    return [f"the index was damaged ({r.damage}); moved aside to {r.moved_to}",
            f"  {r.notes_saved} note{'s' if r.notes_saved != 1 else ''} saved from it"
            + (f" ({lost} unreadable)" if lost else "")
            + ("" if r.method == "sql" else ", read page by page")]


def earlier_reader(r, rebuild: str = "`cortex index --rebuild`") -> str:
    """What a store read by another reader (reader_version.EarlierReader) means, and its fix."""
    if r.version > r.current:
        return (f"history partly read by a later version of Cortex (reader {r.version}; this one "
                f"is {r.current}): its answers mix the two readings until {rebuild} by one "
                "version reads it all alike")
    # The fix before the list of changes, which grows with each reader: a client that clips a
    # long message (the language server's pop-up) still shows what to do.
    return (f"history read by an earlier version of Cortex (reader {r.version}, now "
            f"{r.current}): what it read (the older commits, and the ranges of files not changed "
            f"since) keeps the earlier reading until {rebuild}; since then, {'; '.join(r.since)}")


def missing_objects(count: int, cause: str) -> str:
    """What objects git could not give mean for the history (see object_source)."""
    line = (f"{count} object{'s' if count != 1 else ''} could not be read ({cause}): the file"
            " changes that need them are recorded at file level only (no symbol history)")
    if cause.startswith("partial clone"):
        return line + "; run `cortex index --rebuild` once the remote is reachable"
    return line + ("; a commit whose tree is missing has no file changes, and commits that only"
                   " a missing commit leads to are not indexed; once the repository is repaired,"
                   " `cortex index --rebuild` reads them (the count is kept until then)")


def status(s: Status, root: Path, now: float) -> str:
    span = ""
    if s.first_commit_time is not None:   # 0 is a date: 1970-01-01
        # UTC days: the store keeps the span's times, not their authors' zones, which history
        # rows show (a commit of 2013-01-19 23:00 -0800 is 2013-01-20 here).
        span = f" from {date(s.first_commit_time)} to {date(s.last_commit_time)} (UTC)"
    # No run has completed: a first run, or a rebuild (which empties the store first), was
    # stopped or is under way; "never" read as if the repository had never been indexed.
    indexed = (relative_time(s.indexed_at, now) if s.indexed_at
               else "no index run has completed since the store was made or rebuilt: "
                    "`cortex index` continues")
    lines = [
        f"index: {_db_label(s.db_path, root)} ({_size(s.db_bytes)}, schema {s.schema_version})",
        *([f"  location: {s.store_reason}"] if s.store_reason else []),
        f"last indexed commit: {s.head[:10] if s.head else 'none'} ({indexed})"
        f"{'; all branches' if s.all_branches else ''}",
        f"commits: {s.commits}{span} by {s.authors} author{'s' if s.authors != 1 else ''};"
        f" {s.merges} merge{'s' if s.merges != 1 else ''}"
        + (f"; {s.unreachable_commits} no longer reachable" if s.unreachable_commits else ""),
        *([partial_history(s.history_from, s.history_until)]
          if s.history_from is not None or s.history_until is not None else []),
        *([shallow_note(s.shallow_from)] if s.shallow_from is not None else []),
        *([f"note: {earlier_reader(s.earlier_reader)}"] if s.earlier_reader is not None
          else []),
        *([f"note: {replaced_note(s.replaced_objects)}"] if s.replaced_objects else []),
        f"files at HEAD: {s.files_at_head}; file changes: {s.file_changes}",
        f"symbols: {s.symbols_alive} at HEAD ({s.symbols_total} ever); symbol changes: {s.symbol_changes}",
        "languages:" + ("" if s.languages else " none with symbols"),
    ]
    for lang in s.languages:
        lines.append(f"  {lang.language:<12} {lang.files:6d} files  {lang.symbols:7d} symbols")
    lines.append("recorded at file level only:" + ("" if s.skipped else " nothing"))
    for skip in s.skipped:
        lines.append(f"  {skip.reason:<16} {skip.files_at_head:6d} files at HEAD  "
                     f"{skip.changes_in_history:7d} changes in history"
                     + (f"  ({skip.explanation})" if skip.explanation else ""))
    if s.missing is not None:
        lines.append(missing_objects(s.missing.objects, s.missing.cause))
    if s.structure:
        lines.append("structure (references resolved to a definition; imports not counted):")
        for r in s.structure:
            lines.append(f"  {r.language:<12} {r.files:6d} files  {r.refs:7d} refs  "
                         f"{r.rate:6.1%} resolved  {r.ambiguous} ambiguous  "
                         f"{r.external} external  {r.unresolved} unresolved")
    m = s.memory
    if m is not None:
        lines.append(f"memory: {m.commit_items} commit segments, {m.doc_items} doc sections, "
                     f"{m.note_items} notes searchable; {m.areas} areas")
        lines.append(f"  {m.semantic_note}")
        if m.without_vector and m.semantic:
            lines.append(f"  {m.without_vector} items not embedded yet (run `cortex index`)")
        lines.append(f"notes: {m.notes_live} live, {m.notes_closed} superseded or expired")
    return "\n".join(lines)


class ProgressBar:
    """A one-line progress display on a terminal: done/total, commits per second, ETA."""

    def __init__(self, stream, min_interval: float = 0.2):
        self.stream = stream
        self.started = time.monotonic()
        self.last = 0.0
        self.min_interval = min_interval
        self.shown = False
        self.phase = "commits"

    def update(self, done: int, total: int, phase: str = "commits") -> None:
        now = time.monotonic()
        if done < total and now - self.last < self.min_interval:
            return
        self.last = now
        elapsed = now - self.started
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = f"{int((total - done) / rate) // 60}:{int((total - done) / rate) % 60:02d}" \
            if rate > 0 else "-:--"
        width = 24
        filled = int(width * done / total) if total else width
        if phase != self.phase:   # a new phase restarts the rate
            self.phase, self.started, rate, eta = phase, now, 0.0, "-:--"
        self.stream.write(f"\r  indexing [{'#' * filled}{'.' * (width - filled)}] {done}/{total}"
                          f" {phase}  {rate:5.0f}/s  ETA {eta} ")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r" + " " * 78 + "\r")
            self.stream.flush()


# -- memory ----------------------------------------------------------------------------------------


def _snippet(text: str, width: int = 100) -> str:
    return _clip(" ".join(text.split()), width)


def search(result, now: float, explain: bool) -> str:
    lines = [f"{len(result.hits)} result{'s' if len(result.hits) != 1 else ''} for "
             f"{quoted(_clip(result.query, 60))} ({result.mode}; {result.candidates} candidates)"]
    if result.note:
        lines.append(f"note: {result.note}")
    for n, hit in enumerate(result.hits, 1):
        when = relative_time(hit.time, now) if hit.time is not None else ""
        lines.append(f"{n:2d}. [{hit.citation}] {hit.kind:<6} {when:>14}  {_clip(hit.title, 70)}")
        if hit.text and not (hit.kind == "commit" and hit.segment == 0 and not hit.text.strip()):
            lines.append(f"      {_snippet(hit.text)}")
        if explain and hit.why:
            w = hit.why
            lines.append(
                f"      lexical #{w.lexical_rank or '-'}"
                + (f" (message {w.text_bm25 or 0:.2f}, code {w.code_bm25 or 0:.2f})"
                   if w.lexical_rank else "")
                + f"  vector #{w.vector_rank or '-'}"
                + (f" (cos {w.vector_similarity:.2f}, weight {w.vector_weight:.2f})"
                   if w.vector_similarity is not None else "")
                + f"  fused {w.fused:.4f} × (1 + {w.boost:.3f}) = {w.score:.4f}"
                + (f"  (by @{terminal(w.named_author)}, named in the query: fused "
                   f"× {w.author_factor:g})" if w.named_author else ""))
            lines.append(f"      priors: recency {w.recency:.2f}  signal {w.signal:.2f}"
                         f"  context {w.context:.2f}  area {w.area:.0f}"
                         + (f"  ({'; '.join(w.context_reasons)})" if w.context_reasons else ""))
    if not result.hits:
        lines.append("  nothing matched")
    elif explain and result.clock is not None:
        lines.append(f"recency {on_clock(result.clock)}")
    return "\n".join(lines)


def what(result, now: float) -> str:
    operation = getattr(result, "operation", None)
    unread = getattr(result, "unread", None)
    if unread:   # git said nothing: neither the branch nor the changes are known
        head = "branch: not known; " + (f"{terminal(operation)}; " if operation else "") \
            + "changed files not known"
    else:
        unborn = getattr(result, "unborn", None)
        name = result.branch or (f"{unborn} (no commits yet)" if unborn else "(detached)")
        head = (f"branch: {terminal(name)}; "
                + (f"{terminal(operation)}; " if operation else "")
                + f"{len(result.changed)} changed file{'s' if len(result.changed) != 1 else ''}"
                + (f", {len(result.untracked)} untracked" if result.untracked else ""))
    lines = [head]
    lines.append("\nabout your changes:")
    if unread:
        lines.append(f"  the working copy could not be read: {terminal(unread)}")
    elif not result.changed:
        lines.append("  no changes in the working tree or the index")
    for note in result.notes:
        lines.append(f"  {_note_line(note, now)}")
    for item in result.about_changes:
        lines.append(f"  {_commit_line(item.commit, now)}  ({', '.join(terminal(f) for f in item.files)})")
        if item.why:
            lines.append(f"      {_snippet(item.why)}")
    if result.unindexed:
        lines.append(f"  not in the index: {', '.join(terminal(p) for p in result.unindexed[:5])}")
    lines.append("\nrecent decisions:")
    for item in result.decisions:
        lines.append(f"  {_commit_line(item.commit, now)}")
        if item.why:
            lines.append(f"      {_snippet(item.why)}")
    for note in result.recent_notes:
        lines.append(f"  {_note_line(note, now)}")
    if not result.decisions and not result.recent_notes:
        lines.append("  none")
    lines.append("\nhot spots you are touching"
                 + (f" ({on_clock(result.clock)}):" if getattr(result, "clock", None) else ":"))
    for h in result.hotspots:
        what_ = f"{h.path}::{h.qualname}" if h.qualname else h.path
        lines.append(f"  {h.score:7.2f}  {h.changes:4d} changes  {h.authors:3d} authors  {terminal(what_)}")
    if not result.hotspots:
        lines.append("  none")
    return "\n".join(lines)


def _note_line(note, now: float) -> str:
    state = "" if note.live else " (superseded)" if note.superseded_by else " (expired)"
    stale = ""
    if note.stale:
        stale = f"  [possibly stale: {note.stale_reason}" + \
            (f", {note.changed_by.short} {_clip(note.changed_by.subject, 40)}]"
             if note.changed_by else "]")
    return (f"#{note.id} {terminal(note.target or '(repository)')}{state}  "
            f"{relative_time(note.recorded_at, now)}"
            f"{' by ' + terminal(note.author) if note.author else ''}: {_snippet(note.text, 90)}{stale}")


def notes(items, now: float) -> str:
    if not items:
        return "no notes"
    return "\n".join(_note_line(n, now) for n in items)


def areas(items, now: float) -> str:
    if not items:
        return "no areas yet (too few items, or run `cortex index`)"
    lines = [f"{len(items)} areas (spectral clusters of commits, docs and notes)"]
    for a in items:
        span = (f"{date(a.first_time)} – {date(a.last_time)}" if a.first_time is not None
                else "")
        lines.append(f"\n#{a.id}  {terminal(a.label)}  —  {a.size} items ({a.commits} commit segments, "
                     f"{a.docs} doc sections, {a.notes} notes)  {span}")
        if a.terms:
            lines.append(f"    terms: {', '.join(terminal(t) for t in a.terms)}")
        if a.paths:
            lines.append(f"    hottest paths: {', '.join(terminal(p) for p in a.paths)}")
    return "\n".join(lines)


def related_commits(result, now: float) -> str:
    lines = [f"commits related to {terminal(result.subject)}"]
    for title, rows in (("touching it", result.touching),
                        ("similar messages" + ("" if result.semantic else
                                               " (semantic search off)"), result.similar),
                        ("same area", result.same_area)):
        lines.append(f"\n{title}:")
        for r in rows:
            extra = f"  cos {r.similarity:.2f}" if r.similarity is not None and \
                r.reason == "similar message" else f"  [{terminal(r.area)}]" if r.area else ""
            lines.append(f"  {_commit_line(r.commit, now)}{extra}")
        if not rows:
            lines.append("  none")
    return "\n".join(lines)


# -- structure -------------------------------------------------------------------------------------


def _where(path: str, qualname: str | None) -> str:
    return terminal(f"{path}::{qualname}" if qualname else path)


def blast(result) -> str:
    t, s = result.target, result.summary
    found = (f"{len(result.dependents)} dependents in {s.files} files" if result.dependents_known
             else "dependents not known")
    lines = [f"blast radius of {terminal(t.label)} (depth {result.depth}): {found}; "
             f"risk {s.risk} ({s.risk_score:g})" + (" from its history alone"
                                                    if not result.dependents_known else "")]
    if result.note:
        lines.append(f"note: {result.note}")
    counts = ", ".join(f"{n} {plural_noun(k, n)}" for k, n in s.by_relation.items())
    if not result.dependents_known:   # zero would claim that nothing depends on it
        lines.append("  dependents and covering tests not known")
    else:
        lines.append(f"  {counts or 'no dependents'}; tests covering it: {len(s.tests)}")
    if result.below_confidence:
        why = f"{result.left_out_why}; " if result.left_out_why else ""
        lines.append(f"  {result.below_confidence} more below confidence "
                     f"{result.min_confidence:g}, left out ({why}--min-confidence lowers the "
                     "floor)")
    lines.append("\ndependents:")
    for d in result.dependents[:50]:
        via = " ← ".join(f"{_where(link.src_path, link.src_qualname)}:{link.line} {link.kind}"
                         for link in d.chain[1:])
        through = ", ".join(terminal(link.dst_qualname or "") for link in d.chain
                            if link.kind == "dispatch")
        lines.append(f"  {d.depth}  {d.relation:<9} {d.confidence:4.2f}  {_where(d.path, d.qualname)}"
                     f":{d.chain[0].line}" + (f"  (via {via})" if via else "")
                     + (f"  (calls {through}, overridden)" if through else ""))
    if len(result.dependents) > 50:
        lines.append(f"  … {len(result.dependents) - 50} more (--json lists them all)")
    if not result.dependents:
        lines.append("  none found" if result.dependents_known else "  not known (no structure)")
    lines.append("\nhidden coupling (changes with it, no structural link):" if result.dependents_known
                 else "\nchanges with it (co-change; structural links not known):")
    for h in result.hidden:
        shas = ", ".join(ref.short for ref in h.evidence[:3])
        lines.append(f"  {h.support:4d} shared commits  conf {h.confidence:4.2f}  "
                     f"{_where(h.path, h.qualname)}  ({shas})")
    if not result.hidden:
        lines.append("  none")
    lines.append(f"\n{s.formula}\n  D = {s.dependents_weighted:g}, H = {s.hotspot:g}")
    return "\n".join(lines)


def neighbours(result, command: str) -> str:
    lines = [f"{command} of {terminal(result.target.label)}: "
             + (str(len(result.items)) if result.known else "not known")]
    if result.note:
        lines.append(f"note: {result.note}")
    for n in result.items:
        lines.append(f"  {n.relation:<9} {n.confidence:4.2f}  {_where(n.path, n.qualname)}  (line {n.line})")
    if not result.items and result.known:
        lines.append("  none found")
    return "\n".join(lines)


_WEAK = "  (1 shared commit: weak)"


def _evidence_lines(refs, pad: str, count: int = 2) -> list[str]:
    return [f"{pad}{ref.short} {_clip(ref.subject, 70)}" for ref in refs[:count]]


def set_related(result, explain: bool = False) -> str:
    total = len(result.changed) + len(result.unknown)
    symbols = len(result.changed_symbols) + len(result.unknown_symbols)
    lines = [f"what usually changes with the {total} changed file{'s' if total != 1 else ''}"
             + (f" and {symbols} changed symbol{'s' if symbols != 1 else ''}" if symbols else "")
             + " and is not changed yet"]
    if result.unknown:
        lines.append(_some("  (no history for", result.unknown) + ")")
    if result.unknown_symbols:
        lines.append(_some("  (new symbols, no history:", result.unknown_symbols) + ")")
    if result.skipped:
        lines.append(_some("  (symbols not read:", result.skipped) + ")")
    if result.truncated:
        lines.append("  (a large change: only its first files and symbols were read)")
    if result.unindexed_commits:
        n = result.unindexed_commits
        lines.append(f"  (HEAD is {n} commit{'s' if n != 1 else ''} past the index: "
                     f"{'their' if n != 1 else 'its'} changes count as yours until `cortex "
                     "index` reads them)")
    if result.changed_symbols:
        lines.append("\nsymbols:")
        lines.extend(_set_rows(result.symbols, explain))
        if not result.symbols:
            lines.append("  " + result.nothing("symbols"))
        lines.append("\nfiles:")
    lines.extend(_set_rows(result.files, explain))
    if not result.files:
        lines.append("  " + result.nothing("files"))
    lines.append("")
    if result.changed_symbols:
        lines.append("symbols: " + _set_formula(result.symbol_aggregate, "symbol"))
        lines.append("files: " + _set_formula(result.aggregate, "file"))
    else:
        lines.append(_set_formula(result.aggregate, "file"))
    lines.append(result.decay)
    return "\n".join(lines)


def _set_formula(aggregate: str, item: str) -> str:
    if aggregate == "max":
        return (f"score = the highest, over the changed {item}s, of the weight of the commits "
                f"shared with that {item} / the weight of its commits")
    return (f"score = Σ over shared commits of their weight × (changed {item}s the commit held) "
            f"/ (changed {item}s)")


def _some(head: str, items: list[str], count: int = 5) -> str:
    return (f"{head} {len(items)}: " + ", ".join(terminal(p) for p in items[:count])
            + (" …" if len(items) > count else ""))


def _set_rows(partners, explain: bool) -> list[str]:
    lines = [f"  {'score':>5}  {'shared':>6}  what"]
    for p in partners:
        weak = _WEAK if p.weak else ""
        lines.append(f"  {p.score:5.2f}  {p.support:6d}  {terminal(p.label)}{weak}")
        lines.append(f"  {'':5}  {'':6}    with "
                     + ", ".join(terminal(f) for f in p.with_changed[:4])
                     + (" …" if len(p.with_changed) > 4 else ""))
        if explain:
            each = ", ".join(f"{terminal(k)} {v}" for k, v in sorted(
                (p.shared_with or {}).items(), key=lambda kv: (-kv[1], kv[0]))[:6])
            lines.append(f"  {'':5}  {'':6}    decayed {p.score:.4f}, plain {p.plain:.4f}, "
                         f"newest shared commit {date(p.last_shared)}; shared with {each}")
        lines.extend(_evidence_lines(p.evidence, " " * 19))
    return lines


def fused_related(result, explain: bool = False) -> str:
    from cortex_core.api import is_changelog
    n = result.target_commits
    # Not the history's count: side branches' changes a merge dropped are in (see FusedRelated).
    lines = [f"what changes with {terminal(result.target.label)} (co-change and structure fused; "
             f"{n} commit{'s' if n != 1 else ''} of the target, side branches' included, none of "
             f"over {result.max_changeset} files)"]
    if result.note:
        lines.append(f"  ({terminal(result.note)})")
    if is_changelog(result.target.path):
        lines.append("  (a changelog: it changes with everything, so co-change leaves it out)")
    if result.target.qualname:
        lines.append("\nsymbols (co-change, their files' co-change, calls and names fused):")
        lines.append(f"  {'score':>5}  {'shared':>6}  {'conf':>5}  what")
        for p in result.symbols:
            weak = _WEAK if p.support == 1 else ""
            rel = f"  [{p.relation}]" if p.relation else ""
            lines.append(f"  {p.score:5.2f}  {p.support:6d}  {p.confidence:5.2f}  "
                         f"{terminal(p.path)}::{terminal(p.qualname or '')}{rel}{weak}")
            if explain:
                last = (f"newest shared commit {date(p.last_shared)}" if p.last_shared
                        else "no shared commit")
                lines.append(f"  {'':5}  {'':6}  {'':5}    c {p.weighted_confidence:.4f}, p "
                             f"{p.prior:.4f}, s {p.structure:.4f}, t {p.twin:g}, {last}")
            lines.extend(_evidence_lines(p.evidence, " " * 26))
        if not result.symbols:
            lines.append("  none")
        lines.append("\nfiles:")
    lines.append(f"  {'score':>5}  {'struct':>6}  {'co-chg':>6}  {'shared':>6}  what")
    for f in result.files:
        rel = (f"  [{f.relation}" + (f" at depth {f.depth}]" if f.depth else "]")
               if f.relation else "  [its folder changes with it]" if f.folder and not f.support
               else "")
        weak = _WEAK if f.weak else ""
        lines.append(f"  {f.score:5.2f}  {f.structure:6.2f}  {f.cochange:6.2f}  {f.support:6d}  "
                     f"{terminal(f.path)}{rel}{weak}")
        if explain:
            last = (f"newest shared commit {date(f.last_shared)}" if f.last_shared
                    else "no shared commit")
            lines.append(f"  {'':5}  {'':6}  {'':6}  {'':6}    c {f.cochange:.4f} (plain "
                         f"confidence {f.confidence:.4f}), s {f.structure:.4f}, f "
                         f"{f.folder:.4f}, {last}")
        lines.extend(_evidence_lines(f.evidence, " " * 35))
    if not result.files:
        lines.append("  nothing")
    lines.append(f"\n{result.formula}")
    return "\n".join(lines)


def plural_noun(noun: str, n: int) -> str:
    """A relation's name for n of them: "1 caller", "2 callers", "5 subclasses"."""
    if n == 1:
        return noun
    return noun + ("es" if noun.endswith(("s", "x", "ch", "sh")) else "s")


def daemon_status(status: dict | None, folder: str) -> str:
    """`cortex daemon status`: the running daemon, or where one would run."""
    if status is None:
        return f"cortex daemon: not running (its folder: {folder}); `cortex daemon start` starts it"
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(status["started"]))
    memory = f", {status['memory_mb']:g} MB resident" if status.get("memory_mb") else ""
    idle = (f"; stops after {status['idle_minutes']:g} idle minutes"
            if status.get("idle_minutes") else "")
    lines = [f"cortex daemon: running (pid {status['pid']}{memory}), since {started}{idle}",
             f"  socket: {status['socket']}",
             f"  answered: {status['served']} {plural_noun('command', status['served'])}"]
    refused = status.get("refused") or {}
    if refused:
        lines.append(f"  refused: {sum(refused.values())} (the command ran in its own process)")
        lines += [f"    {count} × {terminal(why)}" for why, count in
                  sorted(refused.items(), key=lambda kv: -kv[1])]
    held = status.get("repositories") or []
    lines.append(f"  indexes open: {len(held)}" + "".join(f"\n    {terminal(r)}" for r in held))
    return "\n".join(lines)
