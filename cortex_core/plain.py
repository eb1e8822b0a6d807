"""Typed results as plain JSON-ready values: what `--json` prints and the language server sends."""

from __future__ import annotations

from dataclasses import asdict, is_dataclass


def plain(value):
    """Dataclasses (nested) as dicts, with the derived properties a reader wants (label, short)."""
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if is_dataclass(value) and not isinstance(value, type):
        out = asdict(value)
        for name in ("label", "short", "citation"):
            if hasattr(type(value), name):
                out[name] = getattr(value, name)
        return out
    return value
