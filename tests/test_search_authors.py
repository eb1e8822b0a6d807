"""Search: an author the query names (`@login`, as changelogs credit them) lifts their commits.

Real repositories and stores; the command line through a real process."""

from __future__ import annotations

import subprocess
import sys

from cortex_core.memory.authors import named_logins
from cortex_core.memory.search import AUTHOR_WEIGHT, SearchOptions, search


def test_logins_are_read_as_changelogs_write_them():
    assert named_logins("Fix typos in docs. by @jianghuyiyuan.") == {
        "jianghuyiyuan": "jianghuyiyuan"}
    assert named_logins("by @Kludex and @tiangolo") == {"kludex": "Kludex", "tiangolo": "tiangolo"}
    assert named_logins("Update People. by [@github-actions[bot]].") == {
        "githubactions": "github-actions"}
    assert named_logins("Thanks to @alice.") == {"alice": "alice"}   # a full stop may follow
    # An e-mail address, a word, a trailing hyphen, a decorator or an attribute: nobody.
    for text in ("mail user@example.com now", "bob@x.org", "a@b", "x @foo- y", "@-x", "@",
                 "use @lru_cache(maxsize=2)", "@admin.register the model", "@dataclass(frozen)"):
        assert named_logins(text) == {}, text


def _three_authors(repo):
    repo.write("docs/index.md", "one\n")
    repo.commit("Fix typos in docs", author="Alice Liddell <alice@example.com>", days_ago=30)
    repo.write("docs/index.md", "two\n")
    repo.commit("Fix typos in docs", author="Bob Smith <12345+bobsmith@users.noreply.github.com>",
                days_ago=20)
    repo.write("docs/index.md", "three\n")
    repo.commit("Fix typos in the docs index", author="Carol <carol@example.com>", days_ago=10)


def test_a_named_author_lifts_their_commit(repo, cortex):
    _three_authors(repo)
    cortex.index(model="none")
    con = cortex.reader()

    def first(query):
        hits = search(con, query, SearchOptions(kinds=("commit",))).hits
        return hits[0].author, hits[0].why

    plain = search(con, "Fix typos in docs", SearchOptions(kinds=("commit",))).hits
    assert all(h.why.named_author is None and h.why.author_factor == 1.0 for h in plain)
    # The name, the e-mail's local part behind GitHub's numeric prefix, any case.
    author, why = first("Fix typos in docs. by @AliceLiddell.")
    assert author == "Alice Liddell" and why.named_author == "AliceLiddell"
    assert why.author_factor == 1.0 + AUTHOR_WEIGHT
    author, why = first("Fix typos in docs by @bobsmith")
    assert author == "Bob Smith" and why.named_author == "bobsmith"
    author, why = first("Fix typos in docs by @alice")   # her e-mail's local part
    assert author == "Alice Liddell" and why.named_author == "alice"
    # Not a guess from a part of a name, and an address names no one.
    assert first("Fix typos in docs by @liddell")[1].named_author is None
    assert first("Fix typos in docs, alice@example.com")[1].named_author is None


def test_a_named_author_does_not_beat_a_much_better_match(repo, cortex):
    repo.write("a.py", "x = 1\n")
    repo.commit("Refactor the parser", author="Dora <dora@example.com>", days_ago=30)
    repo.write("b.py", "y = 1\n")
    repo.commit("Fix crash when the config file is empty", author="Eve <eve@example.com>",
                days_ago=20)
    cortex.index(model="none")
    hits = search(cortex.reader(), "Fix crash when the config file is empty by @dora",
                  SearchOptions(kinds=("commit",))).hits
    assert hits[0].author == "Eve"   # Dora's commit shares no word with the entry


def test_cli_explain_says_the_author_was_named(repo, cortex):
    _three_authors(repo)
    cortex.index(model="none")
    shown = subprocess.run(
        [sys.executable, "-m", "cortex_cli.cli", "search", "Fix typos in docs by @bobsmith",
         "--explain", "--repo", str(repo.path), "--db", str(cortex.db)],
        capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert f"by @bobsmith, named in the query: fused × {1 + AUTHOR_WEIGHT:g}" in shown.stdout


def test_bots_accents_plus_addresses_and_merges(repo, cortex):
    """A bot is named without its [bot]; accents are not spelt in logins; only GitHub's numeric
    prefix is dropped before a +; a merged pull request is its author's, not its merger's."""
    for n, (author, subject) in enumerate([
            ("dependabot[bot] <49699333+dependabot[bot]@users.noreply.github.com>",
             "Bump mkdocs from 1.5 to 1.6"),
            ("José García <jg@example.com>", "Fix parser crash on empty input"),
            ("Alice <alice+github@gmail.com>", "Fix typos in the guide")]):
        repo.write(f"f{n}.txt", f"{n}\n")
        repo.commit(subject, author=author, days_ago=40 - n)
    main = repo.git("rev-parse", "--abbrev-ref", "HEAD")
    repo.git("checkout", "-q", "-b", "fix-config")
    repo.write("config.py", "EMPTY = None\n")
    repo.commit("Handle an empty config", author="Ken Doe <ken@example.com>", days_ago=20)
    repo.git("checkout", "-q", main)
    stamp = f"{repo.now - 10 * 86400} +0000"
    repo.git("merge", "-q", "--no-ff", "-m", "Merge pull request #5 from kendoe/fix-config\n\n"
             "Fix crash when the config file is empty", "fix-config",
             env={"GIT_AUTHOR_NAME": "Maintainer", "GIT_AUTHOR_EMAIL": "maint@example.com",
                  "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp})
    cortex.index(model="none")
    con = cortex.reader()

    def named(query):
        return {h.title: h.why.named_author for h in search(
            con, query, SearchOptions(kinds=("commit",), top_k=20)).hits if h.why.named_author}

    assert named("Bump mkdocs from 1.5 to 1.6. PR by @dependabot[bot].") == {
        "Bump mkdocs from 1.5 to 1.6": "dependabot"}
    assert named("Fix parser crash on empty input by @josegarcia") == {
        "Fix parser crash on empty input": "josegarcia"}
    assert named("Fix typos in the guide by @alice") == {"Fix typos in the guide": "alice"}
    assert named("Fix typos in the guide by @github") == {}   # alice+github: Alice's tag
    merged = named("Fix crash when the config file is empty by @kendoe")
    assert list(merged.values()) == ["kendoe"] * len(merged) and len(merged) >= 1
    assert named("Fix crash when the config file is empty by @maint") == {}


def test_a_name_longer_than_any_login_is_not_read(repo, cortex):
    repo.write("a.txt", "a\n")
    repo.commit("Fix parser crash", author="x" * 5000 + " <alice@example.com>", days_ago=5)
    cortex.index(model="none")
    hits = search(cortex.reader(), "Fix parser crash by @" + "x" * 39,
                  SearchOptions(kinds=("commit",))).hits
    assert hits and hits[0].why.named_author is None
    hits = search(cortex.reader(), "Fix parser crash by @alice", SearchOptions()).hits
    assert hits[0].why.named_author == "alice"   # the address still speaks


def test_a_named_login_is_who_not_a_word_to_match(repo, cortex):
    """`@tomchristie reload`: the login lifts Tom's commits (his merged pull requests too); it is
    no search word, or his merges, whose subjects hold it, would outrank his commits about
    reload on that word alone."""
    repo.write("base.txt", "0\n")
    repo.commit("Start", author="Ann <ann@example.com>", days_ago=90)
    main = repo.git("rev-parse", "--abbrev-ref", "HEAD")
    for n, branch in enumerate(["broadcast", "websockets", "interface"]):
        repo.git("checkout", "-q", "-b", branch)
        repo.write(f"{branch}.py", f"{n}\n")
        repo.commit(f"Add {branch}", author="Tom Christie <tom@example.com>", days_ago=60 - n)
        repo.git("checkout", "-q", main)
        stamp = f"{repo.now - (50 - n) * 86400} +0000"
        repo.git("merge", "-q", "--no-ff", "-m",
                 f"Merge pull request #{n + 4} from tomchristie/{branch}", branch,
                 env={"GIT_AUTHOR_NAME": "Tom Christie", "GIT_AUTHOR_EMAIL": "tom@example.com",
                      "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp})
    repo.write("reload.py", "RELOAD = 1\n")
    repo.commit("Simplify the reloader", author="Tom Christie <tom@example.com>", days_ago=30)
    repo.write("reload.py", "RELOAD = 2\n")
    repo.commit("Reload on changes to templates", author="Ann <ann@example.com>", days_ago=20)
    cortex.index(model="none")
    con = cortex.reader()
    hits = search(con, "@tomchristie reload", SearchOptions(kinds=("commit",), top_k=5)).hits
    assert [h.title for h in hits[:2]] == ["Simplify the reloader",
                                           "Reload on changes to templates"]
    assert hits[0].why.named_author == "tomchristie"
    # A login that names no author here stays a word (a decorator, say): it still matches.
    word = search(con, "@reloader", SearchOptions(kinds=("commit",), top_k=3)).hits
    assert word and word[0].title == "Simplify the reloader"
    # A query of a login alone still finds that login's text.
    alone = search(con, "@tomchristie", SearchOptions(kinds=("commit",), top_k=3)).hits
    assert alone and all("tomchristie" in h.title for h in alone)
