"""What a query is about: `PATH`, `PATH::SYMBOL` or `PATH:LINE`, resolved against the index."""

from __future__ import annotations

import re
from dataclasses import dataclass

import apsw

from cortex_core.errors import Ambiguous, CortexError, Hint, NotFound
from cortex_core.lang.qualnames import structural_name

TYPE_CHECKING = False   # typing itself costs `cortex history` its start (bench/bench_start.py)
if TYPE_CHECKING:
    from typing import NoReturn

_LINE = re.compile(r"^(?P<path>.+):(?P<line>\d+)$")
# PHP's `->` separates, but not in C++'s `operator->` and `operator->*`, which are names.
_ARROW_SEPARATOR = re.compile(r"(?<!operator)->")
_HASH_SEPARATOR = re.compile(r"(?<=[\w$])#")
# Go's method expression, as gopls, pprof and stack traces print a method: `(*Executor).Become`,
# `(List[T]).Push`, after a package (`util.`, `example.com/m/util.`) in a trace.
_GO_RECEIVER = re.compile(r"^(?:[\w./-]*\.)?\(\*?(\w+)(?:\[[^\]]*\])?\)\.(?=\w)")
# A Go generic type's parameters before its method: `List[T].Push`, `Pair[K, V].Key`.
_TYPE_PARAMETERS = re.compile(r"\[[\w\s,.*\[\]]*?\](?=\.\w)")


@dataclass(frozen=True)
class TargetSpec:
    """A parsed target, not yet looked up."""
    path: str
    symbol: str | None = None
    line: int | None = None

    @property
    def label(self) -> str:
        """The target as it is written: PATH::SYMBOL, PATH:LINE or PATH."""
        if self.symbol:
            return f"{self.path}::{self.symbol}"
        return f"{self.path}:{self.line}" if self.line else self.path


@dataclass(frozen=True)
class Target:
    """A resolved target: a file, or a symbol in it."""
    file_id: int
    path: str
    symbol_id: int | None = None
    qualname: str | None = None
    kind: str | None = None
    alive: bool = True
    start_line: int | None = None
    end_line: int | None = None

    @property
    def label(self) -> str:
        return f"{self.path}::{self.qualname}" if self.qualname else self.path


def parse_target(text: str) -> TargetSpec:
    """`PATH::SYMBOL` (SYMBOL may be an identity with a parameter list, `Foo.bar(int, String)`),
    `PATH:LINE`, or `PATH`."""
    text = text.strip()
    if not text:
        raise CortexError("empty target: give PATH, PATH::SYMBOL or PATH:LINE")
    if "::" in text:
        path, _, symbol = text.partition("::")
        if not path or not symbol.strip():
            raise CortexError(f"bad target {quoted(text)}: expected PATH::SYMBOL")
        # Accept the separators other tools print: `Class::method`, `Class#method`, PHP's
        # `Class->method` (its stack traces).
        symbol = _GO_RECEIVER.sub(r"\1.", symbol.strip())
        # Outside a tag (a C++ parameter list keeps its `::`).
        cut = min((i for i in (symbol.find("("), symbol.find("[")) if i >= 0), default=len(symbol))
        # A `#` after a name separates; any other is part of the name: a JavaScript private
        # member, `Ky.#retry` or a bare `#retry`, is named with its `#`.
        name = _HASH_SEPARATOR.sub(".", _ARROW_SEPARATOR.sub(".", symbol[:cut].replace("::", ".")))
        # A PHP namespace (`League\Csv\Reader.getHeader`, `\Foo`): namespaces do not qualify
        # PHP names (lang/symbols.py), and no language's qualified name holds a backslash.
        name = name.rsplit("\\", 1)[-1]
        if not name:
            raise CortexError(f"bad target {quoted(text)}: expected PATH::SYMBOL")
        return TargetSpec(path, name + symbol[cut:])
    match = _LINE.match(text)
    if match:
        line = int(match.group("line")) if len(match.group("line")) <= 9 else 10**9
        if line < 1 or line >= 10**9:
            raise CortexError(f"bad line number in {quoted(text[:200])}: lines start at 1"
                              " and stop before 1,000,000,000")
        return TargetSpec(match.group("path"), line=line)
    return TargetSpec(text)


def resolve(con: apsw.Connection, spec: TargetSpec) -> Target:
    file_id = _file_id(con, spec.path)
    if spec.symbol is not None:
        return _resolve_symbol(con, file_id, spec.path, spec.symbol)
    if spec.line is not None:
        row = con.execute(
            "select s.id, s.qualname, s.kind, sp.start_line, sp.end_line from symbol_spans sp"
            " join symbols s on s.id = sp.symbol_id where s.file_id = ? and s.alive = 1"
            " and sp.start_line <= ? and sp.end_line >= ?"
            " order by sp.end_line - sp.start_line, sp.start_line desc limit 1",
            (file_id, spec.line, spec.line)).fetchone()
        if row is not None:
            return Target(file_id, spec.path, row[0], row[1], row[2], True, row[3], row[4])
    return Target(file_id, spec.path)


def no_symbol_at(con: apsw.Connection, target: Target, line: int) -> str:
    """Why `PATH:LINE` gave the file: no symbol encloses the line at HEAD (the line may be past
    the file's end: the store keeps no line counts), or the file is not at HEAD at all."""
    from cortex_core.store.store import get_meta
    if get_meta(con, "head") is None:   # HEAD's files and spans are not known yet
        return f"no symbol is known to enclose line {line}: no index run has reached HEAD"
    if con.execute("select 1 from head_files where file_id = ?",
                   (target.file_id,)).fetchone() is None:
        return (f"{target.path} is not at the indexed HEAD (deleted or renamed away), so line "
                f"{line} names no code there")
    return f"no symbol encloses line {line} at HEAD"


def find(con: apsw.Connection, path: str, qualname: str | None = None) -> Target | None:
    """The file, or its symbol by exact qualified name; None when not indexed. No suggestions:
    for editors asking on every hover, where a miss (a new file, a new function) is common."""
    row = con.execute("select id from files where path = ?", (path,)).fetchone()
    if row is None:
        return None
    if qualname is None:
        return Target(row[0], path)
    sym = con.execute(
        "select s.id, s.kind, s.alive, min(sp.start_line), max(sp.end_line) from symbols s"
        " left join symbol_spans sp on sp.symbol_id = s.id where s.file_id = ? and s.qualname = ?"
        " group by s.id", (row[0], qualname)).fetchone()
    if sym is None:
        return None
    return Target(row[0], path, sym[0], qualname, sym[1], bool(sym[2]), sym[3], sym[4])


def _file_id(con: apsw.Connection, path: str) -> int:
    row = con.execute("select id from files where path = ?", (path,)).fetchone()
    if row is not None:
        return row[0]
    import difflib  # only to suggest names after a miss
    paths = [p for (p,) in con.execute("select path from files")]
    base = path.rsplit("/", 1)[-1]
    close = [p for p in paths if p.rsplit("/", 1)[-1] == base][:5] or \
        difflib.get_close_matches(path, paths, n=5, cutoff=0.6)
    hint = f"; did you mean: {', '.join(_shown(p) for p in close)}" if close else ""
    _not_found(con, f"no file {quoted(path)} in the index{hint}")


def _not_found(con: apsw.Connection, message: str) -> NoReturn:
    """Raise NotFound; while the index's first run has not reached HEAD, saying so, since what
    is missing may be what it has not read yet."""
    from cortex_core.store.store import history_until
    until = history_until(con)
    if until is None:
        raise NotFound(message)
    from cortex_core.dates import reach
    raise NotFound(f"{message} ({reach(None, until)}: no index run has reached HEAD)",
                   Hint("continue"))


def quoted(text: str) -> str:
    """The user's text as written, quoted (sanitize.quoted; imported only for a message)."""
    from cortex_core.text import sanitize
    return sanitize.quoted(text)


def _shown(name: str) -> str:
    """A suggested name in a one-line message: quoted, escapes and all, when it holds a line
    break or another character a terminal would not show."""
    from cortex_core.text.sanitize import terminal
    return name if terminal(name) == name else repr(name)


def _pick(rows: list, name: str, path: str):
    """The row `name` names: the identity as written (spaces in a parameter list aside), else a
    name without tags (`Class.visit` for `Class.visit(int)`) or a short suffix of one, when one
    symbol alive at HEAD answers to it. Several: Ambiguous, listing them."""
    exact = [r for r in rows if r[1] == name]
    if exact:
        if not exact[0][3]:
            # Gone at HEAD, where one symbol alive answers to the name without its tags: the
            # same definition renamed by them (a C header read as C++ from a commit on:
            # `get` became `get(struct value*)`), whose history holds the gone one's.
            alive = [r for r in rows if r[3] and structural_name(r[1]) == name]
            if len(alive) == 1:
                return alive[0]
        return exact[0]
    squeezed = name.replace(" ", "")
    exact = [r for r in rows if r[1].replace(" ", "") == squeezed]
    if exact:
        return exact[0]
    alive = [r for r in rows if r[3]]
    for matches in ([r for r in alive if structural_name(r[1]) == name],
                    [r for r in alive if r[1].endswith("." + name)
                     or structural_name(r[1]).endswith("." + name)]):
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            listed = [f"{r[1]} (line {r[4]})" if r[4] else r[1] for r in matches]
            shown = "; ".join(listed[:12]) + (f"; and {len(listed) - 12} more"
                                               if len(listed) > 12 else "")
            raise Ambiguous(f"{path}::{name} names {len(matches)} symbols: {shown}. Name one "
                            f"(PATH::{matches[0][1]}) or point at it with PATH:LINE",
                            [r[1] for r in matches])
    return None


def _answers_to(qualname: str, name: str) -> bool:
    """Whether `name` names the symbol `qualname` as `_pick` reads it, ambiguity aside."""
    structural = structural_name(qualname)
    return (qualname.replace(" ", "") == name.replace(" ", "") or structural == name
            or qualname.endswith("." + name) or structural.endswith("." + name))


def _resolve_symbol(con: apsw.Connection, file_id: int, path: str, name: str) -> Target:
    rows = con.execute(
        "select s.id, s.qualname, s.kind, s.alive, min(sp.start_line), max(sp.end_line)"
        " from symbols s left join symbol_spans sp on sp.symbol_id = s.id"
        " where s.file_id = ? group by s.id order by s.alive desc, s.qualname",
        (file_id,)).fetchall()
    found = _pick(rows, name, path)
    if found is None and (go := _TYPE_PARAMETERS.sub("", name)) != name:
        # No identity has tags before a member (`f[2].inner` would have matched above): a Go
        # generic type's parameters, which its methods' names leave out.
        found = _pick(rows, go, path)
    if found is not None:
        sid, qualname, kind, alive, start, end = found
        return Target(file_id, path, sid, qualname, kind, bool(alive), start, end)
    suffix = [r for r in rows if r[3] and r[1].endswith("." + name)]
    import difflib
    names = [r[1] for r in rows]
    # The name in another case first (`getheader` for `getHeader`: PHP's names, and SQL's, are
    # not case-sensitive, and difflib's ratio counts each changed letter against them).
    lower = name.lower()
    cased = [q for q in names if q.lower() == lower or q.lower().endswith("." + lower)]
    close = [r[1] for r in suffix][:5] or (cased + [
        q for q in difflib.get_close_matches(name, names, n=5, cutoff=0.5) if q not in cased])[:5]
    # A declaration is no symbol (a prototype, a C++ method declared in its class): its
    # definition is in another file, under the name `_pick` would read there (`Shape.area` is
    # source.cpp's `geo.Shape.area() const`).
    last = structural_name(name).rsplit(".", 1)[-1]
    elsewhere = [f"{p}::{q}" for p, q in con.execute(
        "select f.path, s.qualname from symbols s join files f on f.id = s.file_id"
        " where s.name = ? and s.alive = 1 and s.file_id != ? order by f.path, s.qualname",
        (last, file_id)) if _answers_to(q, name)][:3]
    hints = [f"{path}::{q}" for q in close] + elsewhere
    hint = f"; did you mean: {', '.join(_shown(h) for h in hints)}" if hints else ""
    level = file_level_reason(con, file_id)
    if level is not None:  # the reason, rather than guesses among symbols it never had
        hint = f": the file is recorded at file level only, {level}"
    elif con.execute("select 1 from defs d join struct_files s on s.file_id = d.file_id"
                     " where d.file_id = ? and s.worktree = 1 and d.qualname = ?",
                     (file_id, name)).fetchone():
        # The structure pass read the working tree's version, which defines it.
        hint = (": the working tree's version of the file defines it, but no commit has it"
                " yet, so it has no history (it will once committed and indexed)")
    _not_found(con, f"no symbol {quoted(name)} in {path}{hint}")


def file_level_reason(con: apsw.Connection, file_id: int) -> str | None:
    """Why a file of the indexed HEAD has no symbols, explained (limit and setting), if so."""
    from cortex_core.index.skip_rules import explain, indexed_limits
    row = con.execute("select skip_reason from head_files where file_id = ?", (file_id,)).fetchone()
    return explain(row[0], indexed_limits(con)) if row and row[0] else None
