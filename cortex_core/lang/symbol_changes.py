"""From one commit's hunks and the symbols of each file's old and new blob to symbol changes.

Pure functions: no git, no SQL. Lines are credited to the innermost symbol that contains them
(a method, not its class), deleted lines on the old blob's symbols and added lines on the new
blob's. Symbols are identities (symbols.py): overloads and same-named siblings are distinct.

A symbol with the same identity on both sides whose text changed gets the kind of its change
(change_kinds: reformatted, docs, signature, body). Then symbols that disappeared are paired with
symbols that appeared in the same commit, so that a rename or a move continues one history
instead of ending one and starting another:

1. the same body fingerprint (text with the symbol's own name masked), unique on both sides;
   computed here, for these candidates only, from the blobs' text;
2. children of a pair follow their parent (class `Old` renamed to `New`: `Old.m` -> `New.m`),
   and a parent follows its children when both sides are otherwise unpaired;
3. the same identity in another file, unique on both sides (a move with edits);
4. within one scope (file and parent), the same simple name, unique on both sides: a signature
   change (`f(int)` -> `f(long)`) or a shifted ordinal;
5. within one scope, the rest of a kind paired as a matching: every pair whose code tokens (own
   name masked; similarity.token_similarity) have a similarity of at least SIMILAR, best first;
6. across scopes and files (a move with edits, a function turned into a method): the same simple
   name, as a matching with similarity at least MOVED_SIMILAR; then any callables with
   similarity at least RENAMED_MOVED_SIMILAR, best first, when there are few enough candidates;
7. extraction: a new callable holding at least EXTRACT_SIMILAR of the old code of a callable
   edited in the same commit, which itself kept at least EXTRACT_MARGIN less of it (the body
   moved into a new method, the old one now a wrapper), or RENAMED_MOVED_SIMILAR when the edited
   one kept at most WRAPPER_KEPT and half its size, continues that callable's lineage, which goes
   on as well; constructors neither give nor take, nor do definitions nested in a callable that
   existed before the commit, unless it also holds the edited one (_Side.host);
8. within one scope, what is left of one name made plural, private or unexported (_near_pairs),
   at MOVED_SIMILAR.
A file rename carries every symbol whose identity survives, before all of these.

The kind of a pairing: "moved" (another file), "renamed" (another simple name, or another scope
with edits), "signature" (same scope and name, another parameter list), "rescoped" (its scope or
ordinal changed and its code did not: a waypoint of its lineage, not a change of its own).
Each pairing carries a confidence: 1.0 for 1-3 and for 4 with unchanged code, else the similarity.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from cortex_core.lang.change_kinds import change_kind, masked
from cortex_core.lang.qualnames import structural_name
from cortex_core.lang.similarity import token_similarity
from cortex_core.lang.symbols import Symbol, body_hash, preferred_kind

Hunk = tuple[int, int, int, int]  # old_start, old_lines, new_start, new_lines (git, 1-based)


@dataclass
class FileSymbols:
    """One changed file of a commit: its identities before and after, and its parsed blobs."""
    old_path: str
    new_path: str
    old: list[Symbol]
    new: list[Symbol]
    hunks: list[Hunk] = field(default_factory=list)
    # The blobs' text, for the fingerprints of symbols that appear or disappear.
    old_source: bytes = b""
    new_source: bytes = b""
    old_language: str = ""
    new_language: str = ""


# Slots: a commit of tens of thousands of symbol changes (sympy: 39,380) is held whole by the
# process that writes it; without a __dict__ each takes a sixth less memory, and unpickling
# them a fifth less at its peak (for 30% more of the writer's CPU, which mostly waits).
@dataclass(frozen=True, slots=True)
class SymbolChange:
    path: str
    symbol: Symbol
    # added | deleted | body | signature | docs | reformatted | renamed | moved | rescoped
    change: str
    added: int
    deleted: int
    from_path: str | None = None
    from_symbol: Symbol | None = None
    confidence: float = 1.0  # of the pairing with from_symbol


def own_lines(symbols: list[Symbol], ranges: list[tuple[int, int]],
              source: bytes = b"") -> dict[str, int]:
    """Lines of `ranges` (sorted, disjoint, inclusive) credited to each qualified name: the lines
    inside a symbol minus those inside its child symbols. A container (a symbol with children) is
    not credited for blank lines in `source`: adding a method adds the blank line that separates
    it from its neighbour, which is no change of the class."""
    if not ranges or not symbols:
        return {}
    starts = [a for a, _ in ranges]
    ends = [b for _, b in ranges]
    prefix = [0]
    for a, b in ranges:
        prefix.append(prefix[-1] + b - a + 1)

    def overlap(lo: int, hi: int) -> int:
        first = bisect_left(ends, lo)      # first range ending at or after lo
        last = bisect_right(starts, hi)    # ranges [first, last) may intersect
        if first >= last:
            return 0
        total = prefix[last] - prefix[first]
        total -= max(0, lo - starts[first])
        total -= max(0, ends[last - 1] - hi)
        return total

    # Most symbols of a file lie outside a commit's few hunks: only those around them are looked
    # at closely, and only the symbols holding changed lines are credited.
    lo, hi = starts[0], ends[-1]
    inside = {i: lines for i, s in enumerate(symbols)
              if s.end_line >= lo and s.start_line <= hi
              and (lines := overlap(s.start_line, s.end_line))}
    own = dict(inside)
    for i, lines in inside.items():
        parent = symbols[i].parent
        if parent >= 0:
            own[parent] = own.get(parent, 0) - lines
    if source:
        _discount_blank_lines(symbols, own, ranges, source)
    credit: dict[str, int] = {}
    for i, lines in own.items():
        if lines > 0:
            qualname = symbols[i].qualname
            credit[qualname] = credit.get(qualname, 0) + lines
    return credit


_CALLABLE = frozenset({"function", "method"})


def _discount_blank_lines(symbols: list[Symbol], own: dict[int, int],
                          ranges: list[tuple[int, int]], source: bytes) -> None:
    # Class-like containers only: a function's blank lines are part of its body, as for git -L.
    containers = {s.parent for s in symbols
                  if s.parent >= 0 and symbols[s.parent].kind not in _CALLABLE}
    lines: list[bytes] | None = None
    for i, count in own.items():
        if count <= 0 or i not in containers:
            continue
        if lines is None:
            lines = source.split(b"\n")
        sym = symbols[i]
        children = [(c.start_line, c.end_line) for c in symbols if c.parent == i]
        for a, b in ranges:
            for n in range(max(a, sym.start_line), min(b, sym.end_line) + 1):
                if n <= len(lines) and not lines[n - 1].strip() and \
                        not any(lo <= n <= hi for lo, hi in children):
                    own[i] -= 1


def hunk_ranges(hunks: list[Hunk]) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(deleted line ranges in the old blob, added line ranges in the new blob)."""
    deleted = [(o, o + n - 1) for o, n, _, _ in hunks if n > 0]
    added = [(s, s + n - 1) for _, _, s, n in hunks if n > 0]
    return sorted(deleted), sorted(added)


@dataclass
class _Side:
    """A symbol that only one side of the commit has: a candidate for pairing."""
    path: str
    symbol: Symbol
    parent: str  # the identity of its enclosing symbol, "" at top level
    lines: int
    source: bytes  # the blob the symbol was read from
    language: str
    scope: str = ""  # the file it belongs to after the commit (a renamed file's new path)
    paired: bool = False
    # The function or method it is nested in (a nested def, a lambda, an anonymous class's
    # method), when that one existed before the commit; else "".
    host: str = ""
    # Its file's side's names defined several times with other kinds (_name_kinds).
    name_kinds: dict[str, str] = field(default_factory=dict, compare=False, repr=False)
    _masked: tuple[str, ...] | None = None
    # What the commit's steps learnt of this old side's similarity to new sides (_similarity).
    _similar: dict[int, tuple[float, bool]] = field(default_factory=dict, compare=False,
                                                     repr=False)

    @property
    def text(self) -> bytes:
        return self.source[self.symbol.start_byte:self.symbol.end_byte]

    @property
    def recorded(self) -> Symbol:
        """The symbol as a change records it (_recorded)."""
        return _recorded(self.symbol, self.name_kinds)

    def masked(self) -> tuple[str, ...]:
        if self._masked is None:
            self._masked = masked(self.text, self.language, self.symbol.name)
        return self._masked


def _parents(symbols: list[Symbol]) -> list[str]:
    return [symbols[s.parent].qualname if s.parent >= 0 else "" for s in symbols]


def match_commit(files: list[FileSymbols]) -> list[SymbolChange]:
    """Every symbol change of one commit."""
    changes: list[SymbolChange] = []
    gone: list[_Side] = []
    born: list[_Side] = []
    edited: list[tuple[_Side, _Side]] = []  # callables changed in place: (before, after)
    for f in files:
        deleted_ranges, added_ranges = hunk_ranges(f.hunks)
        minus = own_lines(f.old, deleted_ranges, f.old_source)
        plus = own_lines(f.new, added_ranges, f.new_source)
        old_by_name = _first_by_qualname(f.old)
        new_by_name = _first_by_qualname(f.new)
        old_kinds, new_kinds = _name_kinds(f.old, old_by_name), _name_kinds(f.new, new_by_name)
        old_parents = dict(zip((s.qualname for s in f.old), _parents(f.old)))
        new_parents = dict(zip((s.qualname for s in f.new), _parents(f.new)))
        moved_file = f.old_path != f.new_path
        # Lines outside every hunk (and their neighbours): no definition there can be at an edge.
        edge_lo = min((h[2] for h in f.hunks), default=0) - 1
        edge_hi = max((h[2] + max(h[3], 1) for h in f.hunks), default=-1)
        old_lo = min((h[0] for h in f.hunks), default=0) - 1
        old_hi = max((h[0] + max(h[1], 1) for h in f.hunks), default=-1)
        old_places: dict[str, list[int]] | None = None
        new_places: dict[str, list[int]] = {}
        for qualname, sym in new_by_name.items():
            a, d = plus.get(qualname, 0), minus.get(qualname, 0)
            before = old_by_name.get(qualname)
            if before is None:
                host = _host(f.new, sym)
                born.append(_Side(f.new_path, sym, new_parents[qualname], a, f.new_source,
                                  f.new_language, f.new_path,
                                  host=host if host in old_by_name else "",
                                  name_kinds=new_kinds))
            elif moved_file:
                changes.append(SymbolChange(f.new_path, _recorded(sym, new_kinds), "moved", a, d,
                                            f.old_path, _recorded(before, old_kinds)))
                changes.append(SymbolChange(f.old_path, _recorded(before, old_kinds), "moved",
                                            0, d))
            elif a or d or (sym.kind in _CALLABLE
                            and (edge_lo <= sym.end_line and sym.start_line <= edge_hi
                                 or old_lo <= before.end_line and before.start_line <= old_hi)
                            and _at_an_edge(before, sym, f.hunks)):
                # Each name's parts found by an index of the file's symbols, made once: a scan
                # per changed definition was quadratic (10 files of 3,000 functions all changed
                # took `related` without a target 7.3 s, 1.9 s now).
                if old_places is None:
                    old_places, new_places = _places(f.old), _places(f.new)
                old_parts, new_parts = _texts(f.old, f.old_source, qualname, old_places), \
                    _texts(f.new, f.new_source, qualname, new_places)
                if old_parts != new_parts:
                    kind = _parts_kind(old_parts, new_parts, f.new_language)
                    changes.append(SymbolChange(f.new_path, _recorded(sym, new_kinds), kind, a, d))
                    if sym.kind in _CALLABLE and kind in ("body", "signature"):
                        edited.append((
                            _Side(f.old_path, before, old_parents[qualname], d, f.old_source,
                                  f.old_language, f.new_path, name_kinds=old_kinds),
                            _Side(f.new_path, sym, new_parents[qualname], a, f.new_source,
                                  f.new_language, f.new_path, host=_host(f.new, sym),
                                  name_kinds=new_kinds)))
        for qualname, sym in old_by_name.items():
            if qualname not in new_by_name:
                gone.append(_Side(f.old_path, sym, old_parents[qualname],
                                  minus.get(qualname, 0), f.old_source, f.old_language,
                                  f.new_path, name_kinds=old_kinds))

    extracted: list[tuple[_Side, _Side, str, float]] = []
    for old, new, kind, confidence in _pair(gone, born,
                                            lambda: extracted.extend(_extracted(edited, born))):
        changes.append(SymbolChange(new.path, new.recorded, kind, new.lines, old.lines,
                                    old.path, old.recorded, confidence))
        # The old identity's history ends with the same event (not with a deletion).
        changes.append(SymbolChange(old.path, old.recorded, kind, 0, old.lines))
    for donor, new, kind, confidence in extracted:
        # The donor's history goes on too: it is not ended here.
        changes.append(SymbolChange(new.path, new.recorded, kind, new.lines, 0, donor.path,
                                    donor.recorded, confidence))
    changes.extend(SymbolChange(s.path, s.recorded, "added", s.lines, 0)
                   for s in born if not s.paired)
    changes.extend(SymbolChange(s.path, s.recorded, "deleted", 0, s.lines)
                   for s in gone if not s.paired)
    return changes


def _name_kinds(symbols: list[Symbol], first: dict[str, Symbol]) -> dict[str, str]:
    """The names of one file version defined several times with other kinds (a Rust impl block
    above its struct), each with the name's preferred kind: a change names the first definition
    (_first_by_qualname) and records that kind (_recorded), while matching reads each
    definition's own. Empty for most files."""
    if len(first) == len(symbols):
        return {}
    kinds: dict[str, list[str]] = {}
    for sym in symbols:
        kinds.setdefault(sym.qualname, []).append(sym.kind)
    return {qualname: kind for qualname, held in kinds.items()
            if (kind := preferred_kind(held)) is not None and kind != held[0]}


def _recorded(sym: Symbol, name_kinds: dict[str, str]) -> Symbol:
    """The first definition of a name as a change records it: with the name's kind. Both sides
    of a commit can hold one Symbol object (an incremental parse shares what did not move), so
    the kinds are looked up per side, by name."""
    kind = name_kinds.get(sym.qualname)
    return replace(sym, kind=kind) if kind is not None and kind != sym.kind else sym


def _host(symbols: list[Symbol], sym: Symbol) -> str:
    """The qualified name of the innermost function or method holding `sym`, else ""."""
    while sym.parent >= 0:
        sym = symbols[sym.parent]
        if sym.kind in _CALLABLE:
            return sym.qualname
    return ""


def _at_an_edge(old: Symbol, new: Symbol, hunks: list[Hunk]) -> bool:
    """Whether a hunk touches the first or last line of a callable (or the line next to it)
    without lying inside it: its text may have changed although no credited line did (code
    deleted above it left an annotation, which now annotates it), so the texts are compared."""
    def edge(lo: int, hi: int, start: int, end: int) -> bool:
        return lo <= end + 1 and hi >= start - 1 and not (start < lo and hi < end)
    for old_start, old_lines, new_start, new_lines in hunks:
        if edge(old_start, old_start + max(old_lines, 1) - 1, old.start_line, old.end_line) or \
                edge(new_start, new_start + max(new_lines, 1) - 1, new.start_line, new.end_line):
            return True
    return False


def _places(symbols: list[Symbol]) -> dict[str, list[int]]:
    """qualified name -> the indices of its parts in `symbols` (for _texts)."""
    out: dict[str, list[int]] = {}
    for i, s in enumerate(symbols):
        out.setdefault(s.qualname, []).append(i)
    return out


def _texts(symbols: list[Symbol], source: bytes, qualname: str,
           places: dict[str, list[int]] | None = None) -> list[bytes]:
    """A definition's text: every part of its identity (an implementation and its overload
    stubs); a class's own text, without its members (their changes are theirs, and a Java class
    is most of its file: lexing all of it for a field added was most of the lexer's time). Equal
    texts although the diff touched the lines: libgit2 has no indent heuristic, so an inserted
    block can slide onto an identical line at the edge of the next definition (a `@property`
    above it) that `git diff` would leave alone; a newline added at the end of the file touches
    the last line, not the definition."""
    at = places.get(qualname, []) if places is not None else [
        i for i, s in enumerate(symbols) if s.qualname == qualname]
    return [source[symbols[i].start_byte:symbols[i].end_byte] if symbols[i].kind in _CALLABLE
            else _own_text(symbols, i, source) for i in at]


def _own_text(symbols: list[Symbol], index: int, source: bytes) -> bytes:
    """A container's text with each member cut down to a line break (a callable's inner
    definitions stay: they are part of its code)."""
    outer = symbols[index]
    pieces, at = [], outer.start_byte
    for child in sorted((s for s in symbols if s.parent == index), key=lambda s: s.start_byte):
        if child.start_byte >= at:
            pieces.append(source[at:child.start_byte])
            at = child.end_byte
    pieces.append(source[at:outer.end_byte])
    return b"\n".join(pieces)


_STRONGEST = {"reformatted": 0, "docs": 1, "body": 2, "signature": 3}


def _parts_kind(old: list[bytes], new: list[bytes], language: str) -> str:
    """The kind of change of a definition made of parts: an overload stub added or removed is a
    signature change; otherwise the strongest kind among its parts."""
    if len(old) != len(new):
        return "signature"
    kinds = [change_kind(a, b, language) for a, b in zip(old, new) if a != b]
    return max(kinds, key=_STRONGEST.__getitem__)


def merge_changes(path: str, new: list[Symbol], new_source: bytes, language: str,
                  parents: list[tuple[list[Symbol], bytes]],
                  own: list[tuple[int, int]]) -> list[SymbolChange]:
    """What a merge wrote itself in one file: the definitions holding lines that are in no
    parent's version (`own`: sorted, disjoint, inclusive ranges of the merge's lines), as git
    blame credits such lines to the merge (a conflict's resolution, an evil merge). A definition
    that no parent has is added; otherwise its kind of change is against the first parent that
    has it (`parents`, in order: each one's symbols and text). The lines it removed are in no
    version of the merge, so none are counted."""
    changes = []
    first = _first_by_qualname(new)
    name_kinds = _name_kinds(new, first)
    places = _places(new)
    for qualname, count in own_lines(new, own, new_source).items():
        sym = _recorded(first[qualname], name_kinds)
        texts = _texts(new, new_source, qualname, places)
        before = next(((symbols, source) for symbols, source in parents
                       if any(s.qualname == qualname for s in symbols)), None)
        if before is None:
            changes.append(SymbolChange(path, sym, "added", count, 0))
            continue
        old_texts = _texts(before[0], before[1], qualname)
        if old_texts != texts:
            changes.append(SymbolChange(path, sym, _parts_kind(old_texts, texts, language),
                                        count, 0))
    return changes


def _first_by_qualname(symbols: list[Symbol]) -> dict[str, Symbol]:
    """Parts of one identity (an implementation and its overload stubs): keep the first."""
    out: dict[str, Symbol] = {}
    for sym in symbols:
        out.setdefault(sym.qualname, sym)
    return out


SIMILAR = 0.6                 # step 5: renamed with edits, within a scope
MOVED_SIMILAR = 0.5           # steps 6, 8: the same name elsewhere, or made plural or private
RENAMED_MOVED_SIMILAR = 0.8   # step 6: another name and another scope: only near copies
MAX_CANDIDATES = 2_500        # a matching compares at most this many pairs (gone x born)


def _pair(gone: list[_Side], born: list[_Side],
          extract: Callable[[], None]) -> list[tuple[_Side, _Side, str, float]]:
    """Steps 1 to 8 (the module's docstring); `extract` is step 7, run before step 8 so that
    a near copy that an extraction takes is not first paired with a near name."""
    pairs: list[tuple[_Side, _Side, str, float]] = []
    if not gone or not born:
        # Nothing to pair (a file added or deleted whole): spare the fingerprints of every
        # definition, 3 s for a 10 MB file's 100k (bench/bench_large_files.py).
        extract()
        return pairs
    gone_at = {(s.path, s.symbol.qualname): s for s in gone}
    born_at = {(s.path, s.symbol.qualname): s for s in born}
    gone_children: dict[tuple[str, str], list[_Side]] = {}
    for s in gone:
        gone_children.setdefault((s.path, s.parent), []).append(s)

    def link(old: _Side, new: _Side, confidence: float = 1.0) -> None:
        old.paired = new.paired = True
        pairs.append((old, new, _kind(old, new), confidence))
        follow(old, new)

    def follow(old: _Side, new: _Side) -> None:
        """Children follow their parent, a parent its child, recursively."""
        for child in gone_children.get((old.path, old.symbol.qualname), ()):
            suffix = child.symbol.qualname[len(old.symbol.qualname):]
            twin = born_at.get((new.path, new.symbol.qualname + suffix))
            if not child.paired and twin is not None and not twin.paired:
                link(child, twin)
        if old.parent and new.parent and old.parent != new.parent:
            po = gone_at.get((old.path, old.parent))
            pn = born_at.get((new.path, new.parent))
            if po is not None and pn is not None and not po.paired and not pn.paired:
                link(po, pn)

    # 1. Unique body fingerprints (2. follows each pair through `link`).
    # A pair made by following an earlier one may take a candidate of the lists below.
    for old, new in _unique_keys(gone, born, lambda s: body_hash(s.symbol, s.source) or None):
        if not old.paired and not new.paired:
            link(old, new)
    # 3. The same identity in another file.
    for old, new in _unique_keys(gone, born, lambda s: s.symbol.qualname):
        if old.path != new.path and not old.paired and not new.paired:
            link(old, new)
    # 4. The same simple name in the same scope (the parent as renamed by an earlier pair).
    renamed = {(o.path, o.symbol.qualname): n.symbol.qualname for o, n, _, _ in pairs}

    def scope(s: _Side) -> tuple[str, str]:
        return s.scope, renamed.get((s.path, s.parent), s.parent)

    for old, new in _unique_keys(gone, born, lambda s: (*scope(s), s.symbol.name)):
        if not old.paired and not new.paired:
            link(old, new, 1.0 if old.masked() == new.masked() else
                 token_similarity(old.masked(), new.masked()))
    # 5. Within a scope and kind, the best matching above SIMILAR.
    groups: dict[tuple, tuple[list[_Side], list[_Side]]] = {}
    for s in gone:
        if not s.paired:
            groups.setdefault((*scope(s), s.symbol.kind), ([], []))[0].append(s)
    for s in born:
        if not s.paired:
            groups.setdefault((*scope(s), s.symbol.kind), ([], []))[1].append(s)
    for olds, news in groups.values():
        # A rewrite of a whole large class is beyond a matching: its rest stays added/deleted.
        if olds and news and len(olds) * len(news) <= MAX_CANDIDATES:
            _match(olds, news, SIMILAR, link)
    # 6. Across scopes: the same simple name (a matching per name), then near copies.
    by_name: dict[str, tuple[list[_Side], list[_Side]]] = {}
    for s in gone:
        if not s.paired:
            by_name.setdefault(s.symbol.name, ([], []))[0].append(s)
    for s in born:
        if not s.paired:
            by_name.setdefault(s.symbol.name, ([], []))[1].append(s)
    for name in sorted(by_name):
        olds, news = by_name[name]
        if olds and news and len(olds) * len(news) <= MAX_CANDIDATES:
            _match(olds, news, MOVED_SIMILAR, link)
    olds = [s for s in gone if not s.paired and s.symbol.kind in _CALLABLE]
    news = [s for s in born if not s.paired and s.symbol.kind in _CALLABLE]
    if olds and news and len(olds) * len(news) <= MAX_CANDIDATES:
        _match(olds, news, RENAMED_MOVED_SIMILAR, link)
    extract()   # 7.
    # 8. Within a scope again, what is left: one name made plural or private (execute_command
    # -> execute_commands, its body wrapped in a loop: 0.539), at the threshold of the same
    # name in another scope. Last, so that no near copy elsewhere (nor an extraction's) loses
    # its pair to it. Only pairs of near names are compared: a sweep making a hundred functions
    # private is a hundred comparisons, not ten thousand.
    for olds, news in groups.values():
        near = _near_pairs([o for o in olds if not o.paired], [n for n in news if not n.paired])
        if len(near) <= MAX_CANDIDATES:
            _match_pairs(near, MOVED_SIMILAR, link)
    return pairs


# A new definition that holds this much of an edited one's old code, and more of it by
# EXTRACT_MARGIN than the edited one kept. Chosen on CodeShovel's allowed oracles, which follow
# commons-lang's isNumber -> isCreatable (0.951 of the code; the wrapper kept 0.041) and
# random(.., char[]) -> random(.., char[], Random) (0.985; 0.239 kept), and do not follow
# asciinema's play -> _play (0.874; 0.438 kept) or commons-lang's reflectionEquals ->
# reflectionAppend(Object, Object) (0.619; 0.292 kept).
EXTRACT_SIMILAR = 0.9
EXTRACT_MARGIN = 0.15
# Or a near copy (RENAMED_MOVED_SIMILAR) of the old code when the edited one became a wrapper:
# kept at most WRAPPER_KEPT of it and shrank to half its tokens or less. A function renamed
# while a new, small one took its old name (fd's main -> run, 0.878 of the code, the new main
# keeping under 0.2; cobra's GenMarkdownTree -> GenMarkdownTreeCustom, 0.846, 0.272 kept).
# play -> _play kept 0.438: not a wrapper; nor is werkzeug's one-line Rule.__str__, which grew
# (the new DuplicateRuleError.__str__, also one line, held 0.828 of it).
WRAPPER_KEPT = 0.3


def _extracted(edited: list[tuple[_Side, _Side]],
               born: list[_Side]) -> list[tuple[_Side, _Side, str, float]]:
    """New callables that took most of the code of a callable edited in the same commit, which
    kept less of it: the body moved into a new method and the old one became a wrapper
    (`isNumber` -> `isCreatable`, an overload gaining a parameter). The new one continues the
    old one's lineage; the old one keeps its own."""
    news = [s for s in born if not s.paired and s.symbol.kind in _CALLABLE
            and not _constructor(s)]
    edited = [(b, a) for b, a in edited if not _constructor(b)]
    if not edited or not news or len(edited) * len(news) > MAX_CANDIDATES:
        return []
    scored = []
    for before, after in edited:
        size = len(before.masked())
        # Only one that shrank to half its size or less can be a wrapper (asked first: it is
        # free, and a lower threshold compares more candidates).
        shrank = 2 * len(after.masked()) <= size
        # A ratio of at least `least` needs lengths that close: a cheap filter first.
        least = RENAMED_MOVED_SIMILAR if shrank else EXTRACT_SIMILAR
        # Code moved into a definition nested in a function that was already there is that
        # function's business (mockito's test whose assertions went into an anonymous class
        # inside it; twin methods of two files, each wrapping its code so, were taken for each
        # other's extractions), unless the edited one is nested there too (scrapy's _onsuccess
        # -> _onsuccess_per_item, two helpers of one function).
        close = [n for n in news  # difflib's ratio is at most 2 min / (sum) of the lengths
                 if 2 * min(size, len(n.masked())) >= least * (size + len(n.masked()))
                 and (not n.host or (n.path, n.host) == (after.path, after.host))]
        if not close:
            continue
        kept = None  # how much of its code the edited callable kept: only asked when needed
        for n in close:
            similarity = token_similarity(before.masked(), n.masked(), least)
            if similarity < least:
                continue
            if kept is None:
                kept = token_similarity(before.masked(), after.masked())
            wrapper = shrank and kept <= WRAPPER_KEPT
            if similarity >= (RENAMED_MOVED_SIMILAR if wrapper else EXTRACT_SIMILAR) and \
                    similarity >= kept + EXTRACT_MARGIN:
                scored.append((-similarity, before.path, before.symbol.qualname, n.path,
                               n.symbol.qualname, before, n))
    out = []
    used: set[int] = set()
    for negative, *_, before, n in sorted(scored, key=lambda t: t[:5]):
        if n.paired or id(before) in used:
            continue
        n.paired = True
        used.add(id(before))
        out.append((before, n, _kind(before, n), -negative))
    return out


def _constructor(side: _Side) -> bool:
    """A Java or C++ constructor (named as its class): its code is initialisation, and moving it
    into a method makes a new method (junit4's Parameterized -> RunnersFactory.createRunners)."""
    return bool(side.parent) and \
        structural_name(side.parent).rpartition(".")[2] == side.symbol.name


def _match(olds: list[_Side], news: list[_Side], threshold: float, link) -> None:
    """Pairs the most similar candidates first (a greedy matching), each at most once."""
    _match_pairs([(o, n) for o in olds for n in news], threshold, link)


def _match_pairs(candidates: list[tuple[_Side, _Side]], threshold: float, link) -> None:
    scored = []
    for o, n in candidates:
        similarity = _similarity(o, n, threshold)
        if similarity >= threshold:
            scored.append((-similarity, o.path, o.symbol.qualname, n.path, n.symbol.qualname,
                           o, n))
    for negative, *_, o, n in sorted(scored, key=lambda t: t[:5]):
        if not o.paired and not n.paired:
            link(o, n, -negative)


NEAR_NAME = 4  # the shorter name's least length, leading underscores left out
NEAR_TAIL = 2  # what one name may add to the other's end: a plural, a digit


def _stem(name: str) -> str:
    """A name without leading underscores and with its first letter lowered: private or public
    in Python, unexported or exported in Go."""
    name = name.lstrip("_")
    return name[:1].lower() + name[1:]


def _near(a: str, b: str) -> bool:
    """Whether two stems are one name, made plural or singular or given a digit: one is the
    other with at most NEAR_TAIL more letters at its end, or `entry` and `entries`."""
    short, long = sorted((a, b), key=len)
    if len(short) < NEAR_NAME:
        return False
    return long.startswith(short) and len(long) - len(short) <= NEAR_TAIL or \
        short.endswith("y") and long == short[:-1] + "ies"


def _near_pairs(olds: list[_Side], news: list[_Side]) -> list[tuple[_Side, _Side]]:
    """The pairs whose simple names are one name, made private or public, plural or singular
    (_stem, _near): `execute_command` and `execute_commands`, `_load` and `load`, Go's
    `RunCommand` and `runCommand`, `run_entry` and `run_entries`. Wider rules paired noise:
    requests' one-line `_lower_keys` with the new `_clear_lower_keys` (0.571). Found through
    each name's stem less up to three letters, not by trying every pair."""
    def keys(stem: str) -> set[str]:
        return {stem[:len(stem) - k] for k in range(NEAR_TAIL + 2) if len(stem) - k > 0}

    by_key: dict[str, list[tuple[str, _Side]]] = {}
    for n in news:
        stem = _stem(n.symbol.name)
        for key in keys(stem):
            by_key.setdefault(key, []).append((stem, n))
    pairs: dict[tuple[int, int], tuple[_Side, _Side]] = {}
    for o in olds:
        stem = _stem(o.symbol.name)
        for key in keys(stem):
            for theirs, n in by_key.get(key, ()):
                if _near(stem, theirs):
                    pairs.setdefault((id(o), id(n)), (o, n))
    return list(pairs.values())


def _similarity(old: _Side, new: _Side, at_least: float) -> float:
    """token_similarity of an old and a new candidate, remembered for the commit: steps 5 and 6
    can ask of one pair twice, at two thresholds (sympy's largest generated tests took difflib
    5 s a pair). A value under `at_least` is known only to be under it (the similarity stops
    at the first bound that shows it), so a higher threshold is answered from it, a lower one
    asks again."""
    known = old._similar.get(id(new))
    if known is not None:
        value, exact = known
        if exact:
            return value
        if at_least >= value:
            return 0.0
    value = token_similarity(old.masked(), new.masked(), at_least)
    old._similar[id(new)] = (value, True) if value >= at_least or at_least <= 0.0 \
        else (at_least, False)
    return value


def _kind(old: _Side, new: _Side) -> str:
    if old.path != new.path:
        return "moved"
    if old.symbol.name != new.symbol.name:
        return "renamed"
    unchanged = old.masked() == new.masked()
    if old.symbol.structural_name == new.symbol.structural_name and not unchanged:
        return "signature"
    return "rescoped" if unchanged else "renamed"


def _unique_keys(gone: list[_Side], born: list[_Side], key):
    """Pairs of unpaired candidates whose key occurs exactly once on each side."""
    def index(sides):
        seen: dict = {}
        for s in sides:
            k = key(s)
            if k is not None and not s.paired:
                seen.setdefault(k, []).append(s)
        return {k: v[0] for k, v in seen.items() if len(v) == 1}
    olds, news = index(gone), index(born)
    return [(olds[k], news[k]) for k in sorted(olds.keys() & news.keys())]
