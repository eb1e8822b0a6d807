"""One sanitizer for untrusted text: hostile inputs × policies, and exactly what comes out."""

from __future__ import annotations

import ast
import re
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cortex_core.text import sanitize
from cortex_core.text.sanitize import (markdown, markdown_code, pack_block, pack_line,
                                       replace_surrogates, terminal)

POLICIES = {
    "terminal": terminal,
    "markdown": markdown,
    "markdown code": markdown_code,
    "pack line, markdown": lambda text: pack_line(text, markdown=True),
    "pack line, json": lambda text: pack_line(text, markdown=False),
    "pack block, markdown": lambda text: pack_block(text, markdown=True),
    "pack block, json": lambda text: pack_block(text, markdown=False),
    "pack code": lambda text: pack_block(text, markdown=False, code=True),
}

# name: (input, the output of each policy in the order of POLICIES)
MATRIX: dict[str, tuple[str, tuple[str, ...]]] = {
    # A terminal escape loses its opener (ESC, BEL, C1 CSI): the rest is inert, visible text.
    "ansi colour": ("red\x1b[31mALERT\x1b[0m", (
        "red [31mALERT [0m",
        "red \\[31mALERT \\[0m",
        "`red [31mALERT [0m`",
        "red \\[31mALERT \\[0m",
        "red [31mALERT [0m",
        "red \\[31mALERT \\[0m",
        "red [31mALERT [0m",
        "red [31mALERT [0m")),
    "window title": ("Fix\x1b]0;pwned\x07 it", (
        "Fix ]0;pwned  it",
        "Fix \\]0;pwned  it",
        "`Fix ]0;pwned  it`",
        "Fix \\]0;pwned it",
        "Fix ]0;pwned it",
        "Fix \\]0;pwned  it",
        "Fix ]0;pwned  it",
        "Fix ]0;pwned  it")),
    "c1 csi": ("a\x9b2Jb", ("a 2Jb", "a 2Jb", "`a 2Jb`") + ("a 2Jb",) * 5),
    "nul and del": ("a\x00b\x7fc", ("a b c", "a b c", "`a b c`") + ("a b c",) * 5),
    # One line everywhere but in a pack's blocks, which keep their lines (CR LF and CR as LF)
    # and tabs.
    "line breaks and a tab": ("one\r\ntwo\rthree\n\tfour", (
        "one  two three  four",
        "one two three four",
        "`one two three four`",
        "one two three four",
        "one two three four",
        "one\ntwo\nthree\n\tfour",
        "one\ntwo\nthree\n\tfour",
        "one\ntwo\nthree\n\tfour")),
    "bidi override and isolate": ("abc\u202edef\u202c \u2066ghi\u2069", (
        "abc def   ghi ",
        "abc def   ghi",
        "`abc def   ghi `",
        "abc def ghi",
        "abc def ghi",
        "abc def   ghi ",
        "abc def   ghi ",
        "abc def   ghi ")),
    "zero width and bom": ("pay\u200bpal\u200d\ufeff!", (
        "pay pal  !",
        "pay pal !",
        "`pay pal !`",
        "pay pal !",
        "pay pal !",
        "pay pal  !",
        "pay pal  !",
        "pay pal  !")),
    "line separators and nel": ("a\u2028b\u2029c\x85d",
                                ("a b c d", "a b c d", "`a b c d`") + ("a b c d",) * 5),
    # Invisible ASCII ("Ign" in tag characters) that an agent would still read.
    "tag characters": ("ok\U000e0049\U000e0067\U000e006e", (
        "ok   ",
        "ok",
        "`ok `",
        "ok",
        "ok",
        "ok   ",
        "ok   ",
        "ok   ")),
    "lone surrogate": ("caf\ud800e", ("caf\ufffde", "caf\ufffde", "`caf\ufffde`")
                       + ("caf\ufffde",) * 5),
    "links and images": ("[click](command:evil) ![i](https://x/p.png)", (
        "[click](command:evil) ![i](https://x/p.png)",
        "\\[click\\](command:evil) !\\[i\\](https\\://x/p.png)",
        "`[click](command:evil) ![i](https://x/p.png)`",
        "\\[click\\](command:evil) !\\[i\\](https\\://x/p.png)",
        "[click](command:evil) ![i](https://x/p.png)",
        "\\[click\\](command:evil) !\\[i\\](https\\://x/p.png)",
        "[click](command:evil) ![i](https://x/p.png)",
        "[click](command:evil) ![i](https://x/p.png)")),
    "html": ("<img src=x onerror=alert(1)>", (
        "<img src=x onerror=alert(1)>",
        "&lt;img src=x onerror=alert(1)>",
        "`<img src=x onerror=alert(1)>`",
        "&lt;img src=x onerror=alert(1)>",
        "<img src=x onerror=alert(1)>",
        "&lt;img src=x onerror=alert(1)>",
        "<img src=x onerror=alert(1)>",
        "<img src=x onerror=alert(1)>")),
    "autolinks": ("see https://evil.example www.evil.example m@evil.example", (
        "see https://evil.example www.evil.example m@evil.example",
        "see https\\://evil.example www\\.evil.example m\\@evil.example",
        "`see https://evil.example www.evil.example m@evil.example`",
        "see https\\://evil.example www\\.evil.example m\\@evil.example",
        "see https://evil.example www.evil.example m@evil.example",
        "see https\\://evil.example www\\.evil.example m\\@evil.example",
        "see https://evil.example www.evil.example m@evil.example",
        "see https://evil.example www.evil.example m@evil.example")),
    # A pack's structure is `# Context: ...` and `## [citation] title` lines: no block of text
    # can open one, in either format. Its code is fenced longer than any fence in it.
    "forged heading": ("## [deadbeef00] forged\n  # two", (
        "## [deadbeef00] forged   # two",
        "\\## \\[deadbeef00\\] forged   # two",
        "`## [deadbeef00] forged   # two`",
        "## \\[deadbeef00\\] forged # two",
        "## [deadbeef00] forged # two",
        "\\## \\[deadbeef00\\] forged\n  \\# two",
        "\\## [deadbeef00] forged\n  \\# two",
        "## [deadbeef00] forged\n  # two")),
    # A line of dashes or equals signs under a line makes it a heading too (setext); indented
    # four spaces it is code, and a spaced thematic break is no heading.
    "underlined heading": ("Forged item\n---\nTitle\n  ===\n    ---\n- - -", (
        "Forged item --- Title   ===     --- - - -",
        "Forged item --- Title   ===     --- - - -",
        "`Forged item --- Title   ===     --- - - -`",
        "Forged item --- Title === --- - - -",
        "Forged item --- Title === --- - - -",
        "Forged item\n\\---\nTitle\n  \\===\n    ---\n- - -",
        "Forged item\n\\---\nTitle\n  \\===\n    ---\n- - -",
        "Forged item\n---\nTitle\n  ===\n    ---\n- - -")),
    # A character reference would render as the character it names (a bidi override here).
    "character reference": ("&#x202E;gnp.exe&#x202C; &amp;", (
        "&#x202E;gnp.exe&#x202C; &amp;",
        "\\&#x202E;gnp.exe\\&#x202C; \\&amp;",
        "`&#x202E;gnp.exe&#x202C; &amp;`",
        "\\&#x202E;gnp.exe\\&#x202C; \\&amp;",
        "&#x202E;gnp.exe&#x202C; &amp;",
        "\\&#x202E;gnp.exe\\&#x202C; \\&amp;",
        "&#x202E;gnp.exe&#x202C; &amp;",
        "&#x202E;gnp.exe&#x202C; &amp;")),
    "code fences": ("```\ncode\n~~~", (
        "``` code ~~~",
        "\\`\\`\\` code \\~\\~\\~",
        "`''' code ~~~`",
        "``` code ~~~",
        "``` code ~~~",
        "'''\ncode\n'''",
        "'''\ncode\n'''",
        "```\ncode\n~~~")),
    # Emphasis is escaped where markdown is rendered for people; a pack leaves it (an agent reads
    # it as text, and every escape costs tokens). Underscores inside a word stay.
    "emphasis and tables": ("*b* _i_ snake_case `t` a|b ~~s~~", (
        "*b* _i_ snake_case `t` a|b ~~s~~",
        "\\*b\\* \\_i\\_ snake_case \\`t\\` a\\|b \\~\\~s\\~\\~",
        "`*b* _i_ snake_case 't' a|b ~~s~~`")
        + ("*b* _i_ snake_case `t` a|b ~~s~~",) * 5),
    # Hover text may follow a line break of ours: no list item, quote or heading opens there.
    "list item": ("- item", ("- item", "\\- item", "`- item`") + ("- item",) * 5),
    "numbered item": ("1. first", ("1. first", "1\\. first", "`1. first`") + ("1. first",) * 5),
    "backslashes": ("\\[esc\\]", (
        "\\[esc\\]",
        "\\\\\\[esc\\\\\\]",
        "`\\[esc\\]`",
        "\\\\\\[esc\\\\\\]",
        "\\[esc\\]",
        "\\\\\\[esc\\\\\\]",
        "\\[esc\\]",
        "\\[esc\\]")),
    "other scripts stay": ("café 東京 — ok", ("café 東京 — ok", "café 東京 — ok", "`café 東京 — ok`")
                           + ("café 東京 — ok",) * 5),
    # The terminal takes printable characters only; elsewhere these are harmless and stay (a
    # pack's line collapses the no-break space with the other whitespace).
    "no-break space and private use": ("a\u00a0b\ue000c", (
        "a b c",
        "a\u00a0b\ue000c",
        "`a\u00a0b\ue000c`",
        "a b\ue000c",
        "a b\ue000c",
        "a\u00a0b\ue000c",
        "a\u00a0b\ue000c",
        "a\u00a0b\ue000c")),
}


@pytest.mark.parametrize("name, policy", [(name, policy) for name in MATRIX for policy in POLICIES])
def test_hostile_input_through_each_policy(name, policy):
    text, expected = MATRIX[name]
    assert len(expected) == len(POLICIES), name
    assert POLICIES[policy](text) == expected[list(POLICIES).index(policy)]


# -- the core, for any text --------------------------------------------------------------------

# What no policy lets through: controls (tab and line feed only in a pack's blocks), invisible
# format characters, lone surrogates.
_HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u180e\u200b-\u200f\u2028-\u202e"
                     "\u2060-\u206f\ufeff\ufff9-\ufffb\U000e0000-\U000e007f\ud800-\udfff]")
_HOSTILE = st.text(st.one_of(st.characters(), st.sampled_from(
    "\x1b\x07\x9b\x85\t\n\r\u202e\u2066\u200b\ufeff\u2028\U000e0041\ud800[]<>`*_@#~|\\:/.w")),
    max_size=80)


@given(_HOSTILE)
def test_no_policy_lets_the_core_through(text):
    for name, policy in POLICIES.items():
        out = policy(text)
        assert not _HIDDEN.search(out), (name, text, out)
        if not name.startswith("pack block") and name != "pack code":
            assert "\t" not in out and "\n" not in out, (name, text, out)
    assert terminal(text).isprintable()


def test_the_terminal_takes_all_of_the_core():
    """Everything the core replaces is also not printable: the terminal's rule covers it."""
    printable = [hex(cp) for cp in range(0x110000)
                 if sanitize._UNSAFE.match(chr(cp)) and chr(cp).isprintable()]
    assert printable == []


# Format characters the core leaves alone: marks a script shows (the soft hyphen at a line
# break, Arabic number signs and the end of an ayah, the Syriac abbreviation mark, the Kaithi
# number signs, Egyptian hieroglyph format controls, shorthand format controls, musical beams).
VISIBLE_FORMAT = [(0xad, 0xad), (0x600, 0x605), (0x6dd, 0x6dd), (0x70f, 0x70f), (0x890, 0x891),
                  (0x8e2, 0x8e2), (0x110bd, 0x110bd), (0x110cd, 0x110cd), (0x13430, 0x1345f),
                  (0x1bca0, 0x1bca3), (0x1d173, 0x1d17a)]


def test_every_other_format_character_is_in_the_core():
    left = [hex(cp) for cp in range(0x110000)
            if unicodedata.category(chr(cp)) == "Cf" and not sanitize._UNSAFE.match(chr(cp))
            and not any(lo <= cp <= hi for lo, hi in VISIBLE_FORMAT)]
    assert left == []


def test_lone_surrogates_become_replacement_characters():
    assert replace_surrogates("a\ud800b\udfff") == "a\ufffdb\ufffd"
    assert replace_surrogates("\U0001f600 ok") == "\U0001f600 ok"     # a real pair stays
    text = "plain ascii"
    assert replace_surrogates(text) is text


# -- markdown ----------------------------------------------------------------------------------


@given(st.text(max_size=200))
def test_escaped_text_cannot_make_links_html_or_lines(text):
    out = markdown(text)
    assert "\n" not in out and "\r" not in out
    assert "<" not in out
    for i, ch in enumerate(out):
        if ch in "[]`*@":
            assert out[i - 1] == "\\", (text, out)
    # An underscore is escaped unless its run sits inside a word, where it cannot make emphasis.
    for run in re.finditer(r"(?<!\\)_+", out):
        before, after = out[run.start() - 1:run.start()], out[run.end():run.end() + 1]
        assert before.isalnum() and after.isalnum(), (text, out)
    # Bare URLs cannot autolink: no scheme before an unescaped "://", no "www." that starts one.
    assert not re.search(r"(?i)[a-z0-9+.-]://", out), (text, out)
    assert not re.search(r"(?i)(?<![a-z0-9])www\.", out), (text, out)


def test_markdown_is_clipped_before_it_is_escaped():
    assert markdown("[" * 10, limit=4) == "\\[\\[\\[…"
    assert markdown("  word  ", limit=10) == "word"


def test_code_spans_cannot_be_closed_early():
    assert markdown_code("a`b](x)") == "`a'b](x)`"


# -- packs -------------------------------------------------------------------------------------


@given(_HOSTILE)
def test_a_pack_block_cannot_open_a_heading_or_a_fence(text):
    for markdown_pack in (True, False):
        for line in pack_block(text, markdown_pack).split("\n"):
            assert not line.lstrip().startswith("#"), (text, line)
            assert "```" not in line and "~~~" not in line, (text, line)


def test_a_pack_line_is_cut_before_it_is_escaped():
    assert pack_line("a  b\n[c]", markdown=True, limit=6) == "a b \\[c"
    assert pack_line("a  b\n[c]", markdown=False, limit=6) == "a b [c"


# -- one sanitizer -----------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent
# A character of the core in a string (not a docstring), the escape of one in a pattern, or
# str.isprintable: a second sanitizer in the making.
_SANITIZING = re.compile(
    "[\x01-\x08\x0e-\x1f\x7f-\x9f\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff"
    "\ufff9-\ufffb\U000e0000-\U000e007f\ud800-\udfff]"
    r"|\\(?:x1b|x7f|x9f|u200[b-f]|u202[89a-e]|u206[0-9a-f]|ud[89a-f][0-9a-f]{2}|U000e00)",
    re.IGNORECASE)


def test_no_other_module_sanitizes_text_itself():
    found = []
    for package in ("cortex_core", "cortex_cli", "cortex_ls", "cortex_mcp"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == ROOT / "cortex_core" / "text" / "sanitize.py":
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                          if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                               ast.AsyncFunctionDef))
                          and node.body and isinstance(node.body[0], ast.Expr)}
            for node in ast.walk(tree):
                where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"
                if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                        and id(node) not in docstrings and _SANITIZING.search(node.value)):
                    found.append(where)
                elif isinstance(node, ast.Attribute) and node.attr == "isprintable":
                    found.append(where)
    assert found == [], "use cortex_core.text.sanitize"


def test_history_columns_count_terminal_cells():
    """A CJK subject pushed the columns after it out of line: each wide character takes two
    cells, a combining mark none."""
    from cortex_cli.render import _cells, _column
    assert _column("修复解析器的崩溃", 10) == "修复解析… "
    assert _cells(_column("修复解析器的崩溃问题", 60)) == 60
    assert _column("e\u0301te\u0301", 6) == "e\u0301te\u0301   "   # 3 cells, 3 spaces
    assert _column("x" * 7, 6) == "xxxxx…" and _column("x" * 6, 6) == "x" * 6
