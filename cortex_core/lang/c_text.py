"""C and C++ text as their tree-sitter grammars can read it: which grammar, and which macros hidden.

Which grammar. A `.h` file is C or C++: its suffix says nothing. Read by the C grammar, C++ is
garbage: robin-map's headers were one function `tsl` (the namespace) holding the whole file, its
classes and methods gone. C never holds a namespace, a template, an access specifier, `using
namespace` or `std::` outside its comments, nor a standard header included without `.h`
outside its `#ifdef __cplusplus` sections (where C headers include `<cstddef>` for their C++
readers), so a C text with one of them there is read as C++: a header whose `#ifdef
__cplusplus` section holds a C++ API (mimalloc's STL allocators) is C++ to whoever reads it.

Which macros. tree-sitter does not expand macros, and an annotation macro where a declaration
starts derails its recovery: a C++ method after `CXXOPTS_NODISCARD` alone on its line was named
`std` (its return type's namespace), a namespace after `CXXOPTS_DIAGNOSTIC_POP` became a function
holding every class in it, `Q_OBJECT` hid the next method, and `class EXPORT Foo : public Base {`
read as a function named `Base`. Such macros are blanked to spaces before parsing (so every byte
and line keeps its place, as conflict sides are: lang/conflicts.py):
- an upper-case word between `class`, `struct` or `union` and the name of a definition
  (`class Q_CORE_EXPORT QObject {`, `struct API Bar : Base`);
- an upper-case word alone on its line (`CXXOPTS_NODISCARD`, `Q_OBJECT`, `BEGIN_NAMESPACE`)
  unless the next line of code (past more words alone: `EFI_STATUS`, `EFIAPI`) starts with a
  name and `(`, after calling-convention words (`WINAPI worker(`): there it is the return type
  that GNU style puts on a line of its own (`BOOL` above `foo(void)`), which the grammar reads.
A word alone on its line elsewhere (an enumerator, an operand) is code the walk does not read.
A blanked macro's line is no line of the definition after it (a commit that only adds
`CXXOPTS_NODISCARD` above a method changes its class), and a macro on the line of a function's
return type (`API std::string f()`) is not blanked. Whether a word alone on its line is blanked
depends on the next line, which belongs to the same declaration either way: an edit of that
line makes an incremental parse read the word again too.
"""

from __future__ import annotations

import re

# Markers of C++ (see the module docstring): `namespace` with a body, a template, an access
# specifier, `using namespace`, a name of `std::`. Read in the whole text but its comments: a
# C header's `#ifdef __cplusplus` section that holds them is C++ a C++ reader compiles
# (mimalloc's STL allocators), read as C it was garbage.
_CPP_MARKS = re.compile(
    rb"^[ \t]*(?:namespace(?:[ \t]+[\w:]+)?[ \t]*\{|template[ \t]*<|"
    rb"(?:public|private|protected)[ \t]*:(?!:)|using[ \t]+namespace\b)|\bstd::", re.M)
# A standard header without `.h` is C++ too, but outside `#ifdef __cplusplus` sections only: C
# headers include `<cstddef>` there for their C++ readers.
_CPP_INCLUDE = re.compile(rb"^[ \t]*#[ \t]*include[ \t]*<\w+>", re.M)
# Comments, and the strings that may hold what looks like one (`"src/*"`).
_COMMENTS = re.compile(rb'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|/\*.*?(?:\*/|\Z)|//[^\n]*',
                       re.S)
_IF = re.compile(rb"[ \t]*#[ \t]*if")
_IF_CPLUSPLUS = re.compile(rb"[ \t]*#[ \t]*(?:ifdef[ \t]+__cplusplus\b|if[ \t]+(?:defined[ \t]*\(?[ \t]*)?"
                           rb"__cplusplus\b)")
_ELSE_OR_END = re.compile(rb"[ \t]*#[ \t]*(?:else|elif|endif)\b")
_END = re.compile(rb"[ \t]*#[ \t]*endif\b")

_WORD = rb"(?=[A-Z0-9_]*[A-Z])[A-Z_][A-Z0-9_]+"   # upper case, two characters at least
# `class MACRO... Name` then a base clause, a body, `final`, or the end of the line.
_CLASS_MACROS = re.compile(
    rb"\b(?:class|struct|union)[ \t]+((?:(?:" + _WORD + rb")[ \t]+)+)"
    rb"(?!final\b)[A-Za-z_]\w*[ \t]*(?:final\b[ \t]*)?(?=:(?!:)|\{|//|/\*|\r?$)", re.M)
_ALONE = re.compile(rb"^[ \t]*(" + _WORD + rb")[ \t]*(?://[^\n]*)?\r?$", re.M)
_ALONE_HERE = re.compile(rb"[ \t]*" + _WORD + rb"[ \t]*(?://[^\n]*)?\r?(?:\n|\Z)")
# The line of a function's name after its return type on a line of its own: calling-convention
# and export words first (`WINAPI worker(`), a pointer, the name (`Counter::operator==(` too).
_RETURN_TYPE_OF = re.compile(
    rb"[ \t]*(?:" + _WORD + rb"[ \t]+)*[*&]*[ \t]*[A-Za-z_~][\w:~]*"
    rb"(?:(?<=operator)(?:\(\)|\[\]|[=!<>+\-*/%^&|~,]+))?[ \t]*\(")
_BLANK_LINE = re.compile(rb"[ \t]*(?://[^\n]*)?\r?\n")
LOOK_AHEAD = 8   # lines of words alone (`EFI_STATUS`, `EFIAPI`) read before the function's name


def dialect(language: str, source: bytes) -> str:
    """The grammar to read `source` with: "cpp" for C text that holds C++ outside its comments
    (an `#include <vector>` outside its `#ifdef __cplusplus` sections)."""
    if language != "c":
        return language
    quick = _CPP_MARKS.search(source) is not None
    if not quick and _CPP_INCLUDE.search(source) is None:
        return language
    text = _COMMENTS.sub(_keep_strings, source)
    if quick and _CPP_MARKS.search(text) is not None:
        return "cpp"
    return "cpp" if _CPP_INCLUDE.search(_outside_cplusplus(text)) is not None else language


def _keep_strings(match: re.Match) -> bytes:
    token = match.group(0)
    return token if token[:1] in (b'"', b"'") else b" "


def _outside_cplusplus(text: bytes) -> bytes:
    """`text` without its `#if(def) __cplusplus` sections."""
    out: list[bytes] = []
    skipping = 0   # depth of #if inside the section skipped; 0: not skipping
    for line in text.split(b"\n"):
        if skipping:
            if _IF.match(line):
                skipping += 1
            elif skipping == 1 and _ELSE_OR_END.match(line):
                skipping = 0
            elif _END.match(line):
                skipping -= 1
            continue
        if _IF_CPLUSPLUS.match(line):
            skipping = 1
            continue
        out.append(line)
    return b"\n".join(out)


def macro_spans(language: str, source: bytes) -> list[tuple[int, int]]:
    """The byte spans of the macros blanked before parsing, in order (none outside C and C++)."""
    if language not in ("c", "cpp"):
        return []
    spans = [m.span(1) for m in _CLASS_MACROS.finditer(source)]
    for m in _ALONE.finditer(source):
        at = m.end()
        for _ in range(LOOK_AHEAD):   # past blank lines and more words alone (`EFIAPI`)
            at = _next_code_line(source, at)
            alone = _ALONE_HERE.match(source, at)
            if alone is None:
                break
            at = alone.end()
        if _RETURN_TYPE_OF.match(source, at) is None:
            spans.append(m.span(1))
    spans.sort()
    return spans


def _next_code_line(source: bytes, at: int) -> int:
    """Where the next line that holds code starts, from `at` (the end of a line)."""
    while at < len(source):
        if source[at:at + 1] == b"\n":
            at += 1
            continue
        blank = _BLANK_LINE.match(source, at)
        if blank is None:
            break
        at = blank.end()
    return at


def blanked(source: bytes, spans: list[tuple[int, int]]) -> bytes:
    """`source` with the spans replaced by as many spaces."""
    if not spans:
        return source
    out = bytearray(source)
    for start, end in spans:
        out[start:end] = b" " * (end - start)
    return bytes(out)
