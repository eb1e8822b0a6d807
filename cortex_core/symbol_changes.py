"""From one commit's hunks and the symbols of each file's old and new blob to symbol changes.

Pure functions: no git, no SQL. Lines are credited to the innermost symbol that contains them
(a method, not its class), deleted lines on the old blob's symbols and added lines on the new
blob's. Then symbols that disappeared are paired with symbols that appeared in the same commit, so
that a rename or a move continues one history instead of ending one and starting another:

1. the same body fingerprint (text with the symbol's own name masked), unique on both sides;
   computed here, for these candidates only, from the blobs' text;
2. children of a pair follow their parent (class `Old` renamed to `New`: `Old.m` -> `New.m`),
   and a parent follows its children when both sides are otherwise unpaired;
3. the same qualified name in another file, unique on both sides (a move with edits);
4. within one scope (file and parent), the only definition of a kind that disappeared and the
   only one that appeared, when at least 60% of their lines match (a rename with edits);
5. a file rename carries every symbol whose qualified name survives.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from difflib import SequenceMatcher

from .symbols import Symbol, body_hash

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


@dataclass(frozen=True)
class SymbolChange:
    path: str
    symbol: Symbol
    change: str  # added | modified | deleted | renamed | moved
    added: int
    deleted: int
    from_path: str | None = None
    from_symbol: Symbol | None = None


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
    lines: int
    source: bytes  # the blob the symbol was read from
    scope: str = ""  # the file it belongs to after the commit (a renamed file's new path)
    paired: bool = False


def match_commit(files: list[FileSymbols]) -> list[SymbolChange]:
    """Every symbol change of one commit."""
    changes: list[SymbolChange] = []
    gone: list[_Side] = []
    born: list[_Side] = []
    for f in files:
        deleted_ranges, added_ranges = hunk_ranges(f.hunks)
        minus = own_lines(f.old, deleted_ranges, f.old_source)
        plus = own_lines(f.new, added_ranges, f.new_source)
        old_by_name = _first_by_qualname(f.old)
        new_by_name = _first_by_qualname(f.new)
        moved_file = f.old_path != f.new_path
        for qualname, sym in new_by_name.items():
            a, d = plus.get(qualname, 0), minus.get(qualname, 0)
            before = old_by_name.get(qualname)
            if before is None:
                born.append(_Side(f.new_path, sym, a, f.new_source, f.new_path))
            elif moved_file:
                changes.append(SymbolChange(f.new_path, sym, "moved", a, d,
                                            f.old_path, before))
                changes.append(SymbolChange(f.old_path, before, "moved", 0, d))
            elif (a or d) and not _same_text(f, qualname):
                changes.append(SymbolChange(f.new_path, sym, "modified", a, d))
        for qualname, sym in old_by_name.items():
            if qualname not in new_by_name:
                gone.append(_Side(f.old_path, sym, minus.get(qualname, 0), f.old_source,
                                  f.new_path))

    pairs = _pair(gone, born)
    for old, new in pairs:
        change = "renamed" if old.path == new.path else "moved"
        changes.append(SymbolChange(new.path, new.symbol, change, new.lines, old.lines,
                                    old.path, old.symbol))
        # The old identity's history ends with the same event (not with a deletion).
        changes.append(SymbolChange(old.path, old.symbol, change, 0, old.lines))
    changes.extend(SymbolChange(s.path, s.symbol, "added", s.lines, 0)
                   for s in born if not s.paired)
    changes.extend(SymbolChange(s.path, s.symbol, "deleted", 0, s.lines)
                   for s in gone if not s.paired)
    return changes


def _same_text(f: FileSymbols, qualname: str) -> bool:
    """Whether a definition's text (every occurrence of its name: a getter and its setter) is
    unchanged although the diff touched its lines: libgit2 has no indent heuristic, so an
    inserted block can slide onto an identical line at the edge of the next definition (a
    `@property` above it) that `git diff` would leave alone; a newline added at the end of the
    file touches the last line, not the definition."""
    def texts(symbols: list[Symbol], source: bytes) -> list[bytes]:
        return [source[s.start_byte:s.end_byte] for s in symbols if s.qualname == qualname]
    return texts(f.old, f.old_source) == texts(f.new, f.new_source)


def _first_by_qualname(symbols: list[Symbol]) -> dict[str, Symbol]:
    """Duplicates (overloads, property setters) share one identity: keep the first."""
    out: dict[str, Symbol] = {}
    for sym in symbols:
        out.setdefault(sym.qualname, sym)
    return out


def _pair(gone: list[_Side], born: list[_Side]) -> list[tuple[_Side, _Side]]:
    pairs: list[tuple[_Side, _Side]] = []
    gone_at = {(s.path, s.symbol.qualname): s for s in gone}
    born_at = {(s.path, s.symbol.qualname): s for s in born}
    gone_children: dict[tuple[str, str], list[_Side]] = {}
    for s in gone:
        gone_children.setdefault((s.path, _parent_name(s.symbol.qualname)), []).append(s)

    def link(old: _Side, new: _Side) -> None:
        old.paired = new.paired = True
        pairs.append((old, new))
        follow(old, new)

    def follow(old: _Side, new: _Side) -> None:
        """Children follow their parent, a parent its child, recursively."""
        for child in gone_children.get((old.path, old.symbol.qualname), ()):
            suffix = child.symbol.qualname[len(old.symbol.qualname):]
            twin = born_at.get((new.path, new.symbol.qualname + suffix))
            if not child.paired and twin is not None and not twin.paired:
                link(child, twin)
        old_parent = _parent_name(old.symbol.qualname)
        new_parent = _parent_name(new.symbol.qualname)
        if old_parent and new_parent and old_parent != new_parent:
            po = gone_at.get((old.path, old_parent))
            pn = born_at.get((new.path, new_parent))
            if po is not None and pn is not None and not po.paired and not pn.paired:
                link(po, pn)

    # 1. Unique body fingerprints (2. follows each pair through `link`).
    # A pair made by following an earlier one may take a candidate of the lists below.
    for old, new in _unique_keys(gone, born, lambda s: body_hash(s.symbol, s.source) or None):
        if not old.paired and not new.paired:
            link(old, new)
    # 3. The same qualified name in another file.
    for old, new in _unique_keys(gone, born, lambda s: s.symbol.qualname):
        if old.path != new.path and not old.paired and not new.paired:
            link(old, new)
    # 4. Renamed with edits: the only definition of its kind that disappeared from a scope and
    #    the only one that appeared there, with mostly the same lines.
    renamed = {(o.path, o.symbol.qualname): n.symbol.qualname for o, n in pairs}
    for old, new in _unique_keys(gone, born, lambda s: (
            s.scope, s.symbol.kind, renamed.get((s.path, _parent_name(s.symbol.qualname)),
                                                _parent_name(s.symbol.qualname)))):
        if not old.paired and not new.paired and _similar(old, new):
            link(old, new)
    return pairs


SIMILAR = 0.6  # share of lines two versions of a renamed definition must have in common


def _similar(old: _Side, new: _Side) -> bool:
    a = _lines(old)
    b = _lines(new)
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    return matcher.real_quick_ratio() >= SIMILAR and matcher.ratio() >= SIMILAR


def _lines(side: _Side) -> list[bytes]:
    """A definition's lines without indentation, its own name masked, blank lines dropped."""
    text = side.source[side.symbol.start_byte:side.symbol.end_byte]
    name = side.symbol.name.encode("utf-8", "replace")
    return [line.strip().replace(name, b"\0") for line in text.split(b"\n") if line.strip()]


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


def _parent_name(qualname: str) -> str:
    return qualname.rpartition(".")[0]
