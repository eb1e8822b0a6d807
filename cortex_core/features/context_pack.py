"""Context packs: what an agent should read about a symbol or a question, under a token budget.

Candidates — the focus symbol's code (or just its signature), its history with the reasons, live
notes, what changes with it, related commits, search hits and doc sections — each get a utility.
They are packed greedily by utility per token; each item costs what its rendering costs in the
pack's encoding. The room the greedy fill leaves is then given to the most useful candidate that
did not fit, cut to fit (the focus code by whole lines, other text at a word, marked `…`). The
rendered pack is counted whole at the end and never exceeds the budget under that count. Every item
carries a citation (short sha, path:line, note id). All text is redacted before it is costed and
rendered.

Tokens are counted by `token_count`: o200k by default, cl100k, or the documented estimate (also
the fallback when the `bpe-openai` package is missing; the pack then says so in `note`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path

from cortex_core.clock import DEFAULT
from cortex_core.config import Settings
from cortex_core.errors import CortexError, Hint
from cortex_core.query.files import head_blob
from cortex_core.text.redact import redact
from cortex_core.text.sanitize import pack_block, pack_line
from cortex_core.features.token_count import DEFAULT_ENCODING, counter

FORMATS = ("markdown", "json")
CODE_LINES_MAX = 400
MIN_CUT_TOKENS = 16      # a cut item must keep at least this much of its own text


@dataclass(frozen=True)
class PackItem:
    section: str       # focus, notes, history, search, changes-with, related, docs
    title: str
    text: str
    citation: str
    utility: float
    group: str = ""    # at most one item of a non-empty group (the code, or its signature)
    tokens: int = 0    # cost in the pack's format, set when packed
    cut: bool = False  # its text was cut to fit the room left


@dataclass(frozen=True)
class ContextPack:
    subject: str
    budget: int
    used: int
    format: str
    items: list[PackItem]
    left_out: int          # candidates that did not fit
    text: str              # the rendered pack
    tokenizer: str = DEFAULT_ENCODING   # what counted: o200k, cl100k or estimate
    note: str = ""         # why the tokens are estimated, or that a line asked for gets the file


# -- packing -----------------------------------------------------------------------------------


def pack(subject: str, candidates: list[PackItem], budget: int, fmt: str = "markdown",
         encoding: str = DEFAULT_ENCODING) -> ContextPack:
    """Greedy by utility per token, then the room left filled by a cut item; never exceeds the
    budget in `encoding`."""
    if fmt not in FORMATS:
        raise CortexError(f"unknown format {fmt!r} (markdown or json)")
    if budget < 1:
        raise CortexError("the budget must be at least 1 token")
    tokens = counter(encoding)
    count = tokens.count
    markdown = fmt == "markdown"
    subject = pack_line(redact(subject), markdown, MAX_SUBJECT)
    header = count(_render(subject, budget, [], fmt))
    if header > budget:
        raise CortexError(f"a budget of {budget} token{'s' if budget != 1 else ''} is below the "
                          f"{header} the pack's header needs", Hint("budget"))
    # The citation is repository text too (a path can hold a newline and a forged `## [sha]`).
    costed = [replace(c, title=pack_line(redact(c.title), markdown),
                      citation=pack_line(redact(c.citation), markdown),
                      text=pack_block(redact(c.text), markdown, code=c.section == "focus"))
              for c in _dedupe(candidates)]
    costed = [replace(c, tokens=_item_cost(c, fmt, count)) for c in costed]
    order = sorted(costed, key=lambda c: (-c.utility / max(c.tokens, 1), -c.utility, c.citation))
    chosen: list[PackItem] = []
    used, groups = header, set()
    for item in order:
        if item.group and item.group in groups:
            continue
        if used + item.tokens <= budget:
            chosen.append(item)
            used += item.tokens
            if item.group:
                groups.add(item.group)
    chosen, used = _upgrade(chosen, costed, used, budget)
    chosen, used = _fill(chosen, costed, used, budget, fmt, count)
    chosen = _reading_order(chosen)
    text = _render(subject, budget, chosen, fmt)
    total = count(text)
    # Costs add up exactly for the estimate; a BPE count can merge or split a token where two
    # items meet, so the whole pack is counted, and a cut item shrinks (or an item goes) until
    # it fits.
    while total > budget and chosen:
        over = total - budget
        cut = next((c for c in chosen if c.cut), None)
        n = chosen.index(cut) if cut else -1
        smaller = _cut(cut, cut.tokens - over - 1, fmt, count) if cut else None
        if smaller is not None:
            chosen[n] = smaller
        else:
            chosen.remove(cut or min(chosen, key=lambda c: c.utility / max(c.tokens, 1)))
        text = _render(subject, budget, chosen, fmt)
        total = count(text)
    return ContextPack(subject, budget, total, fmt, chosen, len(costed) - len(chosen), text,
                       tokens.tokenizer, tokens.note)


def _upgrade(chosen: list[PackItem], costed: list[PackItem], used: int,
             budget: int) -> tuple[list[PackItem], int]:
    """Swap a group's chosen item (the cheap signature) for a more useful alternative (the
    code) when the room left allows: density picks first, utility gets the last word."""
    for n, item in enumerate(chosen):
        if not item.group:
            continue
        better = sorted((c for c in costed if c.group == item.group and c.utility > item.utility),
                        key=lambda c: -c.utility)
        for alt in better:
            if used - item.tokens + alt.tokens <= budget:
                chosen[n] = alt
                used += alt.tokens - item.tokens
                break
    return chosen, used


def _fill(chosen: list[PackItem], costed: list[PackItem], used: int, budget: int, fmt: str,
          count) -> tuple[list[PackItem], int]:
    """The room the greedy fill left, given to the most useful candidates that did not fit, cut
    to fit. A cut focus code replaces its signature when it shows more than the signature."""
    taken = {(c.citation, c.title) for c in chosen}
    by_group = {c.group: c for c in chosen if c.group}
    rest = sorted((c for c in costed if (c.citation, c.title) not in taken),
                  key=lambda c: (-c.utility, c.citation))
    for item in rest:
        room = budget - used
        if room < MIN_CUT_TOKENS:
            break
        held = by_group.get(item.group) if item.group else None
        if held is not None and held.utility >= item.utility:
            continue
        smaller = _cut(item, room + (held.tokens if held else 0), fmt, count)
        if smaller is None or (held is not None and len(smaller.text) <= len(held.text)):
            continue
        if held is not None:
            chosen[chosen.index(held)] = smaller
            used -= held.tokens
        else:
            chosen.append(smaller)
        by_group.pop(item.group, None)
        if item.group:
            by_group[item.group] = smaller
        used += smaller.tokens
    return chosen, used


_FENCED = re.compile(r"\A(`{3,}[^\n]*)\n(.*)\n(`{3,})\Z", re.S)
_LINES_KEPT = re.compile(r" \(lines 1–\d+ of (\d+)\)\Z")


def _cut(item: PackItem, room: int, fmt: str, count) -> PackItem | None:
    """`item` cut to cost at most `room` tokens, keeping at least MIN_CUT_TOKENS of its text;
    None when it cannot. Fenced code keeps whole lines and its fence; other text is cut at a
    word and marked `…`."""
    if room <= 0:
        return None
    source = item.text
    fenced = _FENCED.match(source) if item.section == "focus" else None
    if fenced:
        units = fenced[2].split("\n")
        before = _LINES_KEPT.search(item.title) if item.cut else None
        first = item.title[:before.start()] if before else item.title
        of = int(before[1]) if before else len(units)

        def make(k: int) -> PackItem:
            body = "\n".join(units[:k])
            return replace(item, title=f"{first} (lines 1–{k} of {of})", cut=True,
                           text=f"{fenced[1]}\n{body}\n{fenced[3]}")
    else:
        units = re.findall(r"\s*\S+", source)
        if item.cut and units and units[-1] == " …":     # cut before: its own words only
            units = units[:-1]

        def make(k: int) -> PackItem:
            return replace(item, text="".join(units[:k]) + " …", cut=True)
    lo, hi, best = 1, len(units) - (0 if item.cut else 1), None   # a cut keeps less than all
    while lo <= hi:
        mid = (lo + hi) // 2
        candidate = make(mid)
        cost = _item_cost(candidate, fmt, count)
        if cost <= room:
            best, lo = replace(candidate, tokens=cost), mid + 1
        else:
            hi = mid - 1
    if best is None:
        return None
    kept = ("\n" if fenced else "").join(units[:lo - 1])
    if count(kept) < MIN_CUT_TOKENS:
        return None
    return best


MAX_SUBJECT = 200


def _dedupe(candidates: list[PackItem]) -> list[PackItem]:
    """One item per citation (the most useful); the focus code and its signature both stay, as
    alternatives, and so do the partners that change with the focus: each cites its newest shared
    commit, which is often the focus's own last commit (cited by its history) and the same for
    several partners, yet each says something the others do not."""
    best: dict[tuple[str, str], PackItem] = {}
    for c in candidates:
        key = (c.citation, c.title if c.section in ("focus", "changes-with") else "")
        if key not in best or c.utility > best[key].utility:
            best[key] = c
    return list(best.values())


SECTION_ORDER = ("status", "focus", "notes", "search", "history", "blast", "changes-with",
                 "related", "docs")


def _reading_order(items: list[PackItem]) -> list[PackItem]:
    return sorted(items, key=lambda c: (SECTION_ORDER.index(c.section)
                                        if c.section in SECTION_ORDER else 99, -c.utility))


def _item_cost(item: PackItem, fmt: str, count) -> int:
    """What the item adds to the rendered pack, its separator included."""
    if fmt == "json":
        return count(", " + json.dumps(_json_item(item), ensure_ascii=False))
    return count("\n\n" + _markdown_item(item))


def _markdown_item(item: PackItem) -> str:
    return f"## [{item.citation}] {item.title}\n{item.text}"


def _json_item(item: PackItem) -> dict:
    return {"section": item.section, "citation": item.citation, "title": item.title,
            "text": item.text}


def _render(subject: str, budget: int, items: list[PackItem], fmt: str) -> str:
    if fmt == "json":
        return json.dumps({"subject": subject, "budget": budget,
                           "items": [_json_item(i) for i in items]}, ensure_ascii=False)
    blocks = [f"# Context: {subject}"] + [_markdown_item(i) for i in items]
    return "\n\n".join(blocks) + "\n"


# -- candidates --------------------------------------------------------------------------------


def build_pack(con, repo_root: Path, *, query: str | None = None, at: str | None = None,
               budget: int = 2000, fmt: str = "markdown", embedder=None, spec_fix=None,
               half_life_days: float = 180.0, encoding: str = DEFAULT_ENCODING,
               clock: str = DEFAULT, working_tree: bool = True,
               settings: Settings | None = None) -> ContextPack:
    """A pack about `query`, `at` (PATH, PATH::SYMBOL, PATH:LINE), or both. `spec_fix` maps a
    parsed target to the repository (the CLI's cwd handling). With `working_tree` and
    uncommitted changes, what they usually bring along is a candidate too. `settings`: the
    repository's (config.repository_settings), for co-change, blast and the working tree's
    bounds, as `related` and `blast` read them; the arguments before it are the front end's."""
    settings = settings or Settings()
    if not (query and query.strip()) and not at:
        raise CortexError("a pack needs a question, a target, or both", Hint("focus"))
    candidates: list[PackItem] = []
    subject_parts = []
    target = None
    if at:
        from cortex_core.query.targets import no_symbol_at, parse_target, resolve
        spec = parse_target(at)
        spec = spec_fix(spec) if spec_fix else spec
        target = resolve(con, spec)
        subject_parts.append(target.label)
        candidates += target_candidates(con, repo_root, spec, target, embedder, clock, settings)
    if query and query.strip():
        subject_parts.insert(0, query.strip())
        candidates += _search(con, query, at, embedder, half_life_days, spec_fix, clock=clock)
    elif target is not None:
        name = target.qualname.rsplit(".", 1)[-1] if target.qualname else Path(target.path).stem
        candidates += _search(con, name, at, embedder, half_life_days, spec_fix, kinds=("doc",),
                              section="docs", weight=0.45, clock=clock)
    if working_tree:
        candidates += _changes_with_working_tree(con, repo_root, settings)
    result = pack(" — ".join(subject_parts), candidates, budget, fmt, encoding)
    if at and spec.line is not None and target is not None and target.symbol_id is None:
        # As history says it: a line past a function (or past the file's end) gets the file.
        said = f"{no_symbol_at(con, target, spec.line)}; the pack is about the file"
        result = replace(result, note=f"{result.note}; {said}" if result.note else said)
    return result


def target_candidates(con, repo_root: Path, spec, target, embedder=None,
                      clock: str = DEFAULT, settings: Settings | None = None) -> list[PackItem]:
    """Everything a pack can say about one resolved target: its code, notes, history, what
    changes with it, what depends on it, related commits."""
    settings = settings or Settings()
    return (_focus(con, repo_root, target) + _notes(con, repo_root, target) + _history(con, spec)
            + _changes_with(con, spec, settings)
            + _blast(con, spec, clock, settings)
            + _related(con, target, embedder))


def _focus(con, repo_root: Path, target) -> list[PackItem]:
    if target.qualname is None or not target.alive or not target.start_line:
        return []
    row = head_blob(con, target.file_id)
    if row is None:
        return []
    from cortex_core.git.git_reads import read_blob_at
    data = read_blob_at(repo_root, row[0])
    if data is None:
        return []
    source = data.decode("utf-8", "replace")
    lines = source.split("\n")[target.start_line - 1:target.end_line][:CODE_LINES_MAX]
    # A fence longer than any run of backticks in the code: the code can never close it.
    longest = max((len(run) for run in re.findall(r"`+", "\n".join(lines))), default=0)
    fence = "`" * max(3, longest + 1)
    citation = f"{target.path}:{target.start_line}"
    code = f"{fence}{row[1] or ''}\n" + "\n".join(lines) + f"\n{fence}"
    signature = _signature(lines)
    title = f"{target.kind} {target.qualname}"
    return [PackItem("focus", title, code, citation, 1.0, group="focus"),
            PackItem("focus", title + " (signature)",
                     f"{fence}{row[1] or ''}\n{signature}\n{fence}", citation, 0.6, group="focus")]


def _signature(lines: list[str]) -> str:
    out = []
    for line in lines[:6]:
        out.append(line)
        if line.rstrip().endswith((":", "{", ")", ";")) or "{" in line:
            break
    return "\n".join(out)


def _notes(con, repo_root: Path, target) -> list[PackItem]:
    from cortex_core.memory.notes import live_notes_for
    out = []
    for note in live_notes_for(con, repo_root, target.path, target.qualname):
        text = note.text
        if note.stale:
            by = f" by {note.changed_by.short}" if note.changed_by else ""
            text = f"(possibly stale: {note.stale_reason}{by})\n{text}"
        out.append(PackItem("notes", f"note on {note.target or 'the repository'}", text,
                            note.citation, 0.6 if note.stale else 0.9))
    return out


def _history(con, spec) -> list[PackItem]:
    from cortex_core.query.history import history, reasons
    from cortex_core.index.messages import PACK_WHY_CHARS
    from cortex_core.dates import date
    found = history(con, spec, limit=12, substantive=True)  # reformatting is never a reason
    whys = reasons(con, [e.commit for e in found.entries], PACK_WHY_CHARS)
    out = []
    for n, e in enumerate(found.entries):
        why = whys.get(e.commit.sha)
        text = f"{date(e.commit.time, e.commit.offset)} {e.commit.author}, {e.change}"
        out.append(PackItem("history", e.commit.subject, text + (f": {why}" if why else ""),
                            e.commit.short, 0.75 / (1 + 0.25 * n)))
    return out


def _changes_with(con, spec, settings: Settings) -> list[PackItem]:
    from cortex_core.query.blast import fused_related
    try:
        found = fused_related(con, spec, top_k=5, **settings.coupling.options())
    except CortexError:
        return []
    out = []
    for p in found.files:
        parts = []
        if p.relation:
            parts.append(f"a structural {p.relation} at depth {p.depth}" if p.depth
                         else f"a file of the {p.relation}")
        if p.support:
            shas = ", ".join(ref.short for ref in p.evidence[:3])
            parts.append(f"changed together in {p.support} commit{'s' if p.support != 1 else ''}"
                         f" ({p.confidence:.0%} of the focus's commits), e.g. {shas}"
                         + (" (weak: one commit)" if p.weak else ""))
        if p.folder and not parts:
            parts.append("its folder changes with this one's")
        out.append(PackItem("changes-with", p.path, "; ".join(parts) or "related",
                            p.evidence[0].short if p.evidence else p.path, 0.5 * p.score))
    return out


def _changes_with_working_tree(con, repo_root: Path, settings: Settings) -> list[PackItem]:
    """What the uncommitted changes usually bring along and is not changed yet: symbols, then
    files (working_changes.related_to_working_tree, `cortex related` without a target)."""
    from cortex_core.query.working_changes import related_to_working_tree
    try:
        found = related_to_working_tree(con, repo_root, settings=settings.index, top_k=5,
                                        **settings.coupling.options())
    except CortexError:
        return []
    out = []
    for partners, weight in ((found.symbols, 0.5), (found.files, 0.45)):
        top = max((p.score for p in partners), default=0.0) or 1.0
        for p in partners:
            shas = ", ".join(ref.short for ref in p.evidence[:3])
            text = ("usually changes with the uncommitted changes to "
                    + ", ".join(p.with_changed[:3]) + (" …" if len(p.with_changed) > 3 else "")
                    + f": {p.support} shared commit{'s' if p.support != 1 else ''}"
                    + (f", e.g. {shas}" if shas else "") + (" (weak: one commit)" if p.weak
                                                              else "") + "; not changed yet")
            out.append(PackItem("changes-with", p.label, text, p.label, weight * p.score / top))
    return out


def _blast(con, spec, clock: str, settings: Settings) -> list[PackItem]:
    from cortex_core.query.blast import blast
    try:
        found = blast(con, spec, depth=2, clock=clock,
                      half_life_days=settings.hotspots.half_life_days, coupling=settings.coupling)
    except CortexError:
        return []
    if not found.dependents:
        return []
    s = found.summary
    counts = ", ".join(f"{n} {k}{'s' if n != 1 else ''}" for k, n in s.by_relation.items())
    closest = "; ".join(d.label for d in found.dependents[:8])
    tests = "; ".join(s.tests[:5])
    text = (f"{counts} in {s.files} files; risk {s.risk} ({s.risk_score:g}). Closest: {closest}."
            + (f" Tests: {tests}." if tests else "")
            + (f" {found.below_confidence} more below confidence {found.min_confidence:g}."
               if found.below_confidence else ""))
    first = found.dependents[0]
    return [PackItem("blast", "blast radius", text, f"{first.path}:{first.chain[0].line}", 0.55)]


def _related(con, target, embedder) -> list[PackItem]:
    from cortex_core.query.related_commits import related_commits
    label = target.label
    found = related_commits(con, label, embedder=embedder, top_k=5)
    out = []
    for r in found.similar + found.same_area:
        reason = f"{r.reason} ({r.similarity:.2f})" if r.similarity is not None else \
            f"{r.reason}: {r.area}" if r.area else r.reason
        out.append(PackItem("related", r.commit.subject, reason, r.commit.short,
                            0.4 * (r.similarity if r.similarity is not None else 0.5)))
    return out


def _search(con, query: str, at, embedder, half_life_days: float, spec_fix, *, kinds=(),
            section: str = "search", weight: float = 0.85,
            clock: str = DEFAULT) -> list[PackItem]:
    from cortex_core.memory.search import SearchOptions, build_focus, search
    focus = build_focus(con, at) if at and not spec_fix else None
    if at and spec_fix:
        from cortex_core.query.targets import parse_target
        focus = build_focus(con, spec_fix(parse_target(at)).label)
    options = SearchOptions(top_k=10, kinds=tuple(kinds), half_life_days=half_life_days,
                            clock=clock)
    if focus is not None:
        options = replace(options, focus=focus)
    try:
        result = search(con, query, options, embedder=embedder)
    except CortexError:
        return []
    if not result.hits:
        return []
    top = result.hits[0].why.score if result.hits[0].why else 1.0
    out = []
    for hit in result.hits:
        sect = "docs" if hit.kind == "doc" else section
        relative = (hit.why.score / top) if hit.why and top else 0.5
        out.append(PackItem(sect, hit.title, hit.text if hit.text else hit.title, hit.citation,
                            weight * relative))
    return out
