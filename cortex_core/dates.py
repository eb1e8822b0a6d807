"""Times given by people and agents: a date, or a number of days back."""

from __future__ import annotations

import time

from .errors import CortexError

MAX_DAYS = 1_000_000


def since(text: str, now: float | None = None) -> int:
    """`YYYY-MM-DD` (UTC midnight) or a number of days back from now, as epoch seconds."""
    from datetime import datetime, timezone
    try:
        days = float(text)
    except ValueError:
        try:
            when = datetime.strptime(text.strip(), "%Y-%m-%d").replace(tzinfo=timezone.utc)
        except ValueError:
            raise CortexError(f"not a date (YYYY-MM-DD) or a number of days: "
                              f"{text[:40]!r}") from None
        return int(when.timestamp())
    if not 0 <= days <= MAX_DAYS:      # also refuses NaN
        raise CortexError(f"must be a number of days between 0 and {MAX_DAYS}: {text[:40]}")
    return int((time.time() if now is None else now) - days * 86400)
