"""Authors a search query names: `@login`, as changelogs credit them ("Fix typos. by @alice").

A commit matches a login when its author's name or the local part of its author's e-mail is
that login once case and everything but letters and digits are dropped: `@davidhuser` is
"David Huser", `@tiangolo` is tiangolo@gmail.com, `@TeoZosa` is
12345+TeoZosa@users.noreply.github.com. Exact matches only: a login is not guessed from a part
of a name. search.py multiplies a matching commit's score (AUTHOR_WEIGHT there).
"""

from __future__ import annotations

import re

# A GitHub login: letters, digits and inner hyphens, at most 39 characters, not inside a word or
# an e-mail address (user@example.com names no one); a bot's "[bot]" suffix is left out.
_MENTION = re.compile(r"(?<![\w@.+-])@([A-Za-z0-9](?:[A-Za-z0-9-]{0,37}[A-Za-z0-9])?)"
                      r"(?:\[bot\])?(?![\w@-])")


def key(text: str) -> str:
    """What a login and an author's name are compared by: lower case, letters and digits."""
    return "".join(ch for ch in text.casefold() if ch.isalnum())


def named_logins(query: str) -> dict[str, str]:
    """key -> the login as written, for each `@login` of the query."""
    out: dict[str, str] = {}
    for match in _MENTION.finditer(query):
        out.setdefault(key(match.group(1)), match.group(1))
    return out


def authored_by(con, items: list[int], logins: dict[str, str]) -> dict[int, str]:
    """item id -> the login its commit's author matches, for the commit items among `items`."""
    out: dict[int, str] = {}
    if not logins:
        return out
    for start in range(0, len(items), 500):
        chunk = items[start:start + 500]
        marks = ",".join("?" * len(chunk))
        for item, name, email in con.execute(
                "select i.id, c.author_name, c.author_email from items i join commits c on"
                f" c.id = i.commit_id where i.id in ({marks})", chunk):
            local = email.rpartition("@")[0].rpartition("+")[2] if "@" in email else email
            login = logins.get(key(name)) or logins.get(key(local))
            if login is not None:
                out[item] = login
    return out
