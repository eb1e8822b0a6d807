"""Authors a search query names: `@login`, as changelogs credit them ("Fix typos. by @alice").

A commit matches a login when its author's name or the local part of its author's e-mail is
that login once case, accents and everything but letters and digits are dropped: `@davidhuser`
is "David Huser", `@josegarcia` is "José García", `@tiangolo` is tiangolo@gmail.com, `@TeoZosa`
is 12345+TeoZosa@users.noreply.github.com, `@dependabot` is "dependabot[bot]". A merge of a
pull request is matched by the login it names ("Merge pull request #5 from alice/fix"), not by
whoever merged it. Exact matches only: a login is not guessed from a part of a name.
search.py multiplies a matching commit's score (AUTHOR_WEIGHT there).
"""

from __future__ import annotations

import re
import threading
import unicodedata
import weakref

# A GitHub login: letters, digits and inner hyphens, at most 39 characters, not inside a word or
# an e-mail address (user@example.com names no one); a bot's "[bot]" suffix is left out. Not a
# decorator or an attribute (`@admin.register`, `@lru_cache(`): a sentence's full stop may follow.
_MENTION = re.compile(r"(?<![\w@.+-])@([A-Za-z0-9](?:[A-Za-z0-9-]{0,37}[A-Za-z0-9])?)"
                      r"(?:\[bot\])?(?![\w@(-]|\.\w)")
_MERGED_FROM = re.compile(r"Merge pull request #\d+ from ([A-Za-z0-9][A-Za-z0-9-]{0,38})/")
_BOT = "[bot]"
# Longer names or addresses are no login (GitHub's are 39 characters at most): not worth keying.
_LONGEST = 100


def key(text: str) -> str:
    """What a login and an author's name are compared by: lower case, letters and digits, their
    accents dropped (logins are ASCII; names often are not)."""
    text = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in text if ch.isalnum() and not unicodedata.combining(ch))


def named_logins(query: str) -> dict[str, str]:
    """key -> the login as written, for each `@login` of the query."""
    out: dict[str, str] = {}
    for match in _MENTION.finditer(unicodedata.normalize("NFC", query)):
        out.setdefault(key(match.group(1)), match.group(1))
    return out


def known_logins(con, logins: dict[str, str]) -> dict[str, str]:
    """The logins of `logins` that some commit's author (or a merged pull request) matches."""
    if not logins:
        return {}
    keys = _author_keys(con)
    return {k: login for k, login in logins.items() if k in keys}


_KEYS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # con -> (stamp, keys)
_KEYS_LOCK = threading.Lock()


def _author_keys(con) -> frozenset[str]:
    """Every key a login can match in this store: its authors' names and e-mail local parts, and
    the logins its merged pull requests name. Read in one pass when the store changed
    (store_stamp), else the connection's last answer: a server asks on every search."""
    from cortex_core.store.store import store_stamp
    stamp = store_stamp(con)
    with _KEYS_LOCK:
        kept = _KEYS.get(con)
    if kept is not None and kept[0] == stamp:
        return kept[1]
    keys: set[str] = set()
    for name, email in con.execute(
            "select distinct substr(author_name, 1, ?), substr(author_email, 1, ?) from commits",
            (_LONGEST + 1, 2 * _LONGEST + 1)):
        keys.update(_keys_of(name or "", email or ""))
    for (subject,) in con.execute("select substr(subject, 1, 200) from commits"
                                  " where is_merge = 1 and subject like 'Merge pull request #%'"):
        merged = _MERGED_FROM.match(subject)
        if merged:
            keys.add(key(merged.group(1)))
    value = frozenset(keys)
    with _KEYS_LOCK:
        _KEYS[con] = (stamp, value)
    return value


def without_logins(query: str, logins: dict[str, str]) -> str:
    """`query` less its mentions of `logins`: they name who, not what, so they are no words to
    match (a login also in subjects, "Merge pull request #15 from tomchristie/…", ranked those
    above the commits about the query's words). The query as it is when nothing else is left."""
    if not logins:
        return query
    text = unicodedata.normalize("NFC", query)
    rest = _MENTION.sub(lambda m: " " if key(m.group(1)) in logins else m[0], text)
    return rest if rest.strip(" \t\n.,;:!?()") else query


def authored_by(con, items: list[int], logins: dict[str, str]) -> dict[int, str]:
    """item id -> the login its commit's author matches, for the commit items among `items`."""
    out: dict[int, str] = {}
    if not logins:
        return out
    for start in range(0, len(items), 500):
        chunk = items[start:start + 500]
        marks = ",".join("?" * len(chunk))
        for item, name, email, subject, merge in con.execute(
                "select i.id, substr(c.author_name, 1, ?), substr(c.author_email, 1, ?),"
                " substr(c.subject, 1, 200), c.is_merge from items i join commits c on"
                f" c.id = i.commit_id where i.id in ({marks})",
                (_LONGEST + 1, 2 * _LONGEST + 1, *chunk)):
            login = _login(logins, name, email, subject if merge else None)
            if login is not None:
                out[item] = login
    return out


def _login(logins: dict[str, str], name: str, email: str, merge_subject: str | None
           ) -> str | None:
    if merge_subject is not None:
        merged = _MERGED_FROM.match(merge_subject)
        if merged:   # the pull request's author, not whoever merged it
            return logins.get(key(merged.group(1)))
    for k in _keys_of(name, email):
        login = logins.get(k)
        if login is not None:
            return login
    return None


def _keys_of(name: str, email: str):
    """The keys an author answers to: the name's, then the e-mail local part's."""
    local = email.rpartition("@")[0] if "@" in email else email
    number, plus, rest = local.partition("+")
    local = rest if plus and number.isdigit() else number   # GitHub's 123+login@users.noreply…
    for text in (name, local):
        text = text.removesuffix(_BOT)
        if text and len(text) <= _LONGEST:
            yield key(text)
