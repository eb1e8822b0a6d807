"""The shapes of the JSON the front ends send, and the committed snapshots they are held to.

A shape is what a client of the JSON relies on, without the data: every key path with the JSON
types seen there. `entries[].commit.sha: string` is the key `sha` of the object under `commit` in
the elements of the list `entries`. All elements of a list are read (their shapes merged), so a
key that only some elements have is there too; a path where both a value and null were seen is
`null|string`. Numbers are `number`, integral or not: JSON does not tell them apart.

Objects whose keys are data (paths, relations) are named in `maps`: their keys read as `*`.

The snapshots are tests/wire/<front end>.json, one shape per operation. `CORTEX_UPDATE_WIRE=1`
rewrites them: do that only when a protocol is meant to change, and say so in the commit.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

SNAPSHOTS = Path(__file__).parent / "wire"
UPDATE = "CORTEX_UPDATE_WIRE"


def json_type(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def shape(value, maps: frozenset[str] = frozenset()) -> dict[str, str]:
    """Every key path of `value` with the types seen there ("" is the value itself)."""
    seen: dict[str, set[str]] = {}
    _walk(value, "", seen, maps)
    return {path: "|".join(sorted(types)) for path, types in sorted(seen.items())}


def _walk(value, path: str, seen: dict[str, set[str]], maps: frozenset[str]) -> None:
    seen.setdefault(path, set()).add(json_type(value))
    if isinstance(value, dict):
        for key, item in value.items():
            name = "*" if path in maps else str(key)
            _walk(item, f"{path}.{name}" if path else name, seen, maps)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _walk(item, f"{path}[]", seen, maps)


def check(front_end: str, shapes: dict[str, dict[str, str]]) -> None:
    """Compare the shapes of a front end's operations with its snapshot (or rewrite it)."""
    path = SNAPSHOTS / f"{front_end}.json"
    if os.environ.get(UPDATE):
        path.write_text(json.dumps(shapes, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        return
    known = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    problems = differences(known, shapes)
    if problems:
        raise AssertionError(
            f"the JSON of {front_end} no longer matches tests/wire/{front_end}.json:\n"
            + "\n".join(problems)
            + "\nClients read these keys. Keep a renamed field's key with "
            "field(metadata={\"wire\": \"old_name\"}) (cortex_core/plain.py), or a front end's "
            "own key where it builds its JSON; or, if the protocol is meant to change, run\n"
            f"  {UPDATE}=1 python -m pytest tests/test_wire.py\n"
            "and commit the snapshot with the change and its docs (docs/protocol.md, "
            "docs/agents.md, docs/commands.md).")


def _in_empty_list(key: str, seen: dict) -> bool:
    """Whether `key` is inside a list that had no elements in `seen`: how many there are is data
    (no skipped files, nothing queued), and such a list says nothing of its elements' keys."""
    cut = key.find("[]")
    while cut >= 0:
        if key[:cut] in seen and key[:cut + 2] not in seen:
            return True
        cut = key.find("[]", cut + 2)
    return False


def same_types(before: str, after: str) -> bool:
    """Types agree but for null: whether a value was there in this repository's answer is data
    (no note, no link), not the protocol. A key's name, and a string that became a number, is."""
    a, b = set(before.split("|")) - {"null"}, set(after.split("|")) - {"null"}
    return a == b or not a or not b


def differences(known: dict, now: dict) -> list[str]:
    out = []
    for op in sorted(set(known) | set(now)):
        if op not in now:
            out.append(f"  {op}: in the snapshot, not exercised any more")
            continue
        if op not in known:
            out.append(f"  {op}: new, not in the snapshot")
            continue
        before, after = known[op], now[op]
        for key in sorted(set(before) | set(after)):
            if _in_empty_list(key, before) or _in_empty_list(key, after):
                continue
            if key not in after:
                out.append(f"  {op}: {key or '(the result)'} ({before[key]}) is gone")
            elif key not in before:
                out.append(f"  {op}: {key or '(the result)'} ({after[key]}) is new")
            elif not same_types(before[key], after[key]):
                out.append(f"  {op}: {key or '(the result)'} was {before[key]}, is {after[key]}")
    return out
