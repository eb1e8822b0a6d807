"""Go build constraints: which platforms build a file, and whether two files can be built together.

A Go file is built only where its constraints hold: its name (`x_windows.go`, `x_linux_amd64.go`,
`x_arm64_test.go`) and its `//go:build` line (or, in files older than Go 1.17, its `// +build`
lines), as `go build` reads them. A call in a file built only off Windows cannot reach a
definition of a file built only on Windows, although both are the same package: the resolver
drops such candidates (index/resolve.py), so that `util.Read()` in `light_unix.go` is
`util_unix.go`'s `Read`, not `util_windows.go`'s too (junegunn/fzf).

Pure functions: no git, no SQL.
"""

from __future__ import annotations

import itertools
import re
from functools import lru_cache

# go tool dist list, and the names go/build still knows from older releases.
GOOS = frozenset({"aix", "android", "darwin", "dragonfly", "freebsd", "hurd", "illumos", "ios",
                  "js", "linux", "nacl", "netbsd", "openbsd", "plan9", "solaris", "wasip1",
                  "windows", "zos"})
GOARCH = frozenset({"386", "amd64", "amd64p32", "arm", "armbe", "arm64", "arm64be", "loong64",
                    "mips", "mipsle", "mips64", "mips64le", "mips64p32", "mips64p32le", "ppc",
                    "ppc64", "ppc64le", "riscv", "riscv64", "s390", "s390x", "sparc",
                    "sparc64", "wasm"})
_UNIX = frozenset({"aix", "android", "darwin", "dragonfly", "freebsd", "hurd", "illumos", "ios",
                   "linux", "netbsd", "openbsd", "solaris"})
# A GOOS that satisfies another's tag too (go/build's matchTag).
_ALSO = {"android": "linux", "illumos": "solaris", "ios": "darwin"}
_OTHER = "\0other"        # a GOOS or GOARCH that no expression names
_MAX_FREE_TAGS = 8        # more tags than these (cgo, a release, a feature...): not looked into
_TOKEN = re.compile(r"\s*(\(|\)|!|&&|\|\||[\w.]+)")


def constraint(path: str, data: bytes) -> str | None:
    """The expression a file is built under, in `//go:build` syntax; None when it is built
    everywhere (or its constraint cannot be read)."""
    parts = list(dict.fromkeys(p for p in (_name_constraint(path), _header_constraint(data))
                               if p))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else " && ".join(f"({p})" for p in parts)


def _name_constraint(path: str) -> str | None:
    """`*_GOOS`, `*_GOARCH` or `*_GOOS_GOARCH` before `.go` (and a `_test` suffix)."""
    name = path.rsplit("/", 1)[-1]
    if not name.endswith(".go"):
        return None
    stem = name[:-3]
    if stem.endswith("_test"):
        stem = stem[:-5]
    words = stem.split("_")[1:]   # what comes before the first `_` never constrains
    if len(words) >= 2 and words[-2] in GOOS and words[-1] in GOARCH:
        return f"{words[-2]} && {words[-1]}"
    if words and (words[-1] in GOOS or words[-1] in GOARCH):
        return words[-1]
    return None


def _header_constraint(data: bytes) -> str | None:
    """The `//go:build` line before the package clause, else the `// +build` lines there."""
    plus: list[str] = []
    for raw in data[:16384].split(b"\n"):
        line = raw.strip()
        if line.startswith(b"package ") or line == b"package":
            break
        text = line.decode("utf-8", "replace")
        if text.startswith("//go:build "):
            expr = text[len("//go:build "):].strip()
            return expr if _parse(expr) is not None else None
        if text.startswith("// +build "):
            # Space-separated options are ORed, comma-separated terms ANDed, lines ANDed.
            options = [" && ".join(o.split(",")) for o in text[len("// +build "):].split()]
            if options:
                plus.append(" || ".join(f"({o})" for o in options))
    if not plus:
        return None
    expr = plus[0] if len(plus) == 1 else " && ".join(f"({p})" for p in plus)
    return expr if _parse(expr) is not None else None


# An expression as a tree: a tag (str), ("!", x), ("&&", a, b) or ("||", a, b).
def _parse(expr: str):
    tokens = _TOKEN.findall(expr)
    if "".join(tokens).replace(" ", "") != expr.replace(" ", "").replace("\t", ""):
        return None   # characters that are no part of the syntax
    at = 0

    def peek():
        return tokens[at] if at < len(tokens) else None

    def take():
        nonlocal at
        at += 1
        return tokens[at - 1]

    def either():
        left = both()
        while left is not None and peek() == "||":
            take()
            right = both()
            left = None if right is None else ("||", left, right)
        return left

    def both():
        left = unary()
        while left is not None and peek() == "&&":
            take()
            right = unary()
            left = None if right is None else ("&&", left, right)
        return left

    def unary():
        token = peek()
        if token is None:
            return None
        take()
        if token == "!":
            inner = unary()
            return None if inner is None else ("!", inner)
        if token == "(":
            inner = either()
            return inner if inner is not None and peek() == ")" and take() else None
        return token if token not in (")", "&&", "||") else None

    tree = either()
    return tree if tree is not None and at == len(tokens) else None


def _tags(tree, out: set[str]) -> set[str]:
    if isinstance(tree, str):
        out.add(tree)
    else:
        for part in tree[1:]:
            _tags(part, out)
    return out


def _holds(tree, goos: str, goarch: str, on: frozenset[str]) -> bool:
    if isinstance(tree, str):
        if tree in GOOS:
            return tree == goos or _ALSO.get(goos) == tree
        if tree in GOARCH:
            return tree == goarch
        if tree == "unix":
            return goos in _UNIX
        return tree in on
    if tree[0] == "!":
        return not _holds(tree[1], goos, goarch, on)
    if tree[0] == "&&":
        return _holds(tree[1], goos, goarch, on) and _holds(tree[2], goos, goarch, on)
    return _holds(tree[1], goos, goarch, on) or _holds(tree[2], goos, goarch, on)


@lru_cache(maxsize=4096)
def compatible(a: str | None, b: str | None) -> bool:
    """Whether some build (a GOOS, a GOARCH and any other tags) builds both files. A constraint
    that cannot be read, or that names too many other tags to try, builds with anything."""
    if not a or not b or a == b:
        return True
    trees = [_parse(a), _parse(b)]
    if trees[0] is None or trees[1] is None:
        return True
    tags = _tags(trees[0], set()) | _tags(trees[1], set())
    free = sorted(tags - GOOS - GOARCH - {"unix"})
    if len(free) > _MAX_FREE_TAGS:
        return True
    # Each GOOS named, one that satisfies a named one's tag too (android: linux), an unnamed
    # unix one, and one that is neither: every way the expressions can see a GOOS.
    systems = sorted(tags & GOOS) + [g for g in sorted(_ALSO) if _ALSO[g] in tags] + \
        sorted(_UNIX - tags)[:1] + [_OTHER]
    arches = sorted(tags & GOARCH) + [_OTHER]
    for goos, goarch in itertools.product(dict.fromkeys(systems), arches):
        for picked in itertools.product((False, True), repeat=len(free)):
            on = frozenset(t for t, yes in zip(free, picked) if yes)
            if all(_holds(t, goos, goarch, on) for t in trees):
                return True
    return False

