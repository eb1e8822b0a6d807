"""Untrusted text made safe for where it is shown: one core, and one policy per destination.

Untrusted is everything Cortex did not write itself: commit subjects and bodies, author names,
paths, symbol names, notes, document sections, a client's strings. Each front end shows it
through one of the policies below, and never as it is.

The core, which every policy applies:

- A lone surrogate (half a UTF-16 pair, as a client's JSON can escape it: `"\\ud800"`) becomes
  U+FFFD, the replacement character. UTF-8, SQLite and the tokenizers refuse it.
- Control characters (C0, DEL, C1) become a space. They include ESC and the C1 CSI, which open
  a terminal's escape sequences (colours, the window title, cursor moves): without its opener a
  sequence is inert text, and it stays visible as such.
- Invisible format characters become a space: the bidi controls (a "Trojan Source" line reads
  differently from what it is), zero-width characters, the line and paragraph separators, the
  byte order mark, the interlinear annotations and the tag characters (invisible ASCII that an
  agent still reads).

The policies:

- `terminal`: one line for a terminal. Every character that is not printable becomes a space,
  which is the core and more (private use, unassigned code points, spaces other than ' ').
- `markdown`, `markdown_code`: inert markdown on one line, for the language server's hovers and
  the MCP server's answers: no link, image, autolink, HTML, emphasis or block can form.
- `pack_line`, `pack_block`: a context pack's subject, titles and texts (see context_pack). They
  keep the text close to what it was (an agent reads it, and the budget pays for every escape):
  lines stay, and in a markdown pack only links, images, autolinks and HTML are escaped. No line
  can open a heading or a code fence, in either format: the pack's own structure cannot be
  forged.
"""

from __future__ import annotations

import re

_SURROGATES = "\ud800-\udfff"
_CONTROLS = "\x00-\x1f\x7f-\x9f"
_CONTROLS_BUT_TAB_AND_LINE = "\x00-\x08\x0b-\x1f\x7f-\x9f"
# Arabic letter mark, zero-width space to right-to-left mark, line and paragraph separators to
# the right-to-left override, word joiner to the nominal digit shapes (the isolates among them),
# BOM, Mongolian vowel separator, interlinear annotations, tags.
_INVISIBLE = ("\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb"
              "\U000e0000-\U000e007f")

_SURROGATE = re.compile(f"[{_SURROGATES}]")
_UNSAFE = re.compile(f"[{_CONTROLS}{_INVISIBLE}]")
_UNSAFE_RUNS = re.compile(f"[{_CONTROLS}{_INVISIBLE}]+")
_UNSAFE_IN_BLOCK = re.compile(f"[{_CONTROLS_BUT_TAB_AND_LINE}{_INVISIBLE}]")

# The `:` of `scheme://` and the `.` of `www.`: where a bare URL would start to autolink. A
# `www` counts unless a letter or digit comes before it (GFM also starts one after `_`).
_AUTOLINK = r"(?i:(?<=[a-z0-9+.-]):(?=//)|(?<=(?<![a-z0-9])www)\.)"


def replace_surrogates(text: str) -> str:
    """`text` with each lone surrogate as U+FFFD (the core's first rule, alone: for a client's
    strings before they reach the engine)."""
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)


# -- terminal ----------------------------------------------------------------------------------


def terminal(text: str) -> str:
    """Untrusted text for a terminal: no control characters or escape sequences, no bidi or
    invisible characters, one line. Each character that is not printable becomes one space."""
    if text.isprintable():   # most text: one pass in C
        return text
    return "".join(ch if ch.isprintable() else " " for ch in replace_surrogates(text))


def quoted(text: str) -> str:
    """Text the user gave, quoted for a one-line message as written: repr's escapes only where a
    terminal would not show it (repr doubles every backslash: `League\\Csv\\Reader`, a PHP
    name, read `League\\\\Csv\\\\Reader`, which nobody typed)."""
    return f"'{text}'" if text.isprintable() and "'" not in text else repr(text)


# -- markdown ----------------------------------------------------------------------------------

# What could turn untrusted text into markup: emphasis, code, links and images (brackets), HTML
# (<), strikethrough, tables. Parentheses, dots and colons stay readable (clients that show the
# raw text, like Neovim's hover, would show every escape): with the brackets escaped no link can
# form, and the autolinks of bare URLs, www. names and e-mail addresses are broken where they
# start. A block marker at the very start is escaped too: text may follow a line break of ours.
_MD_SPECIAL = re.compile(r"([\\`*\[\]~|@&])")   # &: no character reference (&#x202E;) either
# Underscores inside a word (`rebuild_proxies`) can neither open nor close emphasis in CommonMark:
# they stay as they are, readable and copyable. Any other run of them is escaped.
_MD_UNDERSCORES = re.compile(r"_+")
_MD_AUTOLINK = re.compile(_AUTOLINK)
_MD_BLOCK_START = re.compile(r"^(?:([#>+=-])|(\d{1,9})([.)]))")


def markdown(text: str, limit: int | None = None) -> str:
    """Untrusted text as inert markdown on one line, clipped to `limit` characters (before
    escaping) with `…`. Runs of unsafe characters become one space."""
    text = _UNSAFE_RUNS.sub(" ", replace_surrogates(text)).strip()
    if limit is not None and len(text) > limit:
        text = text[:limit - 1].rstrip() + "…"
    text = _MD_SPECIAL.sub(r"\\\1", text)
    text = _MD_UNDERSCORES.sub(lambda m: m[0] if _inside_word(m) else "\\_" * len(m[0]), text)
    text = _MD_AUTOLINK.sub(lambda m: "\\" + m[0], text)
    # A line of ours may end where this text begins (a search hit's body): no heading, quote,
    # list item, setext underline or thematic break can open there.
    text = _MD_BLOCK_START.sub(lambda m: "\\" + m[1] if m[1] else m[2] + "\\" + m[3], text)
    return text.replace("<", "&lt;")


def markdown_code(text: str) -> str:
    """Untrusted text in an inline code span (backticks cannot close it early)."""
    text = _UNSAFE_RUNS.sub(" ", replace_surrogates(text)).replace("`", "'")
    return f"`{text}`"


def _inside_word(m: re.Match) -> bool:
    text, start, end = m.string, m.start(), m.end()
    return 0 < start and end < len(text) and text[start - 1].isalnum() and text[end].isalnum()


# -- context packs -----------------------------------------------------------------------------

_PACK_LINKISH = re.compile(r"[\\\[\]@&]|" + _AUTOLINK)   # &: no character reference either
_SETEXT_UNDERLINE = re.compile(r" {0,3}(=+|-+)[ \t]*$")


def pack_line(text: str, markdown: bool, limit: int | None = None) -> str:
    """A pack's subject or an item's title: one line, whitespace collapsed, cut at `limit`
    characters; in a markdown pack, inert (see `_pack_inert`)."""
    text = " ".join(_UNSAFE.sub(" ", replace_surrogates(text)).split())[:limit]
    return _pack_inert(text) if markdown else text


def pack_block(text: str, markdown: bool, code: bool = False) -> str:
    """An item's text: its lines and tabs stay. Code (the focus symbol's, which the pack fences
    with a fence longer than any in it) gets the core only. Other text cannot pass for the pack's
    structure: no line opens a heading (a forged `## [sha] item`, or a line of `-` or `=` under
    one) or a code fence (one that would swallow the rest of the pack); in a markdown pack it is
    inert too."""
    text = replace_surrogates(text.replace("\r\n", "\n").replace("\r", "\n"))
    text = _UNSAFE_IN_BLOCK.sub(" ", text)
    if code:
        return text
    if markdown:
        text = _pack_inert(text)
    lines = []
    for line in text.split("\n"):
        if line.lstrip().startswith("#"):
            line = line.replace("#", "\\#", 1)
        elif _SETEXT_UNDERLINE.match(line):   # it would make the line above a heading
            line = line.replace(line.lstrip()[0], "\\" + line.lstrip()[0], 1)
        lines.append(line.replace("```", "'''").replace("~~~", "'''"))
    return "\n".join(lines)


def _pack_inert(text: str) -> str:
    """Text in a markdown pack, as text: no link, image or autolink can form, no HTML or
    character reference (brackets, backslashes, `&` and `<` escaped, the `:` of `scheme://` and
    the `.` of `www.` too)."""
    return _PACK_LINKISH.sub(lambda m: "\\" + m[0], text).replace("<", "&lt;")
