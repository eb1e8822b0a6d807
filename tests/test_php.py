"""PHP, end to end on real repositories: what a PHP reviewer reads as a change of a method."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cortex_core.errors import NotFound
from cortex_core.features.what import what
from cortex_core.query.blast import blast, fused_related
from cortex_core.query.history import history
from cortex_core.query.targets import TargetSpec, parse_target, resolve

PROJECT = Path(__file__).resolve().parent.parent


def subjects(con, path, symbol=None, line=None):
    found = history(con, TargetSpec(path, symbol, line))
    return [(e.commit.subject, e.change) for e in found.entries]


DETECT = """\
<?php

namespace League\\Csv;

#[Deprecated(message: 'use Info::getDelimiterStats()', since: 'league/csv:9.8.0')]
function delimiter_detect(Reader $csv, array $delimiters): array
{
    # a comment
    return Info::getDelimiterStats($csv, $delimiters);
}
"""


def test_an_attribute_is_part_of_the_header_not_a_comment(repo, cortex):
    """`#[` opens a PHP 8 attribute; a `#` comment is any other `#`. league/csv b063031522
    edited a `#[Deprecated]` message and was called a docs change of the function."""
    repo.write("functions.php", "".join(line for line in DETECT.splitlines(keepends=True)
                                        if not line.startswith("#[")))
    repo.commit("detect")
    repo.write("functions.php", DETECT)
    repo.commit("deprecate")
    repo.write("functions.php", DETECT.replace("'use Info", "'use League\\Csv\\Info"))
    repo.commit("reword the deprecation")
    repo.write("functions.php", DETECT.replace("'use Info", "'use League\\Csv\\Info")
               .replace("# a comment", "# the comment"))
    repo.commit("comment")
    cortex.index()
    assert subjects(cortex.reader(), "functions.php", "delimiter_detect") == [
        ("comment", "docs"), ("reword the deprecation", "signature"),
        ("deprecate", "signature"), ("detect", "added")]


READER = """\
<?php

/**
 * League.Csv (https://csv.thephpleague.com)
 */

declare(strict_types=1);

namespace League\\Csv;

/**
 * A CSV reader.
 */
class Reader
{
    /**
     * Returns the header record.
     *
     * @throws SyntaxError
     */
    public function getHeader(): array
    {
        return $this->header;
    }

    public function count(): int
    {
        return 1;
    }
}
"""


def test_a_docblock_belongs_to_the_method_under_it(repo, cortex):
    """A commit that edits only a method's DocBlock (league/csv a508c338c5 changed a `@throws`)
    is a docs change of the method, not of its class; a line of the DocBlock is the method's."""
    repo.write("src/Reader.php", READER)
    repo.commit("reader")
    repo.write("src/Reader.php", READER.replace("@throws SyntaxError", "@throws Exception"))
    repo.commit("document the exception")
    repo.write("src/Reader.php", READER.replace("@throws SyntaxError", "@throws Exception")
               .replace("return 1;", "return 2;"))
    repo.commit("count two")
    cortex.index()
    con = cortex.reader()
    assert subjects(con, "src/Reader.php", "Reader.getHeader") == [
        ("document the exception", "docs"), ("reader", "added")]
    assert subjects(con, "src/Reader.php", line=19) == subjects(
        con, "src/Reader.php", "Reader.getHeader")
    # The class's own text (its members left out) did not change since it was added.
    assert [e.change for e in history(con, TargetSpec("src/Reader.php", "Reader")).entries] == [
        "body", "docs", "added"]
    # The license block, a blank line above the first declaration, is nobody's.
    assert history(con, TargetSpec("src/Reader.php", line=4)).target.qualname is None


READER_TEST = """\
<?php

namespace League\\Csv;

final class ReaderTest extends TestCase
{
    public function testGetHeader(): void
    {
        self::assertSame([], Reader::from('a.csv')->getHeader());
    }

    public function testCount(): void
    {
        self::assertCount(1, Reader::from('a.csv'));
    }
}
"""


def test_a_phpunit_test_beside_its_class_is_a_test(repo, cortex):
    """PHPUnit's tests are `*Test.php`, in tests/ or beside the class (league/csv keeps
    src/ReaderTest.php next to src/Reader.php): their test methods are the twins of the methods
    they are named for, as `testParse` is `parse`'s in a Java `*Test.java`."""
    repo.write("src/Reader.php", READER)
    repo.write("src/ReaderTest.php", READER_TEST)
    repo.commit("reader")
    repo.write("src/Reader.php", READER.replace("return 1;", "return 2;"))
    repo.commit("count two")
    cortex.index()
    found = fused_related(cortex.reader(), TargetSpec("src/Reader.php", "Reader.getHeader"))
    twins = [(p.qualname, p.relation) for p in found.symbols if p.twin]
    assert twins == [("ReaderTest.testGetHeader", "same name")]


def test_names_as_php_writes_them(repo, cortex):
    """A PHP stack trace says `League\\Csv\\Reader->getHeader()`, a PHP reviewer
    `Reader::getHeader` and, names being case-insensitive in PHP, maybe `getheader`."""
    repo.write("src/Reader.php", READER)
    repo.commit("reader")
    cortex.index()
    con = cortex.reader()
    for written in ("src/Reader.php::League\\Csv\\Reader->getHeader",
                    "src/Reader.php::\\League\\Csv\\Reader::getHeader",
                    "src/Reader.php::Reader::getHeader"):
        assert resolve(con, parse_target(written)).qualname == "Reader.getHeader", written
    # C++'s `operator->` and `operator->*` are names, not PHP's separator (a second review).
    for op in ("operator->()", "operator->*(int)"):
        assert parse_target(f"op.cpp::Ptr.{op}").symbol == f"Ptr.{op}"
        assert parse_target(f"op.cpp::Ptr->{op}").symbol == f"Ptr.{op}"
    with pytest.raises(NotFound) as missed:
        resolve(con, parse_target("src/Reader.php::getheader"))
    assert str(missed.value).startswith(
        "no symbol 'getheader' in src/Reader.php; did you mean: src/Reader.php::Reader.getHeader")
    # The name as written, not with every backslash doubled by repr.
    with pytest.raises(NotFound, match=r"^no file 'src\\Csv\\Nope.php' in the index"):
        resolve(con, parse_target("src\\Csv\\Nope.php::Nope"))
    out = subprocess.run([sys.executable, "-m", "cortex_cli.cli", "search", "League\\Csv\\Reader",
                          "--db", str(cortex.db)], cwd=repo.path, text=True, capture_output=True,
                         env=dict(os.environ, PYTHONPATH=str(PROJECT)), check=True).stdout
    assert out.startswith("1 result for 'League\\Csv\\Reader' ("), out


def test_without_structure_dependents_are_unknown_not_none(repo, cortex):
    """PHP has symbol history but no structure pass: blast cannot know who calls
    Reader::getHeader, so it must not say "0 dependents", nor call what changes with it
    "no structural link" (ReaderTest.php calls it in every test)."""
    for n in range(3):
        repo.write("src/Reader.php", READER.replace("return 1;", f"return {n};"))
        repo.write("src/ReaderTest.php", READER_TEST.replace("assertCount(1", f"assertCount({n}"))
        repo.commit(f"count {n}")
    cortex.index()
    found = blast(cortex.reader(), TargetSpec("src/Reader.php"))
    assert not found.dependents_known and found.dependents == []
    assert [h.path for h in found.hidden] == ["src/ReaderTest.php"]
    env = dict(os.environ, PYTHONPATH=str(PROJECT))
    for command, said in (("blast", "dependents not known"), ("callers", ": not known")):
        out = subprocess.run([sys.executable, "-m", "cortex_cli.cli", command, "src/Reader.php",
                              "--db", str(cortex.db)], cwd=repo.path, env=env, text=True,
                             capture_output=True, check=True).stdout
        assert said in out.splitlines()[0], out
        assert "0 dependents" not in out and "no structural link" not in out, out


def test_what_touches_the_symbols_the_diff_touches(repo, cortex):
    """`cortex what` lists the hot spots you are touching: a one-line edit of getHeader touches
    getHeader, its class and its file, not every method of the file (league/csv: an edit of
    Reader::getHeader listed getLastRecord, setHeader and getDocument)."""
    for n in range(3):
        repo.write("src/Reader.php", READER.replace("return 1;", f"return {n};")
                   .replace("return $this->header;", f"return $this->header ?? {n};"))
        repo.commit(f"change {n}", days_ago=3 - n)
    cortex.index()
    (repo.path / "src/Reader.php").write_text(
        READER.replace("return 1;", "return 2;").replace("return $this->header;",
                                                         "return $this->header ?? 9;"))
    found = what(cortex.reader(), repo.path)
    assert {(h.path, h.qualname) for h in found.hotspots} == {
        ("src/Reader.php", None), ("src/Reader.php", "Reader"),
        ("src/Reader.php", "Reader.getHeader")}


STYLE = """\
<?php

function badge(string $label): string
{
    $css = <<<CSS
        .badge { color: #fff; background: url(//cdn.example/a.png); }
        CSS;
    $html = <<<'HTML'
    <span class="badge">/* {$label} */</span>
    HTML;
    return $html . $css; # the badge
}
"""


@pytest.mark.timeout(120, method="thread")
def test_a_heredoc_is_a_string_not_comments(repo, cortex):
    """A heredoc's or nowdoc's text is a string: `#fff`, `//cdn` and `/* */` in it are no
    comments, so editing them changes the code, not the docs."""
    repo.write("badge.php", STYLE)
    repo.commit("badge")
    repo.write("badge.php", STYLE.replace("#fff", "#000"))
    repo.commit("black")
    repo.write("badge.php", STYLE.replace("#fff", "#000").replace("//cdn", "//img"))
    repo.commit("images")
    repo.write("badge.php", STYLE.replace("#fff", "#000").replace("//cdn", "//img")
               .replace("/* {$label} */", "/* {$label}! */"))
    repo.commit("shout")
    repo.write("badge.php", STYLE.replace("#fff", "#000").replace("//cdn", "//img")
               .replace("/* {$label} */", "/* {$label}! */").replace("# the badge", "# a badge"))
    repo.commit("comment")
    cortex.index()
    assert subjects(cortex.reader(), "badge.php", "badge") == [
        ("comment", "docs"), ("shout", "body"), ("images", "body"), ("black", "body"),
        ("badge", "added")]
    # Unclosed openers take the rest of the text: one search each, not one per line after.
    from cortex_core.lang.change_kinds import tokens
    for hostile in ("<<<A\n" * 100_000, "<<<A\nA\n" * 100_000, "<<<'" * 100_000):
        tokens(hostile, "php")


def test_a_heredoc_opens_only_in_code():
    """A review: `<<<EOT` in a DocBlock's example, a `//` comment or a quoted string opened a
    "heredoc" that swallowed the header and the comments after it (a parameter added read as a
    body change, a comment edited as one too); and a heredoc was one token to similarity, so
    two functions of one shape with different templates were paired as a rename (0.89)."""
    from cortex_core.lang.change_kinds import change_kind, masked
    doc = "/**\n * $x = <<<EOT\n * hi\n * EOT;\n */\nfunction f($a) {\n  return 1;\n}"
    assert change_kind(doc.encode(), doc.replace("($a)", "($a, $b)").encode(), "php") == \
        "signature"
    for quoted in ("  // use <<<EOT\n", "  $s = 'a <<<EOT\nb';\n"):
        code = f"function f() {{\n{quoted}  $a = 1;\n  // note\n}}"
        assert change_kind(code.encode(), code.replace("note", "note two").encode(),
                           "php") == "docs"
    page = b"function f() {\n  return <<<HTML\n<p>header one</p>\nHTML;\n}"
    assert {"header", "one"} <= set(masked(page, "php", "f"))


def test_a_trailing_docblock_and_a_class_named_test():
    """A second review: a DocBlock after code on its line was the next function's (its range
    began at the `$x` line), and `*Test.php` matched a class file named `Test.php`."""
    from cortex_core.lang.symbols import extract_symbols
    from cortex_core.lang.test_paths import is_test_path
    source = b"<?php\n$x = 1; /** trailing */\nfunction h() {}\n/** doc */\nfunction g() {}\n"
    assert [(s.qualname, s.start_line) for s in extract_symbols("php", source)] == [
        ("h", 3), ("g", 4)]
    assert not is_test_path("src/Test.php") and is_test_path("src/ReaderTest.php")


def test_a_new_file_is_said_to_be_new(repo, cortex):
    """A file of the working tree that no indexed commit holds is new: the miss used to suggest
    other files ("did you mean: src/Writer.php") for a file right there on disk."""
    repo.write("src/Reader.php", READER)
    repo.commit("reader")
    cortex.index()
    (repo.path / "src/Fresh.php").write_text("<?php\nfunction fresh() { return 1; }\n")
    for target in ("src/Fresh.php", "src/Fresh.php:2", "src/Fresh.php::fresh"):
        out = subprocess.run([sys.executable, "-m", "cortex_cli.cli", "history", target,
                              "--db", str(cortex.db)], cwd=repo.path, text=True,
                             capture_output=True, env=dict(os.environ, PYTHONPATH=str(PROJECT)))
        assert out.returncode == 1 and out.stderr == (
            "cortex: no file 'src/Fresh.php' in the index: it is in the working tree, but no "
            "indexed commit holds it (a new file has history once committed and indexed)\n"), out
