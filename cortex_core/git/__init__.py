"""Git reading: finding the repository, the working copy's state, HEAD and blobs
(`git_reads.py`), objects only git can read (`object_source.py`), one commit or one merge as a
record, and commit links of the `origin` remote. The only layer, with the index passes, that
reads a repository through pygit2."""
