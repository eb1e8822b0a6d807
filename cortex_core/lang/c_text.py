"""C and C++ text as their tree-sitter grammars can read it.

Which grammar. A `.h` file is C or C++: its suffix says nothing. Read by the C grammar, C++ is
garbage: robin-map's headers were one function `tsl` (the namespace) holding the whole file, its
classes and methods gone. A C header never holds a namespace, a template, an access specifier or
a standard header included without `.h`, so a `.h` text with one of them is read as C++.
"""

from __future__ import annotations

import re

# Line-start markers of C++ (see the module docstring); `namespace` with a body, not a word.
_CPP_MARKS = re.compile(
    rb"^[ \t]*(?:namespace(?:[ \t]+[\w:]+)?[ \t]*\{|template[ \t]*<|"
    rb"(?:public|private|protected)[ \t]*:(?!:)|using[ \t]+namespace\b|"
    rb"#[ \t]*include[ \t]*<\w+>)", re.M)


def dialect(language: str, source: bytes) -> str:
    """The grammar to read `source` with: "cpp" for a C header that holds C++."""
    if language == "c" and _CPP_MARKS.search(source) is not None:
        return "cpp"
    return language
