"""What bench_history.py knows of a sampled function: the language (git's diff driver, funcname
lines, tree-sitter grammar), the function (Func), one side of a commit (Side) and the lines of a
blob around a definition.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import _benchlib as bl
import _linelog as ll

# Above this difflib ratio, a definition that disappears where the function appears is taken
# for the function under its old name (cortex-unlinked-rename); below, for another one.
RENAME_SIMILARITY = 0.5
# A rename/move link cortex follows whose two definitions are less alike than this is reported.
WEAK_LINK = 0.5


@dataclass(frozen=True)
class Lang:
    """What the script needs to know of a language: cortex's and tree-sitter's name, the files,
    git's diff driver and its funcname lines, the -L regex of a symbol, which lines are comments
    and decorators, and the name a funcname line defines (to tell whether it still exists)."""
    name: str
    suffix: str
    driver: str
    funcname: re.Pattern[str]
    regex: object  # (qualname, name, kind) -> (POSIX BRE, Python pattern)
    key: object  # funcname line -> the name it defines, or None
    comments: tuple[str, ...]
    decorator: str | None
    unique_names: bool  # skip functions whose simple name is not unique in the file

    @property
    def attributes(self) -> str:
        return f"*{self.suffix} diff={self.driver}"

    def defines(self, data: bytes, key: str) -> bool:
        """Whether a blob has a funcname line defining `key`."""
        if self.name == "python":
            return bool(re.search(rb"^[ \t]*(async[ \t]+)?(def|class)[ \t]+"
                                  + re.escape(key.encode()) + rb"\b", data, re.M))
        return any(self.funcname.match(l) and self.key(l) == key
                   for l in data.decode("utf-8", "replace").split("\n"))


LANGS = {
    "python": Lang("python", ".py", "python", ll.PY_FUNCNAME,
                   lambda q, n, k: ll.git_regex(n, "class" if k == "class" else "function"),
                   ll.python_def_name, ("#",), "@", True),
    "go": Lang("go", ".go", "golang", ll.GO_FUNCNAME, ll.go_regex, ll.go_def_name, ("//", "/*"),
               None, False),
}


@dataclass
class Func:
    symbol_id: int
    path: str
    qualname: str
    name: str
    kind: str
    start: int
    end: int
    bre: str
    # measurements
    git_seconds: float = 0.0
    cli_seconds: float = 0.0
    inproc_seconds: float = 0.0
    git_shas: list[str] = field(default_factory=list)
    cortex_shas: list[str] = field(default_factory=list)
    cortex_entries: dict[str, dict] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.path}::{self.qualname}"


@dataclass
class Side:
    """The function in one version of its file (one side of a commit)."""
    path: str
    qualname: str
    lines: list[str] | None  # the blob's lines, None when the file does not exist
    span: tuple[int, int] | None  # cortex's range of the function, None when absent
    defline: int | None = None  # the def/class line (after decorators)
    git_end: int | None = None  # where git's funcname range would end (approximation)
    symbols: list = field(default_factory=list)  # every definition of the blob
    lang: Lang = LANGS["python"]

    def decorates(self, line: int) -> bool:
        """Whether `line` lies in the decorators of some definition (above its def line)."""
        return self.lang.decorator is not None and any(
            s.start_line <= line and line < def_line(self.lines, s, self.lang)
            for s in self.symbols)

    def text(self) -> str | None:
        if self.span is None:
            return None
        text = "\n".join(self.lines[self.span[0] - 1:self.span[1]])
        if self.span[1] == len(self.lines):  # its last line ends the file without a newline
            text += "\n\\ No newline at end of file"
        return text

    def in_span(self, line: int) -> bool:
        return self.span is not None and self.span[0] <= line <= self.span[1]

    def in_git_range(self, line: int) -> bool:
        return self.defline is not None and self.defline <= line <= self.git_end


def def_line(lines: list[str], sym, lang: Lang) -> int:
    """The def/class line of a definition: its first funcname line, after its decorators (Go:
    its first line after its doc comment, which cortex counts as the definition's own; not its
    first funcname line: a Go struct's field named func... is one too)."""
    if lang.decorator is None:
        in_block = False
        for i in range(sym.start_line, sym.end_line + 1):
            text = lines[i - 1].strip() if i <= len(lines) else ""
            if in_block or text.startswith("/*"):
                in_block = "*/" not in text[2 if not in_block else 0:]
            elif not text.startswith("//"):
                return i
        return sym.start_line
    return next((i for i in range(sym.start_line, sym.end_line + 1)
                 if lang.funcname.match(lines[i - 1])), sym.start_line)


def outside_class(side: Side, line: int, text: str) -> str:
    """What a line that git's range holds outside the function is: blank, comment, decorator
    (of another definition), other-def (inside another definition that does not enclose the
    function) or code (module, class or enclosing-function level)."""
    kind = line_class(text, side.lang)
    if kind in ("blank", "comment"):
        return kind
    if side.decorates(line):
        return "decorator"
    span = side.span
    owners = [s for s in side.symbols if s.start_line <= line <= s.end_line]
    if owners:
        inner = max(owners, key=lambda s: s.start_line)
        encloses = span is not None and inner.start_line <= span[0] and inner.end_line >= span[1]
        if not encloses:
            return "other-def"
    return "code" if kind != "decorator" else "decorator"


def line_class(text: str, lang: Lang) -> str:
    s = text.strip()
    if not s:
        return "blank"
    if s.startswith(lang.comments):
        return "comment"
    if lang.decorator and s.startswith(lang.decorator):
        return "decorator"
    return "code"


def sample_line(old: Side, new: Side, touched) -> str:
    for sign, line in touched:
        side = old if sign == "-" else new
        if side.lines and line <= len(side.lines) and side.lines[line - 1].strip():
            return f"{sign}{line}: {bl.clip(side.lines[line - 1])!r}"
    if touched:
        sign, line = touched[0]
        return f"{sign}{line} (blank)"
    return "(created or deleted)"
