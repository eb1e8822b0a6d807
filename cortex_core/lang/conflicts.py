"""Files that hold git's conflict markers: what each side of the conflicts reads as.

A file committed in the middle of a merge or rebase, or open in the editor during one, holds both
sides of each conflict between marker lines:

    <<<<<<< HEAD            (ours)
    ...
    ||||||| base            (diff3 style only: the common ancestor)
    ...
    =======                 (theirs follows)
    ...
    >>>>>>> branch

The markers are a syntax error in every language, and tree-sitter's recovery from it can cut
the file's definitions short: urfave/cli 876fa0f0 committed flag_int.go so, and its methods
vanished from the symbol table for one commit, came back as "added" in the next, and one was
paired with a method of the same name in another file ("moved"). A parser reads one side
instead: the other side's lines, the base's and the markers are blanked to spaces, so every
byte and line keeps its place and a definition's range is the same in the text with markers.
"""

from __future__ import annotations

_OURS, _BASE, _THEIRS = b"<<<<<<<", b"|||||||", b">>>>>>>"
_SPLIT = b"======="
_BLANK = bytes(b if b in (0x0A, 0x0D) else 0x20 for b in range(256))


def may_hold_conflicts(source: bytes) -> bool:
    """A cheap test that lets nearly every text skip the line scan."""
    return source.startswith(_OURS) or b"\n" + _OURS in source


def conflict_sides(source: bytes) -> tuple[bytes, bytes] | None:
    """(ours, theirs): the text as each side of its conflicts reads, the rest blanked; None
    when it holds no complete, well-formed conflict block (a lone `=======` is text, a block
    left open or nested is not guessed at)."""
    if not may_hold_conflicts(source):
        return None
    lines = source.splitlines(keepends=True)
    # Which lines each side keeps: 0 both, 1 ours, 2 neither (base, markers), 3 theirs.
    owner: list[int] = []
    state = 0
    blocks = 0
    for line in lines:
        marker = _marker(line)
        if marker is None:
            owner.append(state)
            continue
        if state == 0 and marker == _OURS:
            state = 1
        elif state == 1 and marker == _BASE:
            state = 2
        elif state in (1, 2) and marker == _SPLIT:
            state = 3
        elif state == 3 and marker == _THEIRS:
            state = 0
            blocks += 1
        elif state == 0:
            owner.append(0)          # `=======` or `>>>>>>>` outside a block: plain text
            continue
        else:
            return None              # out of order: nested or hand-made, not git's
        owner.append(2)
    if state != 0 or blocks == 0:
        return None
    return _keep(lines, owner, 1), _keep(lines, owner, 3)


def _marker(line: bytes) -> bytes | None:
    """The marker a line is: seven characters at its start, then a label (or nothing); the
    separator alone on its line."""
    head = line[:7]
    rest = line[7:].rstrip(b"\r\n")
    if head == _SPLIT:
        return _SPLIT if not rest else None
    if head in (_OURS, _BASE, _THEIRS) and (not rest or rest.startswith(b" ")):
        return head
    return None


def _keep(lines: list[bytes], owner: list[int], side: int) -> bytes:
    return b"".join(line if who in (0, side) else line.translate(_BLANK)
                    for line, who in zip(lines, owner))
