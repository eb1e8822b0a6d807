"""Real git repositories with scripted histories, built in temporary folders with the git CLI.

Dates and authors are explicit so that every assertion on history, hotspots and co-change is exact.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

DAY = 86400


class ScriptedRepo:
    def __init__(self, path: Path, branch: str = "main"):
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", branch)
        self.git("config", "user.name", "Test")
        self.git("config", "user.email", "test@example.com")
        self.git("config", "commit.gpgsign", "false")
        self.now = int(time.time())

    def git(self, *args: str, env: dict | None = None) -> str:
        full_env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=str(self.path),
                        GIT_TERMINAL_PROMPT="0", **(env or {}))
        out = subprocess.run(["git", *args], cwd=self.path, env=full_env, check=True,
                             capture_output=True)
        return out.stdout.decode("utf-8", "replace").strip()

    def write(self, rel: str, content: str | bytes) -> None:
        target = self.path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            target.write_text(content, encoding="utf-8")
        else:
            target.write_bytes(content)
        self.git("add", "--", rel)

    def remove(self, rel: str) -> None:
        self.git("rm", "-q", "--", rel)

    def move(self, old: str, new: str) -> None:
        (self.path / new).parent.mkdir(parents=True, exist_ok=True)
        self.git("mv", old, new)

    def commit(self, message: str, author: str = "Ann <ann@example.com>", days_ago: float = 10,
               allow_empty: bool = False) -> str:
        stamp = f"{int(self.now - days_ago * DAY)} +0000"
        name, _, email = author.partition(" <")
        env = {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp,
               "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email.rstrip(">"),
               "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email.rstrip(">")}
        args = ["commit", "-q", "-m", message] + (["--allow-empty"] if allow_empty else [])
        self.git(*args, env=env)
        return self.head()

    def head(self) -> str:
        return self.git("rev-parse", "HEAD")

    def commit_raw_message(self, message: bytes) -> str:
        """Commit the index with a message of arbitrary bytes, exactly as given (git's porcelain
        would re-encode a message that is not UTF-8)."""
        tree = self.git("write-tree")
        parent = self.git("rev-parse", "--verify", "-q", "HEAD") if self.git(
            "rev-list", "--all", "-n", "1") else ""
        stamp = f"{self.now} +0000"
        header = f"tree {tree}\n" + (f"parent {parent}\n" if parent else "") + \
            f"author Test <test@example.com> {stamp}\ncommitter Test <test@example.com> {stamp}\n\n"
        proc = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--stdin"],
                              cwd=self.path, input=header.encode() + message, check=True,
                              capture_output=True)
        sha = proc.stdout.decode().strip()
        self.git("update-ref", "HEAD", sha)
        return sha


# The sample project the language server, MCP and VS Code tests share: a function that changes,
# its callers in the same file and in another module.
SAMPLE_CORE = '''import os


def compute(x):
    return x + {n}


def helper():
    return 2


class Engine:
    def run(self):
        return compute(3)
'''


def sample_core(n: int) -> str:
    """The core module, with compute adding `n`."""
    return SAMPLE_CORE.format(n=n)


def sample_use(module: str = "pkg.core") -> str:
    """A module that imports compute from `module` and calls it."""
    return f"from {module} import compute\n\n\ndef main():\n    return compute(1)\n"
