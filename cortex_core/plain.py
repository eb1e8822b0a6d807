"""Typed results as plain JSON-ready values: what `--json` prints, the language server's custom
requests and the MCP tools' structured content.

A field's key on the wire is its name, unless its metadata names another:
`field(metadata={"wire": "old_name"})` keeps a protocol's key when the field is renamed.
The front ends' JSON is held to snapshots (tests/test_wire.py): a renamed field fails there.
"""

from __future__ import annotations

from dataclasses import Field, fields, is_dataclass


def plain(value):
    """Dataclasses (nested) as dicts, with the derived properties a reader wants (label, short)
    on the outermost ones."""
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if is_dataclass(value) and not isinstance(value, type):
        out = _fields(value)
        for name in ("label", "short", "citation"):
            if hasattr(type(value), name):
                out[name] = getattr(value, name)
        return out
    return value


def wire_name(field: Field) -> str:
    """A dataclass field's key in JSON."""
    return field.metadata.get("wire", field.name)


def _fields(value):
    """As dataclasses.asdict, with each field under its wire name."""
    if is_dataclass(value) and not isinstance(value, type):
        return {wire_name(f): _fields(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, list):
        return [_fields(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_fields(v) for v in value)
    if isinstance(value, dict):
        return {_fields(k): _fields(v) for k, v in value.items()}
    return value
