"""What kind of change a commit made to a definition, read from its two texts.

A definition's text is split into tokens (words, punctuation, string literals, comments) by a small
per-language lexer: not a parser, but it knows where comments and strings start and end, which is
all that tells a reformatting from a change. The kinds, the first that applies:

- reformatted: the same code tokens and the same comments: whitespace, line breaks, a trailing
  comma before a closing bracket (a comma that no supported grammar gives a meaning), or a
  Python string's quotes or prefix case (`'x'` is `"x"` when x holds no quote; `u"x"` is `"x"`,
  `R"x"` is `r"x"`) changed. A
  comment is compared without its whitespace (`//x` is `// x`), except a doc comment (`/** … */`),
  which is compared as its text, the way Javadoc reads it (doc_text): without each line's
  indentation and leading `*`, but with the spaces within and after its words;
- docs: the same code tokens; only comments or docstrings changed (a docstring: a string literal
  that is a statement of its own, at bracket depth 0 alone on its line; Python);
- signature: the header changed: the tokens before the body (parameters, return type,
  modifiers, annotations, decorators) — up to the first `{` at bracket depth 0 in brace
  languages (or a JavaScript or TypeScript arrow function's `=>` before it, outside a type
  alias), the `:` that ends a `def`, `class` or `lambda` header in Python, in Ruby the first
  line of code to the end of a `def`'s parameters (`def f(a) = a` and `def f; 1 end` have
  bodies);
- body: anything else.

Also masked: a definition's code tokens with its own name masked, which similarity.py compares
for pairing renames and moves with edits (symbol_changes).

Cost: linear in the text (each pattern is a regular expression without nested quantifiers over
the same characters); run only on the definitions a commit changed, renamed or moved.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import NamedTuple

# Kinds of changes that leave a definition's meaning as it was: left out of substantive histories
# and of hotspot counts. "rescoped": its enclosing symbol was renamed or it moved to another
# scope of the same file, its own text unchanged (a lineage waypoint).
NOT_SUBSTANTIVE = frozenset({"reformatted", "rescoped"})
# The same, for a query over symbol_changes aliased `sc`.
SUBSTANTIVE_SQL = "sc.change not in ({})".format(
    ", ".join(f"'{kind}'" for kind in sorted(NOT_SUBSTANTIVE)))

_WORD = r"[\w$]+"
_PUNCT = r"\S"
# What the lexer skips before a token: blanks and line continuations, taken possessively (a
# run that no token follows is not tried again from each of its positions, which was quadratic;
# with `[ \t]+` inside the repeat, exponential). A continuation that only blanks follow to the
# end, or to a blank outside this set (U+00A0), is left to be read as `\` and a line break, as
# backtracking used to.
_BLANK = r"[ \t\f\r\v]"
_WS = rf"(?:{_BLANK}|\\\r?\n(?!{_BLANK}*+(?:\Z|[^\S\n])))*+"
_DQ = r'"(?:[^"\\\n]|\\.)*"?'
_SQ = r"'(?:[^'\\\n]|\\.)*'?"
_CHAR = r"'(?:\\.[^'\n]{0,8}|[^'\\\n])'"  # a char literal; any other ' is a Rust lifetime
_BLOCK = r"/\*.*?(?:\*/|\Z)"
_LINE = r"//[^\n]*"
_HASH = r"\#[^\n]*"
# PHP 8 reads `#[` as the start of an attribute (`#[Deprecated(...)]`), not of a comment: one
# punctuation token of its own, tried before the comment, so that an attribute changed is a change
# of the header and not of the docs (league/csv b063031522 edited a `#[Deprecated]` message).
_PHP_ATTRIBUTE = r"\#\["
# A heredoc's or nowdoc's opening line (`<<<EOT`, `<<<"EOT"`, `<<<'EOT'`): a token of the lexer,
# so that one in a comment or a string is no heredoc (_php_raw reads on to its closing line).
_LABEL = r"[A-Za-z_\x80-\uffff][\w\x80-\uffff]*"
_PHP_HEREDOC = rf"<<<[ \t]*(?:\"{_LABEL}\"|'{_LABEL}'|{_LABEL})\r?\n"
_TRIPLE = r"(?:'''(?:[^\\]|\\.)*?(?:'''|\Z)|\"\"\"(?:[^\\]|\\.)*?(?:\"\"\"|\Z))"
_BACKTICK = r"`(?:[^`\\]|\\.)*`?"


def _lexer(comment: str, string: str) -> re.Pattern[str]:
    # Whitespace is consumed before each token rather than matched on its own: half the matches.
    # One group: findall builds the token strings in C, and a token's first characters tell its
    # kind (see tokens): 30% less time than asking each match for its group.
    # A run of blanks that no token follows (the text's end, or a blank outside _WS such as
    # U+00A0) matches with an empty group, dropped by _lex, rather than failing at each of its
    # positions in turn.
    return re.compile(f"{_WS}(?:(\\n|{comment}|{string}|{_WORD}|{_PUNCT})|\\Z|(?=\\s))", re.S)


# Each language's comments and strings; compiled on first use (a query such as `cortex history`
# imports this module for NOT_SUBSTANTIVE and lexes nothing).
_C_LIKE = (f"{_LINE}|{_BLOCK}", f"{_TRIPLE}|{_DQ}|{_CHAR}|{_BACKTICK}")
_JAVASCRIPT = (f"{_LINE}|{_BLOCK}", f"{_DQ}|{_SQ}|{_BACKTICK}")
_SYNTAX = {
    "python": (_HASH, f"(?:[rRbBuUfF]{{0,2}})(?:{_TRIPLE}|{_DQ}|{_SQ})"),
    "ruby": (_HASH, f"{_DQ}|{_SQ}"),
    "php": (f"{_PHP_ATTRIBUTE}|{_LINE}|{_BLOCK}|{_HASH}", f"{_PHP_HEREDOC}|{_DQ}|{_SQ}"),
    "javascript": _JAVASCRIPT, "typescript": _JAVASCRIPT, "tsx": _JAVASCRIPT,
}
_LEXERS: dict[str, re.Pattern[str]] = {}


def _lexer_of(language: str) -> re.Pattern[str]:
    lexer = _LEXERS.get(language)
    if lexer is None:
        lexer = _LEXERS[language] = _lexer(*_SYNTAX.get(language, _C_LIKE))
    return lexer


_OPEN, _CLOSE = frozenset("([{"), frozenset(")]}")
_QUOTES = frozenset("\"'")
_PREFIXES = frozenset("rRbBuUfF")
_NOT_BEFORE_DOCSTRING = frozenset(("=", ",", "(", "[", "{", "+", "%", "return", "yield"))


class Tokens(NamedTuple):
    code: tuple[str, ...]      # code tokens, trailing commas dropped
    notes: tuple[str, ...]     # comments and docstrings as compared (_note), in order
    header: tuple[str, ...]    # the code tokens before the body


# Where a Python docstring could start: a string first on its line (after a line break and the
# whitespace the lexer skips). Without one, no token needs the docstring rule. Read as runs of
# that whitespace, each once (one search per line break was quadratic on a text of continuation
# lines: each run would be read again from each of its line breaks, with the same end).
_LINE_START = re.compile(r"\n(?:[ \t\f\r\v]|\\\r?\n)*+")
_STRING_START = re.compile(r"[rRbBuUfF]{0,2}[\"']")


def _string_first_on_a_line(text: str) -> bool:
    return any(_STRING_START.match(text, run.end()) for run in _LINE_START.finditer(text))


_SLASH_COMMENTS = ("//", "/*")


def _php_comment(token: str) -> bool:
    """A PHP comment: `//`, `/* */` or `#`, but not the `#[` that opens an attribute."""
    return token[:2] in _SLASH_COMMENTS or token[0] == "#" and token != "#["


# Text whose tokens are kept: a definition's new text is the old text of its next change, at times
# many commits later (requests: 7.3k distinct texts, 10.8 MB, of 11.9k asked for, 16.7 MB; a
# cache of 256 texts lexed 12.2 MB, one of 2M characters 11.0 MB). The tokens take about 25x
# their text as Python objects (a full cache of 2M characters held 51 MB on sympy), so 500k.
TOKEN_CACHE_CHARS = 500_000
_cache: OrderedDict[tuple[str, str], Tokens] = OrderedDict()
_cached_chars = 0


def tokens(text: str, language: str) -> Tokens:
    """The text's tokens, from a cache bounded by the text it holds (TOKEN_CACHE_CHARS)."""
    global _cached_chars
    key = (text, language)
    found = _cache.get(key)
    if found is not None:
        _cache.move_to_end(key)
        return found
    found = _cache[key] = _lex(text, language)
    _cached_chars += len(text)
    while _cached_chars > TOKEN_CACHE_CHARS and len(_cache) > 1:
        (evicted, _), _ = _cache.popitem(last=False)
        _cached_chars -= len(evicted)
    return found


# A heredoc's text runs to the first line that starts (after blanks: PHP 7.3) with its label.
# The lexer's patterns have no back references (one group, for findall), so _php_raw finds that
# line itself, with this one pattern for every label.
_LABEL_LINE = re.compile(rf"^[ \t]*({_LABEL})", re.M)


def _php_raw(text: str, lexer: re.Pattern[str]) -> list[str]:
    """PHP's raw tokens, each heredoc or nowdoc one string token: its text is no code, so a
    `#fff` or a `/* */` in it is no comment (they were read as one: a colour changed in a
    heredoc was a docs change). Its opening line is a token of the lexer, so that a `<<<EOT`
    in a comment or a string opens nothing. Linear: an opening line without its closing one
    takes the rest of the text, as an unterminated quote does, and the closing line is found
    by one pattern for every label."""
    raw: list[str] = []
    at = 0
    while at <= len(text):
        for match in lexer.finditer(text, at):
            token = match.group(1)
            if token is None or not token.startswith("<<<"):
                raw.append(token or "")
                continue
            label = token[3:].strip().strip("\"'")
            end = len(text)
            for line in _LABEL_LINE.finditer(text, match.end()):
                if line.group(1) == label:
                    end = line.end()
                    break
            raw.append(text[match.start(1):end])
            at = end
            break
        else:
            break
    return raw


def _lex(text: str, language: str) -> Tokens:
    if language == "php" and "<<<" in text:
        raw = _php_raw(text, _lexer_of(language))
    else:
        raw = _lexer_of(language).findall(text)
    if "" in raw:   # blanks that no token followed (_lexer)
        raw = [t for t in raw if t]
    if language == "python" and _string_first_on_a_line(text):
        code, notes = _python_tokens(raw)
    else:
        # Punctuation is one character, so only comments start with `//` or `/*`; a `#` is
        # always a comment where the lexer has `#` comments, and never one elsewhere.
        # Comprehensions, not a loop: this runs on every definition a commit changed.
        if language in ("python", "ruby"):
            notes = ["".join(t.split()) for t in raw if t[0] == "#"]
            code = [t for t in raw if t != "\n" and t[0] != "#"]
        elif language == "php":
            notes = [_note(t) for t in raw if _php_comment(t)]
            code = [t for t in raw if t != "\n" and not _php_comment(t)]
        else:
            notes = [_note(t) for t in raw if t[:2] in _SLASH_COMMENTS]
            code = [t for t in raw if t != "\n" and t[:2] not in _SLASH_COMMENTS]
        if "," in code:  # a comma right before a closing bracket is a trailing one
            code = [t for t, after in zip(code, code[1:] + [""])
                    if t != "," or after not in _CLOSE]
    if language == "python":
        code = [_same_quotes(t) if t[-1:] in _QUOTES else t for t in code]
        notes = [_same_quotes(n) if n[-1:] in _QUOTES else n for n in notes]   # docstrings
    return Tokens(tuple(code), tuple(notes), _header(code, language, text))


# Python strings as the same literal whatever quotes and prefix case a formatter chose (black
# writes "x" for 'x', drops u, which means nothing since Python 3, and lowercases prefixes):
# read as a body change, black's first run over a project was a substantive change of every
# function holding a string. Python only: other lexers here do not know regular expressions or
# JSX text, where a quote is no string (a review found /'x'/ and <p>'Enter'</p> called
# reformatted when they became /"x"/ and <p>"Enter"</p>).
_TRIPLE_SINGLE = "'" * 3


def _same_quotes(token: str) -> str:
    """A Python string literal with its prefix lowercased and sorted, `u` left out, and in double
    quotes when in single ones and its text holds neither kind of quote (nothing to escape
    differently); anything else as it is."""
    body = token.lstrip("rRbBuUfF")
    prefix = "".join(sorted(token[:len(token) - len(body)].lower().replace("u", "")))
    if body.startswith(_TRIPLE_SINGLE):
        if len(body) < 6 or not body.endswith(_TRIPLE_SINGLE) or _quoted(body[3:-3]):
            return prefix + body
        return prefix + '"""' + body[3:-3] + '"""'
    if body[:1] == "'" and len(body) >= 2 and body[-1] == "'" and not _quoted(body[1:-1]):
        return prefix + '"' + body[1:-1] + '"'
    return prefix + body if body[:1] in _QUOTES else token


def _quoted(text: str) -> bool:
    return "'" in text or '"' in text


def _note(comment: str) -> str:
    """A comment as compared: a doc comment's text, any other comment without its whitespace."""
    if comment.startswith("/**") and comment not in ("/**/", "/***/"):
        return doc_text(comment)
    return "".join(comment.split())


def doc_text(comment: str) -> str:
    """A `/** … */` comment's text as a doc tool reads it: each line without its indentation, its
    leading `*` and one blank after that; blank lines empty, none at either end; no line break
    style (CR LF is LF). What is left is text, spaces included, as in Javadoc's own parse: so a
    space removed after a word changes the doc (CodeShovel's hand-checked Java histories call
    that a doc change, and a ` * ` made ` *` none), and so does a paragraph rewrapped (its
    oracles call commons-lang 71d9e00d42's rewrap one too; joining a paragraph's lines was tried:
    that commit then disagreed, so a formatter that rewraps docs makes doc changes)."""
    body = comment[3:-2] if comment.endswith("*/") else comment[3:]
    lines = []
    for line in body.split("\n"):
        line = line.rstrip("\r").lstrip()
        if line[:1] == "*":
            line = line[2:] if line[1:2] in (" ", "\t") else line[1:]
        lines.append(line if line.strip() else "")
    return "\n".join(lines).strip("\n").rstrip()


def _python_tokens(raw: list[str]) -> tuple[list[str], list[str]]:
    """Python's (code, notes), with docstrings (a string at depth 0, first and alone on its line,
    not the value of an expression) told from code."""
    code: list[str] = []
    notes: list[str] = []
    depth = 0
    line_start = True          # no token yet on this line
    pending: str | None = None  # a string at depth 0 first on its line: a docstring if alone
    for value in raw:
        if value == "\n":
            if pending is not None:
                notes.append("".join(pending.split()))
                pending = None
            line_start = True
            continue
        if pending is not None:  # not alone on its line: code after all
            code.append(pending)
            pending = None
        first = value[0]
        if first == "#":
            notes.append("".join(value.split()))
            continue
        if line_start and depth == 0 and code and code[-1] not in _NOT_BEFORE_DOCSTRING and (
                first in _QUOTES or first in _PREFIXES and len(value) > 1
                and (value[1] in _QUOTES or len(value) > 2 and value[2] in _QUOTES)):
            pending = value  # a word never holds a quote: this is a (prefixed) string
            line_start = False
            continue
        line_start = False
        if value in _OPEN:
            depth += 1
        elif value in _CLOSE:
            depth = max(0, depth - 1)
            if code and code[-1] == ",":
                code.pop()  # a trailing comma
        code.append(value)
    if pending is not None:
        notes.append("".join(pending.split()))
    return code, notes


_ARROW_LANGUAGES = frozenset({"javascript", "typescript", "tsx"})
_DECLARATION_MODIFIERS = frozenset({"export", "declare", "default"})


def _type_alias(code: list[str]) -> bool:
    """`type Hook = (s: State) => void`, `export type ...`: not a field named `type`."""
    for i, t in enumerate(code):
        if t not in _DECLARATION_MODIFIERS:
            return t == "type" and code[i + 1:i + 2] != ["="]
    return False


def _header(code: list[str], language: str, text: str) -> tuple[str, ...]:
    if language == "python":
        seen_def = False
        depth = 0
        for i, t in enumerate(code):
            if t in ("def", "class", "lambda"):
                seen_def = True
            elif t in _OPEN:
                depth += 1
            elif t in _CLOSE:
                depth = max(0, depth - 1)
            elif t == ":" and seen_def and depth == 0:
                return tuple(code[:i + 1])
        return tuple(code)
    if language == "ruby":
        first = _ruby_header(text)
        return _lex(first, "ruby").code if first != text else tuple(code)
    # An arrow function's header ends at its `=>`: `const f = (a) => a * 2` has no `{` to end
    # it, and was all header, so every change of its body read as a signature change. Not in a
    # type alias, whose `=>` is part of the function type it names.
    if language in _ARROW_LANGUAGES and not _type_alias(code):
        end = _arrow_end(code)
        if end is not None:
            return tuple(code[:end])
    depth = 0
    for i, t in enumerate(code):
        if t == "{" and depth == 0:
            return tuple(code[:i])
        if t in _OPEN:
            depth += 1
        elif t in _CLOSE:
            depth = max(0, depth - 1)
    # No body: a declaration (`void f(int a);`) is all header; anything else cannot be told.
    return tuple(code) if code and code[-1] == ";" else ()


def _arrow_end(code: list[str]) -> int | None:
    """Where an arrow function's header ends, just after its `=>`; None when the definition
    is no arrow function (its header then ends at its `{`). The arrow is the initializer's,
    after the declaration's `=` at depth 0 (`const h: (e: E) => void = (e) => {...}`: the
    annotation's `=>` is part of a type), and after the function types of a return type
    (`(a): (b: B) => C => ...`): a `=>` right after a `(...)` that starts a type (after the
    `:` or a type's `=>`) is that type's."""
    # The declaration's `=`, read with type arguments as brackets (`f: Fn<(a: A) => B> = ...`):
    # before it, a declaration compares nothing.
    depth, angle, start, i = 0, 0, 0, 0
    annotated = False   # after a variable's or field's `:`, whose type may hold arrows
    while i < len(code):
        t = code[i]
        if t == "=" and code[i + 1:i + 2] == [">"]:
            if depth == 0 and angle == 0 and not annotated:
                break   # an arrow before any `=`: no declaration (`export default (a) => a >= 1`)
            i += 2
            continue
        if depth == 0 and angle == 0 and t == ":" and code[i - 1:i] != [")"]:
            annotated = True   # `f: <T>(a: T) => T = ...`; after a `)` it is a return type
        if t in _OPEN:
            depth += 1
        elif t in _CLOSE:
            depth = max(0, depth - 1)
        elif t == "<":
            angle += 1
        elif t == ">":
            angle = max(0, angle - 1)
        elif depth == 0 and angle == 0 and t == "=" and _assigns(code, i):
            start = i + 1
            break
        i += 1
    # A value in parentheses, `((a) => a) as T` (a TypeScript assertion): the arrow inside.
    for skip in range(4):
        if skip and code[start + skip - 1:start + skip] != ["("]:
            return None
        end = _arrow_after(code, start + skip)
        if end is not None:
            return end
    return None


def _arrow_after(code: list[str], start: int) -> int | None:
    """_arrow_end's search from `start`, the beginning of the value."""
    depth, opened_at, type_start = 0, -1, -1   # type_start: where a type may begin
    for i in range(start, len(code)):
        t = code[i]
        if depth == 0 and t == "{" and i != type_start:
            return None   # a body or an object before any arrow: no arrow function
        if t in _OPEN:
            if depth == 0:
                opened_at = i
            depth += 1
        elif t in _CLOSE:
            depth = max(0, depth - 1)
        elif depth == 0 and t == ":":
            type_start = i + 1
        elif depth == 0 and t == "=" and code[i + 1:i + 2] == [">"]:
            if code[i - 1:i] == [")"] and opened_at == type_start \
                    and _parameters(code, opened_at, i - 1):
                type_start = i + 2    # a function type's arrow: a type follows it
                continue
            return i + 2
    return None


def _parameters(code: list[str], start: int, end: int) -> bool:
    """`code[start:end + 1]`, a `( ... )` in a type, is a function type's parameter list: empty,
    a rest parameter, or a `name:` at its top level; else a type in parentheses (`(A | B)`,
    `((b: B) => C)`), after which an arrow is the function's own."""
    if end == start + 1 or code[start + 1:start + 4] == [".", ".", "."]:
        return True
    depth = 0
    for t in code[start + 1:end]:
        if t in _OPEN:
            depth += 1
        elif t in _CLOSE:
            depth -= 1
        elif depth == 0 and t in (":", "?"):
            return True
    return False


def _assigns(code: list[str], i: int) -> bool:
    """`code[i]` ("=") is an assignment, not part of `=>`, `==`, `!=`. A `>` before it closes a
    type's arguments (`f: Fn<A> = ...`): a declaration compares nothing before its `=`."""
    return code[i + 1:i + 2] not in ([">"], ["="]) and code[i - 1:i] not in (["="], ["!"])


_RUBY_DEF = re.compile(r"def[ \t]+[^\s(;]+")


def _ruby_header(text: str) -> str:
    """A Ruby definition's header: its first line of code (the doc comment above it is not,
    nor an `=begin` block), and of a `def`, no more than its name and parameters, so that a
    one-line method's body (`def f; 1 end`) and an endless method's expression (`def f = 1`)
    are its body. A parameter list that does not close on its line is all the line."""
    lines = text.lstrip().split("\n")
    at = 0
    while at < len(lines) - 1:
        line = lines[at].strip()
        if line.startswith("=begin"):
            while at < len(lines) - 1 and not lines[at].startswith("=end"):
                at += 1
        elif line and not line.startswith("#"):
            break
        at += 1
    first = lines[at].strip()
    found = _RUBY_DEF.match(first)
    if found is None:   # a class or module: its line up to a `;`
        return first.split(";", 1)[0]
    end = found.end()
    if first[end:end + 1] == "(":
        depth = 0
        for i in range(end, len(first)):
            depth += {"(": 1, ")": -1}.get(first[i], 0)
            if depth == 0:
                return first[:i + 1]
        return first
    rest = first[end:]
    if rest.lstrip().startswith("="):   # endless, without parameters
        return first[:end]
    return first[:end] + rest.split(";", 1)[0]


def change_kind(old: bytes, new: bytes, language: str) -> str:
    """The kind of change from `old` to `new`, two texts of one definition (see the module)."""
    a = tokens(old.decode("utf-8", "replace"), language)
    b = tokens(new.decode("utf-8", "replace"), language)
    if a.code == b.code:
        return "reformatted" if a.notes == b.notes else "docs"
    if a.header != b.header:
        return "signature"
    return "body"


_PIECES = re.compile(r"\w+|[^\w\s]")


def masked(text: bytes, language: str, name: str) -> tuple[str, ...]:
    """The code tokens for similarity: own name masked, and string literals split into their
    words (a function that is mostly a 6 KB script in a string is not one token, which an edit of
    the few lines around it would outweigh)."""
    out: list[str] = []
    for t in tokens(text.decode("utf-8", "replace"), language).code:
        if t == name:
            out.append("\0")
        elif len(t) > 2 and t[0] in "\"'`" or t[:2] in ('r"', "r'", 'b"', "b'", 'f"', "f'") \
                or t[:3] == "<<<":   # a PHP heredoc: its words, as a string's
            out.extend(_PIECES.findall(t))
        else:
            out.append(t)
    return tuple(out)
