"""The server's settings: from initializationOptions and workspace/didChangeConfiguration.

Keys are camelCase, at the top level or under "cortex" (VS Code sends its `cortex.*` section that
way). Unknown keys are ignored: clients keep their own settings in the same section. An invalid
value is reported and its default kept.

The settings the engine also has (`recencyHalfLifeDays`, `tokenEncoding`, `clock`) are unset by
default: each repository's `.cortex/config.toml` and the engine's defaults then decide, as they
do for the command line and MCP (cortex_core/config.py); a value the client sets goes over them
(`engine_overrides`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from cortex_core.api import CLOCKS, ENCODINGS, CortexError, encoding_name


@dataclass(frozen=True)
class Settings:
    hotspot_threshold: int = 4           # changes within the window that make a symbol hot
    hotspot_window_days: float = 90.0
    history_length: int = 5              # commits listed in a hover
    token_budget: int = 4000             # context packs
    # None: the repository's setting (.cortex/config.toml, else the engine's default)
    token_encoding: str | None = None    # how packs count tokens: o200k, cl100k or estimate
    model: str | None = None             # embedding model for indexing ("none": no vectors)
    recency_half_life_days: float | None = None  # hotspot score, and search and pack recency
    poll_interval: float = 2.0           # seconds between HEAD checks; 0 turns polling off
    hover: bool = True
    code_lens: bool = True
    commit_links: bool = True            # hover commit ids link to their web page
    index_on_start: bool = True
    clock: str | None = None             # windows count back from: "repository" (HEAD) or "wall"


# camelCase key -> (field, check returning an error or None)
def _int(lo: int, hi: int):
    def check(v):
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            return f"an integer from {lo} to {hi}"
        return None
    return check


def _number(lo: float, hi: float):
    def check(v):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi:
            return f"a number from {lo:g} to {hi:g}"
        return None
    return check


def _bool(v):
    return None if isinstance(v, bool) else "true or false"


def _poll(v):
    # 0 turns polling off; below 0.1 s it would spin a core.
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (v == 0 or 0.1 <= v <= 3600):
        return "0 (off) or a number of seconds from 0.1 to 3600"
    return None


def _encoding(v):
    try:
        encoding_name(v)
        return None
    except CortexError:
        return f"{', '.join(ENCODINGS[:-1])} or {ENCODINGS[-1]}"


def _clock(v):
    return None if _clock_name(v) in CLOCKS else '"repository" or "wall"'


def _clock_name(v):
    return v.strip().lower() if isinstance(v, str) else v


def _model(v):
    # It goes on the indexer's command line: no NUL, and text that UTF-8 can hold (JSON can
    # carry a lone surrogate, which no argument can).
    if v is None or (isinstance(v, str) and 0 < len(v.strip()) <= 500 and "\0" not in v
                     and _encodable(v)):
        return None
    return 'a model name, a folder, or "none"'


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


_KEYS = {
    "hotspotThreshold": ("hotspot_threshold", _int(1, 10_000)),
    "hotspotWindowDays": ("hotspot_window_days", _number(1, 36_500)),
    "historyLength": ("history_length", _int(0, 50)),
    "tokenBudget": ("token_budget", _int(200, 1_000_000)),
    "tokenEncoding": ("token_encoding", _encoding),
    "model": ("model", _model),
    "recencyHalfLifeDays": ("recency_half_life_days", _number(1, 36_500)),
    "pollInterval": ("poll_interval", _poll),
    "hover": ("hover", _bool),
    "codeLens": ("code_lens", _bool),
    "commitLinks": ("commit_links", _bool),
    "indexOnStart": ("index_on_start", _bool),
    "clock": ("clock", _clock),
}
assert {f for f, _ in _KEYS.values()} == {f.name for f in fields(Settings)}


def parse_settings(raw, base: Settings = Settings()) -> tuple[Settings, list[str]]:
    """Settings from a client's JSON, starting from `base`; with one message per bad value.

    A key set to null goes back to its default."""
    if raw is None:
        return base, []
    if not isinstance(raw, dict):
        return base, [f"Cortex settings must be an object, not {type(raw).__name__}; "
                      "using the previous settings"]
    section = raw.get("cortex", raw)
    if not isinstance(section, dict):
        return base, ["the `cortex` settings must be an object; using the previous settings"]
    changes, errors = {}, []
    for key, value in section.items():
        if key not in _KEYS:
            continue
        name, check = _KEYS[key]
        if value is None:
            changes[name] = getattr(Settings(), name)
            continue
        problem = check(value)
        if problem:
            default = getattr(Settings(), name)
            errors.append(f"Cortex setting {key} = {_show(value)} is not valid: expected {problem};"
                          f" using {_show(default)}")
            changes[name] = default
        else:
            changes[name] = _CLEAN.get(name, _strip)(value)
    return replace(base, **changes), errors


def _strip(value):
    return value.strip() if isinstance(value, str) else value


_CLEAN = {"token_encoding": encoding_name,   # o200k_base -> o200k
          "clock": _clock_name}               # " Wall" -> wall, as encodings are read


def engine_overrides(settings: Settings) -> dict[str, object]:
    """The engine settings the client set, by the engine's names (config.override)."""
    out: dict[str, object] = {}
    if settings.recency_half_life_days is not None:
        out["hotspots.half_life_days"] = settings.recency_half_life_days
        out["search.half_life_days"] = settings.recency_half_life_days
    if settings.token_encoding is not None:
        out["packs.encoding"] = settings.token_encoding
    if settings.clock is not None:
        out["time.clock"] = settings.clock
    return out


def _show(value) -> str:
    if value is None:
        return "the repository's setting"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
