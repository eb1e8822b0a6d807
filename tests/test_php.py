"""PHP, end to end on real repositories: what a PHP reviewer reads as a change of a method."""

from __future__ import annotations

from cortex_core.query.history import history
from cortex_core.query.targets import TargetSpec


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
