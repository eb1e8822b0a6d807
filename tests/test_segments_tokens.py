"""Cutting commit messages and documents into items; code-aware words."""

from __future__ import annotations

import pytest

from cortex_core.memory.segments import commit_segments, doc_sections, is_doc_path
from cortex_core.memory.tokens import expand, fts_query, query_terms, split_identifier


def test_a_single_change_stays_one_segment():
    segs = commit_segments("Fix timeout", "The client waited forever.\n\nNow 30 s.",
                           ["client.py"], [])
    assert len(segs) == 1
    assert segs[0].text == "Fix timeout\n\nThe client waited forever.\n\nNow 30 s."
    assert segs[0].files == ("client.py",)


def test_a_list_of_changes_is_split_and_each_item_tied_to_what_it_names():
    body = ("Several things at once.\n\n"
            "- Fix the retry budget in adapters.py\n  (it was off by one)\n"
            "* Rename Session.send_request\n"
            "- Bump the version")
    segs = commit_segments("Cleanups", body, ["pkg/adapters.py", "pkg/sessions.py", "setup.py"],
                           [("pkg/sessions.py", "Session.send_request", "send_request")])
    assert [s.text for s in segs] == [
        "Cleanups\n\nSeveral things at once.",
        "Fix the retry budget in adapters.py (it was off by one)",
        "Rename Session.send_request",
        "Bump the version",
    ]
    assert segs[1].files == ("pkg/adapters.py",) and segs[1].symbols == ()
    assert segs[2].files == ("pkg/sessions.py",)
    assert segs[2].symbols == (("pkg/sessions.py", "Session.send_request"),)
    # naming nothing: about the whole commit, which the head segment is linked to
    assert segs[3].files == () and set(segs[0].files) == {"pkg/adapters.py", "pkg/sessions.py",
                                                          "setup.py"}


def test_huge_lists_and_documents_are_bounded():
    body = "\n".join(f"- change {n}" for n in range(3000))
    segs = commit_segments("Release notes", body, [f"f{n}.py" for n in range(200)], [])
    assert len(segs) == 1 and segs[0].text.endswith("- change 2999")
    text = "".join(f"# {n}\nbody {n}\n" for n in range(5000))
    sections = doc_sections("README.md", text)
    assert len(sections) == 1000 and sections[-1].text.endswith("body 4999")


@pytest.mark.timeout(10, method="thread")
def test_a_heading_full_of_spaces_is_read_in_linear_time():
    line = "# a" + " " * 200_000 + "x"
    assert doc_sections("README.md", line + "\ntext\n")[0].title == "README.md › a" + " " * 200_000 + "x"
    assert doc_sections("README.md", "# Title ##\nx\n")[0].title == "README.md › Title"
    assert doc_sections("README.md", "# a#\nx\n")[0].title == "README.md › a#"


def test_squash_merge_bodies_keep_each_commits_prose_with_its_item():
    body = "* Add cache layer\n\nMemoize lookups.\n\n* Fix crash on empty input"
    segs = commit_segments("Merge feature (#12)", body, [], [])
    assert [s.text for s in segs[1:]] == ["Add cache layer Memoize lookups.",
                                          "Fix crash on empty input"]


def test_markdown_sections_follow_headings_and_ignore_fenced_hashes():
    text = ("Intro line\n\n# Title\n\nalpha\n\n## Install\n\nbeta\n```sh\n# not a heading\n```\n"
            "Usage\n=====\n\ngamma\n")
    sections = doc_sections("docs/guide.md", text)
    assert [(s.title, s.text, s.line) for s in sections] == [
        ("docs/guide.md", "Intro line", 1),
        ("docs/guide.md › Title", "alpha", 3),
        ("docs/guide.md › Title › Install", "beta\n```sh\n# not a heading\n```", 7),
        ("docs/guide.md › Usage", "gamma", 13),
    ]


def test_changelog_sections_split_into_entries():
    text = ("Changelog\n=========\n\n2.0 (2024-01-01)\n----------------\n\n"
            "- Fixed the thing (:issue:`12`)\n  across two lines\n- Added another\n\n"
            "1.0\n---\n\nFirst release.\n")
    sections = doc_sections("CHANGES.rst", text)
    assert [(s.title, s.text, s.line) for s in sections] == [
        ("CHANGES.rst › Changelog › 2.0 (2024-01-01)",
         "Fixed the thing (:issue:`12`) across two lines", 7),
        ("CHANGES.rst › Changelog › 2.0 (2024-01-01)", "Added another", 9),
        ("CHANGES.rst › Changelog › 1.0", "First release.", 11),
    ]


def test_long_sections_are_cut_at_paragraphs():
    para = ("word " * 300).strip()
    text = "# Big\n\n" + "\n\n".join([para] * 6)
    sections = doc_sections("README.md", text)
    assert len(sections) >= 2
    assert all(len(s.text) <= 4000 + len(para) + 2 for s in sections)
    assert "".join(s.text for s in sections).count("word") == 1800


def test_which_files_are_documents():
    assert is_doc_path("README.md") and is_doc_path("pkg/README.rst") and is_doc_path("HISTORY")
    assert is_doc_path("docs/adr/0001-use-sqlite.md") and is_doc_path("docs/news.rst")
    assert not is_doc_path("src/notes.md") and not is_doc_path("docs/logo.png")
    assert not is_doc_path("readme.py")


def test_identifiers_split_the_way_people_say_them():
    assert split_identifier("getUserById") == ["get", "user", "by", "id"]
    assert split_identifier("HTTPServerError2") == ["http", "server", "error", "2"]
    assert expand("call getUserById and parseURL, not plain words") == \
        "get user by id parse url"
    assert expand("snake_case and lower are left to the tokenizer") == ""


def test_queries_are_quoted_words_without_stopwords():
    assert query_terms("Why is the getUserById slow?") == ["getuserbyid", "get", "user", "id", "slow"]
    assert fts_query('a "quoted" OR NOT thing*') == '"quoted" OR "not" OR "thing"'
    assert fts_query("the of and") == '"the" OR "of" OR "and"'   # nothing else left: keep them
    assert fts_query("?!") is None


def test_the_tails_of_contractions_are_no_words():
    # "what's this" searched for "s" alone (what and this are stopwords).
    assert query_terms("what's this") == ["what", "this"]
    assert query_terms("don\u2019t retry the user's session") == [
        "don", "retry", "user", "session"]
    # Not after an apostrophe that follows a letter: a quoted word, a module named re.
    assert query_terms("'s' key, import re, re-raise") == ["s", "key", "import", "re", "raise"]
    # The areas count an item's words as before (a review: dropping tails there too moved
    # requests' areas, which a query-side fix had no reason to do).
    assert query_terms("the user's session", keep_tails=True) == ["user", "s", "session"]


# -- words of changed lines ----------------------------------------------------------------------

def test_code_words_keep_names_and_literal_words_without_keywords():
    from cortex_core.memory.code_words import words_of
    lines = ["def negotiate_keepalive(self, timeout=None):",
             "    raise ValueError('Invalid chunk header')",
             "    return self.for_in_if"]
    words = words_of(lines)
    assert words[:2] == ["negotiate_keepalive", "timeout"]
    assert {"ValueError", "Invalid", "chunk", "header", "for_in_if"} <= set(words)
    assert not {"def", "self", "None", "raise", "return"} & set(words)


def test_code_words_are_bounded_and_redacted():
    from cortex_core.memory.code_words import MAX_WORD_CHARS, MAX_WORDS, words_of
    many = [f"name_{n} = value_{n}" for n in range(MAX_WORDS)]
    assert len(words_of(many)) == MAX_WORDS
    assert words_of(["x" * (MAX_WORD_CHARS + 1) + " = kept_name"]) == ["kept_name"]
    secret = "AKIA" + "Q" * 16
    words = words_of([f'aws_key = "{secret}"'])
    assert secret not in " ".join(words) and "aws_key" in words


def test_code_words_of_several_files_share_the_budget():
    from cortex_core.memory.code_words import merge_words
    first = [f"first_{n}" for n in range(10)]
    assert merge_words([first, ["second_0", "second_1"]], limit=4) == [
        "first_0", "second_0", "first_1", "second_1"]
