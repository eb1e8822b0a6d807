"""Links to a commit's web page, from the repository's `origin` remote.

Only hosts whose URL layout is known are linked (GitHub, GitLab, Bitbucket, Codeberg): a
self-hosted GitLab or Gitea could live under any path prefix, and a wrong link is worse than none.
The result is written into markdown links, so owner and repository names are held to a strict
character set, and credentials in a remote URL never reach it.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

import pygit2

# Host as written in a remote -> the host of its web pages (SSH-over-443 endpoints included).
_HOSTS = {
    "github.com": "github.com", "www.github.com": "github.com", "ssh.github.com": "github.com",
    "gitlab.com": "gitlab.com", "www.gitlab.com": "gitlab.com", "altssh.gitlab.com": "gitlab.com",
    "bitbucket.org": "bitbucket.org", "www.bitbucket.org": "bitbucket.org",
    "altssh.bitbucket.org": "bitbucket.org",
    "codeberg.org": "codeberg.org",
}
_SCHEMES = frozenset({"https", "http", "ssh", "git", "git+ssh"})
# Safe in a URL and inside markdown's (...) without escaping.
_SEGMENT = re.compile(r"[A-Za-z0-9._~-]+")
# scp-like syntax: [user@]host:path, recognised by git when a colon comes before any slash.
_SCP = re.compile(r"(?:[^@/:]+@)?(?P<host>[^@/:]+):(?P<path>[^:].*)")
_SHA = re.compile(r"[0-9a-fA-F]{4,64}")
_MAX_GROUP_DEPTH = 20  # GitLab's own limit on nested subgroups


def web_base(repo_root: Path) -> str | None:
    """"https://host/owner/name" of the `origin` remote, or None (no origin, unknown host)."""
    try:
        repo = pygit2.Repository(str(repo_root))
        url = repo.remotes["origin"].url
    except (pygit2.GitError, KeyError, ValueError):
        return None
    return web_base_from_url(url) if url else None


def web_base_from_url(url: str) -> str | None:
    """The web address of a repository from a remote URL in any of git's forms, or None."""
    url = url.strip()
    # urlsplit silently drops tabs and newlines inside a URL; such a URL is not one to trust.
    if any(ord(ch) <= 32 or ord(ch) >= 127 for ch in url):
        return None
    parsed = _host_and_path(url)
    if parsed is None:
        return None
    host, path = parsed
    web_host = _HOSTS.get(host.lower())
    if web_host is None:
        return None
    segments = _segments(path)
    if segments is None:
        return None
    # GitLab nests groups (group/subgroup/project); the others are exactly owner/name.
    if web_host == "gitlab.com":
        if not 2 <= len(segments) <= _MAX_GROUP_DEPTH + 1:
            return None
    elif len(segments) != 2:
        return None
    return f"https://{web_host}/{'/'.join(segments)}"


def commit_url(base: str, sha: str) -> str:
    """The web page of commit `sha` under `base` (a web_base result)."""
    if not _SHA.fullmatch(sha):
        raise ValueError(f"not a commit id: {sha!r}")
    base = base.rstrip("/")
    if urlsplit(base).hostname == "bitbucket.org":
        return f"{base}/commits/{sha}"
    return f"{base}/commit/{sha}"


def _host_and_path(url: str) -> tuple[str, str] | None:
    """(host, path) of a URL or of git's scp-like form; credentials and port dropped."""
    if "://" in url:
        try:
            parts = urlsplit(url)
            host = parts.hostname  # lowercased, without user:password@ and :port
            _ = parts.port  # raises on a port that is not a number
        except ValueError:
            return None
        if parts.scheme.lower() not in _SCHEMES or not host or parts.query or parts.fragment:
            return None
        return host, parts.path
    match = _SCP.fullmatch(url)
    if match is None:
        return None
    return match.group("host"), match.group("path")


def _segments(path: str) -> list[str] | None:
    """Owner, groups and name of a repository path, or None when any is unsafe in a link."""
    path = path.strip("/")
    if path.endswith(".git"):
        path = path[:-4]
    segments = path.split("/")
    for segment in segments:
        # Anything else (%, spaces, parentheses, colons, ..) could escape a markdown link or
        # point elsewhere than the repository.
        if not _SEGMENT.fullmatch(segment) or segment in (".", ".."):
            return None
    # GitLab's "/-/" separates a project from its pages (…/-/tree/main): a page, not a repository.
    if "-" in segments:
        return None
    return segments
