"""Compact markdown for agents, from cortex_core's typed results.

Short lines, no tables, citations an agent can quote back (short shas, `path:line`, note ids).
Everything that came from the repository is escaped (cortex_core.text.sanitize): a commit message
cannot forge a heading, a link or an instruction block in the answer."""

from __future__ import annotations

from cortex_core.text.sanitize import markdown, markdown_code
from cortex_core.dates import date, on_clock, window
from cortex_cli.render import earlier_reader, missing_objects, plural_noun, replaced_note


def plural(count: int, word: str) -> str:
    return f"{count} {plural_noun(word, count)}"


def _where(path: str, qualname: str | None) -> str:
    return markdown_code(f"{path}::{qualname}" if qualname else path)


def _commit(c) -> str:
    return (f"`{c.short}` {date(c.time, c.offset)} {markdown(c.author, 40)}: "
            f"{markdown(c.subject, 120)}")


def ours(text: str) -> str:
    """A sentence of Cortex's own (why semantic search is off, why an index run failed) that
    quotes commands in backticks, as the command line shows it, and carries values from
    elsewhere (a model's name, a path): each quoted span as inline code, the rest escaped. With
    `markdown` alone the quotes came out escaped: run \\`cortex model pull …\\`."""
    parts = text.split("`")
    if len(parts) % 2 == 0:    # a backtick without its pair: no span can be told apart
        return markdown(text)
    return "".join(markdown_code(part) if n % 2 else _between_spans(part)
                   for n, part in enumerate(parts))


def _between_spans(part: str) -> str:
    """`part` escaped, with the space that parts it from a code span kept (markdown strips)."""
    before = " " if part[:1].isspace() else ""
    after = " " if part[-1:].isspace() else ""
    text = markdown(part)
    return before + text + after if text else before or after


def footer(lines: list[str], notes: list[str]) -> str:
    """The answer, then the notes on how far to trust it (our own text, already escaped)."""
    if notes:
        lines += ["", "_" + " · ".join(notes) + "_"]
    return "\n".join(lines)


def history(result, whys: dict) -> list[str]:
    t = result.target
    head = f"**{_where(t.path, t.qualname)}**"
    # As the command line says it: before an index run reaches HEAD, nothing is known gone.
    gone = "HEAD not indexed yet" if result.history_until is not None else "gone at HEAD"
    if t.qualname:
        head += f" · {markdown(t.kind or 'symbol')} · " + (
            f"lines {t.start_line}–{t.end_line}" if t.alive and t.start_line else gone)
    elif not t.alive:   # a file deleted or renamed away
        head += f" · {gone}"
    if result.moved_to:
        head += (f", moved to {markdown_code(result.moved_to)}"
                 + (f" in `{result.moved_in.short}`" if result.moved_in else ""))
    head += f" · {plural(result.total, 'commit')}"
    if len(result.entries) < result.total:
        head += f" (newest {len(result.entries)})"
    lines = [head]
    if result.note:
        lines.append(f"_{markdown(result.note)}_")
    for e in result.entries:
        row = f"- {_commit(e.commit)}"
        if e.change not in ("modified", "M"):
            row += f" ({markdown(e.change)})"
        if t.qualname and e.name and e.name != t.qualname:
            row += f" [as {_where(e.path, e.name)}]"
        elif not t.qualname and e.path != t.path:
            row += f" [as {markdown_code(e.path)}]"
        lines.append(row)
        why = whys.get(e.commit.sha)
        if why:
            lines.append(f"  why: {markdown(why)}")
    if not result.entries:
        lines.append("- no commit changed it in the indexed history")
    return lines


def blast(result) -> list[str]:
    s = result.summary
    counts = ", ".join(plural(n, k) for k, n in s.by_relation.items()) or "no dependents"
    found = (f"{counts} in {plural(s.files, 'file')}" if result.dependents_known
             else "dependents not known (risk from its history alone)")
    lines = [f"**Blast radius of {markdown_code(result.target.label)}** (depth {result.depth}): "
             f"risk {s.risk} ({s.risk_score:g}); {found}"]
    if result.note:
        lines.append(f"_{markdown(result.note)}_")
    if result.below_confidence:
        why = f"{result.left_out_why}; " if result.left_out_why else ""
        lines.append(f"_{result.below_confidence} more below confidence "
                     f"{result.min_confidence:g}, left out ({why}a lower `min_confidence` "
                     "lists them)_")
    for d in result.dependents[:25]:
        line = d.chain[0].line if d.chain else None
        through = ", ".join(markdown_code(link.dst_qualname or "") for link in d.chain
                            if link.kind == "dispatch")
        lines.append(f"- {d.relation} {_where(d.path, d.qualname)}"
                     + (f" at line {line}" if line else "")
                     + (f", calling {through}, overridden" if through else "")
                     + f" (depth {d.depth}, confidence {d.confidence:.2f})")
    if len(result.dependents) > 25:
        lines.append(f"- … {len(result.dependents) - 25} more (in the structured content)")
    if s.tests:
        lines.append("Tests: " + ", ".join(markdown_code(t) for t in s.tests[:10]))
    if result.hidden:
        lines.append("Changes with it without a link in the code:" if result.dependents_known
                     else "Changes with it (links in the code not known):")
        for h in result.hidden:
            shas = ", ".join(f"`{r.short}`" for r in h.evidence[:3])
            lines.append(f"- {_where(h.path, h.qualname)}: {plural(h.support, 'shared commit')} "
                         f"(confidence {h.confidence:.2f}), e.g. {shas}")
    return lines


def related(fused) -> list[str]:
    lines = [f"**What changes with {markdown_code(fused.target.label)}** "
             f"({plural(fused.target_commits, 'commit')} of its own, side branches' included,"
             f" none of over {fused.max_changeset} files)"]
    if fused.note:
        lines.append(f"_{markdown(fused.note)}_")
    if fused.symbols:
        lines.append("Symbols that change with it:")
        for p in fused.symbols:
            # The share is of the target's commits (the partner's is reverse_confidence).
            why = [f"{plural(p.support, 'shared commit')} "
                   f"({p.confidence:.0%} of the target's commits)"
                   + (" (weak)" if p.support == 1 else "")] if p.support else []
            if p.relation:
                why.append(p.relation)
            if p.prior and not p.support and p.relation is None:
                why.append("its file changes with this one's")
            lines.append(f"- {_where(p.path, p.qualname)}: " + "; ".join(why))
        lines.append("Files:")
    for f in fused.files:
        parts = []
        if f.support:
            shas = ", ".join(f"`{r.short}`" for r in f.evidence[:2])
            parts.append(f"changed together in {plural(f.support, 'commit')} "
                         f"({f.confidence:.0%} of the target's commits)"
                         + (f", e.g. {shas}" if shas else "")
                         + (" (weak: one commit)" if f.weak else ""))
        if f.relation:
            parts.append(f"{f.relation} in the code at depth {f.depth}" if f.depth
                         else f"{f.relation} (a module and its tests)")
        if f.folder and not parts:
            parts.append("its folder changes with this one's")
        lines.append(f"- {markdown_code(f.path)} score {f.score:.2f}: " + "; ".join(parts))
    if not fused.files:
        lines.append("- nothing changes with it often enough, and nothing links to it")
    return lines


def set_related(result) -> list[str]:
    """What a set of changes usually brings along (the working tree's, or the one named)."""
    files = len(result.changed) + len(result.unknown)
    symbols = len(result.changed_symbols) + len(result.unknown_symbols)
    lines = [f"**What usually changes with {plural(files, 'changed file')}"
             + (f" and {plural(symbols, 'changed symbol')}" if symbols else "")
             + " and is not changed yet**"]
    for head, items in (("no history for", result.unknown),
                        ("new symbols, no history:", result.unknown_symbols),
                        ("symbols not read:", result.skipped)):
        if items:
            lines.append(f"_{head} " + ", ".join(markdown_code(p) for p in items[:5])
                         + (" …" if len(items) > 5 else "") + "_")
    if result.truncated:
        lines.append("_a large change: only its first files and symbols were read_")

    def rows(partners) -> list[str]:
        out = []
        for p in partners:
            shas = ", ".join(f"`{r.short}`" for r in p.evidence[:2])
            out.append(f"- {_where(p.path, p.qualname)} score {p.score:.2f}: "
                       f"{plural(p.support, 'shared commit')}"
                       + (" (weak: one commit)" if p.weak else "")
                       + (f", e.g. {shas}" if shas else "") + "; with "
                       + ", ".join(markdown_code(c) for c in p.with_changed[:3])
                       + (" …" if len(p.with_changed) > 3 else ""))
        return out
    if result.changed_symbols:
        lines.append("Symbols:")
        lines += rows(result.symbols) or ["- " + result.nothing("symbols")]
        lines.append("Files:")
    lines += rows(result.files) or ["- " + result.nothing("files")]
    return lines


def hotspots(result) -> list[str]:
    if result.since_days:
        span = f"in the {window(result.since_days, result.clock)}"
    else:
        span = "over all history" + (f", {on_clock(result.clock)}" if result.clock else "")
    lines = [f"**Hotspots** {span}; recency half-life {result.half_life_days:g} days"]
    if result.note:
        lines.append(f"_{markdown(result.note)}_")
    for title, rows in (("Symbols", result.symbols), ("Files", result.files)):
        lines.append(f"{title}:")
        for n, h in enumerate(rows, 1):
            where = _where(h.path, h.qualname) + (f" line {h.line}" if h.line else "")
            lines.append(f"{n}. {where} score {h.score:.2f} · {plural(h.changes, 'change')} · "
                         f"{plural(h.authors, 'author')} · churn {h.churn} · last {date(h.last_change)}")
        if not rows:
            lines.append("- none")
    return lines


def search(result) -> list[str]:
    lines = [f"**{plural(len(result.hits), 'result')} for** {markdown_code(result.query[:100])} "
             f"({result.mode}{', semantic' if result.semantic else ''})"]
    for n, hit in enumerate(result.hits, 1):
        when = f" {date(hit.time)}" if hit.time is not None else ""
        who = f" {markdown(hit.author, 40)}" if hit.author else ""
        lines.append(f"{n}. [{markdown(hit.citation)}] {hit.kind}{when}{who}: {markdown(hit.title, 120)}")
        text = " ".join(hit.text.split()) if hit.text else ""
        if text and text != hit.title:
            lines.append(f"   {markdown(text, 240)}")
    if not result.hits:
        lines.append("- nothing matched")
    return lines


def status(s, head: str | None, run) -> list[str]:
    lines = [f"**Index** of {markdown_code(str(s.db_path))}: {plural(s.commits, 'commit')} by "
             f"{plural(s.authors, 'author')}"
             + (f", {date(s.first_commit_time)} to {date(s.last_commit_time)}"
                if s.first_commit_time is not None else "")]
    if s.store_reason:
        lines.append(f"- not in `.cortex`: {markdown(s.store_reason)}")
    indexed = s.head[:10] if s.head else "nothing"
    if head and s.head == head:
        lines.append(f"- up to date with HEAD (`{indexed}`)")
    elif head:
        lines.append(f"- indexed up to `{indexed}`; HEAD is `{head[:10]}`: call `sync`")
    lines.append(f"- {s.files_at_head} files and {s.symbols_alive} symbols at HEAD; "
                 f"{s.symbol_changes} symbol changes recorded")
    if s.languages:
        lines.append("- languages: " + ", ".join(f"{lang.language} ({lang.files})"
                                                 for lang in s.languages[:8]))
    if s.missing is not None:   # a partial clone offline, a damaged repository
        lines.append("- " + missing_objects(s.missing.objects, s.missing.cause))  # our text
    if s.earlier_reader is not None:   # our text
        lines.append("- " + earlier_reader(s.earlier_reader, "`sync` with `rebuild=true`"))
    if s.replaced_objects:   # our text
        lines.append("- " + replaced_note(s.replaced_objects))
    m = s.memory
    if m is not None:
        lines.append(f"- memory: {m.commit_items} commit segments, {m.doc_items} doc sections, "
                     f"{m.note_items} notes; {m.areas} areas")
        lines.append(f"- {ours(m.semantic_note)}")
        lines.append(f"- notes: {m.notes_live} live, {m.notes_closed} superseded or expired")
    if run is not None:
        lines.append(f"- indexer: {run_line(run)}")
    return lines


def run_line(run) -> str:
    if not run.finished:
        return f"running ({markdown(run.message)})"
    return "last run finished" if run.ok else f"last run failed: {ours(run.error or '')}"


def note(n, verb: str) -> list[str]:
    on = markdown_code(n.target) if n.target else "the repository"
    state = "live" if n.live else "closed"
    anchor = f", anchored at `{n.anchor_commit[:10]}`" if n.anchor_commit else ""
    return [f"{verb} note #{n.id} on {on} ({state}{anchor}): {markdown(n.text, 500)}"]


def note_line(n) -> str:
    by = f" by {markdown(n.author, 60)}" if n.author else ""
    stale = ""
    if n.stale:
        stale = f" (possibly stale: {markdown(n.stale_reason or 'its code changed')}" + (
            f" in `{n.changed_by.short}`)" if n.changed_by else ")")
    return f"- note #{n.id}{by}, {date(n.recorded_at)}{stale}: {markdown(n.text, 500)}"


def sync(run, started: bool) -> list[str]:
    if not run.finished:
        lead = "Started indexing" if started else "Indexing is running"
        return [f"{lead}: {markdown(run.message)}. It goes on in the background; call `sync` "
                "again to wait for it, or `status` to see it."]
    if not run.ok:
        return [f"Indexing failed: {ours(run.error or 'unknown error')}"]
    s = run.summary or {}
    head = str(s.get("head") or "")[:10]
    # The summary is the indexer's JSON (IndexSummary): `semantic` reads "on: <model> ..." or
    # "off: <why>", after "semantic search" as in `cortex index`.
    return [f"Index up to date at `{head}`: {plural(s.get('new_commits', 0), 'new commit')} "
            f"({s.get('total_commits', 0)} in all), "
            f"{plural(s.get('symbol_changes', 0), 'symbol change')}, "
            f"in {float(s.get('seconds') or 0):.1f} s"
            + (f"; semantic search {ours(str(s['semantic']))}." if s.get("semantic") else ".")]
