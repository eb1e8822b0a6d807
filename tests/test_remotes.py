"""Web links to commits from remote URLs: every form git accepts, and nothing unsafe in a link."""

from __future__ import annotations

import subprocess

import pytest

from cortex_core.git.remotes import commit_url, web_base, web_base_from_url

SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.mark.parametrize("url", [
    "https://github.com/octo/hello",
    "https://github.com/octo/hello.git",
    "https://github.com/octo/hello/",
    "https://github.com/octo/hello.git/",
    "http://github.com/octo/hello",
    "https://GitHub.com/octo/hello",
    "https://www.github.com/octo/hello",
    "ssh://git@github.com/octo/hello.git",
    "ssh://git@github.com:22/octo/hello.git",
    "ssh://git@ssh.github.com:443/octo/hello.git",
    "git+ssh://git@github.com/octo/hello.git",
    "git://github.com/octo/hello.git",
    "git@github.com:octo/hello.git",
    "git@github.com:octo/hello",
    "git@github.com:/octo/hello.git",
    "github.com:octo/hello.git",
    "  https://github.com/octo/hello.git\n",
])
def test_github_forms(url):
    assert web_base_from_url(url) == "https://github.com/octo/hello"


@pytest.mark.parametrize("url, expected", [
    ("https://gitlab.com/group/project.git", "https://gitlab.com/group/project"),
    ("git@gitlab.com:group/sub/deeper/project.git", "https://gitlab.com/group/sub/deeper/project"),
    ("ssh://git@altssh.gitlab.com:443/group/project.git", "https://gitlab.com/group/project"),
    ("https://bitbucket.org/team/repo.git", "https://bitbucket.org/team/repo"),
    ("git@bitbucket.org:team/repo.git", "https://bitbucket.org/team/repo"),
    ("https://codeberg.org/forge/tool.git", "https://codeberg.org/forge/tool"),
    ("git@codeberg.org:forge/tool.git", "https://codeberg.org/forge/tool"),
    ("https://github.com/o.k/re_po-2~x", "https://github.com/o.k/re_po-2~x"),
])
def test_other_hosts_and_names(url, expected):
    assert web_base_from_url(url) == expected


@pytest.mark.parametrize("url", [
    "https://user:s3cr3t-token@github.com/octo/hello.git",
    "https://x-access-token:s3cr3t-token@github.com/octo/hello",
    "https://s3cr3t-token@github.com/octo/hello.git",
    "ssh://git:s3cr3t-token@github.com:22/octo/hello.git",
])
def test_credentials_never_leak(url):
    base = web_base_from_url(url)
    assert base == "https://github.com/octo/hello"
    assert "s3cr3t" not in commit_url(base, SHA)


@pytest.mark.parametrize("url", [
    "https://git.example.com/octo/hello.git",      # self-hosted: layout unknown
    "https://gitlab.example.org/group/project",
    "git@gitea.local:octo/hello.git",
    "https://github.com.evil.com/octo/hello",
    "https://github.com@evil.com/octo/hello",
    "https://evil.com/github.com/octo/hello",
    "file:///srv/git/hello.git",
    "/srv/git/hello.git",
    "../hello",
    "C:/repos/hello",
    "",
])
def test_unknown_hosts_and_local_paths(url):
    assert web_base_from_url(url) is None


@pytest.mark.parametrize("url", [
    "https://github.com/octo/hello)",
    "https://github.com/octo/hel)lo](javascript:alert(1))",
    "javascript:alert(1)",
    "javascript://github.com/octo/hello",
    "git@github.com:javascript:alert(1)/x",
    "https://github.com/octo/hello world",
    "https://github.com/octo/hello%20world",
    "https://github.com/octo/hel\tlo",
    "https://github.com/octo/hel\nlo",
    "https://github.com/octo/<script>",
    "https://github.com/octo/h\u00e9llo",
    "https://github.com/octo/../hello",
    "https://github.com/../../evil/x",
    "https://github.com/./hello",
    "https://github.com/octo//hello",
    "https://github.com/octo/hello?tab=readme",
    "https://github.com/octo/hello#readme",
    "https://github.com/octo",
    "https://github.com/octo/hello/tree/main",     # a page, not a repository
    "https://gitlab.com/group/project/-/tree/main",
    "https://bitbucket.org/team/repo/src",
    "ssh://git@github.com:notaport/octo/hello.git",
])
def test_malicious_or_malformed_names_are_rejected(url):
    assert web_base_from_url(url) is None


def test_commit_url_per_host():
    assert commit_url("https://github.com/o/r", SHA) == f"https://github.com/o/r/commit/{SHA}"
    assert commit_url("https://gitlab.com/g/s/r", SHA) == f"https://gitlab.com/g/s/r/commit/{SHA}"
    assert commit_url("https://codeberg.org/o/r", SHA) == f"https://codeberg.org/o/r/commit/{SHA}"
    assert commit_url("https://bitbucket.org/o/r", SHA) == f"https://bitbucket.org/o/r/commits/{SHA}"
    assert commit_url("https://github.com/o/r/", "abc1234") == "https://github.com/o/r/commit/abc1234"
    with pytest.raises(ValueError):
        commit_url("https://github.com/o/r", "HEAD)](javascript:x)")


def _git(path, *args):
    subprocess.run(["git", *args], cwd=path, check=True, capture_output=True,
                   env={"GIT_CONFIG_NOSYSTEM": "1", "HOME": str(path), "PATH": "/usr/bin:/bin"})


def test_web_base_reads_origin_of_a_real_repository(tmp_path):
    _git(tmp_path, "init", "-q")
    assert web_base(tmp_path) is None  # no origin
    _git(tmp_path, "remote", "add", "upstream", "https://github.com/other/fork.git")
    assert web_base(tmp_path) is None  # only origin counts
    _git(tmp_path, "remote", "add", "origin", "https://bot:s3cr3t@github.com/octo/hello.git")
    assert web_base(tmp_path) == "https://github.com/octo/hello"
    _git(tmp_path, "remote", "set-url", "origin", "git@gitlab.com:group/sub/project.git")
    assert web_base(tmp_path) == "https://gitlab.com/group/sub/project"
    _git(tmp_path, "remote", "set-url", "origin", "https://git.internal.example/octo/hello.git")
    assert web_base(tmp_path) is None


def test_web_base_outside_a_repository(tmp_path):
    assert web_base(tmp_path / "missing") is None
